// Calendar dates as ISO strings ("2026-12-07"), computed in UTC so that the browser's own zone
// never shifts a day; times come from the API already in the user's zone ("...T09:30+01:00").

const DAY_MS = 86400000;
const pad = (n) => String(n).padStart(2, "0");

function parse(iso) {
  const [y, m, d] = iso.slice(0, 10).split("-").map(Number);
  return new Date(Date.UTC(y, m - 1, d));
}

function format(date) {
  return `${date.getUTCFullYear()}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())}`;
}

export function addDays(iso, days) { return format(new Date(parse(iso).getTime() + days * DAY_MS)); }

/** 0 for Monday ... 6 for Sunday. */
export function weekday(iso) { return (parse(iso).getUTCDay() + 6) % 7; }

export function startOfWeek(iso) { return addDays(iso, -weekday(iso)); }

export function startOfMonth(iso) { return `${iso.slice(0, 7)}-01`; }

export function addMonths(iso, months) {
  const d = parse(startOfMonth(iso));
  d.setUTCMonth(d.getUTCMonth() + months);
  return format(d);
}

export function daysBetween(from, to) { return Math.round((parse(to) - parse(from)) / DAY_MS); }

export function label(iso, options) {
  return parse(iso).toLocaleDateString(undefined, { timeZone: "UTC", ...options });
}

/** The date and the "HH:MM" of an API time ("2026-12-07T09:30+01:00"); a date alone has no time. */
export function dayOf(value) { return value.slice(0, 10); }
export function timeOf(value) { return value.length > 10 ? value.slice(11, 16) : ""; }

/** Minutes since midnight of an API time, on its own day. */
export function minutesOf(value) {
  const [h, m] = timeOf(value).split(":").map(Number);
  return h * 60 + m;
}

export function hhmm(minutes) { return `${pad(Math.floor(minutes / 60))}:${pad(minutes % 60)}`; }

/** The days an event covers (an all-day end is exclusive; a timed one ending at midnight ends the day before). */
export function coveredDays(item) {
  const first = dayOf(item.start);
  let last = dayOf(item.end);
  if (item.all_day || (timeOf(item.end) === "00:00" && last > first)) last = addDays(last, -1);
  const days = [];
  for (let day = first; day <= last && days.length < 62; day = addDays(day, 1)) days.push(day);
  return days;
}
