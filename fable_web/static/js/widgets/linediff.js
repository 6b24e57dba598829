// A line diff of two texts, computed in the browser (longest common subsequence) and shown
// as text nodes only: the assistant's proposal never reaches the page as HTML.
import { h } from "../dom.js";

const MAX_CELLS = 4_000_000; // beyond this, show everything as replaced rather than stall the page

/** [{op: " " | "-" | "+", line}] turning `before` into `after`. */
export function lineDiff(before, after) {
  const a = before.split("\n");
  const b = after.split("\n");
  if (a.length * b.length > MAX_CELLS) {
    return [...a.map((line) => ({ op: "-", line })), ...b.map((line) => ({ op: "+", line }))];
  }
  const rows = a.length + 1;
  const cols = b.length + 1;
  const lcs = new Uint32Array(rows * cols);
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lcs[i * cols + j] = a[i] === b[j] ? lcs[(i + 1) * cols + j + 1] + 1
        : Math.max(lcs[(i + 1) * cols + j], lcs[i * cols + j + 1]);
    }
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) { out.push({ op: " ", line: a[i] }); i++; j++; }
    else if (lcs[(i + 1) * cols + j] >= lcs[i * cols + j + 1]) out.push({ op: "-", line: a[i++] });
    else out.push({ op: "+", line: b[j++] });
  }
  while (i < a.length) out.push({ op: "-", line: a[i++] });
  while (j < b.length) out.push({ op: "+", line: b[j++] });
  return out;
}

const CLASS = { "+": "add", "-": "del", " ": "" };

/** The diff as a block of lines marked added / removed. */
export function diffBlock(before, after, attrs = {}) {
  const lines = lineDiff(before, after);
  return h("div.diff", attrs, lines.map(({ op, line }) => h("div", { class: CLASS[op] }, `${op} ${line}`)));
}
