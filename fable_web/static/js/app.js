// Boot: who is signed in, then the shell and the page for the current URL.
import { api, ApiError, setCsrfToken, setUnauthenticatedHandler } from "./api.js";
import { clear, h } from "./dom.js";
import { match, navigate, route, start } from "./router.js";
import { installShortcuts } from "./shortcuts.js";
import { forgetSignedIn, mightBeSignedIn, session } from "./session.js";
import { adoptZone } from "./widgets/zone.js";
import { authView, forgotView, resetView, verifyView } from "./views/auth.js";
import { homeView } from "./views/home.js";
import { liveSearch, notesView } from "./views/notes.js";
import { noteView } from "./views/note.js";
import { tasksView } from "./views/tasks.js";
import { trashView } from "./views/trash.js";
import { calendarView } from "./views/calendar.js";
import { projectsView, projectView, workspaceView } from "./views/projects.js";
import { settingsView } from "./views/settings.js";
import { chatView } from "./views/chat.js";
import { journalView } from "./views/journal.js";
import { sharedView } from "./views/shared.js";
import { momentsView } from "./views/moments.js";
import { feedsView } from "./views/feeds.js";
import { researchView } from "./views/research.js";
import { tagsView } from "./views/tags.js";
import { graphView } from "./views/graph.js";
import { bell, forgetDevice } from "./widgets/bell.js";
import { consentView } from "./views/consent.js";

route("/", homeView);
route("/notes", notesView);
route("/notes/new", noteView);
route("/notes/:id", noteView);
route("/tasks", tasksView);
route("/trash", trashView);
route("/calendar", calendarView);
route("/projects", projectsView);
route("/projects/:id", projectView);
route("/projects/:id/workspace", workspaceView);
route("/settings", settingsView);
route("/settings/:tab", settingsView);
route("/chat", chatView);
route("/chat/:id", chatView);
route("/journal", journalView);
route("/journal/:day", journalView);
route("/shared", sharedView);
route("/moments", momentsView);
route("/feeds", feedsView);
route("/research", researchView);
route("/tags", tagsView);
route("/graph", graphView);

const NAV = [
  ["/", "Home", "◇"],
  ["/notes", "Notes", "¶"],
  ["/tasks", "Tasks", "✓"],
  ["/calendar", "Calendar", "▤"],
  ["/projects", "Projects", "▦"],
  ["/tags", "Tags", "#"],
  ["/graph", "Graph", "✳"],
  ["/journal", "Journal", "☼"],
  ["/chat", "Assistant", "✦"],
  ["/moments", "Moments", "◔"],
  ["/feeds", "Feeds", "≋"],
  ["/research", "Research", "⌕"],
  ["/shared", "Sharing", "⇄"],
  ["/settings", "Settings", "⚙"],
];

const root = document.getElementById("app");
let shell = null;
let pendingNotice = null;  // a question asked before the shell was built

/** Show `element` above the pages until it removes itself. */
function ask(element) {
  const notices = document.getElementById("notices");
  if (notices) notices.append(element);
  else pendingNotice = element;
}

const zoneHooks = { ask, changed: () => render() };

function buildShell() {
  const search = h("input#search", {
    type: "search", placeholder: "Search notes and tasks", "aria-label": "Search", autocomplete: "off",
  });
  // Search as you type: 60 ms after the last key (under the gap between keys of one typing, so a
  // word is one request; the older request is aborted anyway), the notes page searches in place (another
  // page first navigates to it, the focus staying here); Enter searches at once.
  let typing = 0;
  search.addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => {
      const q = search.value.trim();
      if (liveSearch(q) || !q) return;
      navigate(`/notes?q=${encodeURIComponent(q)}`);
    }, 60);
  });
  const form = h("form.search", { role: "search", on: { submit: (e) => {
    e.preventDefault();
    clearTimeout(typing);
    const q = search.value.trim();
    if (liveSearch(q)) return;
    navigate(q ? `/notes?q=${encodeURIComponent(q)}` : "/notes");
  } } }, search, h("kbd.kbd-hint", {}, "/"));
  const nav = h("nav.nav#nav", { "aria-label": "Main" },
    NAV.map(([href, label, icon]) => h("a", { href }, h("span.nav-icon", { "aria-hidden": "true" }, icon), label)));
  const signOut = h("button.btn.btn-ghost.btn-sm", { type: "button", on: { click: signOutNow } }, "Sign out");
  const main = h("main.page#main", { tabindex: "-1" });
  const notices = h("div.notices#notices", {}, pendingNotice);  // questions above every page (widgets/zone.js)
  pendingNotice = null;
  const notifications = bell();
  const sidebar = h("aside.sidebar", { on: { keydown: (event) => {  // Esc closes the open menu
    if (event.key !== "Escape" || !sidebar.classList.contains("open")) return;
    setMenu(sidebar, false);
    sidebar.querySelector("#menu-button").focus();
  } } },
    h("a.brand", { href: "/" }, h("span.brand-mark", {}, "F"), h("span.brand-name", {}, "Fable")),
    menuButton(() => sidebar),
    h("div.drawer#drawer", {}, nav,
      h("div.sidebar-foot", {}, h("span.who", {}, `Signed in as ${session.user.username}`), signOut)));
  const layout = h("div.layout", {},
    sidebar,
    h("div.main", {},
      h("header.topbar", {}, form,
        h("a.btn.btn-primary.btn-sm", { href: "/notes/new", title: "New note (n)", "aria-label": "New note" },
          "+", h("span.new-note-label", {}, " New note")), notifications.element),
      notices, main));
  return { layout, main, nav, search, bell: notifications };
}

