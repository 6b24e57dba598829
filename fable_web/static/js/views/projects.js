// Projects: the list (archived ones on request), one project as a board (milestones as
// columns, tasks as cards that move by drag and drop or Alt+←/→), its notes, and its workspace
// (tasks, a chat scoped to the project, notes side by side).
import { api } from "../api.js";
import { clear, confirmDialog, focusBack, h, toast } from "../dom.js";
import { navigate } from "../router.js";
import { requestError } from "../chat/errors.js";
import { assigneeChip, dueLabel, noteItem, priorityBadge, setDone, taskRow } from "../widgets/items.js";
import { canEdit, canShare, sharedBadge, shareButton } from "../widgets/share.js";
import { openSwitcher } from "../widgets/switcher.js";
import { chatView } from "./chat.js";

export const PALETTE = [
  ["#2f5d8a", "Blue"], ["#3a7d5c", "Green"], ["#b0662c", "Orange"], ["#a33a2f", "Red"],
  ["#7b4fa0", "Purple"], ["#a08a1f", "Ochre"], ["#2c8a8a", "Teal"], ["#69707a", "Grey"],
];
const OPEN = ["active", "completed"];
const DRAG_TYPE = "application/x-fable-task";

function colorDot(color) {
  const dot = h("span.dot", { "aria-hidden": "true" });
  if (color) dot.style.setProperty("--project-color", color);
  return dot;
}

function fail(e) { toast(requestError(e, { 409: "That name is already used here; choose another." }), { bad: true }); }

/** Radio swatches of the palette (and "none"); .value is the chosen colour or null. */
function colorPicker(current) {
  const name = `color-${Math.random().toString(36).slice(2)}`;
  const choices = [[null, "No colour"], ...PALETTE].map(([value, label]) => {
    const radio = h("input.swatch-radio", { type: "radio", name, value: value || "", checked: (current || null) === value, "aria-label": label });
    const swatch = h("span.swatch", { title: label, "aria-hidden": "true" });
    if (value) swatch.style.setProperty("--project-color", value); else swatch.classList.add("swatch-none");
    return h("label.swatch-choice", {}, radio, swatch);
  });
  const el = h("fieldset.palette#project-palette", {}, h("legend", {}, "Colour"), choices);
  return { el, get value() { return el.querySelector("input:checked")?.value || null; } };
}

export async function projectsView(main) {
  const cards = h("div.project-cards#project-cards");
  const title = h("input#new-project", { type: "text", placeholder: "New project", "aria-label": "Project title", required: true });
  const archived = h("input#show-archived", { type: "checkbox" });
  async function create(event) {
    event.preventDefault();
    try {
      const project = await api.post("/projects", { title: title.value.trim() });
      navigate(`/projects/${project.id}`);
    } catch (e) { fail(e); }
  }
  async function load() {
    const page = await api.get("/projects", { limit: 200, status: archived.checked ? undefined : OPEN });
    clear(cards, page.items.length ? page.items.map((p) => h("a.card.project-card", { href: `/projects/${p.id}`, dataset: { status: p.status } },
      h("div.row", {}, colorDot(p.color), h("h2", {}, p.title)),
      h("span.muted.small", {}, `${p.open_tasks} open task${p.open_tasks === 1 ? "" : "s"} · ${p.status}`),
      sharedBadge(p)))
      : h("p.empty", {}, archived.checked ? "No projects yet." : "No active projects."));
  }
  archived.addEventListener("change", load);
  main.append(
    h("div.page-head", {}, h("div", {}, h("h1", {}, "Projects"), h("p.muted", {}, "Milestones and the tasks that move them forward.")),
      h("div.row", {}, h("label.check-label", {}, archived, "Show archived"),
        h("form.row", { on: { submit: create } }, title, h("button.btn.btn-primary", { type: "submit" }, "Create")))),
    cards);
  await load();
}

// --- dialogs ---------------------------------------------------------------------------------

