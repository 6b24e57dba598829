// The scope chip: which notes the assistant draws on (notes outside projects, all notes, or
// one project). Clicking it offers the choices; the server's set_rag_scope makes the change.
import { api } from "../api.js";
import { h } from "../dom.js";

export const OUTSIDE = "Notes outside projects";

/** Ask which scope to use: resolves {rag_project_id} or null when cancelled. */
async function chooseScope(current) {
  const projects = await api.get("/projects", { limit: 100 }).then((p) => p.items).catch(() => []);
  const options = [["outside", OUTSIDE], ["all", "All notes"], ...projects.map((p) => [String(p.id), `Project: ${p.title}`])];
  const value = current === null || current === undefined ? "outside" : current === -1 ? "all" : String(current);
  return new Promise((resolve) => {
    const dialog = h("dialog.scope-dialog", { "aria-label": "Assistant scope" },
      h("h2", {}, "Which notes may the assistant use?"),
      h("form.stack", { method: "dialog" },
        options.map(([v, label]) => h("button.btn.scope-option", { value: v, "aria-pressed": String(v === value) }, label)),
        h("button.btn.btn-ghost", { value: "" }, "Cancel")));
    dialog.addEventListener("close", () => {
      const picked = dialog.returnValue;
      dialog.remove();
      if (!picked) resolve(null);
      else resolve({ rag_project_id: picked === "outside" ? null : picked === "all" ? -1 : Number(picked) });
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}

/** The chip: {el, set(rag_project_id, label)}; onPick(rag_project_id) applies a choice and returns the new label. */
export function scopeChip(onPick) {
  let current = null;
  const label = h("span.scope-label", {}, OUTSIDE);
  const el = h("button.chip.scope-chip#scope-chip", { type: "button", title: "Change which notes the assistant uses" },
    h("span.muted", {}, "Scope:"), label);
  el.addEventListener("click", async () => {
    const choice = await chooseScope(current);
    if (!choice) return;
    const newLabel = await onPick(choice.rag_project_id);
    if (newLabel) chip.set(choice.rag_project_id, newLabel);
  });
  const chip = {
    el,
    get value() { return current; },
    set(ragProjectId, text) { current = ragProjectId ?? null; label.textContent = text; },
  };
  return chip;
}

/** set_rag_scope's arguments for a scope value. */
export function scopeArguments(conversationId, ragProjectId) {
  if (ragProjectId === -1) return { conversation_id: conversationId, all_notes: true };
  if (ragProjectId === null || ragProjectId === undefined) return { conversation_id: conversationId };
  return { conversation_id: conversationId, project_id: ragProjectId };
}
