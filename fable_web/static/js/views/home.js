// Home: today's tasks by group, recent notes, and a box to capture a thought quickly.
import { api } from "../api.js";
import { clear, h, toast } from "../dom.js";
import { session } from "../session.js";
import { noteItem, taskRow } from "../widgets/items.js";
import { modelAvailable, unavailable } from "../widgets/llm.js";

export const GROUP_TITLES = {
  overdue: "Overdue", today: "Today", upcoming: "Upcoming", no_date: "No date", recently_done: "Recently done",
};

function greeting() {
  const hour = new Date().getHours();
  return hour < 12 ? "Good morning" : hour < 18 ? "Good afternoon" : "Good evening";
}

/** One group's tasks: heading with count, then rows (or nothing when empty). */
export function taskGroup(group, options) {
  if (!group.items.length) return null;
  return h("section.task-group", { dataset: { group: group.name } },
    h("h3.section-title.group-head", {}, GROUP_TITLES[group.name] || group.name, h("span.count", {}, String(group.count))),
    group.items.map((task) => taskRow(task, options)));
}

/** The model fills the fields when one answers (quick_capture); otherwise the first sentence is the title. */
async function capture(value, asTask) {
  if (await modelAvailable(api)) {
    try {
      const created = await api.post("/assist/capture", { text: value });
      return asTask && created.kind !== "task" ? api.patch(`/notes/${created.id}`, { status: "todo" }) : created;
    } catch (e) { if (!unavailable(e)) throw e; }
  }
  const [first, ...rest] = value.split(/(?<=[.!?])\s+/);
  const title = first.length > 120 ? `${first.slice(0, 117)}…` : first;
  return api.post("/notes", { title, body: rest.join(" "), ...(asTask ? { status: "todo" } : {}) });
}

function captureBox(refresh) {
  const text = h("input#capture", { type: "text", placeholder: "Capture a thought — the first words become the title", "aria-label": "Quick capture", autocomplete: "off" });
  let asTask = false;
  const kinds = ["Note", "Task"].map((label) => h("button", { type: "button", "aria-pressed": String(label === "Note"),
    on: { click: () => { asTask = label === "Task"; kinds.forEach((b) => b.setAttribute("aria-pressed", String(b.textContent === label))); } } }, label));
  async function submit(event) {
    event.preventDefault();
    const value = text.value.trim();
    if (!value) return;
    try {
      const created = await capture(value, asTask);
      text.value = "";
      toast(`Saved “${created.title}”`);
      refresh();
    } catch (e) { toast(e.message, { bad: true }); }
  }
  return h("form.card.row.capture", { on: { submit } }, h("div.spacer", {}, text), h("div.segmented", { role: "group", "aria-label": "Capture as" }, kinds),
    h("button.btn.btn-primary", { type: "submit" }, "Save"));
}

export async function homeView(main) {
  const tasks = h("div.card", {}, h("h2", {}, "Tasks"));
  const notes = h("div.card", {}, h("h2", {}, "Recent notes"));
  const dateLine = new Date().toLocaleDateString(undefined, { weekday: "long", month: "long", day: "numeric" });
  async function refresh() {
    const [agenda, recent] = await Promise.all([
      api.get("/tasks", { groups: ["overdue", "today", "upcoming", "no_date"], limit: 8 }),
      api.get("/notes", { kind: "note", limit: 8, sort: "updated" }),
    ]);
    const groups = agenda.groups.map((g) => taskGroup(g, { controls: false, onChange: () => {} })).filter(Boolean);
    clear(tasks, h("h2", {}, "Tasks", h("span.spacer"), h("a.small", { href: "/tasks" }, "All tasks →")),
      groups.length ? groups : h("p.empty", {}, "Nothing due. Capture a task below or enjoy the quiet."));
    clear(notes, h("h2", {}, "Recent notes", h("span.spacer"), h("a.small", { href: "/notes" }, "All notes →")),
      recent.items.length ? h("ul.list", {}, recent.items.map((n) => noteItem(n))) : h("p.empty", {}, "No notes yet."));
  }
  main.append(
    h("div.page-head", {}, h("div", {}, h("h1", {}, `${greeting()}, ${session.user.username}`), h("p.muted", {}, dateLine))),
    h("div.stack", {}, captureBox(refresh), h("div.grid-2", {}, tasks, notes)));
  await refresh();
}
