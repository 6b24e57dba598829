// Keyboard: "/" focuses search, "n" starts a new note, "t" a new task, "c" a new chat, "e" edits
// the note on screen, Ctrl/Cmd+K the quick switcher, Ctrl/Cmd+Shift+P the command palette, "?"
// lists the shortcuts. A single key acts only outside text fields and without a modifier.
import { focusBack, h } from "./dom.js";
import { navigate } from "./router.js";
import { openSwitcher } from "./widgets/switcher.js";
import { applyStoredTheme } from "./widgets/theme.js";

const SHORTCUTS = [
  ["/", "Focus search"],
  ["n", "New note"],
  ["t", "New task"],
  ["c", "New chat"],
  ["e", "Edit the note on screen"],
  ["Ctrl/⌘ + K", "Go to a note (quick switcher)"],
  ["Ctrl/⌘ + Shift + P", "Commands (or > in the switcher)"],
  ["g then h / n / t / c / p", "Go to home, notes, tasks, calendar, projects"],
  ["j / k", "Next / previous item in a list (Enter opens it)"],
  ["Ctrl + S", "Save the note being edited"],
  ["Esc", "Leave a field or close a dialog"],
  ["?", "Show this list"],
];

function typing(target) {
  if (target.matches?.("input[type=checkbox], input[type=radio]")) return null;  // j/k still move from a tick box
  return target.closest("input, textarea, select, [contenteditable=''], [contenteditable='true'], dialog");
}

export function showShortcuts() {
  if (document.querySelector("dialog.shortcuts-dialog")) return;
  const dialog = h("dialog.shortcuts-dialog", { "aria-label": "Keyboard shortcuts" },
    h("h2", {}, "Keyboard shortcuts"),
    h("div.shortcuts", {}, SHORTCUTS.map(([keys, what]) => [h("kbd", {}, keys), h("span", {}, what)])),
    h("form.row", { method: "dialog" }, h("span.spacer"), h("button.btn", {}, "Close")));
  const opener = document.activeElement;  // focus goes back there when it closes
  dialog.addEventListener("close", () => { dialog.remove(); focusBack(opener); });
  document.body.append(dialog);
  dialog.showModal();
}

const ROW = ".list > li, .task, [data-row]";

/** The rows j and k move through: each list item's first link or button, in page order. */
function rows() {
  const items = document.querySelectorAll(`#main ${ROW}`.replaceAll(", ", ", #main "));
  return [...items].map((row) => row.querySelector("a[href]") || row.querySelector("button, input"))
    .filter((el) => el && el.offsetParent);
}

function step(by) {
  const all = rows();
  if (!all.length) return;
  const current = all.findIndex((el) => el.closest(ROW)?.contains(document.activeElement));
  const next = all[current < 0 ? (by > 0 ? 0 : all.length - 1) : Math.min(all.length - 1, Math.max(0, current + by))];
  next.focus();
  next.scrollIntoView({ block: "nearest" });
}

const GO = { h: "/", n: "/notes", t: "/tasks", c: "/calendar", p: "/projects", s: "/settings" };

export function installShortcuts(isSignedIn) {
  let pendingG = false;
  applyStoredTheme();
  document.addEventListener("keydown", (event) => {
    const key = event.key.toLowerCase();
    if ((event.ctrlKey || event.metaKey) && !event.altKey && isSignedIn()
        && ((key === "k" && !event.shiftKey) || (key === "p" && event.shiftKey))) {
      event.preventDefault();
      openSwitcher({ palette: key === "p", extra: [{ label: "Keyboard shortcuts", hint: "?", run: showShortcuts }] });
      return;
    }
    if (event.key === "Escape" && typing(event.target) && event.target.blur) {
      if (event.target.tagName !== "DIALOG") event.target.blur();
      return;
    }
    if (event.metaKey || event.ctrlKey || event.altKey || typing(event.target) || !isSignedIn()) return;
    if (pendingG && GO[event.key]) {
      pendingG = false;
      event.preventDefault();
      navigate(GO[event.key]);
      return;
    }
    pendingG = event.key === "g";
    if (event.key === "/") {
      const search = document.getElementById("search");
      if (search) { event.preventDefault(); search.focus(); search.select(); }
    } else if (event.key === "j" || event.key === "k") {
      event.preventDefault();
      step(event.key === "j" ? 1 : -1);
    } else if (event.key === "n") {
      event.preventDefault();
      if (location.pathname !== "/notes/new") navigate("/notes/new");
    } else if (event.key === "t") {
      event.preventDefault();
      const field = document.getElementById("new-task");
      if (field) field.focus(); else navigate("/tasks?new");
    } else if (event.key === "c") {
      event.preventDefault();
      if (location.pathname === "/chat") document.getElementById("chat-input")?.focus(); else navigate("/chat");
    } else if (event.key === "e") {
      const edit = document.getElementById("edit-note");
      if (edit) { event.preventDefault(); edit.click(); }
    } else if (event.key === "?") {
      event.preventDefault();
      showShortcuts();
    }
  });
}
