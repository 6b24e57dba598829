// Fable's service worker: keeps the app shell for an offline start, shows Web Push messages and,
// on a click, brings up what they are about.
// A message is JSON {title, body, url, tag} (fable_core/people/notifications/sender.py); its url is a
// path on this site, never another origin. Nothing here is rendered as HTML.
//
// The shell (the UI's files, never /api, /mcp or anything not a GET) is fetched from the network
// first, so a new Fable's UI shows at once (the server answers 304 for what did not change), and
// from the cache when the network fails: a page opened before opens offline, with its data
// unavailable until the server is back.

const SHELL = "fable-shell-v1";
const START = ["/css/app.css", "/css/shell.css", "/js/app.js", "/manifest.webmanifest", "/favicon.svg",
  "/icons/icon.svg", "/icons/icon-192.png"];

self.addEventListener("install", (event) => {
  event.waitUntil((async () => {
    // index.html names every module of the first view's graph (modulepreload): keep them all
    try {
      const cache = await caches.open(SHELL);
      const index = await fetch("/", { cache: "no-cache" });
      const modules = [...(await index.clone().text()).matchAll(/<link rel="modulepreload" href="([^"]+)"/g)].map((m) => m[1]);
      await cache.put("/", index);
      await cache.addAll([...START, ...modules]);
    } catch { /* offline at install: the cache fills as pages load */ }
    await self.skipWaiting();
  })());
});

self.addEventListener("activate", (event) => event.waitUntil((async () => {
  for (const name of await caches.keys()) if (name !== SHELL) await caches.delete(name);
  await self.clients.claim();
})()));

function isShell(request) {
  const url = new URL(request.url);
  return request.method === "GET" && url.origin === self.location.origin
    && !/^\/(api|mcp|auth|oauth|\.well-known)(\/|$)/.test(url.pathname);
}

self.addEventListener("fetch", (event) => {
  if (!isShell(event.request)) return;  // the browser's own handling: the API is never cached
  event.respondWith((async () => {
    const cache = await caches.open(SHELL);
    const page = event.request.mode === "navigate";
    try {
      const response = await fetch(event.request);
      if (response.ok) event.waitUntil(cache.put(page ? "/" : event.request, response.clone()));
      return response;
    } catch (error) {
      const kept = await cache.match(page ? "/" : event.request);
      if (kept) return kept;
      throw error;
    }
  })());
});

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
