// The messages of a conversation. A reply's text is rendered by the server's sanitiser (POST
// /api/render, never inserted as raw HTML) while it streams, at most every RENDER_MS, with the
// words not yet rendered shown as plain text after it. Text and tool cards keep the order they
// happened in: a tool call closes the text before it (its event's ``at``, the length of the text
// before the call, places it in a stored answer).
import { api } from "../api.js";
import { h, trustedHtml } from "../dom.js";
import { toolCard } from "../widgets/toolcard.js";
import { humanError } from "./errors.js";

const RENDER_MS = 250;

/** A small icon button: its name for people and screen readers in aria-label and title (the
 * icon comes from CSS, so a message's text stays its own). */
function action(cls, label, onClick) {
  return h(`button.btn.btn-ghost.btn-sm.msg-action.${cls}`, { type: "button", "aria-label": label, title: label, on: { click: onClick } });
}

async function copy(text, button) {
  try {
    await navigator.clipboard.writeText(text);
    button.dataset.copied = "true";
    setTimeout(() => delete button.dataset.copied, 1500);
  } catch { button.title = "Copying is not allowed here"; }
}

/** A message of the user's; with onEdit, an Edit button turns it into a form that resends it. */
export function userMessage(content, { onEdit = null } = {}) {
  const text = h("div.msg-text", {}, content);
  const el = h("div.msg.msg-user", {}, text);
  const actions = h("div.msg-actions");
  const copyButton = action("msg-copy", "Copy", () => copy(text.textContent, copyButton));
  actions.append(copyButton);
  if (onEdit) {
    actions.append(action("msg-edit", "Edit and resend", () => {
      const input = h("textarea.msg-edit-input", { rows: 3, "aria-label": "Edit your message" });
      input.value = text.textContent;
      const form = h("form.msg-edit-form.stack", { on: { submit: async (e) => {
        e.preventDefault();
        const edited = input.value.trim();
        if (!edited) return;
        if (await onEdit(edited)) { text.textContent = edited; form.replaceWith(text); actions.hidden = false; }
      } } }, input, h("div.row", {}, h("span.spacer"),
        h("button.btn.btn-sm.msg-edit-cancel", { type: "button", on: { click: () => { form.replaceWith(text); actions.hidden = false; } } }, "Cancel"),
        h("button.btn.btn-primary.btn-sm.msg-edit-send", { type: "submit" }, "Send")));
      input.addEventListener("keydown", (e) => { if (e.key === "Escape") { form.replaceWith(text); actions.hidden = false; } });
      text.replaceWith(form);
      actions.hidden = true;
      input.focus();
    }));
  }
  el.append(actions);
  return el;
}

/** What to say under an answer that did not finish, in the server's words where it gave some. */
function noteFor(state, error) {
  if (state === "stopped") return "Stopped.";
  if (state === "interrupted") return `Interrupted before the model finished; this is what was saved.${error ? ` (${humanError(error)})` : ""}`;
  if (state === "error") return error ? humanError(error) : "The answer failed.";
  return "";
}

const RETRYABLE = new Set(["error", "interrupted", "stopped"]);

/** One stretch of text between tool cards, rendered as Markdown as it grows. */
function segment(onGrow) {
  const rendered = h("div.msg-rendered");
  const tail = document.createTextNode("");
  const el = h("div.msg-text", {}, rendered, tail);
  let text = "";
  let shown = 0; // how much of text ``rendered`` holds
  let timer = null;
  let busy = false;

  async function render() {
    timer = null;
    if (busy) { later(); return; }
    busy = true;
    const upTo = text;
    try {
      if (upTo.trim()) {
        const { html } = await api.post("/render", { body: upTo });
        trustedHtml(rendered, html);
        el.classList.add("prose");
      } else rendered.replaceChildren();
      shown = upTo.length;
      tail.data = text.slice(shown);
    } catch { /* the plain text stays */ }
    busy = false;
    onGrow?.();
  }
  function later() { if (!timer) timer = setTimeout(render, RENDER_MS); }

  return {
    el,
    get text() { return text; },
    add(more) { text += more; tail.appendData(more); later(); },
    async settle(final = text) {
      clearTimeout(timer);
      timer = null;
      while (busy) await new Promise((r) => setTimeout(r, 20));
      text = final;
      if (!text.trim()) { tail.data = ""; rendered.replaceChildren(); el.classList.remove("prose"); shown = 0; return; }
      // the plain text stays on screen until its rendering replaces it: never a blank reply between
      try { trustedHtml(rendered, (await api.post("/render", { body: text })).html); tail.data = ""; el.classList.add("prose"); shown = text.length; }
      catch { rendered.replaceChildren(); tail.data = text; el.classList.remove("prose"); }
    },
  };
}

