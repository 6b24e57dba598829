// Sharing: what others share with you, what you share, and the groups you share with.
import { api } from "../api.js";
import { clear, confirmDialog, h, relativeTime, toast } from "../dom.js";
import { session } from "../session.js";

const WORDS = { viewer: "can view", editor: "can edit", admin: "can edit, share and delete" };

function itemLink(share) {
  const href = share.project_id ? `/projects/${share.project_id}` : `/notes/${share.note_id}`;
  return h("a", { href }, share.title, h("span.muted.small", {}, share.project_id ? " · project" : " · note"));
}

function withMeCard() {
  const body = h("tbody");
  async function load() {
    const page = await api.get("/shares", { shared: "with_me" });
    clear(body, page.items.length ? page.items.map((s) => h("tr", {},
      h("td", {}, itemLink(s)), h("td", {}, s.owner), h("td", {}, WORDS[s.permission]),
      h("td.muted", {}, s.with_group ? `through ${s.with_group}` : "to you"),
      h("td", {}, s.with_user ? h("button.btn.btn-ghost.btn-sm", { type: "button", on: { click: () => leave(s) } }, "Leave")
        : null)))
      : h("tr", {}, h("td.empty", { colSpan: 5 }, "Nothing is shared with you yet.")));
  }
  async function leave(share) {
    if (!(await confirmDialog(`Leave “${share.title}”?`, `${share.owner} would have to share it with you again.`, "Leave"))) return;
    try { await api.del(`/shares/${share.id}`); await load(); } catch (e) { toast(e.message, { bad: true }); }
  }
  load();
  return h("section.card#shared-with-me", {}, h("h2", {}, "Shared with me"),
    h("table.table", {}, h("thead", {}, h("tr", {}, ["Item", "Owner", "You", "How", ""].map((t) => h("th", {}, t)))), body));
}

function byMeCard() {
  const body = h("tbody");
  async function load() {
    const page = await api.get("/shares", { shared: "by_me" });
    clear(body, page.items.length ? page.items.map((s) => h("tr", {},
      h("td", {}, itemLink(s)), h("td", {}, s.with_group ? `${s.with_group} (group)` : s.with_user),
      h("td", {}, WORDS[s.permission]), h("td.muted", {}, relativeTime(s.created_at)),
      h("td", {}, h("button.btn.btn-ghost.btn-sm.btn-danger", { type: "button", on: { click: () => revoke(s) } }, "Revoke"))))
      : h("tr", {}, h("td.empty", { colSpan: 5 }, "You share nothing yet: open a project or note and press Share.")));
  }
  async function revoke(share) {
    try { await api.del(`/shares/${share.id}`); toast("Share revoked"); await load(); }
    catch (e) { toast(e.message, { bad: true }); }
  }
  load();
  return h("section.card#shared-by-me", {}, h("h2", {}, "Shared by me"),
    h("table.table", {}, h("thead", {}, h("tr", {}, ["Item", "With", "They", "Since", ""].map((t) => h("th", {}, t)))), body));
}

function groupDetail(group, reload) {
  const box = h("div.group-detail");
  const manage = session.user.role === "admin" || group.role === "owner";
  async function load() {
    const detail = await api.get(`/groups/${group.id}`);
    const name = h("input", { type: "text", required: true, placeholder: "username", "aria-label": `Add a member to ${group.name}` });
    const role = h("select", { "aria-label": "Role" }, h("option", { value: "member" }, "member"), h("option", { value: "owner" }, "owner"));
    async function add(event) {
      event.preventDefault();
      try { await api.post(`/groups/${group.id}/members`, { username: name.value.trim(), role: role.value }); await load(); }
      catch (e) { toast(e.message, { bad: true }); }
    }
    async function remove(username) {
      try { await api.del(`/groups/${group.id}/members/${encodeURIComponent(username)}`); }
      catch (e) { toast(e.message, { bad: true }); return; }
      if (username === session.user.username) await reload(); else await load();
    }
    clear(box,
      detail.member_list.length ? h("ul.members", {}, detail.member_list.map((m) => h("li.row", {},
        h("span", {}, m.username), h("span.muted.small", {}, m.role), h("span.spacer"),
        manage || m.username === session.user.username
          ? h("button.btn.btn-ghost.btn-sm", { type: "button", on: { click: () => remove(m.username) } },
            m.username === session.user.username ? "Leave" : "Remove") : null)))
        : h("p.muted.small", {}, "Its members are shown to them and to admins."),
      manage ? h("form.row", { on: { submit: add } }, h("div.spacer", {}, name), role, h("button.btn.btn-sm", { type: "submit" }, "Add")) : null);
  }
  load();
  return box;
}

function groupsCard() {
  const list = h("div.groups#groups");
  const admin = session.user.role === "admin";
  const name = h("input#new-group", { type: "text", required: true, placeholder: "e.g. Household", "aria-label": "Group name" });
  async function load() {
    const page = await api.get("/groups");
    clear(list, page.items.length ? page.items.map((g) => {
      const open = h("details.group", {}, h("summary", {}, h("strong", {}, g.name),
        h("span.muted.small", {}, ` · ${g.members} member${g.members === 1 ? "" : "s"}${g.role ? ` · you: ${g.role}` : ""}`),
        admin ? h("button.btn.btn-ghost.btn-sm.btn-danger", { type: "button", on: { click: (e) => { e.preventDefault(); remove(g); } } }, "Delete") : null));
      open.addEventListener("toggle", () => {
        if (open.open && !open.querySelector(".group-detail")) open.append(groupDetail(g, load));
      }, { once: false });
      return open;
    }) : h("p.empty", {}, admin ? "No groups yet: create one to share with several people at once." : "No groups yet."));
  }
  async function create(event) {
    event.preventDefault();
    try { await api.post("/groups", { name: name.value.trim() }); name.value = ""; await load(); }
    catch (e) { toast(e.message, { bad: true }); }
  }
  async function remove(group) {
    if (!(await confirmDialog(`Delete the group “${group.name}”?`, "What was shared with it is no longer shared with its members."))) return;
    try { await api.del(`/groups/${group.id}`); await load(); } catch (e) { toast(e.message, { bad: true }); }
  }
  load();
  return h("section.card#groups-card", {}, h("h2", {}, "Groups"),
    admin ? h("form.row", { on: { submit: create } }, h("div.spacer", {}, name), h("button.btn", { type: "submit" }, "Create group")) : null,
    list);
}

export async function sharedView(main) {
  main.append(
    h("div.page-head", {}, h("div", {}, h("h1", {}, "Sharing"),
      h("p.muted", {}, "Projects and notes shared with you and by you, and the groups to share with."))),
    h("div.stack", {}, withMeCard(), byMeCard(), groupsCard()));
}
