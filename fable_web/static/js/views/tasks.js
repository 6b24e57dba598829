// Tasks: the agenda (overdue, today, upcoming, no date, recently done) and a quick way to add one.
import { api } from "../api.js";
import { clear, h, toast } from "../dom.js";
import { taskGroup } from "./home.js";

function addTaskForm(refresh) {
  const title = h("input#new-task", { type: "text", placeholder: "Add a task", "aria-label": "New task", autocomplete: "off", required: true });
  const due = h("input", { type: "date", "aria-label": "Due date" });
  const priority = h("select", { "aria-label": "Priority" },
    ["none", "low", "medium", "high"].map((p) => h("option", { value: p }, p === "none" ? "No priority" : p)));
  async function submit(event) {
    event.preventDefault();
    try {
      await api.post("/notes", { title: title.value.trim(), status: "todo", priority: priority.value,
        due_date: due.value || undefined });
      title.value = due.value = "";
      priority.value = "none";
      await refresh();
    } catch (e) { toast(e.message, { bad: true }); }
  }
  return h("form.card.row", { on: { submit } }, h("div.spacer", {}, title), due, priority,
    h("button.btn.btn-primary", { type: "submit" }, "Add"));
}

export async function tasksView(main) {
  const groups = h("div.card#task-groups");
  const refresh = async () => {
    const agenda = await api.get("/tasks", { limit: 50 });
    const sections = agenda.groups.map((g) => taskGroup(g, { onChange: () => {} })).filter(Boolean);
    clear(groups, sections.length ? sections : h("p.empty", {}, "No tasks. Add one above, or make any note a task."));
  };
  main.append(
    h("div.page-head", {}, h("div", {}, h("h1", {}, "Tasks"), h("p.muted", {}, "Grouped by when they are due. Tick one to complete it."))),
    h("div.stack", {}, addTaskForm(refresh), groups));
  await refresh();
}
