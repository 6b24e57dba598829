// [[links]] and #tags marked in a textarea as they are typed: a backdrop behind the (transparent)
// textarea holds the same text, laid out alike (its font, padding, borders, width and scroll
// copied), with the links and tags in spans whose text is transparent and whose background
// shows through. The caret, the selection and the text stay the textarea's own. The backdrop is
// built from text nodes only: what is typed is never read as HTML.
import { h } from "../dom.js";

const LINK = /(!?)\[\[([^[\]|\n]{1,300})(?:\|[^[\]\n]{0,300})?\]\]/gu;
const TAG = /(^|\s)#([\p{L}\p{N}_][\p{L}\p{N}_/-]{0,99})/gu;
const CODE = /^(```|~~~)[^\n]*\n[\s\S]*?(?:\n\1[^\n]*(?=\n|$)|$)|`[^`\n]+`/gmu;  // fenced blocks and code spans: no links there
const COPIED = ["fontFamily", "fontSize", "fontWeight", "fontStyle", "lineHeight", "letterSpacing", "wordSpacing",
  "tabSize", "textIndent", "textTransform", "paddingTop", "paddingRight", "paddingBottom", "paddingLeft",
  "borderTopWidth", "borderRightWidth", "borderBottomWidth", "borderLeftWidth", "boxSizing"];

/** How titles compare (fable_core's title_key): case-folded words, punctuation dropped. */
export function titleKey(title) {
  return (title.toLowerCase().match(/[\p{L}\p{N}]+/gu) || []).join(" ");
}

/** A link's note title: "Note#Heading" names the note "Note" (a "#" with nothing after is the title's). */
export function linkTitle(target) {
  const at = target.lastIndexOf("#");
  return at >= 0 && target.slice(at + 1).trim() ? target.slice(0, at).trim() : target.trim();
}

/** The [[links]] and #tags of `text` outside code, in order: {start, end, kind, key}. */
export function marks(text) {
  const code = [];
  for (const m of text.matchAll(CODE)) code.push([m.index, m.index + m[0].length]);
  const inCode = (at) => code.some(([s, e]) => at >= s && at < e);
  const found = [];
  for (const m of text.matchAll(LINK)) {
    if (!inCode(m.index)) found.push({ start: m.index, end: m.index + m[0].length, kind: "link", key: titleKey(linkTitle(m[2])) });
  }
  const inLink = (at) => found.some((f) => at >= f.start && at < f.end);
  for (const m of text.matchAll(TAG)) {
    const tag = m[2].replace(/[/-]+$/, "");
    const start = m.index + m[1].length;
    if (!tag || /^[\d/]+$/.test(tag) || inCode(start) || inLink(start)) continue;
    found.push({ start, end: start + 1 + tag.length, kind: "tag", key: tag.toLowerCase() });
  }
  return found.sort((a, b) => a.start - b.start);
}

/**
 * Mark the links and tags of `textarea` (already in the page or not): returns {el, refresh,
 * learn(body, preview)}. `el` takes the textarea's place; learn() is told what the preview of
 * `body` rendered, and links then show whether their note exists.
 */
export function attachHighlight(textarea) {
  const text = h("div.hl-text");
  const backdrop = h("div.hl-backdrop", { "aria-hidden": "true" }, text);
  const el = h("div.hl-wrap", {}, backdrop);
  textarea.classList.add("hl-input");
  el.append(textarea);
  const known = { rendered: new Set(), missing: new Set() };
  let queued = false;

  function layout() {
    const style = getComputedStyle(textarea);
    for (const name of COPIED) backdrop.style[name] = style[name];
    const scrollbar = textarea.offsetWidth - textarea.clientWidth
      - parseFloat(style.borderLeftWidth) - parseFloat(style.borderRightWidth);
    backdrop.style.paddingRight = `${parseFloat(style.paddingRight) + Math.max(0, scrollbar)}px`;
    backdrop.style.width = `${textarea.offsetWidth}px`;
    backdrop.style.height = `${textarea.offsetHeight}px`;
    sync();
  }
  function sync() {
    backdrop.scrollTop = textarea.scrollTop;
    backdrop.scrollLeft = textarea.scrollLeft;
  }
  function draw() {
    queued = false;
    const value = textarea.value;
    const parts = [];
    let at = 0;
    for (const mark of marks(value)) {
      if (mark.start < at) continue;
      parts.push(value.slice(at, mark.start));
      const state = mark.kind === "tag" ? "" : known.missing.has(mark.key) ? ".hl-missing"
        : known.rendered.has(mark.key) ? ".hl-resolved" : "";
      parts.push(h(`span.hl-${mark.kind}${state}`, { dataset: { key: mark.key } }, value.slice(mark.start, mark.end)));
      at = mark.end;
    }
    parts.push(value.slice(at), "\n\u200b");  // a last empty line keeps its height, as in the textarea
    text.replaceChildren(...parts.map((p) => (typeof p === "string" ? document.createTextNode(p) : p)));
    sync();
  }
  function refresh() {
    if (queued) return;
    queued = true;
    requestAnimationFrame(draw);
  }
  textarea.addEventListener("input", refresh);
  textarea.addEventListener("scroll", sync);
  new ResizeObserver(layout).observe(textarea);
  draw();
  return {
    el,
    refresh: draw,
    /** The preview rendered `body` into `preview`: its missing links are the notes that do not exist. */
    learn(body, preview) {
      known.rendered = new Set(marks(body).filter((m) => m.kind === "link").map((m) => m.key));
      known.missing = new Set([...preview.querySelectorAll("a.wikilink-missing")].map((a) => {
        try { return titleKey(new URL(a.href, location.origin).searchParams.get("title") || ""); } catch { return ""; }
      }));
      draw();
    },
  };
}
