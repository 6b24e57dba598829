// The notification bell in the top bar: the unread count, a panel listing notifications (a click
// marks one read and opens what it is about), "mark all read", and Web Push on this device.
// Everything a notification says reaches the page as text nodes.
import { api } from "../api.js";
import { clear, h, relativeTime, toast } from "../dom.js";
import { navigate } from "../router.js";

const POLL_MS = 60000;
// Where a notification leads: the same table as the push sender's (fable_core/people/notifications/sender.py).
const LINKS = [["conversation_id", "/chat/"], ["note_id", "/notes/"], ["project_id", "/projects/"]];

export function notificationLink(data) {
  for (const [key, path] of LINKS) {
    const id = data && data[key];
    if (Number.isInteger(id) && id > 0) return `${path}${id}`;
  }
  return null;
}

// A bell drawn as SVG (built node by node: no markup strings, no emoji font needed).
function bellIcon() {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("class", "bell-icon");
  svg.setAttribute("aria-hidden", "true");
  const path = document.createElementNS(ns, "path");
  path.setAttribute("d", "M12 22a2.2 2.2 0 0 0 2.2-2.2H9.8A2.2 2.2 0 0 0 12 22zm7-5.5V11a7 7 0 0 0-5.6-6.9V3.4a1.4 1.4 0 0 0-2.8 0v.7A7 7 0 0 0 5 11v5.5L3 18.6v.9h18v-.9z");
  svg.append(path);
  return svg;
}

export function bell() {
  const count = h("span.bell-count#bell-count", { hidden: true });
  const button = h("button.btn.btn-ghost.btn-sm.bell#bell", {
    type: "button", "aria-label": "Notifications", "aria-expanded": "false", "aria-controls": "bell-panel",
    on: { click: () => toggle() },
  }, bellIcon(), count);
  const list = h("ul.bell-list#bell-list");
  const markAll = h("button.btn.btn-ghost.btn-sm#bell-mark-all", { type: "button", on: { click: readAll } }, "Mark all read");
  const push = pushToggle();
  const panel = h("div.bell-panel#bell-panel", { hidden: true, role: "dialog", "aria-label": "Notifications" },
    h("div.bell-head", {}, h("strong", {}, "Notifications"), h("span.spacer"), markAll), list, push.element);
  const element = h("div.bell-wrap", {}, button, panel);

  function show(unread) {
    count.hidden = !unread;
    count.textContent = unread > 99 ? "99+" : String(unread);
    button.setAttribute("aria-label", unread ? `Notifications, ${unread} unread` : "Notifications");
  }

  async function refresh() {
    try {
      if (panel.hidden) show((await api.get("/notifications/unread")).unread);
      else await load();
    } catch { /* offline or signed out: the next refresh tries again */ }
  }

  async function load() {
    const page = await api.get("/notifications", { limit: 20 });
    show(page.unread);
    clear(list, page.items.length ? page.items.map(item) : h("li.empty", {}, "Nothing new."));
  }

  function item(n) {
    const open = h("button.bell-item", { type: "button", class: n.read ? "" : "unread", dataset: { id: n.id },
      on: { click: () => openItem(n) } },
    h("span.bell-title", {}, n.title), n.body ? h("span.bell-body", {}, n.body) : null,
    h("span.bell-time", {}, relativeTime(n.created_at)));
    return h("li", {}, open);
  }

  async function openItem(n) {
    try {
      if (!n.read) show((await api.post("/notifications/read", { ids: [n.id] })).unread);
    } catch (e) { toast(e.message, { bad: true }); }
    close();
    const link = notificationLink(n.data);
    if (link) navigate(link);
  }

  async function readAll() {
    try { show((await api.post("/notifications/read-all")).unread); await load(); } catch (e) { toast(e.message, { bad: true }); }
  }

  function toggle() { if (panel.hidden) { panel.hidden = false; button.setAttribute("aria-expanded", "true"); load(); push.sync(); } else close(); }
  function close() { panel.hidden = true; button.setAttribute("aria-expanded", "false"); }

  document.addEventListener("click", (event) => { if (!panel.hidden && !element.contains(event.target)) close(); });
  document.addEventListener("keydown", (event) => { if (event.key === "Escape" && !panel.hidden) { close(); button.focus(); } });
  const timer = setInterval(() => {
    if (!element.isConnected) clearInterval(timer);  // signed out: this shell is gone
    else if (document.visibilityState === "visible") refresh();
  }, POLL_MS);
  listenToWorker(refresh);
  push.resubscribe();
  return { element, refresh };
}

