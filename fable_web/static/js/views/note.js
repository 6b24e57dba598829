// One note: read it rendered, edit its markdown with a live preview, and everything around it.
import { api } from "../api.js";
import { clear, confirmDialog, debounce, h, relativeTime, toast, trustedHtml } from "../dom.js";
import { navigate, setLeaveGuard } from "../router.js";
import { assistPanel, tagSuggestions } from "../widgets/assist.js";
import { conflictView, isStale } from "../widgets/conflict.js";
import { priorityBadge, dueLabel } from "../widgets/items.js";
import { attachHighlight } from "../widgets/highlight.js";
import { linkSuggestions } from "../widgets/link_suggestions.js";
import { attachSlashMenu } from "../widgets/slash.js";
import { attachLinkComplete } from "../widgets/wikilink_complete.js";
import { enhanceProse } from "../widgets/prose.js";
import { backlinksPanel, historyPanel, subtasksPanel, taskPanel, workLogPanel } from "../widgets/panels.js";
import { canEdit, sharedBadge, shareButton } from "../widgets/share.js";
import { checklist, entityCard } from "../widgets/structured.js";
import { forgetKnownTags, tagInput, textTagChip } from "../widgets/tags.js";
import { draftKeeper, guardUnload, restorePrompt } from "../widgets/unsaved.js";

/** Create a note; a title much like an existing note's asks first (needs_confirmation). */
async function createConfirming(fields) {
  try { return await api.post("/notes", fields); } catch (e) {
    const match = e.type === "needs_confirmation" && e.details.match;
    if (!match || !(await confirmDialog("A similar note exists", `“${match.title}” has a title much like this one. Create this note anyway?`, "Create anyway"))) throw e;
    return api.post("/notes", { ...fields, confirm: true });
  }
}

// The tags given to `note`: the editor's. Those its text gives it (`#tag`, note.inline_tags) come
// and go with the text, so the editor shows them but never sends them.
const givenTags = (note) => note.tags.filter((t) => !(note.inline_tags || []).includes(t));

export async function noteView(main, params, query) {
  if (!params.id) {
    const keeper = draftKeeper(null);
    const start = { title: query.get("title") || "", body: "", tags: [] };
    const projectId = Number(query.get("project_id")) || null;  // "New note" on a project's page
    const project = projectId ? await api.get(`/projects/${projectId}`).catch(() => null) : null;
    const draft = await keeper.pending(start);
    const form = editor(start, {
      keeper,
      save: async (fields) => {
        const created = await createConfirming(project ? { ...fields, project_id: project.id } : fields);
        form.markSaved();
        await keeper.clear();
        navigate(`/notes/${created.id}`, { replace: true });
      },
      cancel: () => (history.length > 1 ? history.back() : navigate("/notes")),
    });
    main.append(form);
    if (project) form.prepend(h("p.muted.small#new-note-project", {}, "In the project ", h("a", { href: `/projects/${project.id}` }, project.title)));
    if (draft) form.prepend(restorePrompt(draft, form.restore, () => keeper.clear()));
    main.querySelector(query.get("title") ? "textarea" : ".title-input").focus();
    return;
  }
  const id = Number(params.id);
  const host = h("div");
  const keeper = draftKeeper(id);
  main.append(host);

  async function show() {
    const [note, rendered, draft] = await Promise.all([api.get(`/notes/${id}`), api.get(`/notes/${id}/html`),
      api.get(`/notes/${id}/draft`).then((d) => (d.status === "none" ? null : d), () => null)]);
    const unsaved = canEdit(note) ? await keeper.pending({ ...note, tags: givenTags(note) }) : null;
    clear(host, reader(note, rendered.html, () => edit(note), show, draft));
    if (unsaved) {
      host.prepend(restorePrompt(unsaved, (d) => edit(note, d), () => keeper.clear(), note.version));
    }
  }
  // Edit `note`, from a restored unsaved draft when given (its base version, so that a save
  // over changes made since ends in the conflict view, not over them).
  function edit(note, restored = null) {
    let base = restored?.base_version ?? note.version;
    const form = editor({ ...note, tags: givenTags(note) }, {
      keeper,
      base: () => base,
      save: async (fields) => {
        try {
          await api.patch(`/notes/${id}`, { ...fields, expected_version: base });
        } catch (e) {
          if (!isStale(e)) throw e;
          resolve(fields);
          return false;
        }
        await keeper.saved();
        await show();
        return true;
      },
      cancel: show,
    });
    function resolve(fields) {
      form.classList.add("hidden");
      const card = conflictView({
        noteId: id, yours: fields, baseVersion: base,
        save: async (chosen, version) => {
          await api.patch(`/notes/${id}`, { ...chosen, expected_version: version });
          form.markSaved();
          await keeper.saved();
          toast("Saved");
          await show();
        },
        saveCopy: async (chosen) => {
          const created = await api.post("/notes", chosen);
          form.markSaved();
          await keeper.clear();
          toast("Saved as a copy");
          navigate(`/notes/${created.id}`);
        },
        back: () => { card.remove(); form.classList.remove("hidden"); },
        editMerge: (body, version) => {
          base = version;
          card.remove();
          form.classList.remove("hidden");
          form.setBody(body);
        },
      });
      host.prepend(card);
    }
    clear(host, form);
    if (restored) form.restore(restored);
    host.querySelector("textarea").focus();
  }
  await show();
}

