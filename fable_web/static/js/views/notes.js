// Notes: the list (notes by default; tasks or everything on demand), its count, sorted by
// update, creation or title, filtered by tag and narrowed by search, one page at a time.
import { api } from "../api.js";
import { clear, h } from "../dom.js";
import { navigate } from "../router.js";
import { noteItem } from "../widgets/items.js";
import { semanticNotice } from "../widgets/llm.js";

const SORTS = [["updated", "Recently updated"], ["created", "Recently created"], ["title", "Title A–Z"]];
const NOUNS = { note: ["note", "notes"], task: ["task", "tasks"], all: ["item", "items"] };

/** Notes by default; a search (the top bar's "Search notes and tasks") looks at everything. */
function defaultKind(q) { return q ? "all" : "note"; }

function params(tag, q, kind, sort = "updated") {
  const p = new URLSearchParams();
  if (q) p.set("q", q);
  if (tag) p.set("tag", tag);
  if (kind && kind !== defaultKind(q)) p.set("kind", kind);
  if (sort && sort !== "updated") p.set("sort", sort);
  const s = p.toString();
  return s ? `/notes?${s}` : "/notes";
}

/** "1 note", "245 notes", "1,000+ notes" (a listing counts exactly up to a cap). */
function countLabel(total, more, kind) {
  const [one, many] = NOUNS[kind] || NOUNS.all;
  return `${total.toLocaleString("en")}${more && total >= 1000 ? "+" : ""} ${total === 1 ? one : many}`;
}

export async function notesView(main, _params, query) {
  const only = (query.get("q") || "").match(/^\s*tag:(\S+)\s*$/i);  // "tag:work" alone: that tag's notes, listed
  if (only) { navigate(params(only[1].toLowerCase(), "", query.get("kind") || "", query.get("sort") || ""), { replace: true }); return; }
  const q = query.get("q") || "";
  const tag = query.get("tag") || "";
  const kind = ["note", "task", "all"].includes(query.get("kind")) ? query.get("kind") : defaultKind(q);
  const sort = SORTS.some(([value]) => value === query.get("sort")) ? query.get("sort") : "updated";
  const list = h("ul.list#notes-list");
  const count = h("p.notes-count.muted#notes-count", { "aria-live": "polite" });
  const sorter = h("select#notes-sort", { "aria-label": "Sort by", disabled: Boolean(q),
    on: { change: () => navigate(params(tag, q, kind, sorter.value)) } },
    SORTS.map(([value, label]) => h("option", { value, selected: value === sort }, label)));
  const more = h("button.btn.btn-sm.hidden", { type: "button" }, "Load more");
  const tags = h("div.row.notes-tags", { role: "group", "aria-label": "Filter by tag" });
  const notice = h("div#search-notice");
  const kinds = h("div.segmented", { role: "group", "aria-label": "Show" },
    [["note", "Notes"], ["task", "Tasks"], ["all", "All"]].map(([value, label]) =>
      h("button", { type: "button", "aria-pressed": String(kind === value), on: { click: () => navigate(params(tag, q, value, sort)) } }, label)));

  main.append(
    h("div.page-head", {},
      h("div", {}, h("h1", {}, q ? `Search: ${q}` : "Notes"),
        h("p.muted", {}, q ? "Best matches first." : "Everything you have written.")),
      h("div.row", {}, kinds, h("a.btn#trash-link", { href: "/trash" }, "Trash"), h("a.btn.btn-primary", { href: "/notes/new" }, "New note"))),
    h("div.stack", {}, tags, notice, h("div.row.notes-bar", {}, count, h("span.spacer"), sorter),
      h("div.card", {}, list, h("div.row", {}, more))));

  async function tagsShown() {
    const tagList = await api.get("/tags", { limit: 30 });
    clear(tags, tagList.items.map((t) => h("a.chip", {
      href: params(t.tag === tag ? "" : t.tag, q, kind, sort), "aria-current": t.tag === tag ? "true" : undefined,
    }, `#${t.tag}`, h("span.count", {}, String(t.count)))), h("a.chip", { href: "/tags" }, "All tags…"));
  }

  let cursor = null;
  async function load() {
    const first = !cursor;
    const filters = { tag: tag || undefined, kind, limit: 30, cursor: cursor || undefined };
    const page = q ? await api.get("/search", { query: q, ...filters, limit: 20 })
      : await api.get("/notes", { ...filters, sort, preview: true });
    if (first && !q && page.total !== undefined && page.total !== null) {
      count.textContent = countLabel(page.total, Boolean(page.next_cursor), kind);
    }
    list.append(...page.items.map((n) => noteItem(n, { snippet: q ? n.snippet : n.preview })));
    cursor = page.next_cursor;
    more.classList.toggle("hidden", !cursor);
    if (!list.children.length) list.append(h("li.empty", {}, q ? "Nothing matches. Try fewer words." : "No notes here yet."));
  }
  more.addEventListener("click", load);
  const tagsLoaded = tagsShown();
  await load();
  await tagsLoaded;
  if (q) clear(notice, await semanticNotice(api, "Results match your words, not their meaning."));
}
