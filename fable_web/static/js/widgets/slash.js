// "/" at the start of a line or after a space, in the note editor, opens a menu of things to
// insert (headings, lists, a table, a callout, a link, today's date, ...); the words typed after
// it filter the menu. Arrows move, Enter or a click inserts, Esc closes it and leaves the text as
// typed. A "/" inside a word or an address (a/b, https://) opens nothing.
import { clear, dayIn, formatIn, h } from "../dom.js";
import { listboxKey } from "./suggest.js";

// [label, words it is found by, what it inserts: text before the caret, text after it, whether it starts a block]
const COMMANDS = [
  ["Heading 1", "h1 title", "# ", "", true],
  ["Heading 2", "h2 subtitle", "## ", "", true],
  ["Heading 3", "h3", "### ", "", true],
  ["Bullet list", "ul unordered", "- ", "", true],
  ["Numbered list", "ol ordered", "1. ", "", true],
  ["Task", "todo checkbox check", "- [ ] ", "", true],
  ["Quote", "blockquote", "> ", "", true],
  ["Code block", "fence pre", "```\n", "\n```\n", true],
  ["Table", "grid columns", "| ", "Column | Column |\n| --- | --- |\n|  |  |\n", true, "Column"],
  ["Callout", "note tip warning admonition", "> [!note] ", "\n> \n", true],
  ["Divider", "rule hr line separator", "---\n", "", "rule"],
  ["Link to note", "wikilink [[ note", "[[", "", false],
  ["Today's date", "date day", () => dayIn(), "", false],
  ["Current time", "time now clock", () => formatIn(new Date(), { hour: "2-digit", minute: "2-digit", hourCycle: "h23" }), "", false],
].map(([label, words, before, after, block, selected]) => ({ label, words: `${label} ${words}`.toLowerCase(), before, after, block, selected }));

const OPEN = /(?:^|(?<=\s))\/([\p{L}\p{N}]*(?: [\p{L}\p{N}]*)?)$/u;  // "/" then up to two words, to the caret

let menus = 0;

/** The commands `typed` finds: those with a word (or their name) starting with it. */
export function matching(typed) {
  const query = typed.trim().toLowerCase();
  if (!query) return COMMANDS;
  return COMMANDS.filter((c) => c.words.startsWith(query) || c.words.split(/\s+/).some((w) => w.startsWith(query)));
}

/** Where the caret of `textarea` is, in its own box (px, the text's scroll taken off). */
function caretPoint(textarea) {
  const style = getComputedStyle(textarea);
  const mirror = h("div.hl-measure");
  for (const name of ["fontFamily", "fontSize", "fontWeight", "lineHeight", "letterSpacing", "tabSize", "paddingTop",
    "paddingRight", "paddingBottom", "paddingLeft", "borderTopWidth", "borderRightWidth", "borderBottomWidth", "borderLeftWidth"]) {
    mirror.style[name] = style[name];
  }
  mirror.style.width = `${textarea.clientWidth + parseFloat(style.borderLeftWidth) + parseFloat(style.borderRightWidth)}px`;
  const marker = h("span", {}, "\u200b");
  mirror.append(document.createTextNode(textarea.value.slice(0, textarea.selectionStart)), marker);
  textarea.parentElement.append(mirror);
  const line = parseFloat(style.lineHeight) || parseFloat(style.fontSize) * 1.6;
  const point = { top: marker.offsetTop - textarea.scrollTop + line, left: marker.offsetLeft - textarea.scrollLeft };
  mirror.remove();
  return point;
}