function reader(note, html, onEdit, reload, draft = null) {
  const isTask = note.kind === "task";
  const structured = ["person", "place", "list"].includes(note.kind);
  const editable = canEdit(note);
  async function convert() {
    try { await api.post(`/notes/${note.id}/convert`, { to: isTask ? "note" : "task" }); await reload(); }
    catch (e) { toast(e.message, { bad: true }); }
  }
  async function remove() {
    if (!(await confirmDialog(`Delete “${note.title}”?`, "It goes to the trash, with its versions and work log, and can be restored from there. Notes that link here keep their text."))) return;
    await api.del(`/notes/${note.id}`);
    toast("Moved to the trash", { action: { label: "Undo", run: async () => {
      await api.post(`/trash/${note.id}/restore`); navigate(`/notes/${note.id}`); } } });
    navigate("/notes");
  }
  const body = trustedHtml(h("article.prose#note-body"), html);
  const version = h("span.muted.small", {}, `v${note.version} · edited ${relativeTime(note.updated_at)}`);
  enhanceProse(body, note, { editable, saved: (n) => { version.textContent = `v${n.version} · edited just now`; } });
  if (!note.body.trim()) body.append(h("p.empty", {}, "This note is empty. Press Edit to write."));
  const assist = assistPanel(note, draft, reload);
  assist.classList.toggle("hidden", !draft);
  return h("div.note-layout", {},
    h("div.stack", {},
      h("div.row", {}, isTask ? h("span.badge.badge-task", {}, note.status.replace("_", " ")) : null,
        structured ? h("span.badge.badge-task#note-kind", {}, note.kind) : null,
        priorityBadge(note.priority), isTask ? dueLabel(note) : null,
        givenTags(note).map((t) => h("a.chip", { href: `/notes?tag=${encodeURIComponent(t)}` }, `#${t}`)),
        (note.inline_tags || []).filter((t) => note.tags.includes(t)).map((t) => textTagChip(t, true)),
        h("span.spacer"), sharedBadge(note), version),
      h("h1.note-title", {}, note.title),
      h("div.row", {},
        editable ? h("button.btn.btn-sm#edit-note", { type: "button", on: { click: onEdit } }, "Edit") : null,
        editable ? h("button.btn.btn-sm#assist-note", { type: "button", on: { click: () => {
          assist.classList.toggle("hidden");
          assist.querySelector("textarea")?.focus();
        } } }, "Assist") : null,
        editable && !structured ? h("button.btn.btn-sm#convert-note", { type: "button", on: { click: convert } },
          isTask ? "Make it a note" : "Make it a task") : null,
        shareButton("note", note),
        note.project_id ? h("a.btn.btn-ghost.btn-sm", { href: `/projects/${note.project_id}` }, "Open project") : null,
        note.parent_id ? h("a.btn.btn-ghost.btn-sm", { href: `/notes/${note.parent_id}` }, "Parent") : null,
        h("span.spacer"),
        editable ? h("button.btn.btn-ghost.btn-sm.btn-danger", { type: "button", on: { click: remove } }, "Delete") : null),
      assist,
      note.kind === "list" ? checklist(note, reload, editable) : structured ? entityCard(note) : null,
      body),
    h("aside.side", {},
      isTask ? taskPanel(note, reload) : null,
      editable ? projectPanel(note, reload) : null,
      isTask ? subtasksPanel(note) : null,
      isTask ? workLogPanel(note) : null,
      backlinksPanel(note),
      historyPanel(note, reload)));
}

