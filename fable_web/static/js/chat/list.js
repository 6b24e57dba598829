// The conversation list beside the chat: search, rename, delete one, or select several (a
// checkbox each, Shift+click for a range, "Select all" for what is listed) and delete them in one
// call (delete_conversations: all or none). Conversations have no trash: one confirmation says so.
import { api } from "../api.js";
import { clear, confirmDialog, debounce, h, relativeTime, toast } from "../dom.js";
import { navigate } from "../router.js";
import { requestError } from "./errors.js";

const base = (id) => `/chat/conversations/${id}`;
const plural = (n) => `${n} conversation${n === 1 ? "" : "s"}`;

/** {el (the list), bar (selection controls), search, load()}; currentId() is the open conversation's id. */
export function conversationList(currentId) {
  const list = h("ul.list.conv-list#conversation-list");
  const search = h("input#conversation-search", { type: "search", placeholder: "Search conversations", "aria-label": "Search conversations", autocomplete: "off" });
  const selected = new Set();
  let shown = []; // the conversations listed, in order
  let anchor = null; // the id last ticked or unticked: Shift+click extends from it
  const all = h("input#conv-select-all", { type: "checkbox" });
  const count = h("span.small.muted#conv-selected-count", { "aria-live": "polite" });
  const removeSelected = h("button.btn.btn-sm.btn-danger#conv-delete-selected", { type: "button", hidden: true }, "Delete");
  const bar = h("div.row.conv-bulk#conv-bulk", { hidden: true },
    h("label.conv-check.conv-all", {}, all, "Select all"), count, h("span.spacer"), removeSelected);

  function sync() {
    for (const box of list.querySelectorAll(".conv-select")) box.checked = selected.has(Number(box.value));
    const n = selected.size;
    all.checked = n > 0 && n === shown.length;
    all.indeterminate = n > 0 && n < shown.length;
    count.textContent = n ? `${n} selected` : "";
    removeSelected.hidden = !n;
    removeSelected.setAttribute("aria-label", n ? `Delete ${plural(n)}` : "Delete");
    bar.hidden = !shown.length;
  }

  async function load() {
    const q = search.value.trim();
    const page = await api.get("/chat/conversations", { conversation_type: "chat", limit: 100, query: q || undefined });
    shown = page.items;
    const ids = new Set(shown.map((c) => c.id));
    for (const id of [...selected]) if (!ids.has(id)) selected.delete(id);  // what is not listed cannot be deleted unseen
    clear(list, shown.length ? shown.map((c) => item(c)) : h("li.empty", {}, q ? "No conversation matches." : "No conversations yet."));
    sync();
  }
  search.addEventListener("input", debounce(() => load().catch(() => {}), 200));

  function tick(id, on, range) {
    const ids = shown.map((c) => c.id);
    const from = range && anchor !== null ? ids.indexOf(anchor) : -1;
    const to = ids.indexOf(id);
    const span = from < 0 ? [id] : ids.slice(Math.min(from, to), Math.max(from, to) + 1);
    for (const one of span) { if (on) selected.add(one); else selected.delete(one); }
    anchor = id;
    sync();
  }
  all.addEventListener("change", () => {
    if (all.checked) shown.forEach((c) => selected.add(c.id)); else selected.clear();
    anchor = null;
    sync();
  });
  removeSelected.addEventListener("click", async () => {
    const ids = shown.map((c) => c.id).filter((id) => selected.has(id));
    if (!ids.length) return;
    if (!(await confirmDialog(`Delete ${plural(ids.length)}?`, "They and their messages are removed for good; this cannot be undone."))) {
      removeSelected.focus();
      return;
    }
    try {
      await api.post("/chat/conversations/delete", { conversation_ids: ids });
    } catch (err) {
      toast(requestError(err), { bad: true });
      await load().catch(() => {});
      removeSelected.focus();
      return;
    }
    ids.forEach((id) => selected.delete(id));
    toast(`Deleted ${plural(ids.length)}`);
    if (ids.includes(currentId())) { navigate("/chat"); return; }
    await load();
    (shown.length ? all : search).focus();  // the button is hidden now: focus stays in the list's controls
  });

  function item(c) {
    const li = h("li.conv", { dataset: { id: String(c.id) }, "aria-current": c.id === currentId() ? "page" : null });
    const box = h("input.conv-select", { type: "checkbox", value: String(c.id), "aria-label": `Select ${c.title}` });
    box.addEventListener("click", (e) => tick(c.id, box.checked, e.shiftKey));
    const link = h("a.conv-link", { href: `/chat/${c.id}` }, h("span.title", {}, c.title), h("span.snippet", {}, relativeTime(c.updated_at)));
    const rename = h("button.btn.btn-ghost.btn-sm.conv-rename", { type: "button", "aria-label": `Rename ${c.title}`, title: "Rename" }, "✎");
    const remove = h("button.btn.btn-ghost.btn-sm.btn-danger.conv-delete", { type: "button", "aria-label": `Delete ${c.title}`, title: "Delete" }, "×");
    rename.addEventListener("click", () => {
      const input = h("input.conv-title-input", { type: "text", value: c.title, "aria-label": "Conversation title" });
      const form = h("form.conv-rename-form", { on: { submit: async (e) => {
        e.preventDefault();
        try { await api.patch(base(c.id), { title: input.value }); await load(); } catch (err) { toast(requestError(err), { bad: true }); }
      } } }, input);
      input.addEventListener("keydown", (e) => { if (e.key === "Escape") load(); });
      li.replaceChildren(form);
      input.select();
    });
    remove.addEventListener("click", async () => {
      if (!(await confirmDialog(`Delete “${c.title}”?`, "The conversation and its messages are removed."))) return;
      await api.del(base(c.id));
      if (c.id === currentId()) navigate("/chat"); else await load();
    });
    li.append(h("label.conv-check", {}, box), link, h("span.conv-actions", {}, rename, remove));
    return li;
  }
  return { el: list, bar, search, load };
}
