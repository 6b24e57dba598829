// When the LLM is off or down, AI features say so calmly where they are, not as an error page.
import { h } from "../dom.js";

/** True for the 503 "no model available" answer of any LLM feature. */
export function unavailable(error) {
  return error?.status === 503 || error?.type === "unavailable";
}

/** An inline notice for an LLM that is not there; other errors keep their own message. */
export function llmNotice(error) {
  if (!unavailable(error)) return h("p.error", { role: "alert" }, error?.message || String(error));
  return h("p.notice", { role: "status" }, h("strong", {}, "No model available. "),
    "The assistant is not running right now; everything else works as usual.",
    error?.message ? h("span.small.muted.notice-detail", {}, error.message) : null);
}

let health = null;

/** /api/health's answer about the model server, asked once per page load. */
function llmHealth(api) {
  if (!health) health = api.get("/health").then((r) => r?.llm || null).catch(() => null);
  return health;
}

/** Whether a model answers (from /api/health), asked once per page load. */
export async function modelAvailable(api) {
  return (await llmHealth(api))?.status === "ok";
}

/** A short notice when search cannot use meaning, with the server's reason; null when it can. */
export async function semanticNotice(api, effect) {
  const semantic = (await llmHealth(api))?.semantic_search;
  if (!semantic || semantic.on) return null;
  return h("p.notice.small.semantic-notice", { role: "status" },
    h("strong", {}, "Semantic search is off: "), semantic.reason || "no embedding model answers", ". ", effect);
}
