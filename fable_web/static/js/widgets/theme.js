// Light or dark, as the system prefers until the person picks one (kept in this browser).
const KEY = "fable-theme";

function systemDark() { return window.matchMedia("(prefers-color-scheme: dark)").matches; }

export function currentTheme() {
  return document.documentElement.dataset.theme || (systemDark() ? "dark" : "light");
}

export function setTheme(theme) {
  document.documentElement.dataset.theme = theme;
  try { localStorage.setItem(KEY, theme); } catch { /* private mode: for this page only */ }
}

export function toggleTheme() { setTheme(currentTheme() === "dark" ? "light" : "dark"); }

export function applyStoredTheme() {
  let stored = null;
  try { stored = localStorage.getItem(KEY); } catch { /* none */ }
  if (stored === "dark" || stored === "light") document.documentElement.dataset.theme = stored;
}
