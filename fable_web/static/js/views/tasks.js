// Tasks: quick add in words (previewed as chips), filters and sort, the agenda's groups with their
// counts and "show more", one line per task, recurrence set and seen, undo for complete and delete.
import { api } from "../api.js";
import { clear, debounce, friendlyDate, h, isoDate, toast, today } from "../dom.js";
import { GROUP_TITLES } from "./home.js";
import { assigneeChip } from "../widgets/items.js";
import { canEdit } from "../widgets/share.js";

const PAGE = 25;
const PRIORITIES = ["high", "medium", "low", "none"];
export const PRESETS = [
  ["", "Does not repeat"], ["FREQ=DAILY", "Daily"], ["FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR", "Weekdays"],
  ["FREQ=WEEKLY", "Weekly"], ["FREQ=MONTHLY", "Monthly"], ["FREQ=YEARLY", "Yearly"], ["custom", "Custom rule…"],
];
const DAY_NAMES = { MO: "Mon", TU: "Tue", WE: "Wed", TH: "Thu", FR: "Fri", SA: "Sat", SU: "Sun" };

function ordinal(n) {
  const s = ["th", "st", "nd", "rd"], v = n % 100;
  return n + (s[(v - 20) % 10] || s[v] || s[0]);
}

/** An RRULE in words: "monthly on the 1st", "every 2 weeks", "weekdays"; the rule itself otherwise. */
export function ruleWords(rule) {
  if (!rule) return "";
  const parts = Object.fromEntries(rule.split(";").map((p) => p.split("=")));
  const unit = { DAILY: "day", WEEKLY: "week", MONTHLY: "month", YEARLY: "year" }[parts.FREQ];
  if (!unit) return rule;
  const every = parts.INTERVAL && parts.INTERVAL !== "1" ? `every ${parts.INTERVAL} ${unit}s` : { day: "daily", week: "weekly", month: "monthly", year: "yearly" }[unit];
  const known = new Set(["FREQ", "INTERVAL", "BYDAY", "BYMONTHDAY"]);
  if (Object.keys(parts).some((k) => !known.has(k))) return rule;
  if (parts.BYDAY === "MO,TU,WE,TH,FR" && every === "weekly") return "weekdays";
  if (parts.BYDAY && !/\d/.test(parts.BYDAY)) return `${every} on ${parts.BYDAY.split(",").map((d) => DAY_NAMES[d] || d).join(", ")}`;
  if (parts.BYMONTHDAY) return `${every} on the ${parts.BYMONTHDAY === "-1" ? "last day" : parts.BYMONTHDAY.split(",").map((d) => ordinal(Number(d))).join(", ")}`;
  return parts.BYDAY ? rule : every;
}

/** A "Repeat" control: presets and a custom RRULE; value() is the rule or "" (none). */
export function recurrencePicker(rule = "") {
  const preset = PRESETS.some(([v]) => v === rule) ? rule : "custom";
  const select = h("select.repeat", { "aria-label": "Repeat" },
    PRESETS.map(([value, label]) => h("option", { value, selected: value === (rule ? preset : "") }, label)));
  const custom = h("input.rrule", { type: "text", placeholder: "FREQ=MONTHLY;BYMONTHDAY=15", "aria-label": "Custom recurrence rule",
    value: preset === "custom" ? rule : "", hidden: preset !== "custom" || !rule });
  select.addEventListener("change", () => { custom.hidden = select.value !== "custom"; if (!custom.hidden) custom.focus(); });
  return { element: h("span.repeat-picker", {}, select, custom),
    value: () => (select.value === "custom" ? custom.value.trim() : select.value),
    reset: () => { select.value = ""; custom.value = ""; custom.hidden = true; } };
}

function chip(label, cls = "") { return h("span.chip.parsed", { class: cls }, label); }

/** The chips of a parsed line (parse_task): what will be created. */
function previewChips(parsed) {
  const chips = [];
  if (parsed.due_date) chips.push(chip(`📅 ${friendlyDate(parsed.due_date)}${parsed.due_time ? ` ${parsed.due_time}` : ""}`, "chip-due"));
  if (parsed.recurrence_rule) {
    chips.push(chip(`↻ ${ruleWords(parsed.recurrence_rule)}`, "chip-repeat"));
    if (parsed.next_occurrence) chips.push(chip(`then ${friendlyDate(parsed.next_occurrence)}`, "chip-next"));
  }
  if (parsed.priority && parsed.priority !== "none") chips.push(chip(`! ${parsed.priority}`, `chip-prio prio-${parsed.priority}`));
  for (const tag of parsed.tags || []) chips.push(chip(`#${tag}`, "chip-tag"));
  if (parsed.project) chips.push(chip(`+${parsed.project}`, "chip-project"));
  return chips;
}

