// The assistant: conversations on the left, the thread in the middle (streamed answers, tool
// cards, stop), the notes it used or suggests on the right.
import { api } from "../api.js";
import { clear, confirmDialog, h, relativeTime, toast } from "../dom.js";
import { navigate } from "../router.js";
import { follow } from "../sse.js";
import { contextPanel } from "../chat/context.js";
import { OUTSIDE, scopeArguments, scopeChip } from "../chat/scope.js";
import { assistantMessage, userMessage } from "../chat/thread.js";
import { llmNotice, semanticNotice } from "../widgets/llm.js";

const base = (id) => `/chat/conversations/${id}`;

function conversationList(currentId) {
  const list = h("ul.list.conv-list#conversation-list");
  async function load() {
    const page = await api.get("/chat/conversations", { conversation_type: "chat", limit: 100 });
    clear(list, page.items.length ? page.items.map((c) => item(c)) : h("li.empty", {}, "No conversations yet."));
  }
  function item(c) {
    const li = h("li.conv", { dataset: { id: String(c.id) }, "aria-current": c.id === currentId() ? "page" : null });
    const link = h("a.conv-link", { href: `/chat/${c.id}` }, h("span.title", {}, c.title), h("span.snippet", {}, relativeTime(c.updated_at)));
    const rename = h("button.btn.btn-ghost.btn-sm.conv-rename", { type: "button", "aria-label": `Rename ${c.title}`, title: "Rename" }, "✎");
    const remove = h("button.btn.btn-ghost.btn-sm.btn-danger.conv-delete", { type: "button", "aria-label": `Delete ${c.title}`, title: "Delete" }, "×");
    rename.addEventListener("click", () => {
      const input = h("input.conv-title-input", { type: "text", value: c.title, "aria-label": "Conversation title" });
      const form = h("form.conv-rename-form", { on: { submit: async (e) => {
        e.preventDefault();
        try { await api.patch(base(c.id), { title: input.value }); await load(); } catch (err) { toast(err.message, { bad: true }); }
      } } }, input);
      input.addEventListener("keydown", (e) => { if (e.key === "Escape") load(); });
      li.replaceChildren(form);
      input.select();
    });
    remove.addEventListener("click", async () => {
      if (!(await confirmDialog(`Delete “${c.title}”?`, "The conversation and its messages are removed."))) return;
      await api.del(base(c.id));
      if (c.id === currentId()) navigate("/chat"); else await load();
    });
    li.append(link, h("span.conv-actions", {}, rename, remove));
    return li;
  }
  return { el: list, load };
}

/** The chat page; other pages show one conversation through it (the journal): ``options.aside``
 * replaces the conversation list, ``options.head`` joins the title, ``options.scope: false``
 * hides the scope chip, ``options.empty`` is the empty thread's hint. */
