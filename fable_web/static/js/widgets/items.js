// How notes and tasks appear in lists, everywhere in the UI.
import { api } from "../api.js";
import { friendlyDate, h, highlighted, isoDate, relativeTime, toast, today } from "../dom.js";
import { canEdit } from "./share.js";

export function noteItem(note, { snippet } = {}) {
  return h("li", {}, h("a.note-item", { href: `/notes/${note.id}` },
    h("span.title", {}, note.title),
    snippet ? h("span.snippet", {}, highlighted(snippet)) : null,
    h("span.meta", {},
      note.kind === "task" ? h("span.badge.badge-task", {}, note.status === "done" ? "done" : "task") : null,
      note.tags.map((t) => h("span", {}, `#${t}`)),
      note.owner ? h("span.shared-by", { title: `Shared with you by ${note.owner}` }, `${note.owner}’s`) : null,
      note.updated_at ? h("span", {}, relativeTime(note.updated_at)) : null)));
}

export function dueLabel(task) {
  if (!task.due_date) return null;
  const overdue = task.status !== "done" && task.due_date < isoDate(today());
  return h("span", { class: overdue ? "due-overdue" : "muted" }, `due ${friendlyDate(task.due_date)}`);
}

/** Complete (complete_task) or reopen (update_note status=todo) a task. */
export async function setDone(task, done) {
  if (done) {
    const result = await api.post(`/tasks/${task.id}/complete`);
    if (result.next_occurrence) toast(`Next one due ${friendlyDate(result.next_occurrence.due_date)}`);
    return result.task;
  }
  return api.patch(`/notes/${task.id}`, { status: "todo" });
}

/** A task row: a checkbox, its title, and small priority/due controls. */
export function taskRow(task, { onChange = () => {}, controls = true } = {}) {
  const check = h("input.check", {
    type: "checkbox", checked: task.status === "done", "aria-label": `Done: ${task.title}`,
  });
  const row = h("div.task", { class: task.status === "done" ? "done" : "" });
  check.disabled = !canEdit(task);  // a viewer's: shown, not offered
  check.addEventListener("change", async () => {
    try {
      Object.assign(task, await setDone(task, check.checked));
      row.classList.toggle("done", task.status === "done");
      onChange(task);
    } catch (e) { check.checked = !check.checked; toast(e.message, { bad: true }); }
  });
  const body = h("div.task-body", {}, h("a.task-title", { href: `/notes/${task.id}` }, task.title));
  if (controls) body.append(taskControls(task, onChange));
  else body.append(h("div.task-controls", {}, priorityBadge(task.priority), dueLabel(task), assigneeChip(task)));
  row.append(check, body);
  return row;
}

/** Who a task is assigned to, as a round chip of their initials (nothing when nobody). */
export function assigneeChip(task) {
  if (!task.assignee) return null;
  const initials = task.assignee.replace(/[^\p{L}\p{N}]/gu, "").slice(0, 2).toUpperCase() || "?";
  return h("span.assignee-chip", { role: "img", title: `Assigned to ${task.assignee}`, "aria-label": `Assigned to ${task.assignee}` }, initials);
}

export function priorityBadge(priority) {
  return priority && priority !== "none" ? h(`span.badge.prio-${priority}`, {}, priority) : null;
}

function taskControls(task, onChange) {
  const priority = h("select", { "aria-label": "Priority", disabled: !canEdit(task), on: { change: () => save({ priority: priority.value }) } },
    ["none", "low", "medium", "high"].map((p) => h("option", { value: p, selected: (task.priority || "none") === p }, p === "none" ? "no priority" : p)));
  const due = h("input", { type: "date", value: task.due_date || "", "aria-label": "Due date", disabled: !canEdit(task),
    on: { change: () => save(due.value ? { due_date: due.value } : { clear: ["due_date"] }) } });
  async function save(change) {
    try { Object.assign(task, await api.patch(`/notes/${task.id}`, change)); onChange(task); }
    catch (e) { priority.value = task.priority || "none"; due.value = task.due_date || ""; toast(e.message, { bad: true }); }
  }
  return h("div.task-controls", {},
    task.parent_id ? h("a.muted", { href: `/notes/${task.parent_id}`, title: "Open the parent task" }, "↳ sub-task") : null,
    task.tags.map((t) => h("span.muted", {}, `#${t}`)), assigneeChip(task), priority, due);
}
