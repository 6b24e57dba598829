// The side panels of a note: task details, sub-tasks, work log, backlinks, version history.
import { api } from "../api.js";
import { clear, confirmDialog, friendlyDate, h, relativeTime, toast } from "../dom.js";
import { taskRow } from "./items.js";
import { canEdit } from "./share.js";

const STATUSES = [["todo", "To do"], ["in_progress", "In progress"], ["done", "Done"], ["cancelled", "Cancelled"]];

export function taskPanel(note, reload) {
  const status = h("select#task-status", { "aria-label": "Status" },
    STATUSES.map(([v, label]) => h("option", { value: v, selected: note.status === v }, label)));
  const priority = h("select", { "aria-label": "Priority" },
    ["none", "low", "medium", "high"].map((p) => h("option", { value: p, selected: (note.priority || "none") === p }, p)));
  const due = h("input", { type: "date", value: note.due_date || "", "aria-label": "Due date" });
  const editable = canEdit(note);  // a viewer sees the task's state, with no control that would be refused
  for (const control of [status, priority, due]) control.disabled = !editable;
  function undo(e) {  // a refused change leaves every control as the task is
    status.value = note.status; priority.value = note.priority || "none"; due.value = note.due_date || "";
    toast(e.message, { bad: true });
  }
  async function save(change) {
    try { await api.patch(`/notes/${note.id}`, change); await reload(); } catch (e) { undo(e); }
  }
  status.addEventListener("change", () => (status.value === "done"
    ? api.post(`/tasks/${note.id}/complete`).then(reload, undo)
    : save({ status: status.value })));
  priority.addEventListener("change", () => save({ priority: priority.value }));
  due.addEventListener("change", () => save(due.value ? { due_date: due.value } : { clear: ["due_date"] }));
  const complete = note.status === "done" || !editable ? null : h("button.btn.btn-primary.btn-sm#complete-task", { type: "button",
    on: { click: () => api.post(`/tasks/${note.id}/complete`).then(reload, (e) => toast(e.message, { bad: true })) } }, "Mark done");
  const assignedTerm = h("dt", { hidden: !note.assignee }, "Assigned to");  // shown for a shared project's task
  const assigned = h("dd#task-assignee-cell", { hidden: !note.assignee }, note.assignee || "");
  if (note.project_id) {
    assigneeSelect(note, editable, reload).then((select) => {
      if (!select) return;
      clear(assigned, select);
      assignedTerm.hidden = assigned.hidden = false;
      if (refocusAssignee) { refocusAssignee = false; select.focus(); }  // the panel drawn again after a change
    }, () => {});
  }
  return h("section.card#task-panel", {}, h("h2", {}, "Task", h("span.spacer"), complete),
    h("dl.kv", {}, h("dt", {}, "Status"), h("dd", {}, status), h("dt", {}, "Priority"), h("dd", {}, priority),
      h("dt", {}, "Due"), h("dd", {}, due), assignedTerm, assigned,
      note.completed_at ? [h("dt", {}, "Completed"), h("dd", {}, relativeTime(note.completed_at))] : null));
}

let refocusAssignee = false;

/** Who may be assigned a task of a shared project: its owner and the people it is shared with as
 * editor or admin (list_shares); null when the project is shared with nobody. */
async function assigneeSelect(note, editable, reload) {
  const shares = (await api.get("/shares", { project_id: note.project_id })).items;
  if (!shares.length) return null;
  const people = [...new Set([shares[0].owner, ...shares.filter((s) => s.with_user && s.permission !== "viewer").map((s) => s.with_user)])];
  if (note.assignee && !people.includes(note.assignee)) people.push(note.assignee);
  const select = h("select#task-assignee", { "aria-label": "Assigned to", disabled: !editable },
    h("option", { value: "", selected: !note.assignee }, "Nobody"),
    people.map((name) => h("option", { value: name, selected: name === note.assignee }, name)));
  select.addEventListener("change", async () => {
    try {
      await api.patch(`/notes/${note.id}`, select.value ? { assignee: select.value } : { clear: ["assignee"] });
      refocusAssignee = true;
      await reload();
    } catch (e) { select.value = note.assignee || ""; toast(e.message, { bad: true }); }
  });
  return select;
}

