// The assistant: conversations on the left (searchable, deleted one or several at a time), the
// thread in the middle (streamed answers rendered as they come, tool cards in order, stop, copy,
// regenerate, edit and resend, save as note, a model picker, messages written meanwhile queued),
// the notes it used or suggests on the right.
import { api } from "../api.js";
import { clear, confirmDialog, h, toast } from "../dom.js";
import { setLeaveGuard } from "../router.js";
import { follow } from "../sse.js";
import { contextPanel } from "../chat/context.js";
import { IN_CHAT, humanError, requestError } from "../chat/errors.js";
import { conversationList } from "../chat/list.js";
import { messageQueue } from "../chat/queue.js";
import { OUTSIDE, scopeArguments, scopeChip } from "../chat/scope.js";
import { assistantMessage, userMessage } from "../chat/thread.js";
import { llmNotice, missingModelNotice, semanticNotice, unavailable } from "../widgets/llm.js";
import { session } from "../session.js";
import { guardUnload } from "../widgets/unsaved.js";

const base = (id) => `/chat/conversations/${id}`;
const NEAR_BOTTOM = 48; // px: closer than this to the end counts as following

/** The model picker: the conversation's model, or the default one. */
function modelPicker(onPick) {
  const select = h("select.model-picker#chat-model", { "aria-label": "Model" });
  const el = h("label.model-pick.small.hidden", {}, h("span.muted", {}, "Model"), select);
  let current = null;
  api.get("/chat/models").then((models) => {
    clear(select, h("option", { value: "" }, `Default (${models.default || "server"})`),
      models.items.map((m) => h("option", { value: m }, m)));
    select.value = current || "";
    el.classList.remove("hidden");
  }).catch(() => {});
  select.addEventListener("change", () => { current = select.value || null; onPick(current); });
  return { el, get value() { return current; }, set(model) { current = model || null; select.value = current || ""; } };
}