/** A notice for a task naming a project nobody has: create the project with it, or add it without one. */
function newProjectNotice(box, name, withProject, without) {
  const create = h("button.btn.btn-sm.btn-primary#create-project", { type: "button" }, `Create “${name}” and add the task`);
  const plain = h("button.btn.btn-sm#without-project", { type: "button" }, "Add it without a project");
  for (const [button, run] of [[create, withProject], [plain, without]]) {
    button.addEventListener("click", async () => { create.disabled = plain.disabled = true; await run(); create.disabled = plain.disabled = false; });
  }
  clear(box, h("p.notice", { role: "alert" }, "You have no project ", h("strong", {}, name), "."), h("div.row", {}, create, plain));
  box.hidden = false;
}

/** A notice asking whether to create a task whose title is like an existing one. */
function similarNotice(box, match, createAnyway) {
  const anyway = h("button.btn.btn-sm.btn-primary#create-anyway", { type: "button" }, "Create anyway");
  anyway.addEventListener("click", async () => { anyway.disabled = true; await createAnyway(); });
  clear(box, h("p.notice", { role: "alert" }, "A similar task exists: ", h("strong", {}, match.title), " — "),
    h("div.row", {}, anyway, h("a.btn.btn-sm", { href: `/notes/${match.id}` }, "Open it")));
  box.hidden = false;
}

function quickAdd(onAdded) {
  const input = h("input#new-task", { type: "text", autocomplete: "off", required: true, "aria-label": "New task",
    placeholder: "Add a task: “pay rent every month on the 1st p1 #home”, “call Anna tomorrow 5pm”" });
  const repeat = recurrencePicker();
  const preview = h("div.quick-preview#quick-preview", { "aria-live": "polite" });
  const notice = h("div.similar-notice#similar-notice", { hidden: true });
  let parsed = null;
  let edits = 0;  // the box's input events: the words of a task sent are cleared once it is added,
  let sent = 0;   // unless the person typed on meanwhile (the next task stays in the box)
  async function parse() {
    const text = input.value.trim();
    if (!text) { parsed = null; clear(preview); return null; }
    try { parsed = await api.post("/tasks/parse", { text }); } catch { parsed = { title: text, tags: [] }; }
    if (input.value.trim() === text) clear(preview, previewChips(parsed));
    return parsed;
  }
  const reparse = debounce(parse, 200);
  input.addEventListener("input", () => { edits++; notice.hidden = true; reparse(); });
  async function create(fields, confirm) {
    const body = { ...fields, status: "todo", confirm: confirm || undefined };
    try {
      const task = await api.post("/notes", body);
      if (edits === sent) {
        input.value = "";
        repeat.reset();
        clear(preview);
      }
      notice.hidden = true;
      toast(`Added “${task.title}”`);
      await onAdded();
    } catch (e) {
      if (e.type === "needs_confirmation" && e.details.match) similarNotice(notice, e.details.match, () => create(fields, true));
      else toast(e.message, { bad: true });
    }
  }
  async function submit(event) {
    event.preventDefault();
    sent = edits;
    const fields = await parse();
    if (!fields) return;
    const chosen = repeat.value();
    const task = { title: fields.title, due_date: fields.due_date, priority: fields.priority,
      recurrence_rule: chosen || fields.recurrence_rule, tags: fields.tags?.length ? fields.tags : undefined,
      project_id: fields.project_id, body: fields.due_time ? `At ${fields.due_time}.` : undefined };
    if (task.recurrence_rule && !task.due_date) task.due_date = isoDate(today());
    if (fields.project && !fields.project_id) {  // never dropped for a project nobody has: asked
      newProjectNotice(notice, fields.project, async () => {
        try { await create({ ...task, project_id: (await api.post("/projects", { title: fields.project })).id }, false); }
        catch (e) { toast(e.message, { bad: true }); }
      }, () => create(task, false));
      return;
    }
    await create(task, false);
  }
  return h("form.card.quick-add#quick-add", { on: { submit } },
    h("div.row", {}, h("div.spacer", {}, input), repeat.element, h("button.btn.btn-primary", { type: "submit" }, "Add")),
    preview, notice);
}

function filterBar(state, projects, tags, onChange) {
  const select = (label, key, options) => {
    const el = h(`select.filter-${key}`, { "aria-label": label, on: { change: () => { state[key] = el.value; state.shown = {}; onChange(); } } },
      options.map(([value, text]) => h("option", { value, selected: String(state[key] || "") === String(value) }, text)));
    return el;
  };
  return h("div.task-filters.row", { role: "group", "aria-label": "Filter and sort tasks" },
    select("Project", "project_id", [["", "All projects"], ...projects.map((p) => [p.id, p.title])]),
    select("Tag", "tag", [["", "All tags"], ...tags.map((t) => [t.tag, `#${t.tag}`])]),
    select("Priority", "priority", [["", "Any priority"], ...PRIORITIES.map((p) => [p, p === "none" ? "No priority" : p])]),
    select("Status", "status", [["", "Any status"], ["todo", "To do"], ["in_progress", "In progress"]]),
    select("Assigned to", "assignee", [["", "Mine"], ["everyone", "Everyone"]]),
    select("Sort", "sort", [["due", "Sort: due date"], ["priority", "Sort: priority"], ["title", "Sort: title"], ["created", "Sort: newest"]]));
}

