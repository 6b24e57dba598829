// Trash: deleted notes and tasks, newest first, restorable until they are purged.
import { api } from "../api.js";
import { clear, confirmDialog, friendlyDate, h, relativeTime, toast } from "../dom.js";

function trashRow(item, onGone) {
  const restore = h("button.btn.btn-sm", { type: "button" }, "Restore");
  const forever = h("button.btn.btn-sm.btn-ghost", { type: "button" }, "Delete forever");
  const row = h("li.trash-item", { dataset: { id: String(item.id) } },
    h("div.trash-text", {}, h("span.title", {}, item.title),
      h("span.meta.muted.small", {}, `${item.kind} · deleted ${relativeTime(item.deleted_at)} · kept until ${friendlyDate(item.purge_at)}`)),
    h("div.row", {}, restore, forever));
  restore.addEventListener("click", async () => {
    restore.disabled = true;
    try {
      const note = await api.post(`/trash/${item.id}/restore`);
      row.remove();
      onGone();
      toast(h("span", {}, "Restored ", h("a", { href: `/notes/${note.id}` }, note.title)));
    } catch (e) { restore.disabled = false; toast(e.message, { bad: true }); }
  });
  forever.addEventListener("click", async () => {
    if (!(await confirmDialog("Delete forever?", `“${item.title}” cannot be restored afterwards.`))) return;
    try { await api.del("/trash", { trashed_id: item.id }); row.remove(); onGone(); } catch (e) { toast(e.message, { bad: true }); }
  });
  return row;
}

export async function trashView(main) {
  const list = h("ul.list.trash-list");
  const count = h("span.count");
  const more = h("button.btn.btn-sm.trash-more", { type: "button", hidden: true }, "Show more");
  const empty = h("button.btn.btn-danger.btn-sm#empty-trash", { type: "button" }, "Empty trash");
  let total = 0;
  let cursor = null;
  const shown = () => { count.textContent = String(total); empty.disabled = !total; if (!total) clear(list, h("li.empty", {}, "The trash is empty.")); };
  const gone = () => { total -= 1; shown(); };
  async function load() {
    const page = await api.get("/trash", { limit: 50, cursor: cursor || undefined });
    total = page.count;
    list.append(...page.items.map((item) => trashRow(item, gone)));
    cursor = page.next_cursor;
    more.hidden = !cursor;
    shown();
  }
  more.addEventListener("click", () => load().catch((e) => toast(e.message, { bad: true })));
  empty.addEventListener("click", async () => {
    if (!(await confirmDialog("Empty the trash?", "Everything in it is deleted for good.", "Empty trash"))) return;
    try { await api.del("/trash"); total = 0; cursor = null; more.hidden = true; clear(list); shown(); }
    catch (e) { toast(e.message, { bad: true }); }
  });
  const settings = h("p.muted", {}, "Deleted notes and tasks wait here before they are deleted for good.");
  main.append(
    h("div.page-head", {}, h("div", {}, h("h1", {}, "Trash ", count), settings), h("div.row", {}, h("a.btn.btn-sm", { href: "/notes" }, "Back to notes"), empty)),
    h("div.card", {}, list, h("div.row", {}, more)));
  await load();
}
