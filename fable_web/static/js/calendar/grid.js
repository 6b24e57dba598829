// The calendar's grids: a month of day cells, and the hours of a week or a day. Each shows the
// occurrences it is given (list_events items, times already in the user's zone); a click on a
// day or an hour asks to create there, a click on an event to open it. The month's day cells are
// one stop of the Tab key: the arrow keys move between the six weeks' days (Home and End to the
// week's ends), Enter or Space adds an event on the day (as a click does).
import { h } from "../dom.js";
import { addDays, coveredDays, dayOf, hhmm, label, minutesOf, timeOf, weekday } from "./dates.js";

const SHOWN_PER_DAY = 4;
const WEEKDAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];

function byDay(items) {
  const days = new Map();
  for (const item of items) {
    for (const day of coveredDays(item)) {
      if (!days.has(day)) days.set(day, []);
      days.get(day).push(item);
    }
  }
  return days;
}

function ordered(items) {
  return [...items].sort((a, b) => Number(Boolean(b.all_day)) - Number(Boolean(a.all_day)) || a.start.localeCompare(b.start));
}

function colored(el, item) {
  if (item.color) el.style.setProperty("--event-color", item.color);
  return el;
}

function chip(item, day, onOpen) {
  const time = !item.all_day && dayOf(item.start) === day ? timeOf(item.start) : "";
  return colored(h("button.cal-event", { type: "button", class: item.all_day ? "all-day" : "",
    title: `${time ? `${time} ` : ""}${item.title}${item.location ? ` · ${item.location}` : ""}`,
    dataset: { eventId: String(item.event_id) },
    on: { click: (e) => { e.stopPropagation(); onOpen(item); } } },
  time ? h("span.cal-time", {}, time) : null, h("span.cal-title", {}, item.title)), item);
}

/** The key's move in days from a day cell (null: not a move); ``column`` is the day's place in its week. */
function moveBy(key, column) {
  return { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -7, ArrowDown: 7, Home: -column, End: 6 - column }[key] ?? null;
}

/** Arrow keys between the cells (one of them in the Tab order: the focused or chosen day). */
function dayKeys(grid, onCreate) {
  grid.addEventListener("keydown", (e) => {
    const cell = e.target.closest?.(".cal-day");
    if (!cell || e.altKey || e.ctrlKey || e.metaKey) return;
    if (e.target === cell && (e.key === "Enter" || e.key === " ")) {
      e.preventDefault();
      onCreate({ date: cell.dataset.date, time: "09:00" });
      return;
    }
    const cells = [...grid.querySelectorAll(".cal-day")];
    const at = cells.indexOf(cell);
    const by = moveBy(e.key, at % 7);
    if (by === null) return;
    e.preventDefault();
    const next = cells[at + by];
    if (!next) return;  // the first or last week's edge: the page's Previous and Next buttons go on
    cell.tabIndex = -1;
    next.tabIndex = 0;
    next.focus();
  });
}

/** Six weeks from ``start`` (a Monday), the days of ``month`` ("2026-12") in full colour;
 * ``focusDay`` is the cell that Tab reaches (today or the chosen date when in the month). */
export function monthGrid({ start, month, today, items, onOpen, onCreate, onDay, focusDay }) {
  const days = byDay(items);
  const cells = [];
  for (let i = 0; i < 42; i++) {
    const day = addDays(start, i);
    const events = ordered(days.get(day) || []);
    const more = events.length - SHOWN_PER_DAY;
    cells.push(h("div.cal-day", { class: [day.slice(0, 7) !== month ? "other-month" : "", day === today ? "today" : ""].join(" "),
      dataset: { date: day }, role: "gridcell", tabindex: day === focusDay ? "0" : "-1",
      on: { click: () => onCreate({ date: day, time: "09:00" }) } },
    h("button.cal-daynum", { type: "button", "aria-label": label(day, { weekday: "long", month: "long", day: "numeric" }),
      on: { click: (e) => { e.stopPropagation(); onDay(day); } } }, String(Number(day.slice(8)))),
    events.slice(0, more > 0 ? SHOWN_PER_DAY - 1 : SHOWN_PER_DAY).map((item) => chip(item, day, onOpen)),
    more > 0 ? h("button.cal-more", { type: "button", on: { click: (e) => { e.stopPropagation(); onDay(day); } } },
      `+${more + 1} more`) : null));
  }
  const weeks = [];
  for (let i = 0; i < cells.length; i += 7) weeks.push(h("div.cal-row", { role: "row" }, cells.slice(i, i + 7)));
  if (!cells.some((cell) => cell.tabIndex === 0)) cells.find((cell) => cell.dataset.date.startsWith(month)).tabIndex = 0;
  const grid = h("div.cal-month", { role: "grid", "aria-label": label(`${month}-01`, { month: "long", year: "numeric" }) },
    h("div.cal-row", { role: "row" }, WEEKDAYS.map((d) => h("div.cal-weekday", { role: "columnheader" }, d))), weeks);
  dayKeys(grid, onCreate);
  return grid;
}