/** Ask for a title and save an answer as a note. */
function saveAsNote(defaultTitle, body) {
  const title = h("input#save-note-title", { type: "text", value: defaultTitle, required: true, "aria-label": "Note title", maxLength: 200 });
  const error = h("p.error.hidden", { role: "alert" });
  const dialog = h("dialog.save-note-dialog", { "aria-label": "Save as note" },
    h("h2", {}, "Save as note"),
    h("form.stack", { on: { submit: async (e) => {
      e.preventDefault();
      try {
        const note = await api.post("/notes", { title: title.value.trim(), body });
        dialog.close();
        toast(`Saved “${note.title}”`);
      } catch (err) {
        error.textContent = err.status === 409 || err.type === "needs_confirmation"
          ? "A note with a title like this exists already; choose another title." : requestError(err);
        error.classList.remove("hidden");
      }
    } } }, title, error,
    h("div.row", {}, h("span.spacer"),
      h("button.btn", { type: "button", on: { click: () => dialog.close() } }, "Cancel"),
      h("button.btn.btn-primary#save-note-submit", { type: "submit" }, "Save"))));
  dialog.addEventListener("close", () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
  title.select();
}

/** The chat page; other pages show one conversation through it: ``options.aside`` replaces the
 * conversation list (the journal), ``options.bare`` shows the thread alone (a project's
 * workspace), ``options.head`` joins the title, ``options.scope: false`` hides the scope chip,
 * ``options.ragProjectId`` scopes a new conversation, ``options.onStarted(id)`` is told of a new
 * conversation (by default the address becomes its own), ``options.onAnswered()`` of each
 * answer's end, ``options.empty`` is the empty thread's hint; ``options.title`` is a fixed heading
 * (Home's "Ask Fable"), ``options.compact`` leaves out the model picker and the semantic-search
 * notice, ``options.autofocus: false`` leaves the focus where it is. */
export async function chatView(main, params, options = {}) {
  let conversation = params.id ? await api.get(base(Number(params.id))) : null;
  let running = null; // the AbortController of the answer being followed
  let sending = false; // a message is on its way (start): another waits in the queue
  let following = true; // whether the thread keeps to its newest message
  const thread = h("div.thread#thread", { "aria-live": "polite" });
  const jump = h("button.btn.btn-sm.chat-jump.hidden#chat-jump", { type: "button" }, "↓ Jump to latest");
  const notice = h("div#chat-notice");
  const semantic = h("div#chat-semantic-notice");
  missingModelNotice(api, session.user?.role === "admin").then((said) => { if (said && !notice.hasChildNodes()) clear(notice, said); });
  const title = h(options.bare ? "h2.chat-title" : "h1.chat-title", {}, options.title || (conversation ? conversation.title : "New conversation"));
  const context = contextPanel();
  const conversations = conversationList(() => conversation?.id);
  const scope = scopeChip(async (ragProjectId) => {
    if (!conversation) return ragProjectId === null ? OUTSIDE : ragProjectId === -1 ? "All notes" : "Project";
    try { return (await api.tool("set_rag_scope", scopeArguments(conversation.id, ragProjectId))).label; }
    catch (e) { toast(requestError(e), { bad: true }); return null; }
  });
  if (conversation) scope.set(conversation.rag_project_id, conversation.rag_scope_label);
  else if (options.ragProjectId) scope.set(options.ragProjectId, "Project");
  const model = options.compact ? { el: null, value: null, set() {} } : modelPicker(async (picked) => {
    if (!conversation) return;
    try { await api.put(`${base(conversation.id)}/model`, picked ? { model: picked } : {}); }
    catch (e) { toast(requestError(e), { bad: true }); }
  });
  if (conversation) model.set(conversation.model);

  const input = h("textarea#chat-input", { rows: 3, placeholder: options.placeholder || "Ask about your notes, or ask for a change. Enter sends, Shift+Enter adds a line.", "aria-label": "Message" });
  const send = h("button.btn.btn-primary#chat-send", { type: "submit" }, "Send");
  const queue = messageQueue({ onReady: () => drain(), onEmpty: () => input.focus() });
  const stop = h("button.btn#chat-stop.hidden", { type: "button" }, "Stop");
  const attachedCount = h("span.small.muted#attached-count");
  context.onChange(() => { const n = context.ids().length; attachedCount.textContent = n ? `${n} note${n > 1 ? "s" : ""} attached` : ""; });

  /** While an answer streams the composer stays: Send queues (its label says so) and Stop shows. */
  function busy(on) {
    send.textContent = on ? "Queue" : "Send";
    if (on) send.title = "Sent when the answer ends"; else send.removeAttribute("title");
    stop.classList.toggle("hidden", !on);
    thread.querySelectorAll(".msg-regenerate, .msg-edit, .msg-retry").forEach((b) => { b.disabled = on; });
  }
  function showError(e) {
    clear(notice, unavailable(e) ? llmNotice({ status: e.status, type: e.type, message: humanError(e.message) })
      : h("p.error", { role: "alert" }, requestError(e, IN_CHAT)));
  }

  // Following: the newest message stays in view unless the reader scrolled up.
  function atBottom() { return thread.scrollHeight - thread.scrollTop - thread.clientHeight < NEAR_BOTTOM; }
  let pinned = 0;  // where toBottom() last left the thread: above it, the reader scrolled up
  function toBottom() { thread.scrollTop = thread.scrollHeight; pinned = thread.scrollTop; }
  function grew() {
    if (!thread.isConnected) return;
    // the reader's scroll may not have reached the scroll listener yet: never undo it
    if (following && thread.scrollTop < pinned - 2 && !atBottom()) following = false;
    if (following) toBottom();
    else jump.classList.remove("hidden");
  }
  thread.addEventListener("scroll", () => {
    following = atBottom();
    if (following) jump.classList.add("hidden");
  }, { passive: true });
  jump.addEventListener("click", () => { following = true; toBottom(); jump.classList.add("hidden"); });

  function reply(last = true) {
    return assistantMessage({ onRetry: last ? retry : null, onRegenerate: last ? regenerate : null, onSave: save, onGrow: grew });
  }
  function save(text) { saveAsNote(title.textContent === "New conversation" ? "" : title.textContent, text); }

  async function followReply(answer, lastEventId = null) {
    running = new AbortController();
    let failed = false;
    busy(true);
    try {
      await follow(`/api${base(conversation.id)}/generation/stream`, (event) => {
        if (!thread.isConnected) { running.abort(); return; }
        if (event.event === "error") failed = true;
        if (event.event === "context") context.show(event.data);
        if (event.event === "done" && event.data.rag_scope) scope.set(event.data.rag_scope.rag_project_id, event.data.rag_scope.label);
        answer.onEvent(event);
        grew();
      }, { signal: running.signal, lastEventId });
    } catch (e) {
      if (!running.signal.aborted) { failed = true; showError(e); }
    } finally {
      running = null;
      busy(false);
      if (thread.isConnected) {
        options.onAnswered?.();
        if (!document.activeElement || document.activeElement === document.body) input.focus();  // Stop had it
        if (failed) queue.pause("The answer failed.");
        else drain();
        if (!options.aside && !options.bare) conversations.load();
        refreshTitle();
        setTimeout(() => { if (thread.isConnected && !running) { if (!options.aside && !options.bare) conversations.load(); refreshTitle(); } }, 2000); // titles come just after the answer
      }
    }
  }

  async function refreshTitle() {
    if (!conversation || options.title) return;
    const fresh = await api.get(base(conversation.id), { limit: 1 }).catch(() => null);
    if (fresh) title.textContent = fresh.title;
  }

  /** Only the last answer may be regenerated and only the last message edited: before a new
   * message, the older ones lose those buttons. */
  function retireActions() { thread.querySelectorAll(".msg-regenerate, .msg-retry, .msg-edit").forEach((b) => b.remove()); }

  async function start(content, noteIds) {
    if (conversation) {
      await api.post(`${base(conversation.id)}/messages`, { content, note_ids: noteIds });
      return;
    }
    const ragProjectId = scope.value ?? options.ragProjectId ?? undefined;
    const started = await api.post("/chat/start", { content, note_ids: noteIds, rag_project_id: ragProjectId, model: model.value || undefined });
    conversation = await api.get(base(started.conversation_id));
    if (options.onStarted) options.onStarted(conversation.id);
    else history.replaceState(null, "", `/chat/${conversation.id}`);
  }

  /** Send one message and follow its answer; false when it could not be sent (said in the notice). */
  async function dispatch(content, noteIds) {
    sending = true;
    clear(notice);
    try { await start(content, noteIds); } catch (e) { showError(e); return false; } finally { sending = false; }
    thread.querySelector(".empty")?.remove();
    const answer = reply();
    retireActions();
    thread.append(userMessage(content, { onEdit: edit }), answer.el);
    following = true;
    toBottom();
    followReply(answer);
    return true;
  }

  /** The next queued message goes once nothing is being sent or answered (never two at once). */
  async function drain() {
    if (running || sending || !thread.isConnected) return;
    const next = queue.take();
    if (!next) return;
    if (!(await dispatch(next.content, next.noteIds))) {
      queue.putBack(next);
      queue.pause("It could not be sent.");
    }
  }

  async function submit(event) {
    event?.preventDefault();
    const content = input.value.trim();
    if (!content) return;
    const noteIds = context.ids();
    if (running || sending || queue.size) {  // after what is already waiting, in order
      queue.push(content, noteIds);
      input.value = "";
      context.clearAttached();
      queue.resume();  // sending again is the person's "send anyway"
      drain();
      return;
    }
    if (!(await dispatch(content, noteIds))) {  // the text stays in the box to try again
      queue.pause("The message before them could not be sent.");  // any written while it was on its way
      return;
    }
    input.value = "";
    context.clearAttached();
  }

  async function again(answer, request) {
    if (running || sending) return false;
    clear(notice);
    try { await request(); } catch (e) { showError(e); return false; }
    const fresh = reply();
    if (answer.el) answer.el.replaceWith(fresh.el); else thread.append(fresh.el);
    following = true;
    followReply(fresh);
    return true;
  }
  function lastReply() {
    const els = thread.querySelectorAll(".msg-assistant");
    return { el: els[els.length - 1] };
  }
  const retry = (answer) => again(answer, () => api.post(`${base(conversation.id)}/generation/retry`));
  const regenerate = (answer) => again(answer, () => api.post(`${base(conversation.id)}/resend`));
  const edit = (content) => again(lastReply(), () => api.post(`${base(conversation.id)}/resend`, { content }));

  stop.addEventListener("click", async () => {
    stop.disabled = true;
    try { await api.post(`${base(conversation.id)}/generation/stop`); } catch (e) { toast(requestError(e), { bad: true }); }
    finally { stop.disabled = false; }
  });
  input.addEventListener("keydown", (e) => { if (e.key === "Enter" && !e.shiftKey && !e.isComposing) submit(e); });

  setLeaveGuard(() => !queue.size || !thread.isConnected || confirmDialog(
    `Leave ${queue.size === 1 ? "a queued message" : `${queue.size} queued messages`}?`,
    "Messages waiting in the queue have not been sent; they are dropped if you leave.", "Leave"));
  guardUnload(() => thread.isConnected && queue.size > 0);

  const composer = h("form.composer#composer", { on: { submit } }, input,
    h("div.row", {}, attachedCount, h("span.spacer"), stop, send));
  const chatMain = h("section.chat-main", {}, h("div.chat-head", {}, title, options.head || null, model.el,
    options.scope === false ? null : scope.el), semantic, h("div.thread-wrap", {}, thread, jump), queue.el, notice, composer);
  if (options.bare) main.append(chatMain);
  else {
    const aside = options.aside || h("aside.card.chat-list", {}, h("div.row", {}, h("h2", {}, "Conversations"),
      h("span.spacer"), h("a.btn.btn-sm#new-chat", { href: "/chat" }, "New")), conversations.search, conversations.bar, conversations.el);
    main.append(h("div.chat", {}, aside, chatMain, context.el));
  }

  if (!options.aside && !options.bare) conversations.load();
  if (!options.compact) semanticNotice(api, "The assistant finds your notes by their words only.").then((el) => clear(semantic, el));
  if (!conversation || !conversation.messages.length) {
    thread.append(h("p.empty", {}, options.empty || "Ask a question about your notes, or ask the assistant to create a task or tidy a note."));
  } else {
    let last = null;
    const final = conversation.messages[conversation.messages.length - 1];
    for (const message of conversation.messages) {
      if (message.role === "user") { thread.append(userMessage(message.content, { onEdit: edit })); continue; }
      last = { reply: reply(message === final), message };
      thread.append(last.reply.el);
      if (message.status !== "generating") last.reply.show(message);
    }
    [...thread.querySelectorAll(".msg-edit")].slice(0, -1).forEach((b) => b.remove());
    if (last?.message.context) context.show(last.message.context);
    if (last?.message.status === "generating") followReply(last.reply);
    requestAnimationFrame(toBottom);
  }
  if (options.autofocus !== false) input.focus();
}
