// The context sidebar: notes the last answer used, notes it suggests, and the notes attached
// to the next message (click a suggestion, or search for one, to attach it).
import { api } from "../api.js";
import { clear, h } from "../dom.js";
import { attachSuggest } from "../widgets/suggest.js";

export function contextPanel() {
  const attached = new Map();
  const used = h("ul.list.context-list#context-used");
  const suggested = h("ul.list.context-list#context-suggested");
  const attachedList = h("div.row#context-attached");
  const find = h("input#attach-note", { type: "text", placeholder: "Attach a note…", "aria-label": "Attach a note", autocomplete: "off" });
  const listeners = [];

  function renderAttached() {
    clear(attachedList, attached.size ? [...attached].map(([id, title]) => h("span.chip.attached-chip", {}, title,
      h("button.x", { type: "button", "aria-label": `Detach ${title}`, on: { click: () => { attached.delete(id); renderAttached(); } } }, "×")))
      : h("span.empty", {}, "Nothing attached."));
    listeners.forEach((fn) => fn());
  }
  function attach(note) { attached.set(note.id, note.title); renderAttached(); }

  const suggest = attachSuggest(find, {
    fetch: async (q) => (await api.get("/search", { query: q, limit: 8 })).items
      .map((n) => ({ label: n.title, value: n })),
    accept: (item) => { attach(item.value); find.value = ""; },
  });
  find.addEventListener("input", () => suggest.update(find.value.trim() ? find.value.trim() : null));

  const el = h("aside.card.chat-context#chat-context", {},
    h("h2", {}, "Context"),
    h("h3.section-title", {}, "Attached to the next message"), attachedList,
    h("div.suggest-wrap", {}, find),
    h("h3.section-title", {}, "Notes used"), used,
    h("h3.section-title", {}, "Suggested"), suggested);

  const panel = {
    el,
    ids: () => [...attached.keys()],
    onChange: (fn) => listeners.push(fn),
    clearAttached() { attached.clear(); renderAttached(); },
    show(context) {
      const ctx = context || {};
      clear(used, (ctx.used || []).length ? ctx.used.map((n) => h("li", {}, h("a.note-item", { href: `/notes/${n.id}` },
        h("span.title", {}, n.title)))) : h("li.empty", {}, "None for the last answer."));
      clear(suggested, (ctx.suggested || []).length ? ctx.suggested.map((n) => h("li", {},
        h("button.suggested-note", { type: "button", title: "Attach to the next message", on: { click: () => attach(n) } },
          h("span", {}, "＋ "), n.title))) : h("li.empty", {}, "No suggestions."));
    },
  };
  renderAttached();
  panel.show(null);
  return panel;
}