/** Where a timed item sits in ``day``: minutes from midnight to its start and end, clipped to the day. */
function span(item, day) {
  const from = dayOf(item.start) < day ? 0 : minutesOf(item.start);
  const to = dayOf(item.end) > day ? 1440 : minutesOf(item.end);
  return [from, Math.max(to, from + 20)];
}

/** Overlapping blocks side by side: each gets a lane, and every block of its cluster the lane count. */
function lanes(blocks) {
  blocks.sort((a, b) => a.from - b.from || b.to - a.to);
  let cluster = [];
  let clusterEnd = -1;
  const close = () => { const count = Math.max(...cluster.map((b) => b.lane)) + 1; cluster.forEach((b) => { b.lanes = count; }); };
  for (const block of blocks) {
    if (block.from >= clusterEnd && cluster.length) { close(); cluster = []; }
    const taken = new Set(cluster.filter((b) => b.to > block.from).map((b) => b.lane));
    block.lane = 0;
    while (taken.has(block.lane)) block.lane += 1;
    cluster.push(block);
    clusterEnd = Math.max(clusterEnd, block.to);
  }
  if (cluster.length) close();
  return blocks;
}

function block({ item, from, to, lane, lanes: count }, onOpen) {
  // under 45 minutes a block is one line high: its time and title side by side, never the time alone
  const el = h("button.cal-block", { type: "button", class: to - from < 45 ? "short" : "", dataset: { eventId: String(item.event_id) },
    title: `${hhmm(from)}–${to >= 1440 ? "24:00" : hhmm(to)} ${item.title}`,
    on: { click: (e) => { e.stopPropagation(); onOpen(item); } } },
  h("span.cal-time", {}, timeOf(item.start) && from > 0 ? hhmm(from) : "…"), h("span.cal-title", {}, item.title),
  item.location ? h("span.cal-where", {}, item.location) : null);
  el.style.setProperty("--top", String(from / 1440));
  el.style.setProperty("--height", String((to - from) / 1440));
  el.style.setProperty("--lane", String(lane));
  el.style.setProperty("--lanes", String(count));
  return colored(el, item);
}

/** ``days`` columns of 24 hours from ``start``, all-day events above them. */
export function timeGrid({ start, days, today, items, onOpen, onCreate, onDay }) {
  const dates = Array.from({ length: days }, (_, i) => addDays(start, i));
  const covered = byDay(items);
  const head = dates.map((day) => h("button.cal-colhead", { type: "button", class: day === today ? "today" : "",
    on: { click: () => onDay(day) } }, `${WEEKDAYS[weekday(day)]} ${Number(day.slice(8))}`));
  const allDay = dates.map((day) => h("div.cal-allday", { dataset: { date: day },
    on: { click: () => onCreate({ date: day, allDay: true }) } },
  ordered(covered.get(day) || []).filter((i) => i.all_day).map((item) => chip(item, day, onOpen))));
  const columns = dates.map((day) => {
    const slots = Array.from({ length: 24 }, (_, hour) => h("div.cal-slot", { dataset: { date: day, hour: String(hour) },
      on: { click: () => onCreate({ date: day, time: hhmm(hour * 60) }) } }));
    const timed = (covered.get(day) || []).filter((i) => !i.all_day).map((item) => {
      const [from, to] = span(item, day);
      return { item, from, to };
    });
    return h("div.cal-column", { class: day === today ? "today" : "", dataset: { date: day } }, slots,
      lanes(timed).map((b) => block(b, onOpen)));
  });
  const hours = h("div.cal-hours", {}, Array.from({ length: 24 }, (_, hour) => h("div.cal-hour", {}, hhmm(hour * 60))));
  const scroller = h("div.cal-scroll", {}, h("div.cal-timeline", {}, hours, columns));
  const grid = h("div.cal-time-grid", { dataset: { days: String(days) } },
    h("div.cal-corner"), head, h("div.cal-corner.small.muted", {}, "all day"), allDay, scroller);
  requestAnimationFrame(() => { scroller.scrollTop = scroller.scrollHeight * (7.5 / 24); });
  return grid;
}
