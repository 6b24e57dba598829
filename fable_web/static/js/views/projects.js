// Projects: the list, and one project as a board (milestones as columns, tasks as cards).
import { api } from "../api.js";
import { clear, h, toast } from "../dom.js";
import { navigate } from "../router.js";
import { dueLabel, priorityBadge, setDone } from "../widgets/items.js";
import { canEdit, sharedBadge, shareButton } from "../widgets/share.js";

function colorDot(color) {
  const dot = h("span.dot", { "aria-hidden": "true" });
  if (color) dot.style.setProperty("--project-color", color);
  return dot;
}

export async function projectsView(main) {
  const cards = h("div.project-cards");
  const title = h("input#new-project", { type: "text", placeholder: "New project", "aria-label": "Project title", required: true });
  async function create(event) {
    event.preventDefault();
    try {
      const project = await api.post("/projects", { title: title.value.trim() });
      navigate(`/projects/${project.id}`);
    } catch (e) { toast(e.message, { bad: true }); }
  }
  main.append(
    h("div.page-head", {}, h("div", {}, h("h1", {}, "Projects"), h("p.muted", {}, "Milestones and the tasks that move them forward.")),
      h("form.row", { on: { submit: create } }, title, h("button.btn.btn-primary", { type: "submit" }, "Create"))),
    cards);
  const page = await api.get("/projects", { limit: 100 });
  clear(cards, page.items.length ? page.items.map((p) => h("a.card.project-card", { href: `/projects/${p.id}` },
    h("div.row", {}, colorDot(p.color), h("h2", {}, p.title)),
    h("span.muted.small", {}, `${p.open_tasks} open task${p.open_tasks === 1 ? "" : "s"} · ${p.status}`),
    sharedBadge(p)))
    : h("p.empty", {}, "No projects yet."));
}

function card(task, next, refresh) {
  const done = task.status === "done";
  const advance = async () => {
    try {
      if (next) await api.patch(`/notes/${task.id}`, { milestone_id: next.id });
      else await setDone(task, true);
      await refresh();
    } catch (e) { toast(e.message, { bad: true }); }
  };
  return h("div.board-card", { class: done ? "done" : "", dataset: { task: String(task.id) } },
    h("a", { href: `/notes/${task.id}` }, task.title),
    h("div.task-controls", {}, priorityBadge(task.priority), dueLabel(task), h("span.spacer"),
      done ? h("span.muted", {}, "done")
        : h("button.btn.btn-sm.advance", { type: "button", title: next ? `Move to ${next.title}` : "Complete", on: { click: advance } },
          next ? `→ ${next.title}` : "✓ Done")));
}

function column(title, tasks, next, refresh, addTo) {
  const input = h("input", { type: "text", placeholder: "Add a task", "aria-label": `Add a task to ${title}` });
  const add = async (event) => {
    event.preventDefault();
    if (!input.value.trim()) return;
    try { await api.post("/notes", { title: input.value.trim(), status: "todo", ...addTo }); await refresh(); }
    catch (e) { toast(e.message, { bad: true }); }
  };
  return h("section.column", { "aria-label": title },
    h("div.column-head", {}, title, h("span.count", {}, String(tasks.length))),
    tasks.map((t) => card(t, next, refresh)),
    h("form", { on: { submit: add } }, input));
}

export async function projectView(main, params) {
  const id = Number(params.id);
  const head = h("div.page-head");
  const board = h("div.board#board");
  const milestone = h("input#new-milestone", { type: "text", placeholder: "New milestone", "aria-label": "Milestone title", required: true });
  main.append(head, board);

  async function refresh() {
    const [project, tasks] = await Promise.all([
      api.get(`/projects/${id}`),
      api.get("/notes", { project_id: id, kind: "task", sort: "due", limit: 200 }),
    ]);
    const milestones = [...project.milestones].sort((a, b) => a.order_index - b.order_index);
    const loose = tasks.items.filter((t) => !t.milestone_id);
    const columns = [];
    if (loose.length || !milestones.length) columns.push(column("No milestone", loose, milestones[0], refresh, { project_id: id }));
    milestones.forEach((m, i) => columns.push(column(m.title, tasks.items.filter((t) => t.milestone_id === m.id),
      milestones[i + 1], refresh, { project_id: id, milestone_id: m.id })));
    clear(board, columns);
    clear(head,
      h("div", {}, h("div.row", {}, colorDot(project.color), h("h1", {}, project.title), sharedBadge(project)),
        project.goal || project.description ? h("p.muted", {}, project.goal || project.description) : null,
        h("p.small.muted", {}, `${project.task_counts.todo + project.task_counts.in_progress} open · ${project.task_counts.done} done`)),
      h("div.row", {}, shareButton("project", project),
        canEdit(project) ? h("form.row", { on: { submit: addMilestone } }, milestone, h("button.btn", { type: "submit" }, "Add milestone")) : null));
  }
  async function addMilestone(event) {
    event.preventDefault();
    try { await api.post(`/projects/${id}/milestones`, { title: milestone.value.trim() }); milestone.value = ""; await refresh(); }
    catch (e) { toast(e.message, { bad: true }); }
  }
  await refresh();
}
