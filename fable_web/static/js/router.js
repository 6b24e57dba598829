// History-API routing: same-origin links navigate without reloading the page.

const routes = [];
let render = () => {};
let shown = "";  // the path and query last rendered: a change of #fragment alone (the skip link) is no navigation

function show() {
  shown = location.pathname + location.search;
  render();
}

/** route("/notes/:id", view): views receive ({id}, URLSearchParams). */
export function route(pattern, view) {
  const names = [];
  const source = pattern.replace(/:(\w+)/g, (_, name) => { names.push(name); return "([^/]+)"; });
  routes.push({ regex: new RegExp(`^${source}/?$`), names, view });
}

export function match(pathname) {
  for (const { regex, names, view } of routes) {
    const found = regex.exec(pathname);
    if (found) {
      const params = Object.fromEntries(names.map((n, i) => [n, decodeURIComponent(found[i + 1])]));
      return { view, params };
    }
  }
  return null;
}

let leaveGuard = null;

/** setLeaveGuard(fn): before the view is left, fn() (true, false or a promise of one) says
 * whether to go (an editor with unsaved changes asks); it is dropped once it lets the user go. */
export function setLeaveGuard(fn) { leaveGuard = fn; }

function leave(go) {
  const guard = leaveGuard;
  if (!guard) { go(); return; }
  Promise.resolve(guard()).then((ok) => {
    if (!ok) return;
    if (leaveGuard === guard) leaveGuard = null;
    go();
  });
}

export function navigate(path, { replace = false } = {}) {
  leave(() => {
    if (replace) history.replaceState(null, "", path);
    else history.pushState(null, "", path);
    show();
  });
}

export function start(renderFn) {
  render = renderFn;
  window.addEventListener("popstate", () => {
    const target = location.pathname + location.search;
    if (target === shown) return;  // moving between #fragments of the page on screen: the browser scrolls
    if (!leaveGuard) { show(); return; }
    history.pushState(null, "", shown);  // stay until the guard lets the user go
    leave(() => { history.replaceState(null, "", target); show(); });
  });
  document.addEventListener("click", (event) => {
    const link = event.target.closest("a[href]");
    if (!link || event.defaultPrevented || event.button !== 0) return;
    if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    if (link.target || link.hasAttribute("download") || link.getAttribute("href").startsWith("#")) return;
    const url = new URL(link.href, location.href);
    if (url.origin !== location.origin || url.pathname.startsWith("/api/")) return;
    // a #fragment on this page (a footnote, a heading): the browser scrolls there itself
    if (url.hash && url.pathname === location.pathname && url.search === location.search) return;
    event.preventDefault();
    navigate(url.pathname + url.search + url.hash);
  });
  show();
}
