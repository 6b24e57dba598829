// The journal: one day's conversation (today by default), opened by its morning note and written
// in through the assistant's chat view (the same thread, streaming, stop and retry); the earlier
// days on the side; "Prepare now" writes the morning note (again, until the day is written in).
import { api } from "../api.js";
import { clear, h, toast } from "../dom.js";
import { navigate } from "../router.js";
import { chatView } from "./chat.js";

function dayLabel(iso) {
  const [y, m, d] = iso.split("-").map(Number);
  return new Date(y, m - 1, d).toLocaleDateString(undefined, { weekday: "long", day: "numeric", month: "long" });
}

function dayItem(d, current) {
  return h("li.conv", { dataset: { day: d.day }, "aria-current": d.day === current ? "page" : null },
    h("a.conv-link", { href: `/journal/${d.day}` }, h("span.title", {}, dayLabel(d.day)),
      h("span.snippet", { title: d.error || null },
        d.prep === "done" ? "Morning note" : d.prep === "failed" ? "Morning note failed" : "")));
}

export async function journalView(main, params) {
  const day = await api.post("/journal/days", params.day ? { day: params.day } : {});
  const list = h("ul.list.conv-list#journal-days");
  const aside = h("aside.card.chat-list", {}, h("div.row", {}, h("h2", {}, "Days"), h("span.spacer"),
    h("a.btn.btn-sm#journal-today", { href: "/journal" }, "Today")), list);
  const prepare = h("button.btn.btn-sm#journal-prepare", { type: "button" },
    day.prep === "done" ? "Prepare again" : "Prepare now");
  prepare.addEventListener("click", async () => {
    prepare.disabled = true;
    prepare.textContent = "Preparing…";
    try {
      await api.post("/journal/prepare", { day: day.day });
      navigate(location.pathname, { replace: true });  // the page again, opened by the new note
    } catch (e) {
      toast(e.message, { bad: true });
      prepare.disabled = false;
      prepare.textContent = "Prepare now";
    }
  });
  await chatView(main, { id: day.conversation_id }, {
    aside, head: prepare, scope: false,
    empty: "No morning note yet: “Prepare now” writes one, or just start writing.",
    placeholder: "Write about your day, or ask. Enter sends, Shift+Enter adds a line.",
  });
  const days = await api.get("/journal/days");
  clear(list, days.items.length ? days.items.map((d) => dayItem(d, day.day)) : h("li.empty", {}, "No days yet."));
}
