// Settings → Profile: what the assistant knows of you. Facts you state (one a line), the summary
// it learns from them and from what it noticed (editable), and its observations (forget any).
import { api } from "../api.js";
import { clear, h, relativeTime, toast } from "../dom.js";

export function render(panel) {
  const facts = h("textarea#profile-facts", { rows: 6, "aria-label": "Facts about you, one a line",
    placeholder: "I live in Zurich\nI have a dog called Bruno" });
  const summary = h("textarea#profile-summary", { rows: 5, "aria-label": "Summary" });
  const learned = h("p.muted.small#profile-summary-at");
  const observations = h("ul.list.observations#profile-observations");

  function show(profile) {
    facts.value = (profile.facts || []).join("\n");
    summary.value = profile.summary || "";
    clear(learned, profile.summary_at ? `Written ${relativeTime(profile.summary_at)}.`
      : "Not learned yet: it is written in the background once a model is configured.");
    const noticed = profile.observations || [];
    clear(observations, noticed.length ? noticed.map((o) => h("li", {}, h("span", {}, o.text),
      h("span.muted.small", {}, relativeTime(o.created_at)),
      h("button.btn.btn-ghost.btn-sm", { type: "button", "aria-label": `Forget: ${o.text}`,
        on: { click: () => save({ forget: [o.id] }, "Forgotten") } }, "Forget")))
      : h("li.empty", {}, "Nothing yet: the assistant records what it notices in conversations."));
  }
  async function save(body, done) {
    try { show(await api.patch("/profile", body)); toast(done); } catch (e) { toast(e.message, { bad: true }); }
  }
  const factsForm = h("form.stack", { on: { submit: (e) => {
    e.preventDefault();
    save({ facts: facts.value.split("\n").map((f) => f.trim()).filter(Boolean) }, "Facts saved");
  } } }, facts, h("div.row", {}, h("span.spacer"), h("button.btn.btn-primary#profile-facts-save", { type: "submit" }, "Save facts")));
  const summaryForm = h("form.stack", { on: { submit: (e) => {
    e.preventDefault();
    save({ summary: summary.value.trim() }, "Summary saved");
  } } }, summary, learned, h("div.row", {}, h("span.spacer"), h("button.btn#profile-summary-save", { type: "submit" }, "Save summary")));

  panel.append(h("div.stack", {},
    h("section.card#profile-facts-card", {}, h("h2", {}, "About you"),
      h("p.muted.small", {}, "Facts the assistant keeps in mind in every chat and journal conversation."), factsForm),
    h("section.card#profile-summary-card", {}, h("h2", {}, "What the assistant has learned"), summaryForm),
    h("section.card#profile-observations-card", {}, h("h2", {}, "What it noticed"), observations)));
  return api.get("/profile").then(show);
}