/** Undo a completion: reopen the task; a recurring one takes its rule back and its next occurrence goes. */
async function undoComplete(task, result) {
  const next = result.next_occurrence;
  const change = { status: task.status === "in_progress" ? "in_progress" : "todo" };
  if (next && task.recurrence_rule) change.recurrence_rule = task.recurrence_rule;
  if (next) {
    await api.del(`/notes/${next.id}`);
    await api.del("/trash", { trashed_id: next.id });
  }
  await api.patch(`/notes/${task.id}`, change);
}

function taskLine(task, projects, refresh) {
  const editable = canEdit(task);  // a viewer's task: shown, with no control that would be refused
  const check = h("input.check", { type: "checkbox", checked: task.status === "done", "aria-label": `Done: ${task.title}`, disabled: !editable });
  const row = h("div.task-line", { class: task.status === "done" ? "done" : "", dataset: { id: String(task.id), row: "" } });
  check.addEventListener("change", async () => {
    try {
      if (check.checked) {
        const result = await api.post(`/tasks/${task.id}/complete`);
        toast(`Completed “${task.title}”${result.next_occurrence ? `; next due ${friendlyDate(result.next_occurrence.due_date)}` : ""}`,
          { action: { label: "Undo", run: async () => { await undoComplete(task, result); await refresh(); } } });
      } else {
        await api.patch(`/notes/${task.id}`, { status: "todo" });
      }
      await refresh();
    } catch (e) { check.checked = !check.checked; toast(e.message, { bad: true }); }
  });
  const remove = h("button.btn-icon.task-delete", { type: "button", title: "Delete", "aria-label": `Delete ${task.title}` }, "×");
  remove.addEventListener("click", async () => {
    try {
      await api.del(`/notes/${task.id}`);
      toast(`Moved “${task.title}” to the trash`, { action: { label: "Undo", run: async () => {
        await api.post(`/trash/${task.id}/restore`); await refresh(); } } });
      await refresh();
    } catch (e) { toast(e.message, { bad: true }); }
  });
  const overdue = task.due_date && task.status !== "done" && task.due_date < isoDate(today());
  const repeat = h("button.chip.task-repeat", { type: "button", title: "Repeat", "aria-label": `Repeat: ${task.recurrence_rule ? ruleWords(task.recurrence_rule) : "does not repeat"}` },
    h("span.repeat-words", {}, task.recurrence_rule ? `↻ ${ruleWords(task.recurrence_rule)}${task.next_due ? ` · next ${friendlyDate(task.next_due)}` : ""}` : "↻"));
  if (!task.recurrence_rule) repeat.classList.add("unset");
  repeat.disabled = !editable;
  repeat.addEventListener("click", () => repeatDialog(task, refresh));
  const project = task.project_id ? projects.get(task.project_id) : null;
  row.append(check,
    h("span.task-name", {}, h("a.task-title", { href: `/notes/${task.id}` }, task.title), assigneeChip(task)),
    h("span.task-due", { class: overdue ? "due-overdue" : "" }, task.due_date ? friendlyDate(task.due_date) : ""),
    repeat,
    task.priority && task.priority !== "none" ? h(`span.badge.prio-${task.priority}`, {}, task.priority) : h("span.task-prio-none"),
    project ? h("a.task-project", { href: `/projects/${task.project_id}` }, project) : h("span.task-project"),
    h("span.task-tags", {}, task.tags.map((t) => `#${t}`).join(" ")),
    editable ? remove : h("span.task-delete"));
  return row;
}

