// Settings → Import: bring an Obsidian vault, a basic-memory project or a ChatGPT / Claude export
// in. Choose the kind and the file; a dry run shows what would be created and skipped, and why;
// "Import" then runs it for real (a rerun creates no duplicates).
import { api } from "../api.js";
import { clear, h, toast } from "../dom.js";

const KINDS = [
  { id: "obsidian", label: "Obsidian vault (ZIP of the folder)", path: "/import/vault", params: { kind: "obsidian" } },
  { id: "basic_memory", label: "basic-memory project (ZIP)", path: "/import/vault", params: { kind: "basic_memory" } },
  { id: "chats", label: "ChatGPT or Claude export (ZIP or conversations.json)", path: "/import/conversations", params: {} },
];

function lines(items, empty) {
  if (!items || !items.length) return h("p.muted.small", {}, empty);
  return h("ul.list.small", {}, items.map((i) => h("li", {}, h("code", {}, i.item),
    i.title && i.title !== i.item ? h("span", {}, ` ${i.title}`) : null,
    i.reason ? h("span.muted", {}, ` — ${i.reason}`) : null)));
}

export function render(panel) {
  const kind = h("select#import-kind", { "aria-label": "What to import" },
    KINDS.map((k) => h("option", { value: k.id }, k.label)));
  const file = h("input#import-file", { type: "file", accept: ".zip,.json,application/zip,application/json",
    "aria-label": "The file to import" });
  const report = h("div.stack#import-report");
  const confirm = h("button.btn.btn-primary#import-confirm", { type: "button", hidden: true }, "Import");

  async function run(dryRun) {
    const chosen = KINDS.find((k) => k.id === kind.value);
    if (!file.files.length) { toast("Choose a file first", { bad: true }); return; }
    try {
      const result = await api.upload(chosen.path, file.files[0], { ...chosen.params, dry_run: dryRun });
      show(result);
      confirm.hidden = !dryRun || result.created === 0;
      if (!dryRun) toast(`Imported ${result.created}`);
    } catch (e) { toast(e.message, { bad: true }); clear(report); confirm.hidden = true; }
  }
  function show(r) {
    const what = r.dry_run ? "Would create" : "Created";
    clear(report,
      h("p#import-summary", {}, `${what} ${r.created}, skipping ${r.skipped}` + (r.images ? `, with ${r.images} images` : "") + "."),
      h("h3", {}, r.dry_run ? "To create" : "Created"), lines(r.created_items, "Nothing."),
      h("h3", {}, "Skipped"), lines(r.skipped_items, "Nothing."),
      r.warnings && r.warnings.length ? [h("h3", {}, "Warnings"), lines(r.warnings, "")] : null);
  }
  confirm.addEventListener("click", () => run(false));
  const form = h("form.stack#import-form", { on: { submit: (e) => { e.preventDefault(); run(true); } } },
    kind, file, h("div.row", {}, h("span.spacer"), h("button.btn#import-check", { type: "submit" }, "Check (dry run)"), confirm));
  panel.append(h("div.stack", {}, h("section.card#import-card", {}, h("h2", {}, "Import"),
    h("p.muted.small", {}, "A dry run first shows what would be created and skipped; nothing is stored until you press Import. Importing again skips what was imported before."),
    form, report)));
}
