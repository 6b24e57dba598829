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

let live = null;  // the notes view on screen, while it is: { connected(), search(q) }

/** Search as you type: the top bar's words, typed on the notes page, searched in place (the URL
 * replaced, no navigation). False when the notes page is not on screen (the caller navigates). */
export function liveSearch(q) {
  if (!live?.connected()) return false;
  live.search(q);
  return true;
}

/** "tag:work" alone: that tag's notes, listed (the tag, or null). */
function tagAlone(q) {
  const only = q.match(/^\s*tag:(\S+)\s*$/i);
  return only ? only[1].toLowerCase() : null;
}

export async function notesView(main, _params, query) {
  const alone = tagAlone(query.get("q") || "");
  if (alone) { navigate(params(alone, "", query.get("kind") || "", query.get("sort") || ""), { replace: true }); return; }
  let q = query.get("q") || "";
  let tag = query.get("tag") || "";
  let chosenKind = ["note", "task", "all"].includes(query.get("kind")) ? query.get("kind") : "";
  const kindOf = () => chosenKind || defaultKind(q);
  const sort = SORTS.some(([value]) => value === query.get("sort")) ? query.get("sort") : "updated";
  const list = h("ul.list#notes-list");
  const count = h("p.notes-count.muted#notes-count", { "aria-live": "polite" });
  // what a search found, or that it is still looking, said to screen readers as it changes
  const status = h("p.muted.small#search-status", { role: "status", "aria-live": "polite" });
  const sorter = h("select#notes-sort", { "aria-label": "Sort by", disabled: Boolean(q),
    on: { change: () => navigate(params(tag, q, kindOf(), sorter.value)) } },
    SORTS.map(([value, label]) => h("option", { value, selected: value === sort }, label)));
  const more = h("button.btn.btn-sm.hidden", { type: "button" }, "Load more");
  const tags = h("div.row.notes-tags", { role: "group", "aria-label": "Filter by tag" });
  const notice = h("div#search-notice");
  const kindButtons = [["note", "Notes"], ["task", "Tasks"], ["all", "All"]].map(([value, label]) =>
    h("button", { type: "button", "aria-pressed": String(kindOf() === value), dataset: { kind: value },
      on: { click: () => navigate(params(tag, q, value, sort)) } }, label));
  const kinds = h("div.segmented", { role: "group", "aria-label": "Show" }, kindButtons);
  const heading = h("h1", {}, q ? `Search: ${q}` : "Notes");
  const lead = h("p.muted", {}, q ? "Best matches first." : "Everything you have written.");

  main.append(
    h("div.page-head", {},
      h("div", {}, heading, lead),
      h("div.row", {}, kinds, h("a.btn#trash-link", { href: "/trash" }, "Trash"), h("a.btn.btn-primary", { href: "/notes/new" }, "New note"))),
    h("div.stack", {}, tags, notice, h("div.row.notes-bar", {}, count, status, h("span.spacer"), sorter),
      h("div.card", {}, list, h("div.row", {}, more))));

  let tagList = null;
  async function tagsShown() {
    tagList ||= await api.get("/tags", { limit: 30 });
    clear(tags, tagList.items.map((t) => h("a.chip", {
      href: params(t.tag === tag ? "" : t.tag, q, kindOf(), sort), "aria-current": t.tag === tag ? "true" : undefined,
    }, `#${t.tag}`, h("span.count", {}, String(t.count)))), h("a.chip", { href: "/tags" }, "All tags…"));
  }

  let cursor = null;
  let generation = 0;  // one per query: an answer to an older one is dropped
  let controller = new AbortController();
  async function load() {
    const mine = generation;
    const first = !cursor;
    const kind = kindOf();
    const filters = { tag: tag || undefined, kind, limit: 30, cursor: cursor || undefined };
    const options = { signal: controller.signal };
    let page;
    try {
      page = q ? await api.get("/search", { query: q, ...filters, limit: 20 }, options)
        : await api.get("/notes", { ...filters, sort, preview: true }, options);
    } catch (error) {
      if (mine !== generation || error?.name === "AbortError") return;  // a newer query took over
      throw error;
    }
    if (mine !== generation) return;  // stale: never drawn over a newer query's answer
    if (first) clear(list);
    if (first && !q && page.total !== undefined && page.total !== null) {
      count.textContent = countLabel(page.total, Boolean(page.next_cursor), kind);
    }
    list.append(...page.items.map((n) => noteItem(n, { snippet: q ? n.snippet : n.preview })));
    cursor = page.next_cursor;
    more.classList.toggle("hidden", !cursor);
    if (!list.children.length) list.append(h("li.empty", {}, q ? "Nothing matches. Try fewer words." : "No notes here yet."));
    if (first && q && page.keyword_only) {  // meaning was not searched this time: say why, above the results
      clear(notice, h("p.notice#keyword-only", { role: "status" }, h("strong", {}, "Matched by words only. "),
        `${page.keyword_only}.`));
    } else if (first && notice.querySelector("#keyword-only")) {
      clear(notice);
      noticeShown();
    }
    if (first && q) list.dataset.query = q;  // whose results these are (bench/ui.py, the tests)
    else if (first) delete list.dataset.query;
    if (q) status.textContent = list.querySelector(".empty") ? `Nothing matches “${q}”.`
      : `${page.items.length}${cursor ? "+" : ""} ${page.items.length === 1 ? "result" : "results"} for “${q}”.`;
    else status.textContent = "";
  }

  /** A newer query: the older one's request cancelled, the URL replaced, the list drawn again. */
  function search(words) {
    if (words === q) return;  // a space more or less: the same query
    const alone = tagAlone(words);
    if (!q) { tag = ""; chosenKind = ""; }  // a search started from a listing looks at everything; refined, it keeps its tag
    q = alone ? "" : words;
    if (alone) tag = alone;
    else if (/(^|\s)tag:/i.test(words)) tag = "";  // a tag typed in the words stands for the page's
    generation += 1;
    controller.abort();
    controller = new AbortController();
    cursor = null;
    const path = params(tag, q, chosenKind, sort);
    if (location.pathname + location.search !== path) history.replaceState(null, "", path);
    heading.textContent = q ? `Search: ${q}` : "Notes";
    lead.textContent = q ? "Best matches first." : "Everything you have written.";
    sorter.disabled = Boolean(q);
    for (const button of kindButtons) button.setAttribute("aria-pressed", String(kindOf() === button.dataset.kind));
    if (q) count.textContent = "";
    status.textContent = q ? `Searching for “${q}”…` : "";
    const mine = generation;
    load().then(() => (mine === generation && tagList ? tagsShown() : null)).catch((error) => {
      if (mine !== generation) return;
      clear(list, h("li.empty", {}, error?.message || String(error)));
      status.textContent = error?.message || String(error);
    });
    noticeShown();
  }

  async function noticeShown() {
    if (!q) { clear(notice); return; }
    if (!notice.firstChild) clear(notice, await semanticNotice(api, "Results match your words, not their meaning."));
  }

  more.addEventListener("click", () => load());
  live = { connected: () => list.isConnected, search };
  const tagsLoaded = tagsShown();
  await load();
  await tagsLoaded;
  if (q) await noticeShown();
}