// ---- Web Push on this device ----------------------------------------------------------------

const pushSupported = () => "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;

function keyBytes(base64url) {
  const text = atob(base64url.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (base64url.length % 4)) % 4));
  return Uint8Array.from(text, (c) => c.charCodeAt(0));
}

function sameKey(buffer, base64url) {
  if (!buffer) return false;
  const a = new Uint8Array(buffer), b = keyBytes(base64url);
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

async function registration() {
  await navigator.serviceWorker.register("/sw.js");
  return navigator.serviceWorker.ready;
}

async function subscribe(reg) {
  const { public_key: key } = await api.get("/push/public-key");
  let sub = await reg.pushManager.getSubscription();
  if (sub && !sameKey(sub.options.applicationServerKey, key)) { await sub.unsubscribe(); sub = null; }
  sub = sub || await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(key) });
  const { endpoint, keys } = sub.toJSON();
  await api.post("/push/subscriptions", { endpoint, p256dh: keys.p256dh, auth: keys.auth, device: navigator.userAgent.slice(0, 200) });
}

function pushToggle() {
  const box = h("input#push-toggle", { type: "checkbox", on: { change: () => change() } });
  const note = h("span.muted.bell-push-note");
  const element = h("label.bell-push", {}, box, "Push notifications on this device", note);
  if (!pushSupported()) { box.disabled = true; note.textContent = "(not supported by this browser)"; }

  async function sync() {
    if (!pushSupported()) return;
    const reg = await navigator.serviceWorker.getRegistration("/");
    box.checked = Boolean(reg && await reg.pushManager.getSubscription()) && Notification.permission === "granted";
    note.textContent = Notification.permission === "denied" ? "(blocked in the browser's site settings)" : "";
  }

  async function change() {
    box.disabled = true;
    try {
      if (box.checked) {
        if (await Notification.requestPermission() !== "granted") throw new Error("Notifications are blocked for this site in the browser.");
        await subscribe(await registration());
        toast("Push notifications are on for this device");
      } else {
        const reg = await navigator.serviceWorker.getRegistration("/");
        const sub = reg && await reg.pushManager.getSubscription();
        if (sub) { await api.del("/push/subscriptions", { endpoint: sub.endpoint }); await sub.unsubscribe(); }
      }
    } catch (e) { toast(e.message, { bad: true }); } finally { box.disabled = false; await sync().catch(() => {}); }
  }

  // A device subscribed before keeps its subscription known to the server (and made with the
  // server's current key): a 404 from its push service, or a new key, dropped it there.
  async function resubscribe() {
    if (!pushSupported() || Notification.permission !== "granted") return;
    try {
      const reg = await navigator.serviceWorker.getRegistration("/");
      if (reg && await reg.pushManager.getSubscription()) await subscribe(reg);
    } catch { /* the toggle shows the state; nothing to say unasked */ }
  }

  return { element, sync, resubscribe };
}

/** Signing out: this browser stops receiving the account's pushes (a shared computer must not
 * go on showing them to whoever uses it next). */
export async function forgetDevice() {
  if (!pushSupported()) return;
  try {
    const reg = await navigator.serviceWorker.getRegistration("/");
    const sub = reg && await reg.pushManager.getSubscription();
    if (sub) { await api.del("/push/subscriptions", { endpoint: sub.endpoint }); await sub.unsubscribe(); }
  } catch { /* signing out goes on: the server drops the endpoint when its push service says it is gone */ }
}

let listening = false;
let onPush = () => {};
function listenToWorker(refresh) {
  onPush = refresh;  // the current shell's bell
  if (listening || !("serviceWorker" in navigator)) return;
  listening = true;
  navigator.serviceWorker.addEventListener("message", (event) => {
    const message = event.data || {};
    if (message.type === "fable-push") onPush();
    if (message.type === "fable-open" && typeof message.url === "string" && message.url.startsWith("/") && !message.url.startsWith("//")) navigate(message.url);
  });
}
