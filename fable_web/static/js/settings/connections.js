// Settings → Connections: the MCP clients (OAuth) you allowed to act as you: the tools each is
// offered (editable) and revoke.
import { api } from "../api.js";
import { clear, confirmDialog, h, relativeTime } from "../dom.js";
import { listToolsets, toolsetsCell } from "./toolsets.js";

export async function render(panel) {
  const rows = h("tbody");
  const lines = await listToolsets();
  async function load() {
    const { items } = await api.get("/oauth/connections");
    clear(rows, items.length ? items.map((c) => h("tr", { dataset: { connection: c.id } },
      h("td", {}, c.client), h("td.mono", {}, c.redirect_hosts.join(", ")),
      h("td", {}, c.scope === "write" ? "read and write" : "read only"),
      toolsetsCell({ id: `connection-${c.id}`, entries: c.toolsets ?? null, name: c.client, lines, reload: load,
        save: (toolsets) => api.patch(`/oauth/connections/${c.id}`, { toolsets }) }),
      h("td.muted", {}, c.last_used_at ? relativeTime(c.last_used_at) : "never"),
      h("td", {}, h("button.btn.btn-ghost.btn-sm.btn-danger", { type: "button", on: { click: () => revoke(c) } }, "Revoke"))))
      : h("tr", {}, h("td.empty", { colSpan: 6 }, "No connected apps. Add Fable to an MCP client by its URL to see it here.")));
  }
  async function revoke(connection) {
    if (!(await confirmDialog(`Revoke “${connection.client}”?`, "It stops working at once and must ask you again.", "Revoke"))) return;
    await api.del(`/oauth/connections/${connection.id}`);
    await load();
  }
  panel.append(h("section.card#connections", {}, h("h2", {}, "Connected apps"),
    h("p.muted.small", {}, `MCP clients you allowed through Fable's sign-in page (OAuth), and the tools each is offered. `
      + `Connect one with the URL ${location.origin}/mcp.`),
    h("div.table-scroll", {}, h("table.table.connections-table", {},
      h("thead", {}, h("tr", {}, ["App", "Sends you back to", "May", "Tools", "Last used", ""].map((t) => h("th", {}, t)))), rows))));
  return load();
}