/** The phone layout's menu button: opens and closes the drawer that holds the navigation. */
function menuButton(sidebar) {
  const button = h("button.btn.btn-ghost.menu-button#menu-button", {
    type: "button", "aria-expanded": "false", "aria-controls": "drawer", "aria-label": "Menu",
    on: { click: () => setMenu(sidebar(), button.getAttribute("aria-expanded") !== "true") },
  }, h("span.menu-icon", { "aria-hidden": "true" }));
  return button;
}

function setMenu(sidebar, open) {
  sidebar.classList.toggle("open", open);
  sidebar.querySelector("#menu-button").setAttribute("aria-expanded", String(open));
}

/** The view's name for the tab's title, and the heading focus moves to after a navigation;
 * a view without a visible h1 (the editor) gets one for screen readers. */
function titleView(main, pathname) {
  let heading = main.querySelector("h1");
  if (!heading) {
    const name = pathname === "/notes/new" ? "New note" : pathname.startsWith("/notes/") ? "Edit note"
      : (NAV.find(([href]) => href !== "/" && pathname.startsWith(href)) || [null, "Fable"])[1];
    heading = h("h1.sr-only", {}, name);
    main.prepend(heading);
  }
  const name = heading.textContent.trim();
  document.title = name && name !== "Fable" ? `${name} · Fable` : "Fable";
  return heading;
}

let navigated = false;  // the first page of a visit keeps the browser's own focus (or a field's autofocus)

function focusView(main, heading) {
  if (!navigated) { navigated = true; return; }
  if (main.contains(document.activeElement) && document.activeElement !== main) return;  // the view focused a field
  if (document.activeElement?.id === "search" && document.activeElement.value) return;  // typing a search
  heading.tabIndex = -1;
  heading.focus({ preventScroll: true });
}

async function signOutNow() {
  try { await forgetDevice(); await api.post("/auth/logout"); } finally {
    setCsrfToken(null);
    forgetSignedIn();
    session.user = null;
    session.zone = null;
    shell = null;
    navigate("/login");
  }
}

// Pages that work signed out (a reset link is opened by someone who cannot sign in).
const PUBLIC = {
  "/forgot-password": () => forgotView(),
  "/reset-password": (params) => resetView(params),
  "/verify-email": (params) => verifyView(params),
};

