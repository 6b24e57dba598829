// Fable's service worker: shows Web Push messages and, on a click, brings up what they are about.
// A message is JSON {title, body, url, tag} (fable_core/notifications/sender.py); its url is a
// path on this site, never another origin. Nothing here is rendered as HTML.

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

function sameSitePath(url) {
  return typeof url === "string" && url.startsWith("/") && !url.startsWith("//") ? url : "/";
}

function read(data) {
  if (!data) return {};
  try { return data.json() || {}; } catch { return { body: data.text() }; }
}

self.addEventListener("push", (event) => {
  const message = read(event.data);
  const options = { body: String(message.body || ""), data: { url: sameSitePath(message.url) }, icon: "/favicon.svg" };
  if (message.tag) options.tag = String(message.tag);
  event.waitUntil((async () => {
    await self.registration.showNotification(String(message.title || "Fable"), options);
    for (const client of await self.clients.matchAll({ type: "window" })) client.postMessage({ type: "fable-push" });
  })());
});

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const url = sameSitePath(event.notification.data && event.notification.data.url);
  event.waitUntil((async () => {
    const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
    const open = windows.find((client) => new URL(client.url).origin === self.location.origin);
    if (open) {
      await open.focus();
      open.postMessage({ type: "fable-open", url });  // the page routes there without reloading
      return;
    }
    await self.clients.openWindow(url);
  })());
});
