// When the LLM is off or down, AI features say so calmly where they are, not as an error page.
import { h } from "../dom.js";

/** True for the 503 "no model available" answer of any LLM feature. */
export function unavailable(error) {
  return error?.status === 503 || error?.type === "unavailable" || error?.type === "slow";
}

/** An inline notice for an LLM that is not there; other errors keep their own message. */
export function llmNotice(error) {
  if (!unavailable(error)) return h("p.error", { role: "alert" }, error?.message || String(error));
  if (error?.type === "slow") {  // there, but not answering in time (a CPU model reading a long prompt)
    return h("p.notice", { role: "status" }, h("strong", {}, "The model is slow. "), error.message);
  }
  if (error?.message && !/^no model available/i.test(error.message)) {  // another service (web search): its own words
    return h("p.notice", { role: "status" }, h("strong", {}, "Not available right now. "), error.message);
  }
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

/** Before anyone asks: a notice when no model answers (null when one does), saying what is wrong
 * and, to an administrator, the setting that fixes it (members are told to ask one). */
export async function missingModelNotice(api, admin) {
  const llm = await llmHealth(api);
  if (!llm || llm.status === "ok" || llm.status === "busy") return null;  // busy: there, answering someone
  const none = llm.status === "not configured" || llm.status === "disabled";  // LLM_PROVIDER=none
  const what = none ? "This Fable runs without a model" : `The model server ${llm.detail ? `is not answering (${llm.detail})` : "is not answering"}`;
  return h("div.notice.missing-model#missing-model", { role: "status" }, h("strong", {}, "No model available. "),
    `${what}: the assistant cannot answer until it does; everything else works as usual. `,
    admin && llm.fix ? h("span.notice-detail", {}, `To fix it: ${llm.fix}.`)
      : h("span.notice-detail", {}, "Ask your administrator to set one up."));
}

/** Whether a model answers (from /api/health), asked once per page load. */
export async function modelAvailable(api) {
  return ["ok", "busy"].includes((await llmHealth(api))?.status);
}

/** A short notice when search cannot use meaning, with the server's reason; null when it can. */
export async function semanticNotice(api, effect) {
  const semantic = (await llmHealth(api))?.semantic_search;
  if (!semantic || semantic.on) return null;
  return h("p.notice.small.semantic-notice", { role: "status" },
    h("strong", {}, "Semantic search is off: "), semantic.reason || "no embedding model answers", ". ", effect);
}
