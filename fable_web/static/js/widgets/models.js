// Settings → Models (admins): what the LLM server has, pulling a model with a progress bar
// from the pull's event stream, deleting one, warming one up. With no LLM the card says so.
import { api } from "../api.js";
import { clear, confirmDialog, h, toast } from "../dom.js";
import { answer } from "../sse.js";
import { llmNotice } from "./llm.js";

function size(bytes) {
  if (!bytes) return "";
  return bytes >= 1e9 ? `${(bytes / 1e9).toFixed(1)} GB` : `${Math.max(1, Math.round(bytes / 1e6))} MB`;
}

export function modelsCard() {
  const info = h("p.muted.small#models-info");
  const rows = h("tbody#models");
  const notice = h("div#models-notice");
  const name = h("input#pull-name", { type: "text", placeholder: "e.g. qwen3:8b", "aria-label": "Model to pull", required: true, autocomplete: "off" });
  const bar = h("progress.pull-progress.hidden#pull-progress", { max: 100, value: 0 });
  const status = h("span.small.muted#pull-status");

  async function load() {
    try {
      const list = await api.get("/models");
      clear(notice);
      info.textContent = `Provider ${list.provider} · chat model ${list.chat_model || "—"} · embeddings ${list.embed_model || "—"}`;
      clear(rows, list.items.length ? list.items.map((m) => h("tr", { dataset: { model: m.name } },
        h("td.mono", {}, m.name), h("td.muted", {}, size(m.size)),
        h("td", {}, h("div.row", {},
          h("button.btn.btn-sm.model-warm", { type: "button", on: { click: () => warm(m.name) } }, "Warm up"),
          h("button.btn.btn-ghost.btn-sm.btn-danger.model-delete", { type: "button", on: { click: () => remove(m.name) } }, "Delete")))))
        : h("tr", {}, h("td.empty", { colSpan: 3 }, "No models installed.")));
    } catch (e) { clear(rows); info.textContent = ""; clear(notice, llmNotice(e)); }
  }
  async function warm(model) {
    try { await api.post("/models/warm", { name: model }); toast(`${model} is loaded`); }
    catch (e) { clear(notice, llmNotice(e)); }
  }
  async function remove(model) {
    if (!(await confirmDialog(`Delete ${model}?`, "It is removed from the LLM server; pull it again to use it."))) return;
    try { await api.del("/models", { name: model }); await load(); } catch (e) { clear(notice, llmNotice(e)); }
  }
  async function pull(event) {
    event.preventDefault();
    const model = name.value.trim();
    if (!model) return;
    bar.classList.remove("hidden");
    bar.value = 0;
    status.textContent = "Starting…";
    let failed = null;
    try {
      await answer(await api.stream("/models/pull/stream", { name: model }), (event) => {
        if (event.event !== "pull") return;
        const line = event.data;
        if (line.total) bar.value = Math.round((100 * (line.completed || 0)) / line.total);
        if (line.status === "success") bar.value = 100;
        status.textContent = line.status || "";
      });
    } catch (e) { failed = e; }
    if (failed) { bar.classList.add("hidden"); status.textContent = ""; clear(notice, llmNotice(failed)); return; }
    name.value = "";
    toast(`Pulled ${model}`);
    await load();
  }
  load();
  return h("section.card#models-card", {}, h("h2", {}, "Models"), info, notice,
    h("table.table", {}, h("thead", {}, h("tr", {}, ["Model", "Size", ""].map((t) => h("th", {}, t)))), rows),
    h("form.row", { on: { submit: pull } }, h("div.spacer", {}, name), h("button.btn#pull-model", { type: "submit" }, "Pull")),
    h("div.row", {}, bar, status));
}
