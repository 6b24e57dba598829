// Settings → Users (admins): every account with its last sign-in, notes and storage; change a
// role, disable or enable, delete (with what happens to what was shared, said before).
import { api } from "../api.js";
import { clear, confirmDialog, h, relativeTime, toast } from "../dom.js";

export function bytes(n) {
  if (n < 1000) return `${n} B`;
  const units = ["kB", "MB", "GB", "TB"];
  let value = n;
  let unit = -1;
  do { value /= 1000; unit += 1; } while (value >= 1000 && unit < units.length - 1);
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

const DELETING = "Everything they own is deleted with them: notes and tasks with their history, projects, "
  + "conversations, settings and API keys. Projects and notes they shared are no longer there for the people "
  + "they were shared with, and what others shared with them is no longer shared with them. This cannot be undone.";

export function render(panel, me) {
  const rows = h("tbody#accounts");
  async function act(change) {
    try { await change(); } catch (e) { toast(e.message, { bad: true }); }
    await load();
  }
  function row(u) {
    const self = u.id === me.id;
    const role = h("select.role-select", { "aria-label": `Role of ${u.username}`,
      on: { change: () => act(() => api.patch(`/admin/users/${u.id}`, { role: role.value })) } },
    h("option", { value: "user" }, "user"), h("option", { value: "admin" }, "admin"));
    role.value = u.role;
    const toggle = self ? null : h("button.btn.btn-ghost.btn-sm", {
      type: "button", class: u.is_active ? "btn-danger" : "",
      on: { click: () => act(() => api.patch(`/admin/users/${u.id}`, { is_active: !u.is_active })) },
    }, u.is_active ? "Disable" : "Enable");
    const remove = self ? null : h("button.btn.btn-ghost.btn-sm.btn-danger", { type: "button", on: { click: async () => {
      if (await confirmDialog(`Delete ${u.username}?`, DELETING, "Delete")) {
        await act(async () => toast(`${(await api.del(`/admin/users/${u.id}`)).username} deleted`));
      }
    } } }, "Delete");
    return h("tr", { dataset: { username: u.username } },
      h("td", {}, u.username, self ? h("span.muted", {}, " (you)") : null, h("div.muted.small", {}, u.email || "")),
      h("td", {}, role),
      h("td.small.account-state", {}, u.is_active ? "active" : "disabled"),
      h("td.muted.small", { title: u.last_login_at || "" }, u.last_login_at ? relativeTime(u.last_login_at) : "never"),
      h("td.small.num", {}, String(u.notes)),
      h("td.small.num", {}, bytes(u.storage_bytes)),
      h("td", {}, h("div.row", {}, toggle, remove)));
  }
  async function load() {
    clear(rows, (await api.get("/admin/users")).items.map(row));
  }
  panel.append(h("section.card#accounts-card", {}, h("h2", {}, "Users"),
    h("p.muted.small", {}, "A disabled account cannot sign in; its sessions and API keys stop working at once. "
      + "There is always at least one active admin."),
    h("div.table-scroll", {}, h("table.table", {}, h("thead", {}, h("tr", {},
      ["User", "Role", "Status", "Last sign-in", "Notes", "Storage", ""].map((t) => h("th", {}, t)))), rows))));
  return load();
}
