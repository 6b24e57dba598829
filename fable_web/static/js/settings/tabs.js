// The settings tabs, in the order they are shown: one module each, exporting render(panel, user).
// Adding a tab is one line here (and its module); admin tabs are shown to admins only.
export const TABS = [
  { id: "account", label: "Account", load: () => import("./account.js") },
  { id: "preferences", label: "Preferences", load: () => import("./preferences.js") },
  { id: "profile", label: "Profile", load: () => import("./profile.js") },
  { id: "calendar-sync", label: "Calendar sync", load: () => import("./calendar_sync.js") },
  { id: "keys", label: "API keys", load: () => import("./keys.js") },
  { id: "connections", label: "Connections", load: () => import("./connections.js") },
  { id: "import", label: "Import", load: () => import("./import.js") },
  { id: "data", label: "Data", load: () => import("./data.js") },
  { id: "users", label: "Users", admin: true, load: () => import("./users.js") },
  { id: "oauth-clients", label: "OAuth clients", admin: true, load: () => import("./oauth_clients.js") },
  { id: "instance", label: "Instance", admin: true, load: () => import("./instance.js") },
  { id: "audit", label: "Logs", admin: true, load: () => import("./audit.js") },
  { id: "models", label: "Models", admin: true, load: () => import("./models.js") },
];
