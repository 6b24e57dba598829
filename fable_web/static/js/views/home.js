// Home: "Ask Fable" first (the chat's own thread, answering inline), then a box to capture a
// thought quickly, today's and the coming days' events, tasks by group and recent notes.
import { api } from "../api.js";
import { clear, formatIn, h, hourIn, toast } from "../dom.js";
import { session } from "../session.js";
import { upcomingEvents } from "../calendar/upcoming.js";
import { noteItem, taskRow } from "../widgets/items.js";
import { modelAvailable, unavailable } from "../widgets/llm.js";
import { chatView } from "./chat.js";

export const GROUP_TITLES = {
  overdue: "Overdue", today: "Today", upcoming: "Upcoming", no_date: "No date", recently_done: "Recently done",
};

function greeting() {
  const hour = hourIn();
  return hour < 12 ? "Good morning" : hour < 18 ? "Good afternoon" : "Good evening";
}

/** One group's tasks: heading with count, then rows (or nothing when empty). */
export function taskGroup(group, options) {
  if (!group.items.length) return null;
  return h("section.task-group", { dataset: { group: group.name } },
    h("h3.section-title.group-head", {}, GROUP_TITLES[group.name] || group.name, h("span.count", {}, String(group.count))),
    group.items.map((task) => taskRow(task, options)));
}

/** The model fills the fields when one answers (quick_capture); without one, a task is read as
 * quick add reads it (its date, priority, tags: /tasks/parse), and a note, or anything when the
 * person chooses it, is saved as a plain note (quick_capture with plain: the first sentence is
 * the title). An answer the server could not read as a note or task saves nothing: it comes back
 * as a needs_confirmation error whose confirm_arguments save the plain note. */
async function capture(value, asTask, plain = false) {
  let created = null;
  if (!plain && (await modelAvailable(api))) {
    try { created = await api.post("/assist/capture", { text: value }); } catch (e) { if (!unavailable(e)) throw e; }
  }
  if (!created && asTask) {  // no model: a task read as quick add reads it ("buy batteries tomorrow p1")
    const fields = await api.post("/tasks/parse", { text: value });
    return api.post("/notes", { title: fields.title, status: "todo", due_date: fields.due_date, priority: fields.priority,
      recurrence_rule: fields.recurrence_rule, tags: fields.tags?.length ? fields.tags : undefined, project_id: fields.project_id,
      body: fields.due_time ? `At ${fields.due_time}.` : undefined });
  }
  created ??= await api.post("/assist/capture", { text: value, plain: true });
  return asTask && created.kind !== "task" ? api.patch(`/notes/${created.id}`, { status: "todo" }) : created;
}

/** True for quick capture's "the model's answer could not be read" answer. */
function unreadable(error) {
  return error?.type === "needs_confirmation" && error.details?.confirm_arguments?.plain === true;
}

function captureBox(refresh) {
  const text = h("input#capture", { type: "text", placeholder: "Capture a thought — the first words become the title", "aria-label": "Quick capture", autocomplete: "off" });
  const notice = h("div.capture-notice#capture-notice", { hidden: true });
  let asTask = false;
  const kinds = ["Note", "Task"].map((label) => h("button", { type: "button", "aria-pressed": String(label === "Note"),
    on: { click: () => { asTask = label === "Task"; kinds.forEach((b) => b.setAttribute("aria-pressed", String(b.textContent === label))); } } }, label));
  async function save(value, plain) {
    const created = await capture(value, asTask, plain);
    text.value = "";
    notice.hidden = true;
    toast(`Saved “${created.title}”`);
    refresh();
  }
  /** The model's answer was not a note or task: say so, keep the text, offer the plain note. */
  function offerPlain(value, error) {
    const button = h("button.btn.btn-sm#capture-plain", { type: "button" }, "Save as plain note");
    button.addEventListener("click", async () => {
      button.disabled = true;
      try { await save(text.value.trim() || value, true); } catch (e) { button.disabled = false; toast(e.message, { bad: true }); }
    });
    const title = error.details.fallback?.title;
    clear(notice, h("p.notice", { role: "alert" }, h("strong", {}, "The model's answer could not be read as a note or task. "),
      "Nothing was saved.", title ? h("span.small.muted.notice-detail", {}, `Saved as a plain note, its title would be: “${title}”`) : null),
    h("div.row", {}, button));
    notice.hidden = false;
  }
  async function submit(event) {
    event.preventDefault();
    const value = text.value.trim();
    if (!value) return;
    notice.hidden = true;
    try {
      await save(value, false);
    } catch (e) {
      if (unreadable(e)) offerPlain(value, e);
      else toast(e.message, { bad: true });
    }
  }
  return h("form.card.row.capture", { on: { submit } }, h("div.spacer", {}, text), h("div.segmented", { role: "group", "aria-label": "Capture as" }, kinds),
    h("button.btn.btn-primary", { type: "submit" }, "Save"), notice);
}

/** "Ask Fable": the chat page's thread and composer (chatView), answering on Home. Each visit to
 * Home starts a new conversation with its first question; the questions after it continue that
 * one, and "Continue in Chat" opens it on the chat page (it is listed there like any other). */
function askBox(onAnswered) {
  const el = h("section.card.home-ask#home-ask", { "aria-label": "Ask Fable" });
  const more = h("a.btn.btn-sm#home-continue", { hidden: true }, "Continue in Chat →");
  const ready = chatView(el, {}, {
    bare: true, compact: true, scope: false, autofocus: false, title: "Ask Fable", head: more,
    placeholder: "Ask Fable about your notes, tasks and days. Enter sends, Shift+Enter adds a line.",
    empty: "The answer appears here; the conversation stays in Chat.",
    onStarted: (id) => { more.href = `/chat/${id}`; more.hidden = false; },
    onAnswered,
  });
  return { el, ready };
}

export async function homeView(main) {
  const tasks = h("div.card", {}, h("h2", {}, "Tasks"));
  const notes = h("div.card", {}, h("h2", {}, "Recent notes"));
  const dateLine = formatIn(new Date(), { weekday: "long", month: "long", day: "numeric" });
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
  const ask = askBox(() => refresh().catch(() => {}));  // the assistant may have added a task or a note
  main.append(
    h("div.page-head", {}, h("div", {}, h("h1", {}, `${greeting()}, ${session.user.username}`), h("p.muted", {}, dateLine))),
    h("div.stack", {}, ask.el, captureBox(refresh), upcomingEvents(), h("div.grid-2", {}, tasks, notes)));
  await Promise.all([refresh(), ask.ready]);
}
