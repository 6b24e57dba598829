// Settings → Logs (admins): the app logs by category (audit, errors, requests, tool usage), newest
// first, filtered by user, action and text, a page at a time (list_logs).
import { api } from "../api.js";
import { h, relativeTime } from "../dom.js";

const CATEGORIES = [["audit", "Audit"], ["error", "Errors"], ["request", "Requests"], ["usage", "Tool calls"]];

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

function ms(e) {
  return e.duration_ms === undefined ? "" : `${Math.round(e.duration_ms * 10) / 10} ms`;
}

function about(e) {
  if (e.category === "audit") return [target(e.target), details(e.details)].filter(Boolean).join(" — ");
  if (e.category === "request") return [e.method, e.status, ms(e)].filter(Boolean).join(" ");
  const failure = e.error_type ? `${e.error_type}: ${e.error_message || ""}` : "";
  const line = [e.surface, ms(e), failure].filter(Boolean).join(" · ");
  if (!e.traceback) return line;
  return h("details", {}, h("summary", {}, line), h("pre.small.traceback", {}, e.traceback));
}

export function render(panel) {
  const rows = h("tbody#audit-rows");
  const more = h("button.btn.btn-sm.hidden#audit-more", { type: "button", on: { click: () => load(cursor) } }, "Older entries");
  const category = h("select#log-category", { "aria-label": "Category" },
    CATEGORIES.map(([value, label]) => h("option", { value }, label)));
  const user = h("input#log-user", { type: "search", placeholder: "User", "aria-label": "User" });
  const action = h("input#log-action", { type: "search", placeholder: "Action or route", "aria-label": "Action" });
  const query = h("input#log-query", { type: "search", placeholder: "Text", "aria-label": "Text" });
  const form = h("form.row#log-filters", { on: { submit: (ev) => { ev.preventDefault(); reload(); } } },
    category, user, action, query, h("button.btn.btn-sm", { type: "submit" }, "Filter"));
  category.addEventListener("change", () => reload());
  let cursor = null;
  function filters() {
    const out = { category: category.value, limit: 50 };
    for (const [key, input] of [["user", user], ["action", action], ["query", query]]) {
      if (input.value.trim()) out[key] = input.value.trim();
    }
    return out;
  }
  async function load(from) {
    const page = await api.get("/logs", { ...filters(), cursor: from });
    if (!from && !page.items.length) rows.append(h("tr", {}, h("td.empty", { colSpan: 4 }, "Nothing yet.")));
    rows.append(...page.items.map((e) => h("tr", { dataset: { action: e.action, category: e.category } },
      h("td.muted.small", { title: e.at }, relativeTime(e.at)),
      h("td.small", {}, e.user || ""),
      h("td.mono", {}, e.action),
      h("td.small.muted", {}, about(e)))));
    cursor = page.next_cursor || null;
    more.classList.toggle("hidden", !cursor);
  }
  function reload() {
    rows.replaceChildren();
    cursor = null;
    return load(null);
  }
  panel.append(h("section.card#audit-card", {}, h("h2", {}, "Logs"),
    h("p.muted.small", {}, "Audit: what admins, operators and users changed (accounts, sign-ins, keys, shares). "
      + "Errors: unexpected failures with their tracebacks. Requests: every API call, with its duration."),
    form,
    h("div.table-scroll", {}, h("table.table", {}, h("thead", {}, h("tr", {},
      ["When", "Who", "Action", "Details"].map((t) => h("th", {}, t)))), rows)), more));
  return load(null);
}
