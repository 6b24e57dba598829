// Settings → for admins: the instance (its public URL, used in links sent by mail; open or
// closed registration) and its accounts, which can be disabled and enabled.
import { api } from "../api.js";
import { clear, h, toast } from "../dom.js";

export function instanceCard() {
  const url = h("input#public-url", { type: "url", placeholder: "https://fable.example.com", "aria-label": "Public URL" });
  const note = h("p.muted.small#public-url-source");
  const open = h("input#registration-open", { type: "checkbox" });
  function show(s) {
    url.value = s.public_url || "";
    url.disabled = s.public_url_source === "configured";
    open.checked = s.registration_open;
    note.textContent = s.public_url_source === "configured" ? "Set by FABLE_BASE_URL."
      : s.public_url_source === "pinned" ? "Links in mail (password resets, email confirmation) use this address."
        : "Not set: password reset mail is not sent until it is.";
  }
  async function save(event) {
    event.preventDefault();
    const body = { registration_open: open.checked };
    if (!url.disabled && url.value.trim()) body.public_url = url.value.trim();
    try { show(await api.patch("/admin/settings", body)); toast("Saved"); } catch (e) { toast(e.message, { bad: true }); }
  }
  api.get("/admin/settings").then(show).catch((e) => toast(e.message, { bad: true }));
  return h("section.card#instance", {}, h("h2", {}, "Instance"),
    h("form.form", { on: { submit: save } },
      h("label", {}, "Public URL", url), note,
      h("label.row", {}, open, "Anyone may create an account"),
      h("div", {}, h("button.btn", { type: "submit" }, "Save"))));
}

export function accountsCard(me) {
  const rows = h("tbody#accounts");
  async function load() {
    const list = await api.get("/admin/users");
    clear(rows, list.items.map((u) => h("tr", { dataset: { username: u.username } },
      h("td", {}, u.username), h("td.muted.small", {}, u.email || ""), h("td.small", {}, u.role),
      h("td", {}, u.id === me.id ? null : h("button.btn.btn-ghost.btn-sm", {
        type: "button", class: u.is_active ? "btn-danger" : "", on: { click: () => toggle(u) },
      }, u.is_active ? "Disable" : "Enable")))));
  }
  async function toggle(u) {
    try { await api.patch(`/admin/users/${u.id}`, { is_active: !u.is_active }); await load(); }
    catch (e) { toast(e.message, { bad: true }); }
  }
  load();
  return h("section.card#accounts-card", {}, h("h2", {}, "Accounts"),
    h("table.table", {}, h("thead", {}, h("tr", {}, ["User", "Email", "Role", ""].map((t) => h("th", {}, t)))), rows));
}
