// Calendar: a month, a week or a day of events in the user's zone (their timezone setting). A
// click on a day or an hour adds an event there; a click on an event opens it in the slide-over.
import { api } from "../api.js";
import { clear, dayIn, focusBack, h, userZone } from "../dom.js";
import { navigate } from "../router.js";
import { addDays, addMonths, label, startOfMonth, startOfWeek } from "../calendar/dates.js";
import { closeEditor, openEditor } from "../calendar/editor.js";
import { monthGrid, timeGrid } from "../calendar/grid.js";

const LIMIT = 500;  // a page of the month view (bench/calendar.py measures it)
const VIEWS = [["month", "Month"], ["week", "Week"], ["day", "Day"]];

/** Every occurrence from ``start`` to ``end`` (dates), page after page. */
export async function eventsBetween(start, end) {
  const items = [];
  let cursor;
  do {
    const page = await api.get("/events", { start, end, limit: LIMIT, cursor });
    items.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor);
  return items;
}

function range(view, date) {
  if (view === "month") {
    const start = startOfWeek(startOfMonth(date));
    return [start, addDays(start, 42)];
  }
  if (view === "week") return [startOfWeek(date), addDays(startOfWeek(date), 7)];
  return [date, addDays(date, 1)];
}

function heading(view, date, start) {
  if (view === "month") return label(date, { month: "long", year: "numeric" });
  if (view === "day") return label(date, { weekday: "long", month: "long", day: "numeric", year: "numeric" });
  return `${label(start, { month: "short", day: "numeric" })} – ${label(addDays(start, 6), { month: "short", day: "numeric", year: "numeric" })}`;
}

function step(view, date, sign) {
  if (view === "month") return addMonths(date, sign);
  return addDays(date, sign * (view === "week" ? 7 : 1));
}

export async function calendarView(main, params, query) {
  const zone = userZone();
  const today = dayIn();
  const view = VIEWS.some(([v]) => v === query.get("view")) ? query.get("view") : "month";
  const date = /^\d{4}-\d{2}-\d{2}$/.test(query.get("date") || "") ? query.get("date") : today;
  const go = (v, d) => navigate(`/calendar?view=${v}&date=${d}`);
  const [start, end] = range(view, date);
  const body = h("div.cal-body#calendar");

  async function refresh() {
    const items = await eventsBetween(start, end);
    const was = document.activeElement;  // the cell, event or slot the editor came from: focused again when drawn anew
    const at = body.contains(was) ? { date: was.closest("[data-date]")?.dataset.date, event: was.dataset.eventId } : null;
    const shared = { start, today, items, onOpen: (item) => openEditor({ item, onDone: refresh }),
      onCreate: (defaults) => openEditor({ defaults, onDone: refresh }), onDay: (day) => go("day", day) };
    const focusDay = at?.date || date;  // the day the Tab key reaches: the chosen one (today by default)
    clear(body, view === "month" ? monthGrid({ ...shared, month: date.slice(0, 7), focusDay })
      : timeGrid({ ...shared, days: view === "week" ? 7 : 1 }));
    if (at) focusBack(at.event && body.querySelector(`[data-event-id="${at.event}"]`), at.date && body.querySelector(`.cal-day[data-date="${at.date}"]`), body.querySelector(".cal-day[tabindex='0']"));
  }

  const switcher = h("div.segmented", { role: "group", "aria-label": "View" }, VIEWS.map(([v, text]) =>
    h("button", { type: "button", "aria-pressed": String(v === view), on: { click: () => go(v, date) } }, text)));
  main.append(
    h("div.page-head.cal-head", {},
      h("div", {}, h("h1", {}, heading(view, date, start)), h("p.muted.small", {}, `Times in ${zone}`)),
      h("div.row", {},
        h("button.btn.btn-sm", { type: "button", "aria-label": "Previous", on: { click: () => go(view, step(view, date, -1)) } }, "‹"),
        h("button.btn.btn-sm", { type: "button", on: { click: () => go(view, today) } }, "Today"),
        h("button.btn.btn-sm", { type: "button", "aria-label": "Next", on: { click: () => go(view, step(view, date, 1)) } }, "›"),
        switcher,
        h("button.btn.btn-primary.btn-sm#new-event", { type: "button",
          on: { click: () => openEditor({ defaults: { date: view === "month" && date.slice(0, 7) !== today.slice(0, 7) ? date : today }, onDone: refresh }) } },
        "+ New event"))),
    body);
  closeEditor();
  await refresh();
}