function editProjectDialog(project, onSaved) {
  const title = h("input#project-title", { type: "text", value: project.title, required: true, maxLength: 200 });
  const goal = h("textarea#project-goal", { rows: 2 });
  goal.value = project.goal || "";
  const description = h("textarea#project-description", { rows: 3 });
  description.value = project.description || "";
  const status = h("select#project-status", {}, ["active", "completed", "archived"].map((s) => h("option", { value: s, selected: project.status === s }, s)));
  const color = colorPicker(project.color);
  const error = h("p.error.hidden", { role: "alert" });
  const dialog = h("dialog.project-dialog", { "aria-label": `Edit ${project.title}` },
    h("h2", {}, "Edit project"),
    h("form.stack", { on: { submit: async (e) => {
      e.preventDefault();
      const body = { title: title.value.trim(), goal: goal.value, description: description.value, status: status.value };
      if (color.value) body.color = color.value; else body.clear = ["color"];
      try { await api.patch(`/projects/${project.id}`, body); dialog.close(); onSaved(); }
      catch (err) { error.textContent = err.status === 409 ? "Another project of yours has this title." : requestError(err); error.classList.remove("hidden"); }
    } } },
    h("label", {}, "Title", title), h("label", {}, "Goal", goal), h("label", {}, "Description", description),
    h("label", {}, "Status", status), color.el, error,
    h("div.row", {}, h("span.spacer"), h("button.btn", { type: "button", on: { click: () => dialog.close() } }, "Cancel"),
      h("button.btn.btn-primary#project-save", { type: "submit" }, "Save"))));
  dialog.addEventListener("close", () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
  title.focus();
}

/** Asks how to delete a project: resolves "detach", "delete" or null. */
function deleteProjectDialog(project, count) {
  return new Promise((resolve) => {
    const n = `${count} note${count === 1 ? "" : "s"} and task${count === 1 ? "" : "s"}`;
    const dialog = h("dialog.project-dialog", { "aria-label": `Delete ${project.title}` },
      h("h2", {}, `Delete “${project.title}”?`),
      h("p.muted", {}, `Its milestones are deleted with it. Its ${n}:`),
      h("form.stack", { method: "dialog" },
        h("button.btn#delete-keep-notes", { value: "detach" }, `Keep them, outside any project`),
        h("button.btn.btn-danger#delete-with-notes", { value: "delete" }, `Delete them too`),
        h("button.btn.btn-ghost", { value: "" }, "Cancel")));
    dialog.addEventListener("close", () => { dialog.remove(); resolve(dialog.returnValue || null); });
    document.body.append(dialog);
    dialog.showModal();
  });
}

// --- the board -------------------------------------------------------------------------------

/** Move a task to a milestone (or out of any, with null). */
async function moveTask(taskId, milestoneId) {
  await api.patch(`/notes/${taskId}`, milestoneId ? { milestone_id: milestoneId } : { clear: ["milestone"] });
}

function card(task, columns, index, board) {
  const done = task.status === "done";
  const next = columns[index + 1];
  const advance = async () => {
    try {
      if (next) await moveTask(task.id, next.id);
      else await setDone(task, true);
      await board.refresh(task.id);  // focus stays on the card, in its new column (or done)
    } catch (e) { fail(e); }
  };
  const el = h("div.board-card", {
    class: done ? "done" : "", dataset: { task: String(task.id) }, draggable: board.editable ? "true" : null,
    tabindex: "0", "aria-roledescription": "task card",
    "aria-label": board.editable ? `${task.title}; Alt+Arrow keys move it between milestones` : task.title,
  },
  h("a", { href: `/notes/${task.id}` }, task.title),
  h("div.task-controls", {}, priorityBadge(task.priority), dueLabel(task), assigneeChip(task), h("span.spacer"),
    done ? h("span.muted", {}, "done")
      : board.editable ? h("button.btn.btn-sm.advance", { type: "button", title: next ? `Move to ${next.title}` : "Complete", on: { click: advance } },
        next ? `→ ${next.title}` : "✓ Done") : null));
  if (!board.editable) return el;
  el.addEventListener("dragstart", (e) => {
    e.dataTransfer.setData(DRAG_TYPE, String(task.id));
    e.dataTransfer.effectAllowed = "move";
    el.classList.add("dragging");
  });
  el.addEventListener("dragend", () => el.classList.remove("dragging"));
  el.addEventListener("keydown", async (e) => {
    if (!e.altKey || (e.key !== "ArrowLeft" && e.key !== "ArrowRight")) return;
    e.preventDefault();
    const target = columns[index + (e.key === "ArrowRight" ? 1 : -1)];
    if (!target) return;
    try { await moveTask(task.id, target.id); await board.refresh(task.id); board.announce(`Moved “${task.title}” to ${target.title}`); }
    catch (err) { fail(err); }
  });
  return el;
}

function column(col, tasks, columns, index, board) {
  const input = h("input", { type: "text", placeholder: "Add a task", "aria-label": `Add a task to ${col.title}` });
  const add = async (event) => {
    event.preventDefault();
    if (!input.value.trim()) return;
    try { await api.post("/notes", { title: input.value.trim(), status: "todo", project_id: board.id, ...(col.id ? { milestone_id: col.id } : {}) }); await board.refresh(); }
    catch (e) { fail(e); }
  };
  const head = h("div.column-head", {}, h("span.column-title", {}, col.title), h("span.count", {}, String(tasks.length)));
  if (col.id && board.editable) head.append(h("span.spacer"), milestoneMenu(col, tasks.length, board));
  const el = h("section.column", { "aria-label": col.title, dataset: { milestone: col.id ? String(col.id) : "none" } },
    head, tasks.map((t) => card(t, columns, index, board)),
    board.editable ? h("form", { on: { submit: add } }, input) : null);
  if (board.editable) {
    el.addEventListener("dragover", (e) => {
      if (!e.dataTransfer.types.includes(DRAG_TYPE)) return;
      e.preventDefault();
      e.dataTransfer.dropEffect = "move";
      el.classList.add("drop-target");
    });
    el.addEventListener("dragleave", (e) => { if (!el.contains(e.relatedTarget)) el.classList.remove("drop-target"); });
    el.addEventListener("drop", async (e) => {
      e.preventDefault();
      el.classList.remove("drop-target");
      const id = Number(e.dataTransfer.getData(DRAG_TYPE));
      if (!id) return;
      try { await moveTask(id, col.id); await board.refresh(); }
      catch (err) { fail(err); }
    });
  }
  return el;
}

function milestoneMenu(milestone, count, board) {
  const rename = h("button.btn.btn-ghost.btn-sm.milestone-rename", { type: "button", "aria-label": `Rename ${milestone.title}`, title: "Rename" }, "✎");
  const remove = h("button.btn.btn-ghost.btn-sm.btn-danger.milestone-delete", { type: "button", "aria-label": `Delete ${milestone.title}`, title: "Delete" }, "×");
  rename.addEventListener("click", () => {
    const head = rename.closest(".column-head");
    const input = h("input.milestone-title-input", { type: "text", value: milestone.title, "aria-label": "Milestone title", maxLength: 200 });
    const form = h("form.row", { on: { submit: async (e) => {
      e.preventDefault();
      try { await api.patch(`/milestones/${milestone.id}`, { title: input.value.trim() }); await board.refresh(); }
      catch (err) { fail(err); }
    } } }, input);
    input.addEventListener("keydown", (e) => { if (e.key === "Escape") board.refresh(); });
    head.replaceChildren(form);
    input.select();
  });
  remove.addEventListener("click", async () => {
    const tasks = `${count} task${count === 1 ? "" : "s"}`;
    if (!(await confirmDialog(`Delete the milestone “${milestone.title}”?`, `Its ${tasks} stay in the project, without milestone.`))) return;
    try { await api.del(`/milestones/${milestone.id}`); await board.refresh(); } catch (e) { fail(e); }
  });
  return h("span.milestone-actions", {}, rename, remove);
}

/** The project's tasks; `assignee` "me" keeps the caller's and the unassigned ones (list_notes). */
async function projectTasks(id, assignee) {
  return api.get("/notes", { project_id: id, kind: "task", sort: "due", limit: 200, assignee: assignee || undefined });
}

/** Put an existing note in the project: pick it with the note switcher, then update_note(project_id). */
function addExistingNote(board, opener) {
  openSwitcher({
    label: "Add a note to this project", returnTo: opener,
    pick: async (note) => {
      try {
        if (note.project_id === board.id) { toast(`“${note.title}” is in this project already`); return; }
        await api.patch(`/notes/${note.id}`, { project_id: board.id });
        toast(`Added “${note.title}” to the project`);
        await board.refresh();
        document.querySelector("#add-existing-note")?.focus();
      } catch (e) { fail(e); }
    },
  });
}

function notesList(notes) {
  return notes.items.length ? h("ul.list.project-notes-list", {}, notes.items.map((n) => noteItem(n)),
    notes.next_cursor ? h("li.muted.small", {}, h("a", { href: "/notes" }, "More in Notes…")) : null)
    : h("p.empty", {}, "No notes in this project yet.");
}

export async function projectView(main, params, query = new URLSearchParams(location.search)) {
  const id = Number(params.id);
  let assignee = query.get("assignee") === "me" ? "me" : "";  // the board shows everyone's tasks unless asked
  const head = h("div.page-head");
  const boardEl = h("div.board#board");
  const notesEl = h("section.project-notes#project-notes", { "aria-label": "Notes" });
  const live = h("p.sr-only#board-status", { role: "status" });
  const milestone = h("input#new-milestone", { type: "text", placeholder: "New milestone", "aria-label": "Milestone title", required: true });
  main.append(head, boardEl, live, notesEl);
  let project = null;
  let taskCount = 0;

  const board = {
    id, editable: false,
    announce(text) { live.textContent = text; },
    async refresh(focusTask = null) {
      const [fresh, tasks, notes] = await Promise.all([api.get(`/projects/${id}`), projectTasks(id, assignee),
        api.get("/notes", { project_id: id, kind: "note", limit: 50 })]);
      project = fresh;
      board.editable = canEdit(project);
      taskCount = project.task_counts.todo + project.task_counts.in_progress + project.task_counts.done + project.task_counts.cancelled;
      const milestones = [...project.milestones].sort((a, b) => a.order_index - b.order_index);
      const columns = [{ id: null, title: "No milestone" }, ...milestones];
      clear(boardEl, columns.map((col, i) => column(col, tasks.items.filter((t) => (t.milestone_id || null) === col.id), columns, i, board)),
        tasks.next_cursor ? h("p.small.muted", {}, "Showing the first 200 tasks; ", h("a", { href: `/tasks?project_id=${id}` }, "see them all"), ".") : null);
      clear(notesEl, h("div.row.project-notes-head", {}, h("h2", {}, "Notes"), h("span.spacer"),
        board.editable ? h("a.btn.btn-sm#new-project-note", { href: `/notes/new?project_id=${id}` }, "New note") : null,
        board.editable ? h("button.btn.btn-sm#add-existing-note", { type: "button",
          on: { click: (e) => addExistingNote(board, e.currentTarget) } }, "Add existing note") : null),
      notesList(notes));
      renderHead();
      if (focusTask) focusBack(boardEl.querySelector(`[data-task='${focusTask}']`));
    },
  };

  function whoseTasks() {
    const select = h("select#board-assignee", { "aria-label": "Whose tasks", on: { change: async () => {
      assignee = select.value;
      history.replaceState(history.state, "", assignee ? `/projects/${id}?assignee=${assignee}` : `/projects/${id}`);
      try { await board.refresh(); } catch (e) { fail(e); }
      document.querySelector("#board-assignee")?.focus();
    } } }, h("option", { value: "", selected: !assignee }, "Everyone’s tasks"), h("option", { value: "me", selected: assignee === "me" }, "My tasks"));
    return select;
  }
  function renderHead() {
    const p = project;
    const archived = p.status === "archived";
    clear(head,
      h("div", {}, h("div.row", {}, colorDot(p.color), h("h1", {}, p.title), archived ? h("span.badge.archived-badge", {}, "archived") : null, sharedBadge(p)),
        p.goal || p.description ? h("p.muted", {}, p.goal || p.description) : null,
        h("p.small.muted", {}, `${p.task_counts.todo + p.task_counts.in_progress} open · ${p.task_counts.done} done`)),
      h("div.row.project-actions", {},
        whoseTasks(),
        h("a.btn.btn-sm#open-workspace", { href: `/projects/${id}/workspace` }, "Workspace"),
        board.editable ? h("button.btn.btn-sm#edit-project", { type: "button", on: { click: () => editProjectDialog(p, () => board.refresh()) } }, "Edit") : null,
        board.editable ? h("button.btn.btn-sm#archive-project", { type: "button", on: { click: toggleArchive } }, archived ? "Unarchive" : "Archive") : null,
        shareButton("project", p),
        canShare(p) ? h("button.btn.btn-sm.btn-danger#delete-project", { type: "button", on: { click: remove } }, "Delete") : null,
        board.editable ? h("form.row", { on: { submit: addMilestone } }, milestone, h("button.btn.btn-sm", { type: "submit" }, "Add milestone")) : null));
  }
  async function toggleArchive() {
    try { await api.patch(`/projects/${id}`, { status: project.status === "archived" ? "active" : "archived" }); await board.refresh(); }
    catch (e) { fail(e); }
  }
  async function remove() {
    const notes = taskCount + project.task_counts.notes;
    const choice = await deleteProjectDialog(project, notes);
    if (!choice) return;
    try { await api.del(`/projects/${id}`, { notes: choice }); navigate("/projects"); }
    catch (e) { fail(e); }
  }
  async function addMilestone(event) {
    event.preventDefault();
    try { await api.post(`/projects/${id}/milestones`, { title: milestone.value.trim() }); milestone.value = ""; await board.refresh(); }
    catch (e) { fail(e); }
  }
  await board.refresh();
}

// --- the workspace ---------------------------------------------------------------------------

/** The newest chat conversation scoped to the project, if any. */
async function projectConversation(id) {
  const page = await api.get("/chat/conversations", { conversation_type: "chat", limit: 100 });
  return page.items.find((c) => c.rag_project_id === id) || null;
}

export async function workspaceView(main, params) {
  const id = Number(params.id);
  const [project, conversation] = await Promise.all([api.get(`/projects/${id}`), projectConversation(id)]);
  const tasksEl = h("ul.list.workspace-tasks#workspace-tasks");
  const notesEl = h("div#workspace-notes");
  const chatEl = h("section.workspace-chat#workspace-chat", { "aria-label": "Chat about this project" });
  async function loadTasks() {
    const tasks = await projectTasks(id);
    const open = tasks.items.filter((t) => t.status !== "done" && t.status !== "cancelled");
    const rows = [...tasksEl.children];
    const at = rows.findIndex((li) => li.contains(document.activeElement));  // a ticked task leaves the list
    clear(tasksEl, open.length ? open.map((t) => h("li", {}, taskRow(t, { controls: false, onChange: loadTasks }))) : h("li.empty", {}, "No open tasks."));
    if (at >= 0) focusBack(tasksEl.children[Math.min(at, tasksEl.children.length - 1)]?.querySelector("input.check"), tasksEl.parentElement.querySelector("h2"));
  }
  async function loadNotes() { clear(notesEl, notesList(await api.get("/notes", { project_id: id, kind: "note", limit: 50 }))); }
  main.append(
    h("div.page-head", {}, h("div", {}, h("div.row", {}, colorDot(project.color), h("h1", {}, `${project.title}: workspace`)),
      h("p.muted", {}, "Tasks, the assistant scoped to this project, and its notes.")),
    h("a.btn.btn-sm", { href: `/projects/${id}` }, "Board")),
    h("div.workspace#workspace", {},
      h("aside.card.workspace-col", { "aria-label": "Tasks" }, h("h2", {}, "Tasks"), tasksEl),
      chatEl,
      h("aside.card.workspace-col", { "aria-label": "Notes" }, h("h2", {}, "Notes"), notesEl)));
  await Promise.all([loadTasks(), loadNotes(),
    chatView(chatEl, { id: conversation?.id }, {
      bare: true, scope: false, ragProjectId: id, onStarted: () => {},
      onAnswered: () => Promise.all([loadTasks(), loadNotes()]).catch(() => {}), // the assistant may have changed them
      empty: `Ask about “${project.title}”: the assistant draws on this project's notes.`,
    })]);
}
