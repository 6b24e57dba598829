// Building DOM without HTML strings: user text only ever reaches the page as text nodes.
// The one exception, trustedHtml(), takes HTML the server rendered and sanitised (nh3).
import { session } from "./session.js";

/** h("a#id.cls", {href, on: {click}}, ...children): an element; strings become text nodes. */
export function h(spec, props = {}, ...children) {
  const tag = spec.match(/^[a-z0-9]*/i)[0];
  const el = document.createElement(tag || "div");
  const classes = [...spec.matchAll(/\.([\w-]+)/g)].map((m) => m[1]);
  const id = spec.match(/#([\w-]+)/);
  if (classes.length) el.className = classes.join(" ");
  if (id) el.id = id[1];
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "on") for (const [ev, fn] of Object.entries(value)) el.addEventListener(ev, fn);
    else if (key === "class") el.className = [el.className, value].filter(Boolean).join(" ");
    else if (key === "text") el.textContent = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key in el && typeof value !== "string") el[key] = value;
    else el.setAttribute(key, value === true ? "" : value);
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** Insert HTML produced by the server's sanitiser (never raw user text). */
export function trustedHtml(el, sanitised) {
  el.innerHTML = sanitised;
  for (const pre of el.querySelectorAll("pre")) pre.tabIndex = 0;  // a wide block scrolls by keyboard too
  return el;
}

/** Text with **highlights** (search snippets) as <mark> elements, built from text nodes. */
export function highlighted(text) {
  const parts = String(text).split("**");
  return parts.map((part, i) => (i % 2 ? h("mark", {}, part) : part));
}

/** A passing message; with ``action`` ({label, run}: e.g. Undo) a button, and it stays longer. */
export function toast(message, { bad = false, action = null } = {}) {
  const box = document.getElementById("toasts");
  const el = h("div.toast", { class: bad ? "bad" : "" }, message);
  if (action) {
    const button = h("button.toast-action", { type: "button" }, action.label);
    button.addEventListener("click", async () => {
      button.disabled = true;
      try { await action.run(); el.remove(); } catch (e) { el.remove(); toast(e.message, { bad: true }); }
    });
    el.append(" ", button);
  }
  box.append(el);
  setTimeout(() => el.remove(), bad || action ? 8000 : 3000);
}

const dayMs = 86400000;

/** The user's time zone: their timezone setting (which the UI took from the browser at their
 * first sign-in), so that every page has the one "today" the tools have; the browser's before that. */
export function userZone() {
  return session.zone || Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

const dayFormats = new Map();  // zone → its formatter: building one costs more than using it

/** The calendar date ("2026-12-07") of the instant `when` where the user lives. */
export function dayIn(when = new Date()) {
  const zone = userZone();
  if (!dayFormats.has(zone)) {
    dayFormats.set(zone, new Intl.DateTimeFormat("en-CA", { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit" }));
  }
  const parts = dayFormats.get(zone).formatToParts(when);
  const get = (type) => parts.find((p) => p.type === type).value;
  return `${get("year")}-${get("month")}-${get("day")}`;
}

/** The hour (0-23) of the instant `when` where the user lives. */
export function hourIn(when = new Date()) {
  return Number(new Intl.DateTimeFormat("en-GB", { hour: "numeric", hourCycle: "h23", timeZone: userZone() }).format(when));
}

/** The instant `when` (a Date or an ISO time) in words, as the clock reads where the user lives. */
export function formatIn(when, options) {
  return new Date(when).toLocaleString(undefined, { ...options, timeZone: userZone() });
}

/** Today where the user lives, as a Date at the browser's midnight of that date (for date arithmetic). */
export function today() {
  const [y, m, d] = dayIn().split("-").map(Number);
  return new Date(y, m - 1, d);
}

export function isoDate(d) {
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}

/** "today", "tomorrow", "in 3 days", "2 days ago", or a short date: of a date ("2026-12-07"), or
 * of the day an instant ("2026-12-06T23:30:00Z") falls on where the user lives. */
export function friendlyDate(iso) {
  if (!iso) return "";
  const day = iso.length > 10 ? dayIn(new Date(iso)) : iso;
  const [y, m, d] = day.split("-").map(Number);
  const diff = Math.round((new Date(y, m - 1, d) - today()) / dayMs);
  if (diff === 0) return "today";
  if (diff === 1) return "tomorrow";
  if (diff === -1) return "yesterday";
  if (diff > 1 && diff < 7) return `in ${diff} days`;
  if (diff < -1 && diff > -7) return `${-diff} days ago`;
  return new Date(y, m - 1, d).toLocaleDateString(undefined, { month: "short", day: "numeric" });
}

export function relativeTime(iso) {
  const seconds = (Date.now() - new Date(iso).getTime()) / 1000;
  if (seconds < 60) return "just now";
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  return friendlyDate(iso);
}

export function debounce(fn, ms) {
  let timer;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

/** Put keyboard focus back after a dialog or a change: on `el` while it is still on the page,
 * else on the first of `fallbacks` (elements or selectors) that is, else on the page's heading
 * (or its main region). Focus is never left on the body, where a keyboard or a screen reader
 * would start again from the top. */
export function focusBack(el, ...fallbacks) {
  const live = (x) => (typeof x === "string" ? document.querySelector(x) : x);
  const target = [el, ...fallbacks, "#main h1", "#main", "main"].map(live)
    .find((x) => x && x !== document.body && x.isConnected && !x.closest("[hidden], dialog:not([open])"));
  if (!target) return;
  if (target.tabIndex < 0 && !target.hasAttribute("tabindex") && target.matches("h1, h2, main, section, div")) target.tabIndex = -1;
  target.focus({ preventScroll: true });
}

/** A modal <dialog> that resolves true/false: used for destructive confirmations. */
export function confirmDialog(title, message, action = "Delete") {
  return new Promise((resolve) => {
    const dialog = h("dialog", { "aria-label": title },
      h("h2", {}, title), h("p.muted", {}, message),
      h("form.row", { method: "dialog" },
        h("span.spacer"),
        h("button.btn", { value: "cancel" }, "Cancel"),
        h("button.btn.btn-danger", { value: "ok" }, action)));
    const opener = document.activeElement;
    dialog.addEventListener("close", () => { dialog.remove(); focusBack(opener); resolve(dialog.returnValue === "ok"); });
    document.body.append(dialog);
    dialog.showModal();
  });
}