export async function chatView(main, params, options = {}) {
  let conversation = params.id ? await api.get(base(Number(params.id))) : null;
  let running = null; // the AbortController of the answer being followed
  const thread = h("div.thread#thread", { "aria-live": "polite" });
  const notice = h("div#chat-notice");
  const semantic = h("div#chat-semantic-notice");
  const title = h("h1.chat-title", {}, conversation ? conversation.title : "New conversation");
  const context = contextPanel();
  const conversations = conversationList(() => conversation?.id);
  const scope = scopeChip(async (ragProjectId) => {
    if (!conversation) return ragProjectId === null ? OUTSIDE : ragProjectId === -1 ? "All notes" : "Project";
    try { return (await api.tool("set_rag_scope", scopeArguments(conversation.id, ragProjectId))).label; }
    catch (e) { toast(e.message, { bad: true }); return null; }
  });
  if (conversation) scope.set(conversation.rag_project_id, conversation.rag_scope_label);

  const input = h("textarea#chat-input", { rows: 3, placeholder: options.placeholder || "Ask about your notes, or ask for a change. Enter sends, Shift+Enter adds a line.", "aria-label": "Message" });
  const send = h("button.btn.btn-primary#chat-send", { type: "submit" }, "Send");
  const stop = h("button.btn#chat-stop.hidden", { type: "button" }, "Stop");
  const attachedCount = h("span.small.muted#attached-count");
  context.onChange(() => { const n = context.ids().length; attachedCount.textContent = n ? `${n} note${n > 1 ? "s" : ""} attached` : ""; });

  function busy(on) {
    send.classList.toggle("hidden", on);
    stop.classList.toggle("hidden", !on);
    input.disabled = on;
  }

  async function ensureConversation() {
    if (conversation) return conversation;
    const created = await api.post("/chat/conversations", { rag_project_id: scope.value ?? undefined });
    conversation = await api.get(base(created.id));
    history.replaceState(null, "", `/chat/${created.id}`);
    return conversation;
  }

  async function followReply(reply, lastEventId = null) {
    running = new AbortController();
    busy(true);
    try {
      await follow(`/api${base(conversation.id)}/generation/stream`, (event) => {
        if (!thread.isConnected) { running.abort(); return; }
        if (event.event === "context") context.show(event.data);
        if (event.event === "done" && event.data.rag_scope) scope.set(event.data.rag_scope.rag_project_id, event.data.rag_scope.label);
        reply.onEvent(event);
        thread.scrollTop = thread.scrollHeight;
      }, { signal: running.signal, lastEventId });
    } catch (e) {
      if (!running.signal.aborted) clear(notice, llmNotice(e));
    } finally {
      running = null;
      busy(false);
      if (thread.isConnected) {
        input.focus();
        if (!options.aside) conversations.load();
        refreshTitle();
        setTimeout(() => { if (thread.isConnected && !running) { if (!options.aside) conversations.load(); refreshTitle(); } }, 2000); // titles come just after the answer
      }
    }
  }

  async function refreshTitle() {
    if (!conversation) return;
    const fresh = await api.get(base(conversation.id), { limit: 1 }).catch(() => null);
    if (fresh) title.textContent = fresh.title;
  }

  async function submit(event) {
    event?.preventDefault();
    const content = input.value.trim();
    if (!content || running) return;
    clear(notice);
    try {
      await ensureConversation();
      await api.post(`${base(conversation.id)}/messages`, { content, note_ids: context.ids() });
    } catch (e) { clear(notice, llmNotice(e)); return; }
    input.value = "";
    context.clearAttached();
    thread.querySelector(".empty")?.remove();
    const reply = assistantMessage({ onRetry: retry });
    thread.append(userMessage(content), reply.el);
    await followReply(reply);
  }

  async function retry(reply) {
    if (running) return;
    clear(notice);
    try { await api.post(`${base(conversation.id)}/generation/retry`); } catch (e) { clear(notice, llmNotice(e)); return; }
    const fresh = assistantMessage({ onRetry: retry });
    reply.el.replaceWith(fresh.el);
    await followReply(fresh);
  }

  stop.addEventListener("click", async () => {
    stop.disabled = true;
    try { await api.post(`${base(conversation.id)}/generation/stop`); } catch (e) { toast(e.message, { bad: true }); }
    finally { stop.disabled = false; }
  });
  input.addEventListener("keydown", (e) => { if (e.key === "Enter" && !e.shiftKey && !e.isComposing) submit(e); });

  const composer = h("form.composer#composer", { on: { submit } }, input,
    h("div.row", {}, attachedCount, h("span.spacer"), stop, send));
  const aside = options.aside || h("aside.card.chat-list", {}, h("div.row", {}, h("h2", {}, "Conversations"),
    h("span.spacer"), h("a.btn.btn-sm#new-chat", { href: "/chat" }, "New")), conversations.el);
  main.append(h("div.chat", {}, aside,
    h("section.chat-main", {}, h("div.chat-head", {}, title, options.head || null, options.scope === false ? null : scope.el),
      semantic, thread, notice, composer),
    context.el));

  if (!options.aside) conversations.load();
  semanticNotice(api, "The assistant finds your notes by their words only.").then((el) => clear(semantic, el));
  if (!conversation || !conversation.messages.length) {
    thread.append(h("p.empty", {}, options.empty || "Ask a question about your notes, or ask the assistant to create a task or tidy a note."));
  } else {
    let last = null;
    const final = conversation.messages[conversation.messages.length - 1];
    for (const message of conversation.messages) {
      if (message.role === "user") { thread.append(userMessage(message.content)); continue; }
      last = { reply: assistantMessage({ onRetry: message === final ? retry : null }), message };
      thread.append(last.reply.el);
      if (message.status !== "generating") last.reply.show(message);
    }
    if (last?.message.context) context.show(last.message.context);
    if (last?.message.status === "generating") followReply(last.reply);
  }
  input.focus();
}
