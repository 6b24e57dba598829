// A small listbox of suggestions under a field, driven by the keyboard or the mouse.
import { clear, h } from "../dom.js";

let lists = 0;  // each listbox's id

/**
 * attachSuggest(field, {fetch(text) -> [{label, value}], accept(item)}): returns {update, close}.
 * The owner calls update(query) when it wants suggestions (or null to close).
 */
export function attachSuggest(field, { fetch, accept }) {
  const id = `suggest-${++lists}`;
  const list = h(`ul.suggest.hidden#${id}`, { role: "listbox", "aria-label": "Suggestions" });
  field.setAttribute("aria-autocomplete", "list");
  let items = [];
  let index = 0;
  let serial = 0;

  function show() {
    if (!list.isConnected) { // the field may not have been in the page yet
      field.after(list);
      field.setAttribute("aria-controls", id);  // a textbox takes no aria-expanded
    }
    clear(list, items.map((item, i) => h("li", {
      id: `${id}-${i}`, role: "option", "aria-selected": String(i === index),
      on: { mousedown: (e) => { e.preventDefault(); choose(i); } },
    }, item.label)));
    list.classList.toggle("hidden", items.length === 0);
    if (items.length) field.setAttribute("aria-activedescendant", `${id}-${index}`);
    else field.removeAttribute("aria-activedescendant");
  }

  function close() {
    items = [];
    list.classList.add("hidden");
    field.removeAttribute("aria-activedescendant");
  }

  function choose(i) {
    const item = items[i];
    close();
    if (item) accept(item);
  }

  async function update(query) {
    const mine = ++serial;
    if (query === null) { close(); return; }
    const found = await fetch(query);
    if (mine !== serial) return;
    items = found.slice(0, 8);
    index = 0;
    show();
  }

  field.addEventListener("keydown", (event) => {
    if (list.classList.contains("hidden")) return;
    listboxKey(event, index, items.length, { moveTo: (i) => { index = i; show(); }, choose, dismiss: close });
  });
  field.addEventListener("blur", () => setTimeout(close, 100));
  return { update, close, isOpen: () => !list.classList.contains("hidden") };
}

/** A key pressed in a field whose listbox is open: the arrows move (wrapping around), Enter or
 * Tab chooses, Escape dismisses the list (the field keeps the focus); other keys type. */
export function listboxKey(event, index, count, { moveTo, choose, dismiss }) {
  if (event.key === "ArrowDown" || event.key === "ArrowUp") {
    event.preventDefault();
    moveTo((index + (event.key === "ArrowDown" ? 1 : count - 1)) % count);
  } else if (event.key === "Enter" || event.key === "Tab") {
    event.preventDefault();
    event.stopImmediatePropagation();
    choose(index);
  } else if (event.key === "Escape") {
    event.preventDefault();
    event.stopPropagation();
    dismiss();
  }
}
