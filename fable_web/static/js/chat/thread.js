// The messages of a conversation. A reply streams in as plain text; once it is complete it is
// rendered by the server's sanitiser (POST /api/render), never inserted as raw HTML.
import { api } from "../api.js";
import { h, trustedHtml } from "../dom.js";
import { toolCard } from "../widgets/toolcard.js";

export function userMessage(content) {
  return h("div.msg.msg-user", {}, h("div.msg-text", {}, content));
}

async function renderMarkdown(el, text) {
  if (!text.trim()) { el.textContent = ""; return; }
  try { trustedHtml(el, (await api.post("/render", { body: text })).html); el.classList.add("prose"); }
  catch { el.textContent = text; }
}

/** What to say under an answer that did not finish, in the server's words where it gave some. */
function noteFor(state, error) {
  if (state === "stopped") return "Stopped.";
  if (state === "interrupted") return `Interrupted before the model finished; this is what was saved.${error ? ` (${error})` : ""}`;
  if (state === "error") return error || "The answer failed.";
  return "";
}

const RETRYABLE = new Set(["error", "interrupted", "stopped"]);

/** An assistant reply: .onEvent(event) while streaming, .show(stored message) for a saved one.
 * With onRetry, an answer that failed, was cut off or was stopped offers "Retry". */
export function assistantMessage({ onRetry = null } = {}) {
  const tools = h("div.msg-tools");
  const text = h("div.msg-text");
  const status = h("div.msg-status.small.muted");
  const el = h("div.msg.msg-assistant", { dataset: { status: "generating" } }, tools, text, status);
  const streamed = document.createTextNode("");
  const cards = [];
  let buffer = "";
  text.append(streamed, h("span.cursor", { "aria-hidden": "true" }));

  function toolEvents(events) {
    tools.replaceChildren(...events.map((e) => toolCard(e).settle(e)));
  }

  async function finish(state, content, note) {
    el.dataset.status = state;
    status.replaceChildren(...(note ? [h("span.msg-note", { role: state === "error" ? "alert" : null }, note)] : []));
    if (onRetry && RETRYABLE.has(state)) {
      status.append(" ", h("button.btn.btn-sm.msg-retry", { type: "button", on: { click: () => onRetry(reply) } }, "Retry"));
    }
    await renderMarkdown(text, content);
    el.dataset.rendered = "true";
  }

  const reply = {
    el,
    get text() { return buffer; },
    onEvent(event) {
      const data = event.data || {};
      if (event.event === "token") { buffer += data.text; streamed.appendData(data.text); }
      else if (event.event === "tool_call") { const card = toolCard(data); cards.push(card); tools.append(card); }
      else if (event.event === "tool_result") {
        const card = cards.find((c) => c.dataset.state === "running" && c.dataset.tool === data.name);
        if (card) card.settle(data); else tools.append(toolCard(data).settle(data));
      } else if (event.event === "done") return finish(data.stopped ? "stopped" : "done", buffer, noteFor(data.stopped ? "stopped" : "done"));
      else if (event.event === "error") {
        const state = data.status === "interrupted" ? "interrupted" : "error";
        return finish(state, buffer, noteFor(state, data.message));
      } else if (event.event === "result") return reply.show(data);
      return null;
    },
    show(message) {
      buffer = message.content;
      toolEvents(message.tool_events || []);
      return finish(message.status, message.content, noteFor(message.status, message.error));
    },
  };
  return reply;
}
