// Messages written while an answer streams: they wait under the thread, marked "queued", and
// go one at a time, in order, once the answer ends (the chat page takes them: take()). Each can
// be edited or removed before it goes; one being edited holds the queue until it is saved or
// cancelled. After a failed answer the queue pauses and says so, with "Send anyway". The queue
// lives in this browser tab only (the server takes one message at a time and keeps no queue).
import { clear, h } from "../dom.js";

/** {el, size, push(content, noteIds), take(), putBack(item), pause(why), paused}; onReady() is
 * called when the queue may go on (an edit ended, "Send anyway"). */
export function messageQueue({ onReady, onEmpty }) {
  const items = []; // {content, noteIds, li, text, editing}
  const list = h("ol.chat-queue#chat-queue");
  const status = h("div.chat-queue-status#chat-queue-status");
  const el = h("section.chat-queue-wrap#chat-queue-wrap", { hidden: true, "aria-label": "Queued messages" }, status, list);
  let paused = null; // why the queue waits, or null

  function render() {
    el.hidden = !items.length;
    if (!items.length) paused = null;
    if (!paused) clear(status);
    else {
      const resume = h("button.btn.btn-sm#chat-queue-resume", { type: "button" }, "Send anyway");
      resume.addEventListener("click", () => { paused = null; render(); onReady(); });
      clear(status, h("p.notice.small", { role: "status" }, h("strong", {}, "Queue paused. "),
        `${paused} ${items.length === 1 ? "The queued message waits" : `The ${items.length} queued messages wait`}.`, " ", resume));
    }
  }

  /** Focus somewhere near a row that goes away (the next row's, the previous one's, or the composer). */
  function refocus(index) {
    const next = items[index] || items[index - 1];
    if (next) next.li.querySelector(".queued-edit")?.focus(); else onEmpty();
  }

  function row(item) {
    item.text = h("div.queued-text", {}, item.content);
    const edit = h("button.btn.btn-ghost.btn-sm.queued-edit", { type: "button", "aria-label": "Edit queued message" }, "Edit");
    const remove = h("button.btn.btn-ghost.btn-sm.btn-danger.queued-remove", { type: "button", "aria-label": "Remove queued message" }, "Remove");
    const actions = h("div.row.queued-actions", {}, h("span.badge.queued-badge", {}, "queued"), h("span.spacer"), edit, remove);
    item.li = h("li.queued", {}, item.text, actions);
    remove.addEventListener("click", () => {
      const at = items.indexOf(item);
      if (at < 0) return;
      items.splice(at, 1);
      item.li.remove();
      render();
      refocus(at);
      onReady();  // an edit that held the queue may have gone with it
    });
    edit.addEventListener("click", () => {
      const input = h("textarea.queued-input", { rows: 2, "aria-label": "Edit queued message" });
      input.value = item.content;
      const done = (save) => {
        if (save && input.value.trim()) { item.content = input.value.trim(); item.text.textContent = item.content; }
        form.replaceWith(item.text);
        actions.hidden = false;
        item.editing = false;
        edit.focus();
        onReady();
      };
      const form = h("form.queued-form.stack", { on: { submit: (e) => { e.preventDefault(); done(true); } } }, input,
        h("div.row", {}, h("span.spacer"),
          h("button.btn.btn-sm.queued-cancel", { type: "button", on: { click: () => done(false) } }, "Cancel"),
          h("button.btn.btn-primary.btn-sm.queued-save", { type: "submit" }, "Save")));
      input.addEventListener("keydown", (e) => {
        if (e.key === "Escape") { e.preventDefault(); done(false); }
        else if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); done(true); }
      });
      item.editing = true;
      item.text.replaceWith(form);
      actions.hidden = true;
      input.focus();
    });
    return item.li;
  }

  return {
    el,
    get size() { return items.length; },
    get paused() { return paused !== null; },
    push(content, noteIds) {
      const item = { content, noteIds, editing: false };
      items.push(item);
      list.append(row(item));
      render();
    },
    /** The next message to send, taken off the queue; null when empty, paused or its first is being edited. */
    take() {
      if (!items.length || paused || items[0].editing) return null;
      const item = items.shift();
      const hadFocus = item.li.contains(document.activeElement);
      item.li.remove();
      render();
      if (hadFocus) refocus(0);
      return item;
    },
    /** A message that could not be sent goes back first in line. */
    putBack(item) {
      items.unshift(item);
      list.prepend(row(item));
      render();
    },
    pause(why) { if (items.length) { paused = why; render(); } },
    resume() { paused = null; render(); },
  };
}
