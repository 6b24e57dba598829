// Tag chips with autocomplete from the user's existing tags (list_tags).
import { api } from "../api.js";
import { clear, h } from "../dom.js";
import { attachSuggest } from "./suggest.js";

let known = null;

async function knownTags() {
  if (!known) known = api.get("/tags", { limit: 500 }).then((r) => r.items.map((t) => t.tag)).catch(() => []);
  return known;
}

export function forgetKnownTags() { known = null; }

const FROM_TEXT = "Written as #tag in the text: edit the text to remove it";

/** A tag the note's text gives it (`#tag` in its body): shown, never removed here. */
export function textTagChip(tag, link = false) {
  const label = [`#${tag}`, h("span.sr-only", {}, " (from the text)")];
  return link ? h("a.chip.chip-text", { href: `/notes?tag=${encodeURIComponent(tag)}`, title: FROM_TEXT }, ...label)
    : h("span.chip.chip-text", { title: FROM_TEXT }, ...label);
}

/** A chips field; returns {el, value(), add(tag), set(tags)} where value() is the list of tags.
 * `fromText` are the tags the note's text gives it: shown first, without a remove button. */
export function tagInput(initial = [], onChange = () => {}, fromText = []) {
  const tags = [...initial];
  const chips = h("span.row");
  const input = h("input#tag-input", { type: "text", placeholder: "Add a tag", "aria-label": "Add a tag", autocomplete: "off" });
  const wrap = h("div.suggest-wrap", {}, input);
  const el = h("div.tag-input", {}, chips, wrap);

  function render() {
    clear(chips, fromText.map((tag) => textTagChip(tag)), tags.map((tag) => h("span.chip", {}, `#${tag}`,
      h("button.x", { type: "button", "aria-label": `Remove tag ${tag}`, on: { click: () => remove(tag) } }, "×"))));
  }
  function add(raw) {
    const tag = raw.trim().replace(/^#/, "").toLowerCase();
    if (tag && !tags.includes(tag) && !fromText.includes(tag)) { tags.push(tag); render(); onChange(tags); }
    input.value = "";
  }
  function remove(tag) {
    tags.splice(tags.indexOf(tag), 1);
    render();
    onChange(tags);
  }

  const suggest = attachSuggest(input, {
    fetch: async (q) => (await knownTags())
      .filter((t) => t.startsWith(q.toLowerCase()) && !tags.includes(t) && !fromText.includes(t))
      .map((t) => ({ label: `#${t}`, value: t })),
    accept: (item) => add(item.value),
  });
  input.addEventListener("input", () => suggest.update(input.value.trim() ? input.value.trim() : null));
  input.addEventListener("keydown", (event) => {
    if ((event.key === "Enter" || event.key === ",") && input.value.trim()) {
      event.preventDefault();
      add(input.value);
      suggest.close();
    } else if (event.key === "Backspace" && !input.value && tags.length) {
      remove(tags[tags.length - 1]);
    }
  });
  input.addEventListener("blur", () => { if (input.value.trim()) add(input.value); });
  render();
  const set = (list) => { tags.splice(0, tags.length, ...list); render(); };
  return { el, value: () => [...tags], add, set };
}
