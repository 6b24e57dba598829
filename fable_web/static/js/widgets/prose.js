// What a rendered note does beyond showing: task checkboxes that toggle their line of the markdown
// (saved with the version read, so a concurrent edit is never overwritten), a copy button on each
// code block, and the heading a link named (/notes/12#h-plan) scrolled into view.
import { api } from "../api.js";
import { h, toast } from "../dom.js";

const TASK_LINE = /^(\s*(?:>\s*)*(?:[-*+]|\d+[.)])\s+\[)([ xX])(\])/;

/** Toggle the checkbox on line `line` of `body` (0-based); null when that line holds none. */
export function toggledBody(body, line, checked) {
  const lines = body.split("\n");
  if (line < 0 || line >= lines.length || !TASK_LINE.test(lines[line])) return null;
  lines[line] = lines[line].replace(TASK_LINE, (_, start, _mark, end) => `${start}${checked ? "x" : " "}${end}`);
  return lines.join("\n");
}

/** Wire `article` (a note's rendered body) to `note`: `saved(note)` gets the note after a toggle. */
export function enhanceProse(article, note, { editable = false, saved = () => {} } = {}) {
  let saving = Promise.resolve();  // toggles save one after another, each on the version the last one made
  for (const box of article.querySelectorAll("input.task-box")) {
    const line = box.dataset.line;
    if (!editable || line === undefined) { box.disabled = true; continue; }
    box.addEventListener("change", () => {
      const checked = box.checked;
      saving = saving.then(() => toggle(note, Number(line), checked, box, saved));
    });
  }
  for (const pre of article.querySelectorAll("pre")) {
    const copy = h("button.btn.btn-sm.btn-ghost.code-copy", { type: "button", "aria-label": "Copy code" }, "Copy");
    copy.addEventListener("click", async () => {
      try { await navigator.clipboard.writeText(pre.textContent); toast("Copied"); }
      catch { toast("Your browser did not allow copying.", { bad: true }); }
    });
    const block = h("div.code-block");
    pre.replaceWith(block);
    block.append(copy, pre);
  }
  showHeading(article);
}

async function toggle(note, line, checked, box, saved) {
  const body = toggledBody(note.body, line, checked);
  if (body === null) { box.checked = !checked; toast("The note changed; reload it to tick this box.", { bad: true }); return; }
  try {
    const updated = await api.patch(`/notes/${note.id}`, { body, expected_version: note.version });
    Object.assign(note, { body: updated.body ?? body, version: updated.version });
    saved(note);
  } catch (e) {
    box.checked = !checked;
    toast(e.status === 409 ? "Someone changed this note meanwhile: reload to see their version." : e.message, { bad: true });
  }
}

/** Scroll to the element the address's #fragment names, when it is in `article`. */
export function showHeading(article) {
  if (!location.hash) return;
  let target = null;
  try { target = article.querySelector(`#${CSS.escape(decodeURIComponent(location.hash.slice(1)))}`); } catch { return; }
  if (!target) return;
  target.classList.add("targeted");
  requestAnimationFrame(() => target.scrollIntoView({ block: "start" }));
}
