// Settings → API keys: created once, shown once, with ready-to-paste MCP client configurations.
import { api } from "../api.js";
import { clear, confirmDialog, h, relativeTime, toast } from "../dom.js";
import { chooser, listToolsets, summary, toolsetsCell } from "./toolsets.js";

export function copyButton(text, label = "Copy") {
  return h("button.btn.btn-sm", { type: "button", on: { click: async (e) => {
    try { await navigator.clipboard.writeText(text); e.target.textContent = "Copied"; }
    catch { toast("Select the text and copy it by hand", { bad: true }); }
  } } }, label);
}

/** The new key, visible this once: the key itself and ready-to-paste MCP configurations. */
function revealed(created) {
  const http = JSON.stringify(created.mcp_config.http, null, 2);
  const stdio = JSON.stringify(created.mcp_config.stdio, null, 2);
  return h("div.secret#new-key", { role: "status" },
    h("strong", {}, `Key “${created.name}” created. Copy it now: it will not be shown again.`),
    h("div.row", {}, h("code#new-key-value", {}, created.key), copyButton(created.key)),
    h("div.pane-label", {}, "MCP client over HTTP"), h("pre", {}, http), h("div.row", {}, copyButton(http, "Copy config")),
    h("div.pane-label", {}, "Claude Desktop and other stdio hosts"), h("pre", {}, stdio));
}

export async function render(panel) {
  const rows = h("tbody");
  const reveal = h("div");
  const lines = await listToolsets();
  const name = h("input#key-name", { type: "text", placeholder: "e.g. Claude Desktop", "aria-label": "Key name", required: true });
  const scope = h("select#key-scope", { "aria-label": "Scope" },
    h("option", { value: "write" }, "read and write"), h("option", { value: "read" }, "read only"));
  const error = h("p.error.hidden#key-error", { role: "alert" });
  const offered = h("span.toolsets-summary#key-toolsets-summary");
  const choosing = h("details.toolsets-details#key-toolsets");
  let choice;
  function freshChoice() {
    choice = chooser(lines, null, "Tools its MCP client is offered");
    choice.onChange(() => { offered.textContent = summary(choice.read()) || "nothing"; });
    offered.textContent = summary(choice.read());
    clear(choosing, h("summary", {}, "Tools offered: ", offered), choice.el);
    choosing.open = false;
  }
  freshChoice();
  async function load() {
    const keys = await api.get("/api-keys");
    clear(rows, keys.items.length ? keys.items.map((k) => h("tr", { dataset: { key: k.id } },
      h("td", {}, k.name), h("td.mono", {}, `fable_${k.prefix}_…`), h("td", {}, k.scope),
      toolsetsCell({ id: `key-${k.id}`, entries: k.toolsets ?? null, name: k.name, lines, reload: load,
        save: (toolsets) => api.patch(`/api-keys/${k.id}`, { toolsets }) }),
      h("td.muted", {}, k.last_used_at ? relativeTime(k.last_used_at) : "never"),
      h("td", {}, h("button.btn.btn-ghost.btn-sm.btn-danger", { type: "button", on: { click: () => revoke(k) } }, "Revoke"))))
      : h("tr", {}, h("td.empty", { colSpan: 6 }, "No API keys yet.")));
  }
  async function revoke(key) {
    if (!(await confirmDialog(`Revoke “${key.name}”?`, "Clients using it stop working at once.", "Revoke"))) return;
    await api.del(`/api-keys/${key.id}`);
    await load();
  }
  async function create(event) {
    event.preventDefault();
    error.classList.add("hidden");
    const toolsets = choice.read();
    try {
      if (!toolsets.length) throw new Error("Choose the tools it is offered: the default set, everything or a toolset.");
      const created = await api.post("/api-keys", { name: name.value.trim(), scope: scope.value, toolsets });
      name.value = "";
      freshChoice();
      clear(reveal, revealed(created));
      await load();
    } catch (e) {
      clear(error, e.message);
      error.classList.remove("hidden");
    }
  }
  panel.append(h("section.card#api-keys", {}, h("h2", {}, "API keys"),
    h("p.muted.small", {}, "For MCP clients and scripts. Keys act as you; a read-only key cannot change anything. "
      + "Each key's MCP client is offered the tools you choose for it (scripts may call any tool)."),
    h("form.stack#key-form", { on: { submit: create } },
      h("div.row", {}, h("div.spacer", {}, name), scope, h("button.btn.btn-primary", { type: "submit" }, "Create key")),
      choosing, error),
    reveal,
    h("div.table-scroll", {}, h("table.table.keys-table", {},
      h("thead", {}, h("tr", {}, ["Name", "Key", "Scope", "Tools", "Last used", ""].map((t) => h("th", {}, t)))), rows))));
  return load();
}
