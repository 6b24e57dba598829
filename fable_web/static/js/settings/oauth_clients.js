// Settings → OAuth clients (admins): every client registration, how many people allowed it,
// and a switch to disable one (its tokens stop working at once) or enable it again.
import { api } from "../api.js";
import { clear, h, relativeTime, toast } from "../dom.js";

export function render(panel) {
  const rows = h("tbody");
  const more = h("button.btn.btn-sm.hidden", { type: "button" }, "More");
  let cursor = null;
  async function load(append = false) {
    const page = await api.get("/oauth/clients", { cursor: append ? cursor : undefined });
    cursor = page.next_cursor || null;
    more.classList.toggle("hidden", !cursor);
    const built = page.items.map((c) => h("tr", { dataset: { client: c.client_id } },
      h("td", { class: c.disabled_at ? "client-disabled" : "" }, c.name),
      h("td.mono", {}, c.redirect_uris.join(" ")), h("td.num", {}, String(c.connections)),
      h("td.muted", {}, relativeTime(c.created_at)),
      h("td", {}, h("button.btn.btn-ghost.btn-sm", { type: "button", class: c.disabled_at ? "" : "btn-danger",
        on: { click: () => toggle(c) } }, c.disabled_at ? "Enable" : "Disable"))));
    if (append) rows.append(...built);
    else clear(rows, built.length ? built : h("tr", {}, h("td.empty", { colSpan: 5 }, "No OAuth client has registered.")));
  }
  async function toggle(client) {
    try {
      await api.post("/oauth/clients/disabled", { client_id: client.client_id, disabled: !client.disabled_at });
      await load();
    } catch (e) { toast(e.message, { bad: true }); }
  }
  more.addEventListener("click", () => load(true));
  panel.append(h("section.card#oauth-clients", {}, h("h2", {}, "OAuth clients"),
    h("p.muted.small", {}, "Apps that registered themselves to connect by URL. Disabling one ends every connection to it."),
    h("div.table-scroll", {}, h("table.table", {},
      h("thead", {}, h("tr", {}, ["Name", "Redirect URIs", "People", "Registered", ""].map((t) => h("th", {}, t)))), rows)),
    more));
  return load();
}