/** The note's project: move it to another project of its owner's that the caller may edit, or out
 * of any (update_note project_id / clear project); focus stays on the control. */
function projectPanel(note, reload) {
  const select = h("select#note-project", { "aria-label": "Project" },
    h("option", { value: "" }, "No project"),
    note.project_id ? h("option", { value: String(note.project_id), selected: true }, "This note’s project") : null);
  api.get("/projects", { limit: 200 }).then((page) => {
    const fitting = page.items.filter((p) => (p.owner || null) === (note.owner || null) && canEdit(p));
    const current = note.project_id && !fitting.some((p) => p.id === note.project_id) ? [{ id: note.project_id, title: "This note’s project" }] : [];
    clear(select, h("option", { value: "" }, "No project"),
      [...current, ...fitting].map((p) => h("option", { value: String(p.id), selected: p.id === note.project_id }, p.title)));
  }, () => {});
  select.addEventListener("change", async () => {
    try {
      await api.patch(`/notes/${note.id}`, select.value ? { project_id: Number(select.value) } : { clear: ["project"] });
      await reload();
      document.querySelector("#note-project")?.focus();
    } catch (e) { select.value = note.project_id ? String(note.project_id) : ""; toast(e.message, { bad: true }); }
  });
  return h("section.card#project-panel", {}, h("h2", {}, "Project"), select,
    note.project_id ? h("a.small", { href: `/projects/${note.project_id}` }, "Open the project →") : null);
}

