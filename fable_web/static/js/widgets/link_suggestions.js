// "Link suggestions" beside the note editor: notes the note names without a link, then notes close
// to what it says (suggest_links, GET /api/notes/{id}/link-suggestions). Choosing one links the
// first unlinked mention of it in the text ([[as written]], or [[Title|as written]] for an
// alias), or, when the text has none, puts [[Title]] at the caret. A note the text links to
// already is not offered.
import { api } from "../api.js";
import { clear, h } from "../dom.js";
import { marks, titleKey } from "./highlight.js";

/** The first place `text` names `mention` (a title key) outside [[links]] and code: [start, end] or null. */
export function firstMention(text, mention) {
  const words = mention.split(" ").map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  const pattern = new RegExp(`(?<![\\p{L}\\p{N}])${words.join("[^\\p{L}\\p{N}\\n]+")}(?![\\p{L}\\p{N}])`, "giu");
  const taken = marks(text).filter((m) => m.kind === "link");
  const code = [...text.matchAll(/```[\s\S]*?(?:```|$)|`[^`\n]+`/g)].map((m) => ({ start: m.index, end: m.index + m[0].length }));
  for (const m of text.matchAll(pattern)) {
    const end = m.index + m[0].length;
    if (![...taken, ...code].some((t) => m.index < t.end && end > t.start)) return [m.index, end];
  }
  return null;
}

/** The panel for note `noteId` whose text is `textarea`'s; inserted() runs after a link is put in. */
export function linkSuggestions(noteId, textarea, inserted) {
  const list = h("ul.link-suggestions-list");
  const status = h("p.muted.small", {}, "Looking for notes to link…");
  const el = h("section.link-suggestions#link-suggestions", { "aria-label": "Link suggestions" },
    h("h2.pane-label", {}, "Link suggestions"), status, list);
  let items = [];

  function draw() {
    const linked = new Set(marks(textarea.value).filter((m) => m.kind === "link").map((m) => m.key));
    const shown = items.filter((s) => !linked.has(titleKey(s.title)));
    status.textContent = shown.length ? "" : "No notes to suggest: link others with [[ or by typing / then “link”.";
    status.classList.toggle("hidden", shown.length > 0);
    clear(list, shown.map((s) => h("li", {},
      h("button.btn.btn-ghost.btn-sm.link-suggestion", {
        type: "button", dataset: { id: s.id },
        title: s.reason === "mention" ? "The text names it: link that mention" : "About something close: link it at the caret",
        on: { click: () => insert(s) },
      }, `[[${s.title}]]`, h("span.muted.small", {}, s.reason === "mention" ? " mentioned" : " related")))));
  }

  function insert(s) {
    const value = textarea.value;
    const found = s.mention ? firstMention(value, s.mention) : null;
    let text;
    let from;
    let to;
    if (found) {
      [from, to] = found;
      const written = value.slice(from, to);
      text = titleKey(written) === titleKey(s.title) ? `[[${written}]]` : `[[${s.title}|${written}]]`;
    } else {
      from = textarea.selectionStart ?? value.length;
      to = textarea.selectionEnd ?? from;
      text = `[[${s.title}]]`;
    }
    textarea.focus();
    textarea.setSelectionRange(from, to);
    let done = false;
    try { done = document.execCommand("insertText", false, text); } catch { done = false; }
    if (!done) {
      textarea.setRangeText(text, from, to, "end");
      textarea.dispatchEvent(new Event("input", { bubbles: true }));
    }
    textarea.setSelectionRange(from + text.length, from + text.length);
    draw();
    inserted();
  }

  textarea.addEventListener("input", () => { if (items.length) draw(); });
  api.get(`/notes/${noteId}/link-suggestions`, { limit: 8 }).then((page) => { items = page.items; draw(); },
    (e) => { status.textContent = `No suggestions: ${e.message}`; });
  return el;
}
