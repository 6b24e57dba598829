// When a note changed since the editor opened it, saving answers 409: instead of a dead end this
// card shows theirs against yours and offers a merge (POST /notes/{id}/merge, three-way on the
// version the edit started from), overwriting with yours, saving yours as a copy, or going back.
import { api } from "../api.js";
import { clear, h } from "../dom.js";
import { diffBlock } from "./linediff.js";

/** Whether `error` is update_note's refusal of a stale expected_version. */
export function isStale(error) {
  return error?.status === 409 && error.type === "conflict" && error.details?.version !== undefined;
}

/**
 * conflictView({ noteId, yours: {title, body, tags}, baseVersion, save, saveCopy, back, editMerge })
 * save(fields, version) stores fields over `version` (rejecting with a stale error if it moved
 * again); saveCopy(fields) creates a note; back() returns to the editor; editMerge(body, version)
 * returns to it with the merged text to resolve by hand.
 */
export function conflictView(options) {
  const card = h("section.card.conflict#conflict", { "aria-labelledby": "conflict-title" });
  load(card, options);
  return card;
}

async function load(card, { noteId, yours, baseVersion, save, saveCopy, back, editMerge }) {
  clear(card, h("h2#conflict-title", {}, "This note changed while you were editing"), h("p.muted", {}, "Comparing…"));
  const [theirs, merged] = await Promise.all([api.get(`/notes/${noteId}`),
    api.post(`/notes/${noteId}/merge`, { base_version: baseVersion, title: yours.title, body: yours.body, tags: yours.tags })]);
  const error = h("p.error.hidden", { role: "alert" });
  const copyTitle = h("input.copy-title#conflict-copy-title", { type: "text", "aria-label": "Title of the copy",
    value: `${yours.title} (my version)` });
  async function attempt(work) {
    error.classList.add("hidden");
    try { await work(); } catch (e) {
      if (e.status === 409 && e.details?.version !== undefined) { load(card, { noteId, yours, baseVersion, save, saveCopy, back, editMerge }); return; }
      error.textContent = e.message;
      error.classList.remove("hidden");
    }
  }
  const mergeFields = { title: merged.title, body: merged.body, tags: merged.tags };
  const button = (id, label, onClick, primary = false) =>
    h(`button.btn.btn-sm${primary ? ".btn-primary" : ""}#${id}`, { type: "button", on: { click: onClick } }, label);
  clear(card,
    h("h2#conflict-title", {}, "This note changed while you were editing"),
    h("p.muted", {}, `You started from version ${baseVersion}; version ${theirs.version} was saved since.`),
    theirs.title !== yours.title ? h("p.small", {}, `Title: theirs “${theirs.title}”, yours “${yours.title}”`) : null,
    h("div.pane-label", {}, "Theirs (−) and yours (+)"),
    diffBlock(theirs.body, yours.body, { id: "conflict-diff" }),
    merged.clean
      ? h("p.small#conflict-merge-note", {}, "Your changes and theirs touch different parts: they merge cleanly.")
      : h("p.small#conflict-merge-note", {}, `Both changed ${merged.conflicts.join(", ")}: merge by hand, or choose one.`),
    error,
    h("div.row.conflict-actions", {},
      merged.clean
        ? button("conflict-merge", "Merge and save", () => attempt(() => save(mergeFields, merged.version)), true)
        : button("conflict-merge", "Merge by hand", () => editMerge(merged.body, merged.version), true),
      button("conflict-overwrite", "Overwrite with mine", () => attempt(() => save(yours, theirs.version))),
      h("span.row.conflict-copy", {}, copyTitle,
        button("conflict-copy", "Save mine as a copy", () => attempt(() => saveCopy({ ...yours, title: copyTitle.value.trim() })))),
      h("span.spacer"),
      button("conflict-back", "Back to editing", back)));
}
