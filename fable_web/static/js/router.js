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

export function navigate(path, { replace = false } = {}) {
  if (replace) history.replaceState(null, "", path);
  else history.pushState(null, "", path);
  show();
}

export function start(renderFn) {
  render = renderFn;
  window.addEventListener("popstate", () => { if (location.pathname + location.search !== shown) show(); });
  document.addEventListener("click", (event) => {
    const link = event.target.closest("a[href]");
    if (!link || event.defaultPrevented || event.button !== 0) return;
    if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    if (link.target || link.hasAttribute("download") || link.getAttribute("href").startsWith("#")) return;
    const url = new URL(link.href, location.href);
    if (url.origin !== location.origin || url.pathname.startsWith("/api/")) return;
    event.preventDefault();
    navigate(url.pathname + url.search);
  });
  show();
}
