// Settings → Audit log (admins): every administrative action, newest first, a page at a time.
import { api } from "../api.js";
import { h, relativeTime } from "../dom.js";

function target(t) {
  if (!t) return "";
  return [t.kind, t.name || t.id].filter((part) => part !== undefined && part !== null).join(" ");
}

function said(value) {
  if (value && typeof value === "object" && "from" in value && "to" in value) return `${value.from ?? "—"} → ${value.to ?? "—"}`;
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

function details(d) {
  return Object.entries(d || {}).map(([key, value]) => `${key.replaceAll("_", " ")}: ${said(value)}`).join("; ");
}

export function render(panel) {
  const rows = h("tbody#audit-rows");
  const more = h("button.btn.btn-sm.hidden#audit-more", { type: "button", on: { click: () => load(cursor) } }, "Older entries");
  let cursor = null;
  async function load(from) {
    const page = await api.get("/admin/audit", { limit: 50, cursor: from });
    if (!from && !page.items.length) rows.append(h("tr", {}, h("td.empty", { colSpan: 5 }, "Nothing yet.")));
    rows.append(...page.items.map((e) => h("tr", { dataset: { action: e.action } },
      h("td.muted.small", { title: e.at }, relativeTime(e.at)),
      h("td.small", {}, e.actor || ""),
      h("td.mono", {}, e.action),
      h("td.small", {}, target(e.target)),
      h("td.small.muted", {}, details(e.details)))));
    cursor = page.next_cursor;
    more.classList.toggle("hidden", !cursor);
  }
  panel.append(h("section.card#audit-card", {}, h("h2", {}, "Audit log"),
    h("p.muted.small", {}, "What admins and operators changed: accounts, registration, invitations, mail."),
    h("div.table-scroll", {}, h("table.table", {}, h("thead", {}, h("tr", {},
      ["When", "Who", "Action", "Target", "Details"].map((t) => h("th", {}, t)))), rows)), more));
  return load(null);
}