// The editor of `note`'s title, tags and markdown. Every change is kept as an unsaved draft
// (keeper); leaving with changes asks first. save(fields) resolves false when the save did not
// happen (a conflict being resolved) and the edit stays unsaved.
function editor(note, { keeper, save, cancel, base = () => null }) {
  const title = h("input.title-input", { type: "text", value: note.title, placeholder: "Title", "aria-label": "Title", required: true });
  const tags = tagInput(note.tags, () => changed(), note.inline_tags || []);
  const source = h("textarea#note-source", { "aria-label": "Markdown", placeholder: "Write in markdown. Type [[ to link another note, / for more." });
  source.value = note.body;
  const marked = attachHighlight(source);
  const preview = h("div.prose.preview#preview", { role: "region", "aria-label": "Preview" });
  const error = h("p.error.hidden", { role: "alert" });
  const saveButton = h("button.btn.btn-primary#save-note", { type: "submit" }, "Save");
  const status = h("span.muted.small.unsaved-status#unsaved-status", { "aria-live": "polite" });
  let original = { title: note.title, body: note.body, tags: [...note.tags] };
  const fields = () => ({ title: title.value.trim(), body: source.value, tags: tags.value() });
  const dirty = () => {
    const now = fields();
    return now.title !== original.title.trim() || now.body !== original.body
      || JSON.stringify(now.tags) !== JSON.stringify(original.tags);
  };

  let rendering = 0;  // a slower, older answer never replaces a newer one
  const renderPreview = debounce(async () => {
    const mine = ++rendering;
    const body = source.value;
    try {
      const { html } = await api.post("/render", { body });
      if (mine === rendering) { trustedHtml(preview, html); marked.learn(body, preview); }
    } catch (e) { if (mine === rendering) preview.textContent = e.message; }
  }, 60);  // short: keystroke to preview < 100 ms (bench.ui_pages); a pause between keys renders
  function changed() {
    if (dirty()) {
      keeper.changed(fields(), base() ?? undefined);
      status.textContent = "Unsaved changes (kept as a draft)";
    } else {
      keeper.clear();
      status.textContent = "";
    }
  }
  source.addEventListener("input", () => { renderPreview(); changed(); });
  title.addEventListener("input", changed);
  attachLinkComplete(source, () => { renderPreview(); changed(); marked.refresh(); });
  attachSlashMenu(source);
  const images = imageInserter(source, error, () => { marked.refresh(); renderPreview(); changed(); });
  renderPreview();

  async function submit(event) {
    event?.preventDefault();
    saveButton.disabled = true;
    error.classList.add("hidden");
    try {
      await keeper.hold();
      if ((await save(fields())) === false) return;
      form.markSaved();
      forgetKnownTags();
      toast("Saved");
    } catch (e) {
      error.textContent = e.message;
      error.classList.remove("hidden");
    } finally { saveButton.disabled = false; }
  }
  async function leave() {
    if (dirty() && !(await confirmDialog("Discard your changes?", "What you changed since the last save is thrown away.", "Discard"))) return;
    if (dirty()) await keeper.clear();
    original = fields();
    cancel();
  }
  const form = h("form.stack#note-editor", { on: { submit, keydown: (e) => {
    if ((e.ctrlKey || e.metaKey) && e.key === "s") { e.preventDefault(); submit(); }
  } } },
  title, tags.el, tagSuggestions(() => `${title.value}\n\n${source.value}`, tags.add),
  h("div.editor", {},
    h("div.suggest-wrap", {}, h("div.pane-label", {}, "Markdown"), marked.el,
      note.id ? linkSuggestions(note.id, source, () => {}) : null),
    h("div", {}, h("div.pane-label", {}, "Preview"), preview)),
  error,
  h("div.row", {}, saveButton, h("button.btn.btn-ghost#cancel-edit", { type: "button", on: { click: leave } }, "Cancel"),
    images.button, images.input, h("span.spacer"), status, h("span.muted.small", {}, "Ctrl + S saves")));
  /** The edit is stored: nothing unsaved any more. */
  form.markSaved = () => { original = fields(); status.textContent = ""; };
  /** Put a restored draft's fields in the editor. */
  form.restore = (draft) => {
    title.value = draft.title;
    source.value = draft.body;
    marked.refresh();
    tags.set(draft.tags || []);
    renderPreview();
    changed();
  };
  /** Replace the markdown (a merge to finish by hand). */
  form.setBody = (body) => { source.value = body; marked.refresh(); renderPreview(); changed(); source.focus(); };
  const pending = () => form.isConnected && dirty();
  guardUnload(pending);
  setLeaveGuard(() => !pending()
    || confirmDialog("Leave with unsaved changes?", "They are kept as a draft: open the note again to restore them.", "Leave"));
  return form;
}

// Images go into the image store (upload_image) and into the text as markdown at the cursor:
// the button's file picker, or pasting or dropping image files on the markdown.
function imageInserter(source, error, changed) {
  const input = h("input.hidden#image-file", { type: "file", accept: "image/png,image/jpeg,image/gif,image/webp,image/avif", multiple: true });
  const button = h("button.btn.btn-ghost#insert-image", { type: "button", on: { click: () => input.click() } }, "Insert image");
  async function insert(files) {
    for (const file of files) {
      if (!file.type.startsWith("image/")) continue;
      error.classList.add("hidden");
      try {
        const alt = file.name.replace(/\.[^.]*$/, "").replace(/[[\]\n]/g, " ").slice(0, 200);
        const saved = await api.upload("/images/upload", file, { alt });
        const at = source.selectionStart ?? source.value.length;
        const before = source.value.slice(0, at);
        const text = `${before && !before.endsWith("\n") ? "\n\n" : ""}${saved.markdown}\n`;
        source.value = source.value.slice(0, at) + text + source.value.slice(source.selectionEnd ?? at);
        source.selectionStart = source.selectionEnd = at + text.length;
        changed();
      } catch (e) {
        error.textContent = e.message;
        error.classList.remove("hidden");
      }
    }
  }
  input.addEventListener("change", async () => { await insert([...input.files]); input.value = ""; });
  const withImages = (list) => [...(list || [])].filter((f) => f.type.startsWith("image/"));
  source.addEventListener("paste", (e) => {
    const files = withImages(e.clipboardData?.files);
    if (files.length) { e.preventDefault(); insert(files); }
  });
  source.addEventListener("drop", (e) => {
    const files = withImages(e.dataTransfer?.files);
    if (files.length) { e.preventDefault(); insert(files); }
  });
  return { button, input };
}
