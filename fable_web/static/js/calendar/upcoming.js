// Home's calendar card: today's events and the next days' (list_events' default week), by day;
// left out while the week holds none.
import { api } from "../api.js";
import { clear, dayIn, h } from "../dom.js";
import { addDays, dayOf, label, timeOf } from "./dates.js";

const SHOWN = 8;

function dayName(day, today) {
  if (day === today) return "Today";
  if (day === addDays(today, 1)) return "Tomorrow";
  return label(day, { weekday: "short", month: "short", day: "numeric" });
}

export function upcomingEvents() {
  const card = h("section.card#upcoming", { hidden: true }, h("h2", {}, "Coming up"));
  (async () => {
    const page = await api.get("/events", { limit: SHOWN });
    const today = dayIn();
    const rows = [];
    let shownDay = null;
    for (const item of page.items) {
      const day = dayOf(item.start) < today ? today : dayOf(item.start);
      if (day !== shownDay) rows.push(h("li.upcoming-day", {}, dayName(day, today)));
      shownDay = day;
      rows.push(h("li", {}, h("a.upcoming-event", { href: `/calendar?view=day&date=${day}` },
        h("span.cal-time", {}, item.all_day ? "all day" : timeOf(item.start)), h("span", {}, item.title),
        item.location ? h("span.muted.small", {}, item.location) : null)));
    }
    clear(card, h("h2", {}, "Coming up", h("span.spacer"), h("a.small", { href: "/calendar" }, "Calendar →")),
      h("ul.list.upcoming", {}, rows));
    card.hidden = !rows.length;
  })();
  return card;
}
