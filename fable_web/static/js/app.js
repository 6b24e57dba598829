// Boot: who is signed in, then the shell and the page for the current URL.
import { api, setCsrfToken, setUnauthenticatedHandler } from "./api.js";
import { clear, h } from "./dom.js";
import { match, navigate, route, start } from "./router.js";
import { installShortcuts } from "./shortcuts.js";
import { session } from "./session.js";
import { authView, forgotView, resetView, verifyView } from "./views/auth.js";
import { homeView } from "./views/home.js";
import { notesView } from "./views/notes.js";
import { noteView } from "./views/note.js";
import { tasksView } from "./views/tasks.js";
import { trashView } from "./views/trash.js";
import { calendarView } from "./views/calendar.js";
import { projectsView, projectView } from "./views/projects.js";
import { settingsView } from "./views/settings.js";
import { chatView } from "./views/chat.js";
import { journalView } from "./views/journal.js";
import { sharedView } from "./views/shared.js";
import { momentsView } from "./views/moments.js";
import { feedsView } from "./views/feeds.js";
import { researchView } from "./views/research.js";
import { bell, forgetDevice } from "./widgets/bell.js";

route("/", homeView);
route("/notes", notesView);
route("/notes/new", noteView);
route("/notes/:id", noteView);
route("/tasks", tasksView);
route("/trash", trashView);
route("/calendar", calendarView);
route("/projects", projectsView);
route("/projects/:id", projectView);
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

const NAV = [
  ["/", "Home", "◇"],
  ["/notes", "Notes", "¶"],
  ["/tasks", "Tasks", "✓"],
  ["/calendar", "Calendar", "▤"],
  ["/projects", "Projects", "▦"],
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

function buildShell() {
  const search = h("input#search", {
    type: "search", placeholder: "Search notes and tasks", "aria-label": "Search", autocomplete: "off",
  });
  const form = h("form.search", { role: "search", on: { submit: (e) => {
    e.preventDefault();
    const q = search.value.trim();
    navigate(q ? `/notes?q=${encodeURIComponent(q)}` : "/notes");
  } } }, search, h("kbd.kbd-hint", {}, "/"));
  const nav = h("nav.nav", { "aria-label": "Main" },
    NAV.map(([href, label, icon]) => h("a", { href }, h("span.nav-icon", { "aria-hidden": "true" }, icon), label)));
  const signOut = h("button.btn.btn-ghost.btn-sm", { type: "button", on: { click: signOutNow } }, "Sign out");
  const main = h("main.page#main");
  const notifications = bell();
  const layout = h("div.layout", {},
    h("aside.sidebar", {},
      h("a.brand", { href: "/" }, h("span.brand-mark", {}, "F"), h("span.brand-name", {}, "Fable")),
      nav,
      h("div.sidebar-foot", {}, h("span.who", {}, `Signed in as ${session.user.username}`), signOut)),
    h("div.main", {},
      h("header.topbar", {}, form,
        h("a.btn.btn-primary.btn-sm", { href: "/notes/new", title: "New note (n)", "aria-label": "New note" },
          "+", h("span.new-note-label", {}, " New note")), notifications.element),
      main));
  return { layout, main, nav, search, bell: notifications };
}

async function signOutNow() {
  try { await forgetDevice(); await api.post("/auth/logout"); } finally {
    setCsrfToken(null);
    session.user = null;
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
    if (url.pathname !== "/login") history.replaceState(null, "", `/login?next=${encodeURIComponent(url.pathname + url.search)}`);
    shell = null;
    clear(root, authView(url.searchParams, onSignedIn));
    return;
  }
  if (url.pathname === "/login" || url.pathname === "/register") { navigate(url.searchParams.get("next") || "/", { replace: true }); return; }
  if (!shell) { shell = buildShell(); clear(root, shell.layout); }
  for (const link of shell.nav.querySelectorAll("a")) {
    const href = link.getAttribute("href");
    const active = href === "/" ? url.pathname === "/" : url.pathname.startsWith(href);
    if (active) link.setAttribute("aria-current", "page"); else link.removeAttribute("aria-current");
  }
  shell.search.value = url.pathname === "/notes" ? url.searchParams.get("q") || "" : "";
  shell.bell.refresh();  // on every navigation (and on a poll, and when a push arrives)
  const found = match(url.pathname);
  clear(shell.main);
  window.scrollTo(0, 0);
  if (!found) {
    shell.main.append(h("div.page-head", {}, h("h1", {}, "Not found")),
      h("p.muted", {}, "There is nothing at this address. "), h("a", { href: "/" }, "Go home"));
    return;
  }
  document.body.dataset.page = url.pathname.split("/")[1] || "home";
  try {
    await found.view(shell.main, found.params, url.searchParams);
  } catch (error) {
    if (error.status === 401) return;
    clear(shell.main, h("div.page-head", {}, h("h1", {}, error.status === 404 ? "Not found" : "Something went wrong")),
      h("p.error", {}, error.message || String(error)), h("a", { href: "/" }, "Go home"));
  }
}

function onSignedIn(user) {
  session.user = user;
  const next = new URL(location.href).searchParams.get("next");
  navigate(next && next.startsWith("/") && !next.startsWith("//") ? next : "/", { replace: true });
}

setUnauthenticatedHandler(() => {
  if (session.user) { session.user = null; shell = null; render(); }
});

async function boot() {
  installShortcuts(() => Boolean(session.user));
  try {
    const me = await api.get("/auth/me");
    session.user = me.user;
    setCsrfToken(me.csrf_token);
  } catch { session.user = null; }
  start(render);
}

boot();
