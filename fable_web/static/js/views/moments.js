// Moments: record one (text, and optionally when, mood, tags, place), the list by day, newest
// first, and search by words (and meaning, when a model answers). All through /api/moments.
import { api } from "../api.js";
import { clear, confirmDialog, dayIn, formatIn, h, toast } from "../dom.js";

const PAGE = 50;

// Days and times as the clock reads where the user lives (their timezone setting), as the tools count them
function dayLabel(date) {
  return formatIn(date, { weekday: "long", month: "long", day: "numeric", year: "numeric" });
}

function dayKey(date) {
  return dayIn(date);
}

function momentItem(moment, onDelete) {
  const at = new Date(moment.at);
  const meta = [
    h("time.muted.small", { datetime: moment.at }, formatIn(at, { hour: "2-digit", minute: "2-digit" })),
    moment.mood ? h("span.chip.moment-mood", {}, moment.mood) : null,
    moment.location ? h("span.muted.small.moment-place", {}, `@ ${moment.location}`) : null,
    (moment.tags || []).map((t) => h("span.chip", {}, `#${t}`)),
  ];
  return h("li.moment", { dataset: { id: String(moment.id) } },
    h("div.moment-text", {}, moment.text),
    h("div.row.moment-meta", {}, meta, h("span.spacer"),
      h("button.btn.btn-ghost.btn-sm.btn-danger", { type: "button", "aria-label": `Delete moment: ${moment.text.slice(0, 40)}`,
        on: { click: () => onDelete(moment) } }, "Delete")));
}

/** The moments grouped under a heading per day (the browser's days), in the order given. */
function byDay(moments, onDelete) {
  const groups = [];
  for (const m of moments) {
    const at = new Date(m.at);
    const last = groups[groups.length - 1];
    if (last && last.key === dayKey(at)) last.items.push(m);
    else groups.push({ key: dayKey(at), label: dayLabel(at), items: [m] });
  }
  return groups.map((g) => h("section.moment-day", {}, h("h3.moment-day-label", {}, g.label),
    h("ul.list", {}, g.items.map((m) => momentItem(m, onDelete)))));
}

function recordForm(onRecorded) {
  const text = h("textarea#moment-text", { rows: 3, required: true, placeholder: "What happened?", "aria-label": "What happened" });
  const at = h("input#moment-at", { type: "datetime-local", "aria-label": "When (leave empty for now)" });
  const mood = h("input#moment-mood", { type: "text", maxLength: 40, placeholder: "mood", "aria-label": "Mood" });
  const tags = h("input#moment-tags", { type: "text", placeholder: "tags, comma separated", "aria-label": "Tags" });
  const place = h("input#moment-place", { type: "text", maxLength: 100, placeholder: "place", "aria-label": "Place" });
  async function submit(event) {
    event.preventDefault();
    const body = { text: text.value.trim() };
    if (at.value) body.at = at.value;  // local time: the server reads it in your time zone
    if (mood.value.trim()) body.mood = mood.value.trim();
    if (place.value.trim()) body.location = place.value.trim();
    const tagList = tags.value.split(/[,\s]+/).map((t) => t.trim()).filter(Boolean);
    if (tagList.length) body.tags = tagList;
    try {
      await api.post("/moments", body);
      for (const input of [text, at, mood, tags, place]) input.value = "";
      toast("Moment recorded");
      await onRecorded();
    } catch (e) { toast(e.message, { bad: true }); }
  }
  return h("form.card.stack#moment-form", { on: { submit } }, h("h2", {}, "Record a moment"), text,
    h("div.row", {}, at, mood, tags, place, h("span.spacer"), h("button.btn.btn-primary", { type: "submit" }, "Record")));
}

export async function momentsView(main, _params, query) {
  const list = h("div#moment-list.stack");
  const more = h("button.btn.btn-ghost#moment-more", { type: "button", hidden: true }, "Older moments");
  const status = h("p.muted.small#moment-status");
  const search = h("input#moment-search", { type: "search", placeholder: "Search your moments", "aria-label": "Search moments",
    value: query.get("q") || "" });
  let shown = [];
  let cursor = null;

  async function load({ append = false } = {}) {
    const q = search.value.trim();
    const page = await api.get("/moments", { query: q, limit: PAGE, cursor: append ? cursor : null });
    shown = append ? [...shown, ...page.items] : page.items;
    cursor = page.next_cursor || null;
    more.hidden = !cursor;
    clear(status, q ? (page.mode === "hybrid" ? "Best matches, by words and meaning." : "Best matches, by words.") : "");
    if (!shown.length) { clear(list, h("p.empty", {}, q ? "No moment matches." : "No moments yet: record one above.")); return; }
    clear(list, q ? h("ul.list", {}, shown.map((m) => momentItem(m, remove))) : byDay(shown, remove));
  }
  async function remove(moment) {
    if (!(await confirmDialog("Delete this moment?", moment.text.slice(0, 120)))) return;
    try { await api.del(`/moments/${moment.id}`); await load(); } catch (e) { toast(e.message, { bad: true }); }
  }
  more.addEventListener("click", () => load({ append: true }));
  const searchForm = h("form.row", { role: "search", on: { submit: (e) => {
    e.preventDefault();
    const q = search.value.trim();
    history.replaceState(null, "", q ? `/moments?q=${encodeURIComponent(q)}` : "/moments");
    load();
  } } }, h("div.spacer", {}, search), h("button.btn", { type: "submit" }, "Search"));

  main.append(h("div.page-head", {}, h("div", {}, h("h1", {}, "Moments"),
    h("p.muted", {}, "What happened, day by day: yours to keep, and the assistant's to remember."))),
  h("div.stack", {}, recordForm(() => load()), h("section.card", {}, searchForm, status, list, more)));
  await load();
}