/** Give `textarea` the slash menu. */
export function attachSlashMenu(textarea) {
  const id = `slash-${++menus}`;
  const list = h(`ul.slash-menu.hidden#${id}`, { role: "listbox", "aria-label": "Insert" });
  let items = [];
  let index = 0;
  let start = -1;  // where the "/" is, while the menu is open
  let dismissed = -1;  // a "/" whose menu Esc closed: it stays closed while its words are typed

  function show() {
    if (!list.isConnected) textarea.after(list);
    clear(list, items.map((item, i) => h("li", {
      id: `${id}-${i}`, role: "option", "aria-selected": String(i === index),
      on: { mousedown: (e) => { e.preventDefault(); choose(i); } },
    }, item.label)));
    list.classList.remove("hidden");
    textarea.setAttribute("aria-controls", id);
    textarea.setAttribute("aria-activedescendant", `${id}-${index}`);
    list.children[index]?.scrollIntoView({ block: "nearest" });
  }
  function close() {
    start = -1;
    items = [];
    list.classList.add("hidden");
    if (textarea.getAttribute("aria-activedescendant")?.startsWith(`${id}-`)) textarea.removeAttribute("aria-activedescendant");
  }
  function update() {
    const caret = textarea.selectionStart;
    const before = textarea.value.slice(0, caret);
    const inLink = /\[\[[^\]\n]*$/.test(before);  // a "/" in a [[title being typed]] is the title's
    const found = textarea.selectionEnd === caret && !inLink ? OPEN.exec(before) : null;
    const at = found ? caret - found[0].length : -1;
    if (!found || at === dismissed) { if (!found) dismissed = -1; close(); return; }
    const wasOpen = start === at;
    items = matching(found[1]);
    if (!items.length) { close(); return; }
    start = at;
    if (!wasOpen) {
      index = 0;
      const point = caretPoint(textarea);
      list.style.top = `${Math.max(0, Math.min(point.top, textarea.clientHeight)) + 4}px`;
      list.style.left = `${Math.max(0, Math.min(point.left, textarea.clientWidth - 200))}px`;
    } else {
      index = Math.min(index, items.length - 1);
    }
    show();
  }
  function choose(i) {
    const item = items[i];
    const from = start;
    const to = textarea.selectionStart;
    close();
    if (!item || from < 0) return;
    const value = textarea.value;
    const lineStart = value.lastIndexOf("\n", from - 1) + 1;
    const blankBefore = !value.slice(lineStart, from).trim();
    let lead = item.block && !blankBefore ? "\n" : "";  // a block starts on a line of its own
    const above = value.slice(0, from);
    if (item.block === "rule" && above.trim() && !/\n[ \t]*\n[ \t]*$/.test(above)) {
      lead = blankBefore ? "\n" : "\n\n";  // a rule right under a line of text would make that a heading
    }
    const before = lead + (typeof item.before === "function" ? item.before() : item.before);
    textarea.focus();
    textarea.setSelectionRange(from, to);
    replaceSelection(textarea, before + item.after);
    const caret = from + before.length;
    if (item.selected) textarea.setSelectionRange(caret, caret + item.selected.length);
    else textarea.setSelectionRange(caret, caret);
    textarea.dispatchEvent(new Event("input", { bubbles: true }));  // [[ opens the link completion; the preview follows
  }

  textarea.addEventListener("input", update);
  textarea.addEventListener("keydown", (event) => {
    if (list.classList.contains("hidden")) return;
    listboxKey(event, index, items.length, {
      moveTo: (i) => { index = i; show(); }, choose,
      dismiss: () => { dismissed = start; close(); },  // typing on after that "/" leaves it closed
    });
  });
  textarea.addEventListener("click", () => { if (start >= 0) close(); });
  textarea.addEventListener("blur", () => setTimeout(() => { if (document.activeElement !== textarea) close(); }, 100));
  return { close, isOpen: () => !list.classList.contains("hidden") };
}

/** Replace the selection with `text` as typing would (the browser's undo keeps it), else directly. */
function replaceSelection(textarea, text) {
  let done = false;
  try { done = document.execCommand("insertText", false, text); } catch { done = false; }
  if (!done) textarea.setRangeText(text, textarea.selectionStart, textarea.selectionEnd, "end");
}
