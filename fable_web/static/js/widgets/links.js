// "[[" in the editor suggests notes to link to: titles containing what was typed (from the
// 200 most recently edited notes, fetched once), then full-text matches (search_notes).
import { api } from "../api.js";
import { attachSuggest } from "./suggest.js";

const OPEN_LINK = /\[\[([^\[\]|\n]{0,80})$/;

async function candidates(recent, q) {
  const titles = (await recent).map((n) => n.title);
  const needle = q.trim().toLowerCase();
  const found = titles.filter((t) => t.toLowerCase().includes(needle));
  if (needle && found.length < 8) {
    const hits = await api.get("/search", { query: q.trim(), limit: 8 }).catch(() => ({ items: [] }));
    for (const hit of hits.items) if (!found.includes(hit.title)) found.push(hit.title);
  }
  return found.map((title) => ({ label: title, value: title }));
}

export function attachLinkComplete(textarea, onInsert = () => {}) {
  let recent = null;
  const suggest = attachSuggest(textarea, {
    fetch: (q) => {
      recent ??= api.get("/notes", { limit: 200, sort: "updated" }).then((p) => p.items, () => []);
      return candidates(recent, q);
    },
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