/** An assistant reply: .onEvent(event) while streaming, .show(stored message) for a saved one.
 * Options: onRetry (an answer that failed, was cut off or was stopped offers "Retry"),
 * onRegenerate (a finished answer offers "Regenerate"), onSave (offers "Save as note"),
 * onGrow (called when the reply grew, for following it). */
export function assistantMessage({ onRetry = null, onRegenerate = null, onSave = null, onGrow = null } = {}) {
  const body = h("div.msg-body");
  const status = h("div.msg-status.small.muted");
  const actions = h("div.msg-actions");
  const el = h("div.msg.msg-assistant", { dataset: { status: "generating" } }, body, status, actions);
  const cursor = h("span.cursor", { "aria-hidden": "true" });
  const cards = [];
  let segments = [];
  let current = null;
  let buffer = "";

  function textSegment() {
    if (!current) { current = segment(onGrow); segments.push(current); body.append(current.el); }
    current.el.append(cursor);
    return current;
  }
  function addCard(card) { current = null; body.append(card); cursor.remove(); }

  /** A stored answer: its text cut where each tool call happened. */
  function lay(content, events) {
    body.replaceChildren();
    segments = [];
    current = null;
    const placed = [...events].filter((e) => Number.isInteger(e.at)).sort((a, b) => a.at - b.at);
    for (const e of events.filter((e) => !Number.isInteger(e.at))) addCard(toolCard(e).settle(e)); // older answers: cards first
    let from = 0;
    for (const e of placed) {
      const at = Math.min(Math.max(e.at, from), content.length);
      if (at > from) textSegment().add(content.slice(from, at));
      addCard(toolCard(e).settle(e));
      from = at;
    }
    textSegment().add(content.slice(from));
  }

  async function finish(state, note) {
    el.dataset.rendered = "false"; // until its text settles (again, when the stored answer replaces the streamed one)
    el.dataset.status = state;
    cursor.remove();
    status.replaceChildren(...(note ? [h("span.msg-note", { role: state === "error" ? "alert" : null }, note)] : []));
    if (onRetry && RETRYABLE.has(state)) {
      status.append(" ", h("button.btn.btn-sm.msg-retry", { type: "button", on: { click: () => onRetry(reply) } }, "Retry"));
    }
    if (!segments.length) textSegment();
    await Promise.all(segments.map((s) => s.settle()));
    const copyButton = action("msg-copy", "Copy", () => copy(buffer, copyButton));
    actions.replaceChildren(...[copyButton,
      onRegenerate && state !== "generating" ? action("msg-regenerate", "Regenerate", () => onRegenerate(reply)) : null,
      onSave && buffer.trim() ? action("msg-save", "Save as note", () => onSave(buffer)) : null].filter(Boolean));
    el.dataset.rendered = "true";
    onGrow?.();
  }

  const reply = {
    el,
    get text() { return buffer; },
    onEvent(event) {
      const data = event.data || {};
      if (event.event === "token") { buffer += data.text; textSegment().add(data.text); }
      else if (event.event === "tool_call") { const card = toolCard(data); cards.push(card); addCard(card); }
      else if (event.event === "tool_result") {
        const card = cards.find((c) => c.dataset.state === "running" && c.dataset.tool === data.name);
        if (card) card.settle(data); else addCard(toolCard(data).settle(data));
      } else if (event.event === "done") return finish(data.stopped ? "stopped" : "done", noteFor(data.stopped ? "stopped" : "done"));
      else if (event.event === "error") {
        const state = data.status === "interrupted" ? "interrupted" : "error";
        return finish(state, noteFor(state, data.message));
      } else if (event.event === "result") return reply.show(data);
      return null;
    },
    show(message) {
      buffer = message.content;
      lay(message.content, message.tool_events || []);
      return finish(message.status, noteFor(message.status, message.error));
    },
  };
  textSegment();
  return reply;
}