async function render() {
  const url = new URL(location.href);
  if (PUBLIC[url.pathname]) { shell = null; clear(root, PUBLIC[url.pathname](url.searchParams)); return; }
  if (!session.user && url.pathname === "/register") {
    shell = null;
    clear(root, authView(url.searchParams, onSignedIn, true));
    return;
  }
  if (!session.user) {
    let params = url.searchParams;
    if (url.pathname !== "/login") {  // sent here from a page: the form knows (and returns there after)
      const login = `/login?next=${encodeURIComponent(url.pathname + url.search)}`;
      history.replaceState(null, "", login);
      params = new URL(login, location.origin).searchParams;
    }
    shell = null;
    clear(root, authView(params, onSignedIn));
    return;
  }
  if (url.pathname === "/oauth/consent") { shell = null; clear(root, consentView(url.searchParams)); return; }  // a page of its own
  if (url.pathname === "/login" || url.pathname === "/register") { navigate(url.searchParams.get("next") || "/", { replace: true }); return; }
  if (!shell) { shell = buildShell(); clear(root, shell.layout); }
  for (const link of shell.nav.querySelectorAll("a")) {
    const href = link.getAttribute("href");
    const active = href === "/" ? url.pathname === "/" : url.pathname.startsWith(href);
    if (active) link.setAttribute("aria-current", "page"); else link.removeAttribute("aria-current");
  }
  if (document.activeElement !== shell.search) shell.search.value = url.pathname === "/notes" ? url.searchParams.get("q") || "" : "";
  shell.bell.refresh();  // on every navigation (and on a poll, and when a push arrives)
  const found = match(url.pathname);
  setMenu(shell.layout.querySelector(".sidebar"), false);
  clear(shell.main);
  window.scrollTo(0, 0);
  if (!found) {
    shell.main.append(h("div.page-head", {}, h("h1", {}, "Not found")),
      h("p.muted", {}, "There is nothing at this address. "), h("a", { href: "/" }, "Go home"));
    focusView(shell.main, titleView(shell.main, url.pathname));
    return;
  }
  document.body.dataset.page = url.pathname.split("/")[1] || "home";
  const main = shell.main;
  main.setAttribute("aria-busy", "true");  // until the view has its content
  try {
    await found.view(main, found.params, url.searchParams);
  } catch (error) {
    if (error.status === 401) return;
    if (!(error instanceof ApiError)) console.error(error);  // a bug in the view: for whoever debugs it
    clear(main, ...failure(error));
  }
  if (location.pathname !== url.pathname || !shell || shell.main !== main) return;  // another navigation took over
  main.removeAttribute("aria-busy");
  focusView(main, titleView(main, url.pathname));
}

/** A page that could not load says why in plain words, with a retry (the same page again). */
function failure(error) {
  const missing = error.status === 404;
  const offline = error.type === "offline";  // no network, or the server is down
  const ours = !error.status || (error.status >= 500 && !["unavailable", "slow"].includes(error.type));  // a bug or a fault here
  const message = missing ? "There is nothing here: it may have been deleted, or the link is wrong."
    : offline ? error.message : ours ? "Something went wrong on our side. Try again in a moment." : error.message;
  return [h("div.page-head", {}, h("h1", {}, missing ? "Not found" : offline ? "You are offline" : "Something went wrong")),
    h("p.error#page-error", { role: "alert" }, message),
    h("div.row", {}, missing ? null : h("button.btn.btn-primary#retry", { type: "button", on: { click: () => render() } }, "Try again"),
      h("a.btn", { href: "/" }, "Go home"))];
}

async function onSignedIn(user) {
  session.user = user;
  try { await adoptZone(await api.get("/auth/me"), zoneHooks); } catch { /* the pages use the browser's zone meanwhile */ }
  const next = new URL(location.href).searchParams.get("next");
  navigate(next && next.startsWith("/") && !next.startsWith("//") ? next : "/", { replace: true });
}

setUnauthenticatedHandler(() => {
  forgetSignedIn();
  if (session.user) { session.user = null; session.zone = null; shell = null; render(); }
});

async function boot() {
  installShortcuts(() => Boolean(session.user));
  // The service worker keeps the app shell for an offline start (and carries Web Push).
  if ("serviceWorker" in navigator) navigator.serviceWorker.register("/sw.js").catch(() => {});
  let me = null;
  try {
    if (mightBeSignedIn()) {  // a signed-out visitor is not asked (a request refused on every page)
      me = await api.get("/auth/me");
      session.user = me.user;
      setCsrfToken(me.csrf_token);
      session.zone = me.timezone;
    }
  } catch (error) {
    session.user = null;
    if (error.type === "offline") { offline(); return; }  // the shell came from the service worker's cache
    if (error.status === 401) forgetSignedIn();
  }
  start(render);
  if (me) adoptZone(me, zoneHooks);
}

/** Started without a network: say so, and start for real once it is back (or on Try again). */
function offline() {
  document.title = "Offline · Fable";
  window.addEventListener("online", () => location.reload(), { once: true });
  clear(root, h("div.auth", {}, h("main.card.auth-card", {},
    h("div.brand", {}, h("span.brand-mark", {}, "F"), "Fable"),
    h("h1.auth-title", {}, "You are offline"),
    h("p.muted", {}, "Fable could not be reached. Your notes are safe on the server; they show again as soon as the connection is back."),
    h("button.btn.btn-primary#retry", { type: "button", on: { click: () => location.reload() } }, "Try again"))));
}

boot();
