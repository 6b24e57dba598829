// Unsaved edits are never lost: each change is written at once to this browser's storage (it
// survives a reload or a crash) and, 1.5 s after the typing stops, to a draft on the server
// (PUT /api/drafts: it survives another device). Opening the note again offers the newer of the
// two back ("Restore unsaved changes from ...?"); leaving the editor with changes asks first.
import { api } from "../api.js";
import { dayIn, formatIn, h } from "../dom.js";
import { session } from "../session.js";

const AUTOSAVE_MS = 1500;
let leaving = null; // () => true while an editor on the page holds unsaved changes

window.addEventListener("beforeunload", (event) => {
  if (leaving?.()) { event.preventDefault(); event.returnValue = ""; }
});

/** Ask before the page unloads (reload, close) while `pending()` says changes are unsaved. */
export function guardUnload(pending) { leaving = pending; }

const same = (a, b) => a.title === b.title && a.body === b.body
  && JSON.stringify(a.tags || []) === JSON.stringify(b.tags || []);

/** The keeper of one note's unsaved edit (noteId null: the note being created). */
export function draftKeeper(noteId) {
  const storageKey = `fable.unsaved.${session.user?.username || ""}.${noteId ?? "new"}`;
  const where = noteId == null ? {} : { note_id: noteId };
  let timer = null;
  let inFlight = Promise.resolve();

  function local() {
    try { return JSON.parse(localStorage.getItem(storageKey) || "null"); } catch { return null; }
  }
  function toServer(draft) {
    inFlight = inFlight.then(() => api.put("/drafts", { ...where, ...draft, saved_at: undefined })).catch(() => {});
  }
  async function hold() {
    clearTimeout(timer);
    timer = null;
    await inFlight;
  }
  return {
    /** The newer of the local and the server draft when it differs from `current` (the note as
     * stored); a draft no longer differing is dropped. */
    async pending(current) {
      const mine = local();
      const theirs = (await api.get("/drafts", where).catch(() => ({}))).draft;
      const stored = theirs && { title: theirs.title, body: theirs.body, tags: theirs.tags,
        base_version: theirs.base_version, saved_at: theirs.updated_at };
      const newest = [mine, stored].filter(Boolean)
        .sort((a, b) => new Date(b.saved_at) - new Date(a.saved_at))[0] || null;
      if (newest && same(newest, current)) { await this.clear(); return null; }
      return newest;
    },
    /** Keep `fields` ({title, body, tags}) made from `baseVersion`: here now, on the server soon. */
    changed(fields, baseVersion) {
      const draft = { ...fields, base_version: baseVersion ?? undefined, saved_at: new Date().toISOString() };
      try { localStorage.setItem(storageKey, JSON.stringify(draft)); } catch { /* full: the server keeps it */ }
      clearTimeout(timer);
      timer = setTimeout(() => { timer = null; toServer(draft); }, AUTOSAVE_MS);
    },
    /** No autosave pending or under way (before the note itself is saved). */
    hold,
    /** Forget the edit here and on the server (saved, or thrown away). */
    async clear() {
      await hold();
      localStorage.removeItem(storageKey);
      await api.del("/drafts", where).catch(() => {});
    },
    /** Forget it here only (saving the note dropped the server's). */
    async saved() {
      await hold();
      localStorage.removeItem(storageKey);
    },
  };
}

function when(iso) {
  const d = new Date(iso);
  return dayIn(d) === dayIn() ? formatIn(d, { hour: "2-digit", minute: "2-digit" })
    : formatIn(d, { dateStyle: "medium", timeStyle: "short" });
}

/** The "Restore unsaved changes from <time>?" prompt: Restore or Discard. With `version`, the
 * note's current one, it says when the note changed after the edit began. */
export function restorePrompt(draft, onRestore, onDiscard, version = null) {
  const moved = version && draft.base_version && draft.base_version < version;
  const prompt = h("div.notice.restore-draft#restore-draft", { role: "group", "aria-label": "Unsaved changes" },
    h("span", {}, "Restore unsaved changes from ", h("time", { datetime: draft.saved_at }, when(draft.saved_at)), "?",
      moved ? h("span.muted.small", {}, ` The note changed since (v${draft.base_version} → v${version}): saving offers a merge.`) : null),
    h("span.spacer"),
    h("button.btn.btn-sm.btn-primary#restore-draft-yes", { type: "button", on: { click: () => { prompt.remove(); onRestore(draft); } } },
      "Restore"),
    h("button.btn.btn-sm.btn-ghost#restore-draft-no", { type: "button", on: { click: () => { prompt.remove(); onDiscard(); } } },
      "Discard"));
  return prompt;
}
