// One "today" everywhere: every page counts days in the user's timezone setting, as the tools do
// (dom.js's userZone()). At the first sign-in, when the setting was never chosen, the UI takes the
// browser's zone for it; later, when the browser is elsewhere (a trip, a move), it asks once, in a
// notice above the page that covers nothing, and this browser remembers the question for that
// pair of zones.
import { api } from "../api.js";
import { h, toast } from "../dom.js";
import { session } from "../session.js";

const ASKED = "fable.zone-asked";

/** Take `me` (GET /api/auth/me)'s time zone, or the browser's; `ask(element)` shows a question,
 * `changed()` redraws the page in a new zone. */
export async function adoptZone(me, { ask, changed }) {
  session.zone = me.timezone;
  const browser = Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (!browser) return;
  if (!me.timezone_chosen) {  // stored even when it is the default: a later browser elsewhere is asked
    try { session.zone = (await api.put("/settings/timezone", { value: browser })).value; } catch { /* a zone the server does not know: the default stays */ }
    if (session.zone !== me.timezone) changed();
    return;
  }
  if (browser === me.timezone) return;
  const pair = `${me.timezone}|${browser}`;
  if (localStorage.getItem(ASKED) === pair) return;
  localStorage.setItem(ASKED, pair);
  const use = h("button.btn.btn-primary.btn-sm", { type: "button" }, `Use ${browser}`);
  const keep = h("button.btn.btn-ghost.btn-sm", { type: "button" }, `Keep ${me.timezone}`);
  const notice = h("div.ask.zone-question", { role: "region", "aria-label": "Time zone" },
    h("p", {}, `Fable counts your days in ${me.timezone}; this browser is in ${browser}.`), use, keep);
  use.addEventListener("click", async () => {
    use.disabled = true;
    try {
      session.zone = (await api.put("/settings/timezone", { value: browser })).value;
      notice.remove();
      changed();
    } catch (e) { use.disabled = false; toast(e.message, { bad: true }); }
  });
  keep.addEventListener("click", () => notice.remove());
  ask(notice);
}
