// Research: ask a question, follow the run live (queries, pages read, outline, sections), stop it,
// and find past runs with a link to their index note. A run goes on in the background: leaving
// the page only stops following it; coming back follows it again (GET /research/{id}/events/stream).
import { api } from "../api.js";
import { clear, h, relativeTime, toast } from "../dom.js";
import { follow } from "../sse.js";
import { llmNotice } from "../widgets/llm.js";

const STATUS = { running: "Running", done: "Done", error: "Failed", stopped: "Stopped", interrupted: "Interrupted" };

/** One line of the progress log for an event of the run, or null for events not shown. */
function logLine(event) {
  const d = event.data || {};
  switch (event.event) {
    case "queries": return `Searching the web for: ${d.queries.join(" · ")}`;
    case "search": return d.error ? `Search “${d.query}” failed: ${d.error}` : null;
    case "source":
      if (d.status === "read") return `Read ${d.title || d.url}`;
      return `${d.status === "skipped" ? "Skipped" : "Could not read"} ${d.url}: ${d.reason}`;
    case "outline": return d.fallback ? `No outline (${d.fallback}): writing one note`
      : `Outline: ${d.sections.map((s) => s.title).join(" · ")}`;
    case "section": return `Wrote section ${d.index} of ${d.of}: ${d.title}`;
    case "done": return "Done: the notes are written.";
    case "stopped": return "Stopped: nothing was written.";
    case "error": return `Failed: ${d.message}`;
    default: return null;
  }
}

function runItem(run) {
  const link = run.index_note_id ? h("a.research-open", { href: `/notes/${run.index_note_id}` }, "Open notes") : null;
  return h("li.research-run", { dataset: { id: String(run.id), status: run.status } },
    h("span.title", {}, run.question),
    h("span.row", {}, h("span.chip.research-status", {}, STATUS[run.status] || run.status),
      h("span.muted.small", {}, relativeTime(run.created_at)), link));
}

export async function researchView(main) {
  const question = h("textarea#research-question", { rows: 2, required: true, maxLength: 500,
    placeholder: "What do you want to find out?", "aria-label": "Research question" });
  const start = h("button.btn.btn-primary#research-start", { type: "submit" }, "Research");
  const stop = h("button.btn.btn-danger#research-stop", { type: "button", hidden: true }, "Stop");
  const notice = h("div#research-notice");
  const heading = h("h2#research-current-question");
  const log = h("ol.research-log#research-log", { "aria-live": "polite" });
  const result = h("div#research-result");
  const current = h("section.card.stack#research-current", { hidden: true }, heading, log, result, h("div.row", {}, stop));
  const past = h("ul.list#research-runs");
  let following = null; // { id, controller }

  async function loadRuns() {
    const page = await api.get("/research", { limit: 20 });
    clear(past, page.items.length ? page.items.map(runItem) : h("li.empty", {}, "No research yet."));
    return page.items;
  }

  function busy(on) {
    start.disabled = on;
    stop.hidden = !on;
  }

  async function watch(run) {
    following?.controller.abort();
    const controller = new AbortController();
    following = { id: run.id, controller };
    current.hidden = false;
    heading.textContent = run.question;
    clear(log);
    clear(result);
    busy(true);
    try {
      await follow(`/api/research/${run.id}/events/stream`, (event) => {
        if (!log.isConnected) { controller.abort(); return; }
        const line = logLine(event);
        if (line) log.append(h(`li.research-event.research-${event.event}`, {}, line));
      }, { signal: controller.signal });
    } catch (e) {
      if (!controller.signal.aborted) clear(notice, llmNotice(e));
    } finally {
      if (following?.controller === controller) following = null;
      if (log.isConnected) {
        busy(false);
        const stored = await api.get(`/research/${run.id}`).catch(() => null);
        if (stored?.index_note_id) {
          clear(result, h("a.btn#research-open-index", { href: `/notes/${stored.index_note_id}` }, "Open the research notes"));
        } else if (stored?.error) {
          clear(result, h("p.muted", {}, stored.error));
        }
        await loadRuns();
      }
    }
  }

  async function submit(event) {
    event.preventDefault();
    clear(notice);
    const text = question.value.trim();
    if (!text) return;
    try {
      const run = await api.post("/research", { question: text, wait: false });
      question.value = "";
      await loadRuns();
      watch(run);
    } catch (e) { clear(notice, llmNotice(e)); }  // stays where the question is (a missing SEARXNG_URL says what to set)
  }

  stop.addEventListener("click", async () => {
    if (!following) return;
    try { await api.post(`/research/${following.id}/stop`); } catch (e) { toast(e.message, { bad: true }); }
  });

  clear(main,
    h("h1", {}, "Research"),
    h("p.muted", {}, "Fable searches the web, reads the pages it finds and writes what it learns as linked notes: "
      + "an index note with a summary, and a note per section with its sources."),
    h("form.card.stack#research-form", { on: { submit } }, question, h("div.row", {}, h("span.spacer"), start)),
    notice, current,
    h("section.stack", {}, h("h2", {}, "Past research"), past));
  const runs = await loadRuns();
  const running = runs.find((r) => r.status === "running");
  if (running) watch(running);
}