/** Set or change a task's recurrence: presets or a custom RRULE; a rule needs a due date (today if none). */
function repeatDialog(task, refresh) {
  const picker = recurrencePicker(task.recurrence_rule || "");
  const error = h("p.error", { hidden: true, role: "alert" });
  const save = h("button.btn.btn-primary", { type: "submit" }, "Save");
  const dialog = h("dialog.repeat-dialog", { "aria-label": "Repeat" },
    h("h2", {}, "Repeat"), h("p.muted", {}, task.title),
    h("form", { on: { submit: async (event) => {
      event.preventDefault();
      const rule = picker.value();
      const change = rule ? { recurrence_rule: rule, due_date: task.due_date || isoDate(today()) } : { clear: ["recurrence_rule"] };
      try { await api.patch(`/notes/${task.id}`, change); dialog.close(); await refresh(); }
      catch (e) { error.textContent = e.message; error.hidden = false; }
    } } }, picker.element, error,
    h("div.row", {}, h("span.spacer"), h("button.btn", { type: "button", on: { click: () => dialog.close() } }, "Cancel"), save)));
  dialog.addEventListener("close", () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
}

function groupSection(group, state, projects, refresh) {
  const rows = h("div.task-rows", {}, group.items.map((t) => taskLine(t, projects, refresh)));
  let cursor = group.next_cursor;
  let shown = group.items.length;
  state.shown[group.name] = shown;
  const more = h("button.btn.btn-sm.show-more", { type: "button" });
  const label = () => { more.textContent = `Show more (${group.count - shown} more)`; more.hidden = !cursor; };
  more.addEventListener("click", async () => {
    more.disabled = true;
    try {
      const page = await api.get("/tasks", { ...filters(state), cursor });
      const next = page.groups[0] || { items: [], next_cursor: null };
      rows.append(...next.items.map((t) => taskLine(t, projects, refresh)));
      shown += next.items.length;
      state.shown[group.name] = shown;  // a refresh keeps this many open
      cursor = next.next_cursor;
      label();
    } catch (e) { toast(e.message, { bad: true }); } finally { more.disabled = false; }
  });
  label();
  return h("section.task-group", { dataset: { group: group.name } },
    h("h2.section-title.group-head", {}, GROUP_TITLES[group.name] || group.name, h("span.count", {}, String(group.count))),
    rows, more);
}

const FILTERS = ["project_id", "tag", "priority", "status", "assignee", "sort"];

function filters(state, limit = PAGE) {
  return { project_id: state.project_id || undefined, tag: state.tag || undefined, priority: state.priority || undefined,
    status: state.status || undefined, assignee: state.assignee || undefined, sort: state.sort || "due", limit };
}

/** The filters in the address (replaced, not pushed): a reload or a shared link shows the same tasks. */
function keepInAddress(state) {
  const query = new URLSearchParams();
  for (const key of FILTERS) if (state[key] && !(key === "sort" && state[key] === "due")) query.set(key, state[key]);
  const search = query.toString();
  history.replaceState(history.state, "", search ? `/tasks?${search}` : "/tasks");
}

/** Where keyboard focus was among the rows (group, row, which control), to put it back after they are drawn again. */
function focusPlace(groups) {
  const focused = document.activeElement;
  const row = focused?.closest?.(".task-line");
  if (!row || !groups.contains(row)) return null;
  const section = row.closest(".task-group");
  const control = ["input.check", ".task-delete", ".task-repeat", ".task-title"].find((s) => focused.matches(s));
  return { group: section.dataset.group, index: [...section.querySelectorAll(".task-line")].indexOf(row), control };
}

function restoreFocus(groups, place) {
  if (!place) return;
  const section = groups.querySelector(`.task-group[data-group="${place.group}"]`) || groups.querySelector(".task-group");
  const lines = section ? [...section.querySelectorAll(".task-line")] : [];
  const line = lines[Math.min(place.index, lines.length - 1)];
  (line?.querySelector(place.control || "input.check") || line?.querySelector("input.check") || groups)?.focus();
}

export async function tasksView(main, _params, query = new URLSearchParams(location.search)) {
  const state = { sort: "due", shown: {} };
  for (const key of FILTERS) if (query.get(key)) state[key] = query.get(key);
  const groups = h("div.card#task-groups", { tabindex: "-1" });  // focus's place when no row is left
  const [projectPage, tagPage] = await Promise.all([
    api.get("/projects", { limit: 100 }).catch(() => ({ items: [] })),
    api.get("/tags", { limit: 100 }).catch(() => ({ items: [] })),
  ]);
  const projects = new Map(projectPage.items.map((p) => [p.id, p.title]));
  async function refresh() {
    keepInAddress(state);
    const open = Math.min(100, Math.max(PAGE, ...Object.values(state.shown)));  // what was shown stays shown
    const agenda = await api.get("/tasks", filters(state, open));
    const place = focusPlace(groups);
    state.shown = {};
    const sections = agenda.groups.map((g) => groupSection(g, state, projects, refresh));
    clear(groups, sections.length ? sections : h("p.empty", {}, "No tasks here. Add one above, or make any note a task."));
    restoreFocus(groups, place);
  }
  main.append(
    h("div.page-head", {}, h("div", {}, h("h1", {}, "Tasks"),
      h("p.muted", {}, "Grouped by when they are due. Type a task in words; tick one to complete it."))),
    h("div.stack", {}, quickAdd(refresh), filterBar(state, projectPage.items, tagPage.items, refresh), groups));
  await refresh();
  if (query.has("new")) main.querySelector("#new-task").focus();  // the "t" shortcut: a new task
}
