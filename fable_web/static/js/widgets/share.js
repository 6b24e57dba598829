// Sharing a project or a note: who has it (change their permission, revoke), and a form to share
// it with a person or a group. Shared rows say whose they are and what you may do with them.
import { api } from "../api.js";
import { clear, h, toast } from "../dom.js";

const PERMISSIONS = [
  ["viewer", "can view"],
  ["editor", "can edit"],
  ["admin", "can edit, share and delete"],
];

/** "alice's · can edit": on a row someone else shared with you (nothing on your own). */
export function sharedBadge(item) {
  if (!item.owner) return null;
  const may = Object.fromEntries(PERMISSIONS)[item.permission] || item.permission;
  return h("span.chip.shared-badge", { title: `Shared with you by ${item.owner}: you ${may}` },
    `${item.owner}’s · ${may}`);
}

/** May the caller share it (their own, or shared with them as admin)? */
export function canShare(item) {
  return !item.owner || item.permission === "admin";
}

/** May the caller change it (their own, or shared with them as editor or admin)? */
export function canEdit(item) {
  return !item.owner || item.permission !== "viewer";
}

function permissionSelect(value, label, onChange) {
  const select = h("select", { "aria-label": label, on: onChange ? { change: () => onChange(select.value) } : {} },
    PERMISSIONS.map(([p, words]) => h("option", { value: p, selected: p === value }, words)));
  return select;
}

/** The "Share" button of a project (`kind` "project") or note, opening the dialog. */
export function shareButton(kind, item) {
  if (!canShare(item)) return null;
  return h("button.btn.btn-sm#share-button", { type: "button", on: { click: () => shareDialog(kind, item) } }, "Share");
}

export function shareDialog(kind, item) {
  const key = kind === "project" ? "project_id" : "note_id";
  const rows = h("ul.share-list#share-list", { "aria-live": "polite" });
  const error = h("p.error.hidden", { role: "alert" });
  const who = h("input#share-with", { type: "text", required: true, autocomplete: "off", list: "share-groups",
    placeholder: "username or group", "aria-label": "Share with (username or group name)" });
  const groups = h("datalist#share-groups");
  const asGroup = h("select#share-kind", { "aria-label": "Share with a person or a group" },
    h("option", { value: "user" }, "Person"), h("option", { value: "group" }, "Group"));
  const permission = permissionSelect("viewer", "Permission");

  function fail(e) {
    error.textContent = e.message;
    error.classList.remove("hidden");
  }
  async function load() {
    const shares = await api.get("/shares", { [key]: item.id });
    clear(rows, shares.items.length ? shares.items.map((s) => h("li.share-row", {},
      h("span.share-who", {}, s.with_group ? `${s.with_group} (group)` : s.with_user),
      permissionSelect(s.permission, `Permission of ${s.with_group || s.with_user}`, (p) => change(s, p)),
      h("button.btn.btn-ghost.btn-sm.btn-danger", { type: "button", on: { click: () => revoke(s) } }, "Revoke")))
      : h("li.muted.small", {}, "Not shared with anyone yet."));
  }
  async function change(share, value) {
    try {
      await api.post("/shares", { [key]: item.id, permission: value,
        ...(share.with_group ? { with_group: share.with_group } : { with_user: share.with_user }) });
      toast("Permission changed");
    } catch (e) { fail(e); }
    await load();
  }
  async function revoke(share) {
    try { await api.del(`/shares/${share.id}`); toast("Share revoked"); } catch (e) { fail(e); }
    await load();
  }
  async function submit(event) {
    event.preventDefault();
    error.classList.add("hidden");
    const name = who.value.trim();
    try {
      await api.post("/shares", { [key]: item.id, permission: permission.value,
        [asGroup.value === "group" ? "with_group" : "with_user"]: name });
      who.value = "";
      toast(`Shared with ${name}`);
      await load();
    } catch (e) { fail(e); }
  }
  const dialog = h("dialog.share-dialog", { "aria-label": `Share ${item.title}` },
    h("h2", {}, `Share “${item.title}”`),
    h("p.muted.small", {}, kind === "project"
      ? "Everything in the project is shared: its notes, tasks and milestones."
      : "Only this note is shared."),
    rows,
    h("form.share-form", { on: { submit } }, asGroup, who, groups,
      h("div.row.share-send", {}, permission, h("span.spacer"), h("button.btn.btn-primary", { type: "submit" }, "Share"))),
    error,
    h("form.row", { method: "dialog" }, h("span.spacer"), h("button.btn", { value: "close" }, "Done")));
  dialog.addEventListener("close", () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
  who.focus();
  api.get("/groups").then((page) => clear(groups, page.items.map((g) => h("option", { value: g.name })))).catch(() => {});
  load().catch(fail);
  return dialog;
}