export function subtasksPanel(note) {
  const list = h("div#subtasks");
  const title = h("input#new-subtask", { type: "text", placeholder: "Add a sub-task", "aria-label": "New sub-task", autocomplete: "off" });
  async function load() {
    const page = await api.get("/notes", { parent_id: note.id, kind: "task", sort: "created", limit: 100 });
    clear(list, page.items.length ? page.items.map((t) => taskRow(t, { controls: false })) : h("p.empty", {}, "No sub-tasks."));
  }
  async function add(event) {
    event.preventDefault();
    if (!title.value.trim()) return;
    try {
      await api.post("/notes", { title: title.value.trim(), parent_id: note.id, status: "todo", project_id: note.project_id ?? undefined });
      title.value = "";
      await load();
    } catch (e) { toast(e.message, { bad: true }); }
  }
  load();
  return h("section.card", {}, h("h2", {}, "Sub-tasks"), list,
    canEdit(note) ? h("form.row", { on: { submit: add } }, h("div.spacer", {}, title)) : null);
}

export function workLogPanel(note) {
  const list = h("div");
  const total = h("span.count");
  const minutes = h("input#log-minutes", { type: "number", min: "1", max: "1440", placeholder: "min", "aria-label": "Minutes", required: true });
  const what = h("input#log-what", { type: "text", placeholder: "What did you do?", "aria-label": "Work description" });
  async function load() {
    const page = await api.get(`/tasks/${note.id}/logs`, { limit: 20 });
    total.textContent = page.total_minutes ? `${page.total_minutes} min` : "";
    clear(list, page.items.map((log) => h("div.version", {},
      h("span.mono", {}, `${log.minutes ?? "–"}m`), h("span", {}, log.description || "—"),
      h("span.spacer"), h("span.muted", {}, friendlyDate(log.work_date)))));
  }
  async function add(event) {
    event.preventDefault();
    try {
      await api.post(`/tasks/${note.id}/logs`, { minutes: Number(minutes.value), description: what.value });
      minutes.value = what.value = "";
      await load();
    } catch (e) { toast(e.message, { bad: true }); }
  }
  load();
  return h("section.card#work-log", {}, h("h2", {}, "Work log", total), list,
    canEdit(note) ? h("form.row", { on: { submit: add } }, minutes, h("div.spacer", {}, what), h("button.btn.btn-sm", { type: "submit" }, "Log")) : null);
}

export function backlinksPanel(note) {
  const list = h("ul.list#backlinks");
  api.get(`/notes/${note.id}/backlinks`, { limit: 50 }).then((page) => {
    clear(list, page.items.length
      ? page.items.map((b) => h("li", {}, h("a.note-item", { href: `/notes/${b.id}` },
        h("span.title", {}, b.title), h("span.snippet", {}, b.snippet))))
      : h("li.empty", {}, "No notes link here yet."));
  });
  return h("section.card", {}, h("h2", {}, "Backlinks"), list);
}

function diffView(text) {
  return h("div.diff", {}, text.split("\n").map((line) => h("div", {
    class: line.startsWith("+") && !line.startsWith("+++") ? "add" : line.startsWith("-") && !line.startsWith("---") ? "del" : "",
  }, line || " ")));
}

export function historyPanel(note, reload) {
  const list = h("div#history");
  const detail = h("div#history-detail");
  async function show(version) {
    const diff = await api.get(`/notes/${note.id}/diff`, { from_version: version.version });
    const restore = h("button.btn.btn-sm", { type: "button", on: { click: async () => {
      if (!(await confirmDialog(`Restore version ${version.version}?`, "The current text is kept as a version too.", "Restore"))) return;
      await api.post(`/notes/${note.id}/versions/${version.version}/restore`);
      toast(`Restored version ${version.version}`);
      await reload();
    } } }, `Restore v${version.version}`);
    clear(detail, h("p.small.muted", {}, `Changes from v${version.version} to now: +${diff.added_lines} −${diff.removed_lines}`),
      diff.diff ? diffView(diff.diff) : h("p.empty", {}, diff.title_changed ? "Only the title changed." : "Same text."), restore);
  }
  api.get(`/notes/${note.id}/versions`, { limit: 20 }).then((page) => {
    clear(list, page.items.map((v) => h("div.version", {},
      h("span.mono", {}, `v${v.version}`), h("span.muted", {}, relativeTime(v.created_at)), h("span.spacer"),
      v.current ? h("span.muted.small", {}, "current")
        : h("button.btn.btn-ghost.btn-sm", { type: "button", on: { click: () => show(v) } }, "Compare"))));
  });
  return h("section.card", {}, h("h2", {}, "History"), list, detail);
}
