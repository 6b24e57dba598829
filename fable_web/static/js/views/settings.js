// Settings: API keys (created once, shown once, with an MCP client config), account, email,
// password, signed-in sessions; for admins, the instance and its accounts, and the models.
import { api } from "../api.js";
import { clear, confirmDialog, h, relativeTime, toast } from "../dom.js";
import { session } from "../session.js";
import { accountsCard, instanceCard } from "../widgets/admin.js";
import { emailCard, sessionsCard } from "../widgets/sessions.js";
import { modelsCard } from "../widgets/models.js";

function copyButton(text, label = "Copy") {
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

function apiKeysCard() {
  const rows = h("tbody");
  const reveal = h("div");
  const name = h("input#key-name", { type: "text", placeholder: "e.g. Claude Desktop", "aria-label": "Key name", required: true });
  const scope = h("select#key-scope", { "aria-label": "Scope" },
    h("option", { value: "write" }, "read and write"), h("option", { value: "read" }, "read only"));
  async function load() {
    const keys = await api.get("/api-keys");
    clear(rows, keys.items.length ? keys.items.map((k) => h("tr", {},
      h("td", {}, k.name), h("td.mono", {}, `fable_${k.prefix}_…`), h("td", {}, k.scope),
      h("td.muted", {}, k.last_used_at ? relativeTime(k.last_used_at) : "never"),
      h("td", {}, h("button.btn.btn-ghost.btn-sm.btn-danger", { type: "button", on: { click: () => revoke(k) } }, "Revoke"))))
      : h("tr", {}, h("td.empty", { colSpan: 5 }, "No API keys yet.")));
  }
  async function revoke(key) {
    if (!(await confirmDialog(`Revoke “${key.name}”?`, "Clients using it stop working at once.", "Revoke"))) return;
    await api.del(`/api-keys/${key.id}`);
    await load();
  }
  async function create(event) {
    event.preventDefault();
    try {
      const created = await api.post("/api-keys", { name: name.value.trim(), scope: scope.value });
      name.value = "";
      clear(reveal, revealed(created));
      await load();
    } catch (e) { toast(e.message, { bad: true }); }
  }
  load();
  return h("section.card#api-keys", {}, h("h2", {}, "API keys"),
    h("p.muted.small", {}, "For MCP clients and scripts. Keys act as you; a read-only key cannot change anything."),
    h("form.row", { on: { submit: create } }, h("div.spacer", {}, name), scope, h("button.btn.btn-primary", { type: "submit" }, "Create key")),
    reveal,
    h("table.table", {}, h("thead", {}, h("tr", {}, ["Name", "Key", "Scope", "Last used", ""].map((t) => h("th", {}, t)))), rows));
}

function passwordCard() {
  const current = h("input", { type: "password", autocomplete: "current-password", required: true });
  const next = h("input", { type: "password", autocomplete: "new-password", required: true });
  const error = h("p.error.hidden", { role: "alert" });
  async function change(event) {
    event.preventDefault();
    error.classList.add("hidden");
    try {
      await api.post("/auth/password", { current_password: current.value, new_password: next.value });
      current.value = next.value = "";
      toast("Password changed. Other sessions are signed out.");
    } catch (e) { error.textContent = e.message; error.classList.remove("hidden"); }
  }
  return h("section.card#password-card", {}, h("h2", {}, "Password"),
    h("form.form", { on: { submit: change } },
      h("label", {}, "Current password", current), h("label", {}, "New password", next), error,
      h("div", {}, h("button.btn", { type: "submit" }, "Change password"))));
}

async function signOut() {
  await api.post("/auth/logout");
  location.assign("/login");
}

export async function settingsView(main) {
  const user = session.user;
  main.append(
    h("div.page-head", {}, h("div", {}, h("h1", {}, "Settings"), h("p.muted", {}, "Your account and the keys your agents use."))),
    h("div.grid-2", {}, apiKeysCard(),
      h("div.stack", {},
        h("section.card", {}, h("h2", {}, "Account"), h("dl.kv", {},
          h("dt", {}, "Username"), h("dd", {}, user.username),
          h("dt", {}, "Role"), h("dd", {}, user.role),
          h("dt", {}, "Shortcuts"), h("dd", {}, h("kbd", {}, "?"))),
          h("button.btn.btn-sm.sign-out-inline", { type: "button", on: { click: signOut } }, "Sign out")),
        emailCard(user),
        passwordCard(),
        sessionsCard(),
        user.role === "admin" ? [instanceCard(), accountsCard(user), modelsCard()] : null)));
}
