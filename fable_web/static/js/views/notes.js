// Notes: the list, filtered by tag and narrowed by search, one page at a time.
import { api } from "../api.js";
import { clear, h } from "../dom.js";
import { navigate } from "../router.js";
import { noteItem } from "../widgets/items.js";
import { semanticNotice } from "../widgets/llm.js";

function params(tag, q, kind) {
  const p = new URLSearchParams();
  if (q) p.set("q", q);
  if (tag) p.set("tag", tag);
  if (kind && kind !== "all") p.set("kind", kind);
  const s = p.toString();
  return s ? `/notes?${s}` : "/notes";
}

export async function notesView(main, _params, query) {
  const q = query.get("q") || "";
  const tag = query.get("tag") || "";
  const kind = query.get("kind") || "all";
  const list = h("ul.list");
  const more = h("button.btn.btn-sm.hidden", { type: "button" }, "Load more");
  const tags = h("div.row", { "aria-label": "Filter by tag" });
  const notice = h("div#search-notice");
  const kinds = h("div.segmented", { role: "group", "aria-label": "Show" },
    [["all", "All"], ["note", "Notes"], ["task", "Tasks"]].map(([value, label]) =>
      h("button", { type: "button", "aria-pressed": String(kind === value), on: { click: () => navigate(params(tag, q, value)) } }, label)));

  main.append(
    h("div.page-head", {},
      h("div", {}, h("h1", {}, q ? `Search: ${q}` : "Notes"),
        h("p.muted", {}, q ? "Best matches first." : "Everything you have written, newest first.")),
      h("div.row", {}, kinds, h("a.btn#trash-link", { href: "/trash" }, "Trash"), h("a.btn.btn-primary", { href: "/notes/new" }, "New note"))),
    h("div.stack", {}, tags, notice, h("div.card", {}, list, h("div.row", {}, more))));

  const tagList = await api.get("/tags", { limit: 30 });
  clear(tags, tagList.items.map((t) => h("a.chip", {
    href: params(t.tag === tag ? "" : t.tag, q, kind), "aria-pressed": String(t.tag === tag),
  }, `#${t.tag}`, h("span.count", {}, String(t.count)))));

  let cursor = null;
  async function load() {
    const filters = { tag: tag || undefined, kind, limit: 30, cursor: cursor || undefined };
    const page = q ? await api.get("/search", { query: q, ...filters, limit: 20 }) : await api.get("/notes", filters);
    list.append(...page.items.map((n) => noteItem(n, { snippet: q ? n.snippet : null })));
    cursor = page.next_cursor;
    more.classList.toggle("hidden", !cursor);
    if (!list.children.length) list.append(h("li.empty", {}, q ? "Nothing matches. Try fewer words." : "No notes here yet."));
  }
  more.addEventListener("click", load);
  await load();
  if (q) clear(notice, await semanticNotice(api, "Results match your words, not their meaning."));
}
