// Feeds: subscribe to RSS/Atom (a name and a category), the feeds by category with their unread
// counts, their items newest first (read in place, as text: a feed's HTML is never rendered),
// refresh now, save an item as a note, mark read, unsubscribe. All through /api/feeds and
// /api/feed-items.
import { api } from "../api.js";
import { clear, confirmDialog, formatIn, h, toast } from "../dom.js";

const PAGE = 30;

function when(iso) {
  return formatIn(iso, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
}

function subscribeForm(onSubscribed) {
  const url = h("input#feed-url", { type: "url", required: true, placeholder: "https://example.org/feed.xml", "aria-label": "Feed address" });
  const name = h("input#feed-name", { type: "text", maxLength: 200, placeholder: "name (the feed's title)", "aria-label": "Name" });
  const category = h("input#feed-category", { type: "text", maxLength: 100, placeholder: "category", "aria-label": "Category" });
  const button = h("button.btn.btn-primary", { type: "submit" }, "Subscribe");
  async function submit(event) {
    event.preventDefault();
    const body = { url: url.value.trim() };
    if (name.value.trim()) body.name = name.value.trim();
    if (category.value.trim()) body.category = category.value.trim();
    button.disabled = true;
    try {
      const feed = await api.post("/feeds", body);
      for (const input of [url, name, category]) input.value = "";
      toast(`Subscribed to ${feed.name}`);
      await onSubscribed(feed);
    } catch (e) { toast(e.message, { bad: true }); } finally { button.disabled = false; }
  }
  return h("form.card.stack#feed-form", { on: { submit } }, h("h2", {}, "Subscribe to a feed"),
    h("div.row", {}, h("div.spacer", {}, url), name, category, button));
}

/** The feeds grouped by category, each a button choosing it; "All feeds" first. */
function feedList(feeds, chosen, choose, unsubscribe) {
  const groups = new Map();
  for (const f of feeds) {
    const key = f.category || "";
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(f);
  }
  const total = feeds.reduce((n, f) => n + f.unread, 0);
  const entry = (label, unread, pressed, onClick, extra) => h("li.feed-entry", {},
    h("button.feed-choice", { type: "button", "aria-pressed": String(pressed), on: { click: onClick } },
      h("span.feed-name", {}, label), unread ? h("span.chip.feed-unread", {}, String(unread)) : null), extra);
  return h("ul.list.feed-list#feed-list", {},
    entry("All feeds", total, chosen === null, () => choose(null)),
    [...groups].map(([category, list]) => [
      h("li.feed-category", {}, category || "Uncategorised"),
      list.map((f) => entry(f.name, f.unread, chosen === f.id, () => choose(f.id), [
        f.last_error ? h("span.muted.small.feed-error", { title: f.last_error }, "refresh failed") : null,
        h("button.btn.btn-ghost.btn-sm.btn-danger", { type: "button", "aria-label": `Unsubscribe from ${f.name}`,
          on: { click: () => unsubscribe(f) } }, "×")])),
    ]));
}

function itemView(item, actions) {
  const text = h("div.feed-text", { hidden: true });
  const toggle = h("button.feed-title", { type: "button", "aria-expanded": "false", on: { click: async () => {
    const open = text.hidden;
    text.hidden = !open;
    toggle.setAttribute("aria-expanded", String(open));
    if (open && !text.textContent) clear(text, item.text || item.snippet || "(no text)");
    if (snippet) snippet.hidden = open;
    if (open && !item.read) await actions.read(item, li);
  } } }, item.title);
  const link = item.link ? h("a.small", { href: item.link, target: "_blank", rel: "noopener noreferrer nofollow" }, "Open") : null;
  const save = item.note_id
    ? h("a.btn.btn-ghost.btn-sm", { href: `/notes/${item.note_id}` }, "Saved note")
    : h("button.btn.btn-ghost.btn-sm.feed-save", { type: "button", on: { click: () => actions.save(item, li) } }, "Save as note");
  const snippet = item.snippet ? h("p.feed-snippet.small", {}, item.snippet) : null;
  const li = h("li.feed-item", { class: item.read ? "read" : "", dataset: { id: String(item.id) } },
    toggle,
    h("div.row.feed-meta.muted.small", {}, h("span", {}, item.feed), h("time", { datetime: item.published }, when(item.published)),
      item.author ? h("span", {}, item.author) : null, h("span.spacer"), link, save),
    snippet,
    text);
  return li;
}

export async function feedsView(main) {
  const side = h("div.card#feed-side");
  const list = h("div#feed-items.stack");
  const more = h("button.btn.btn-ghost#feed-more", { type: "button", hidden: true }, "Older items");
  const unreadOnly = h("input#feed-unread", { type: "checkbox" });
  const refresh = h("button.btn#feed-refresh", { type: "button" }, "Refresh");
  let feeds = [];
  let chosen = null;
  let shown = [];
  let cursor = null;

  async function loadFeeds() {
    feeds = (await api.get("/feeds")).feeds;
    if (chosen !== null && !feeds.some((f) => f.id === chosen)) chosen = null;
    clear(side, h("h2", {}, "Your feeds"), feeds.length ? feedList(feeds, chosen, choose, unsubscribe)
      : h("p.empty", {}, "No feeds yet: subscribe to one above."));
  }
  async function loadItems({ append = false } = {}) {
    const page = await api.get("/feed-items", { feed_id: chosen, unread: unreadOnly.checked || null, full: true,
      limit: PAGE, cursor: append ? cursor : null });
    shown = append ? [...shown, ...page.items] : page.items;
    cursor = page.next_cursor || null;
    more.hidden = !cursor;
    clear(list, shown.length ? h("ul.list", {}, shown.map((i) => itemView(i, { read, save })))
      : h("p.empty", {}, feeds.length ? "Nothing to read here." : "Items of your feeds appear here."));
  }
  async function choose(id) { chosen = id; await loadFeeds(); await loadItems(); }
  async function read(item, li) {
    try {
      await api.post("/feed-items/read", { item_ids: [item.id] });
      item.read = true;
      li.classList.add("read");
      const feed = feeds.find((f) => f.id === item.feed_id);
      if (feed) { feed.unread = Math.max(0, feed.unread - 1); clear(side, h("h2", {}, "Your feeds"), feedList(feeds, chosen, choose, unsubscribe)); }
    } catch (e) { toast(e.message, { bad: true }); }
  }
  async function save(item, li) {
    try {
      const saved = await api.post(`/feed-items/${item.id}/note`);
      item.note_id = saved.note_id;
      item.read = true;
      li.replaceWith(itemView(item, { read, save }));
      toast(saved.created ? `Saved as note “${saved.title}”` : "Already saved");
    } catch (e) { toast(e.message, { bad: true }); }
  }
  async function unsubscribe(feed) {
    if (!(await confirmDialog(`Unsubscribe from ${feed.name}?`, "Its items are deleted; notes saved from them stay.", "Unsubscribe"))) return;
    try { await api.del(`/feeds/${feed.id}`); await loadFeeds(); await loadItems(); } catch (e) { toast(e.message, { bad: true }); }
  }
  refresh.addEventListener("click", async () => {
    refresh.disabled = true;
    try {
      const result = await api.post("/feeds/refresh", chosen === null ? {} : { feed_id: chosen });
      const failed = result.feeds.filter((f) => f.status === "failed").length;
      toast(`${result.new_items} new item${result.new_items === 1 ? "" : "s"}${failed ? `, ${failed} failed` : ""}`, { bad: failed > 0 });
      await loadFeeds();
      await loadItems();
    } catch (e) { toast(e.message, { bad: true }); } finally { refresh.disabled = false; }
  });
  unreadOnly.addEventListener("change", () => loadItems());
  more.addEventListener("click", () => loadItems({ append: true }));

  main.append(h("div.page-head", {}, h("div", {}, h("h1", {}, "Feeds"),
    h("p.muted", {}, "RSS and Atom feeds, refreshed in the background; search them from the assistant too."))),
  h("div.stack", {}, subscribeForm(async () => { await loadFeeds(); await loadItems(); }),
    h("div.feeds-layout", {}, side,
      h("section.card", {}, h("div.row", {}, h("h2", {}, "Items"), h("span.spacer"),
        h("label.row.small", {}, unreadOnly, "Unread only"), refresh), list, more))));
  await loadFeeds();
  await loadItems();
}
