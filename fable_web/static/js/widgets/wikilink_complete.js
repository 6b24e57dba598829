// "[[" in the editor suggests notes to link to, as the title is typed: the same title first, then
// titles starting with it, then with a word starting with it, then similar ones (suggest_titles,
// GET /api/titles: index scans, a few milliseconds at 10,000 notes). With nothing typed yet, the
// most recently edited notes.
import { api } from "../api.js";
import { attachSuggest } from "./suggest.js";

const OPEN_LINK = /\[\[([^\[\]|#\n]{0,80})$/;

async function candidates(typed) {
  const text = typed.trim();
  const found = text
    ? await api.get("/titles", { text, limit: 8 }).catch(() => ({ items: [] }))
    : await api.get("/notes", { limit: 8, sort: "updated" }).catch(() => ({ items: [] }));
  return found.items.map((n) => ({ label: n.title, value: n.title }));
}

/** Complete [[wikilinks]] in a textarea; onInsert() runs after a title is inserted. */
export function attachLinkComplete(textarea, onInsert = () => {}) {
  const suggest = attachSuggest(textarea, {
    fetch: candidates,
    accept: (item) => {
      const caret = textarea.selectionStart;
      const before = textarea.value.slice(0, caret).replace(OPEN_LINK, `[[${item.value}]]`);
      const after = textarea.value.slice(caret).replace(/^[^\[\]\n]*\]\]/, "");
      textarea.value = before + after;
      textarea.selectionStart = textarea.selectionEnd = before.length;
      textarea.focus();
      onInsert();
    },
  });
  textarea.addEventListener("input", () => {
    const found = OPEN_LINK.exec(textarea.value.slice(0, textarea.selectionStart));
    suggest.update(found ? found[1] : null);
  });
  return suggest;
}
