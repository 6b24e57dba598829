// The quick switcher (Ctrl/Cmd+K): notes by title as it is typed (GET /api/titles), Enter opens,
// arrows move. Typing ">" first (or Ctrl/Cmd+Shift+P) turns it into the command palette: go to a
// page, new note, new task, toggle the theme. A combobox with its listbox (aria-activedescendant).
import { api } from "../api.js";
import { clear, focusBack, h } from "../dom.js";
import { navigate } from "../router.js";
import { toggleTheme } from "./theme.js";

const PAGES = [
  ["/", "Home"], ["/notes", "Notes"], ["/tasks", "Tasks"], ["/tags", "Tags"], ["/graph", "Graph"],
  ["/calendar", "Calendar"], ["/projects", "Projects"], ["/journal", "Journal"], ["/chat", "Assistant"],
  ["/moments", "Moments"], ["/feeds", "Feeds"], ["/research", "Research"], ["/shared", "Sharing"],
  ["/settings", "Settings"],
];

function commands(extra) {
  return [
    { label: "New note", hint: "n", run: () => navigate("/notes/new") },
    { label: "New task", run: () => navigate("/tasks") },
    { label: "Toggle light / dark theme", run: toggleTheme },
    ...PAGES.map(([path, name]) => ({ label: `Go to ${name}`, hint: path, run: () => navigate(path) })),
    ...extra,
  ];
}

/** Whether every letter of `typed` appears in `label`, in order (a fuzzy match); lower is better. */
function fuzzyScore(label, typed) {
  const text = label.toLowerCase();
  let at = -1;
  let gaps = 0;
  for (const ch of typed.toLowerCase().replace(/\s+/g, "")) {
    const next = text.indexOf(ch, at + 1);
    if (next < 0) return null;
    gaps += next - at - 1;
    at = next;
  }
  return (text.startsWith(typed.toLowerCase()) ? 0 : 1000) + gaps;
}

let open = null;

/** Open the switcher (or the palette when `palette`); `extra` commands join the palette's.
 * With `pick`, it is a note picker: choosing a note calls pick(note) instead of opening it (no
 * commands; `label` says what the pick is for), and focus goes back to `returnTo` when it closes. */
export function openSwitcher({ palette = false, extra = [], pick = null, label = null, returnTo = null } = {}) {
  if (open && !pick && !open.pick) { open.input.value = palette ? ">" : ""; open.refresh(); open.input.focus(); return; }
  if (open) { const old = open; open = null; old.dialog.close(); old.dialog.remove(); }  // a picker replaces the switcher, and back
  const words = pick ? label || "Choose a note" : "Go to a note, or type > for commands";
  const input = h("input.switcher-input#switcher-input", {
    type: "text", role: "combobox", autocomplete: "off", spellcheck: "false",
    "aria-label": words, "aria-expanded": "true",
    "aria-controls": "switcher-list", "aria-autocomplete": "list",
    placeholder: pick ? `${words}…` : "Go to a note… (type > for commands)",
  });
  const list = h("ul.switcher-list#switcher-list", { role: "listbox", "aria-label": "Results" });
  const status = h("p.switcher-status.muted.small", { "aria-live": "polite" });
  const dialog = h("dialog.switcher", { "aria-label": pick ? words : "Quick switcher", dataset: { picker: pick ? "true" : null } }, input, list, status);
  const opener = returnTo || document.activeElement;  // focus goes back there when it closes (a chosen note's page takes it after)
  let items = [];
  let index = 0;
  let serial = 0;

  function show() {
    clear(list, items.map((item, i) => h("li.switcher-item", {
      id: `switcher-opt-${i}`, role: "option", "aria-selected": String(i === index),
      on: { mousedown: (e) => { e.preventDefault(); choose(i); }, mousemove: () => { if (index !== i) { index = i; mark(); } } },
    }, h("span.switcher-label", {}, item.label), item.hint ? h("span.switcher-hint", {}, item.hint) : null)));
    mark();
    status.textContent = items.length ? "" : (input.value.trim() ? "Nothing matches." : "");
  }

  function mark() {
    list.querySelectorAll("[role=option]").forEach((li, i) => li.setAttribute("aria-selected", String(i === index)));
    if (items.length) {
      input.setAttribute("aria-activedescendant", `switcher-opt-${index}`);
      list.children[index]?.scrollIntoView({ block: "nearest" });
    } else input.removeAttribute("aria-activedescendant");
  }

  async function refresh() {
    const mine = ++serial;
    const value = input.value;
    let found;
    if (value.startsWith(">") && !pick) {
      const typed = value.slice(1).trim();
      found = commands(extra).map((c) => [typed ? fuzzyScore(c.label, typed) : 0, c])
        .filter(([score]) => score !== null).sort((a, b) => a[0] - b[0]).map(([, c]) => c);
    } else {
      const text = value.trim();
      const page = text ? await api.get("/titles", { text, limit: 10 }).catch(() => ({ items: [] }))
        : await api.get("/notes", { limit: 8, sort: "updated" }).catch(() => ({ items: [] }));
      found = page.items.map((n) => ({ label: n.title, hint: n.kind === "note" ? "" : n.kind,
        run: () => (pick ? pick(n) : navigate(`/notes/${n.id}`)) }));
    }
    if (mine !== serial || !dialog.isConnected) return;
    items = found;
    index = 0;
    show();
    dialog.dataset.ready = String(serial);  // for tests and the benchmark: these results are shown
  }

  function choose(i) {
    const item = items[i];
    dialog.close();
    if (item) item.run();
  }

  input.addEventListener("input", refresh);
  input.addEventListener("keydown", (event) => {
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      if (!items.length) return;
      index = (index + (event.key === "ArrowDown" ? 1 : items.length - 1)) % items.length;
      mark();
    } else if (event.key === "Enter") {
      event.preventDefault();
      choose(index);
    }
  });
  dialog.addEventListener("close", () => {
    dialog.remove();
    if (open?.dialog === dialog) open = null;
    focusBack(opener);
  });
  dialog.addEventListener("click", (event) => { if (event.target === dialog) dialog.close(); });
  document.body.append(dialog);
  dialog.showModal();
  open = { input, refresh, dialog, pick };
  input.value = palette && !pick ? ">" : "";
  input.focus();
  refresh();
}
