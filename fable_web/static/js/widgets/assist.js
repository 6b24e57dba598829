// The assist panel of a note: an instruction and a target (the whole note or one "##"
// section), the assistant's proposal growing as the model writes it (streamed over SSE), then
// as a line diff against the current text, with Accept / Reject. The server keeps the proposal
// as the user's draft until one of them is pressed, so a note reopened later shows its pending
// draft here.
import { api } from "../api.js";
import { clear, h, toast } from "../dom.js";
import { answer } from "../sse.js";
import { diffBlock } from "./linediff.js";
import { llmNotice } from "./llm.js";

/** The "## " headings of a markdown body, outside fenced code. */
export function sections(body) {
  const names = [];
  let fenced = false;
  for (const line of body.split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    else if (!fenced && /^##\s+\S/.test(line)) names.push(line.replace(/^##\s+/, "").replace(/\s+#*\s*$/, "").trim());
  }
  return names;
}

/** assistPanel(note, draft | null, onAccepted): the card, open when a draft is pending. */
export function assistPanel(note, draft, onAccepted) {
  const instruction = h("textarea#assist-instruction", { rows: 2, placeholder: "e.g. make it shorter, or turn it into a checklist", "aria-label": "Instruction", required: true });
  const section = h("select#assist-section", { "aria-label": "Part to rewrite" },
    h("option", { value: "" }, "Whole note"), sections(note.body).map((name) => h("option", { value: name }, `## ${name}`)));
  const run = h("button.btn.btn-primary.btn-sm#assist-run", { type: "submit" }, "Rewrite");
  const result = h("div.stack#assist-result");
  const el = h("section.card.assist#assist-panel", {},
    h("h2", {}, "Assistant", h("span.spacer"), h("span.muted.small", {}, "proposes, you decide")),
    h("form.assist", { on: { submit: ask } }, instruction, h("div.row", {}, section, h("span.spacer"), run)),
    result);

  async function ask(event) {
    event.preventDefault();
    if (!instruction.value.trim()) return;
    run.disabled = true;
    const streamed = document.createTextNode("");
    const written = h("div.diff#assist-stream", { "aria-label": "The proposal so far" }, streamed);
    clear(result, h("p.muted.small#assist-working", { role: "status" }, "Writing a proposal…"), written);
    try {
      const response = await api.stream(`/notes/${note.id}/assist/stream`, { instruction: instruction.value.trim(), section: section.value || undefined });
      const done = await answer(response, (event) => {
        if (event.event !== "token") return;
        streamed.appendData(event.data.text);
        written.scrollTop = written.scrollHeight;
      });
      showDraft(done.data);
    } catch (e) { clear(result, llmNotice(e)); }
    finally { run.disabled = false; }
  }

  function showDraft(d) {
    const accept = h("button.btn.btn-primary.btn-sm#assist-accept", { type: "button" }, "Accept");
    const reject = h("button.btn.btn-sm#assist-reject", { type: "button" }, "Reject");
    accept.addEventListener("click", async () => {
      try { await api.post(`/notes/${note.id}/draft/accept`); toast("Applied the assistant's version"); await onAccepted(); }
      catch (e) { toast(e.message, { bad: true }); }
    });
    reject.addEventListener("click", async () => {
      try { await api.del(`/notes/${note.id}/draft`); clear(result); toast("Kept your version"); }
      catch (e) { toast(e.message, { bad: true }); }
    });
    const where = d.section ? `section “${d.section}”` : "whole note";
    clear(result,
      h("p.small.muted#assist-pending", {}, `Pending draft for the ${where}: “${d.instruction}”`),
      h("div.pane-label", {}, "Current → proposed"),
      d.dropped ? h("p.notice#assist-dropped", { role: "status" }, h("strong", {}, "Check what goes. "),
        `The proposed text leaves out ${Math.round(d.dropped * 100)}% of the words of yours it replaces.`) : null,
      diffBlock(d.original.trim(), d.content.trim(), { id: "assist-diff" }),
      h("div.row", {}, accept, reject));
  }

  if (draft) showDraft(draft);
  return el;
}

/** A "Suggest tags" button for the editor: proposals appear as chips that add themselves. */
export function tagSuggestions(textOf, add) {
  const list = h("div.tag-suggestions#tag-suggestions");
  const button = h("button.btn.btn-ghost.btn-sm#suggest-tags", { type: "button" }, "Suggest tags");
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      const { tags, reason } = await api.post("/assist/suggest-tags", { text: textOf() });
      clear(list, tags.length ? tags.map((tag) => h("button.chip.suggested-tag", { type: "button", title: "Add this tag",
        on: { click: (e) => { add(tag); e.currentTarget.remove(); } } }, `+ #${tag}`))
        : h("span.small.muted#tag-suggestions-none", {}, `No suggestions${reason ? `: ${reason}` : ""}.`));
    } catch (e) { clear(list, llmNotice(e)); }
    finally { button.disabled = false; }
  });
  return h("div.row", {}, button, list);
}
