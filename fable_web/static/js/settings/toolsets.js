// Settings → which tools an API key's or a connection's MCP client is offered (its toolsets):
// the chooser, the choice in a few words, and the table cell whose dialog edits it. The
// toolsets and their lines come from the server (GET /api/toolsets), never from this file.
import { api } from "../api.js";
import { clear, h, toast } from "../dom.js";

const ALL = "all";
const DEFAULT = "default";
let chooserCount = 0;

/** The toolsets this person's MCP clients may use: [{name, about, tools}], in the server's order. */
export async function listToolsets() {
  return (await api.get("/toolsets")).toolsets;
}

/** A choice in a few words: "server's default", "default", "default + calendar, feeds", "everything". */
export function summary(entries) {
  if (!entries) return "server's default";
  if (entries.includes(ALL)) return "everything";
  const rest = entries.filter((e) => e !== DEFAULT);
  if (!entries.includes(DEFAULT)) return rest.join(", ");
  return rest.length ? `${DEFAULT} + ${rest.join(", ")}` : DEFAULT;
}

/** Checkboxes for a choice: the default set, everything, each toolset with its line, and any
 * single tool the choice names. ``entries`` null (the server's default) starts at the default set.
 * Returns {el, read, onChange}; read() is the entries to store ([] when nothing is ticked). */
export function chooser(lines, entries, legend) {
  const prefix = `toolsets-${++chooserCount}`;
  const chosen = new Set(entries ?? [DEFAULT]);
  const known = new Set([DEFAULT, ALL, ...lines.map((l) => l.name)]);
  const listeners = [];
  const inputs = [];
  function option(value, name, about) {
    const id = `${prefix}-${value}`;
    const input = h("input", { type: "checkbox", value, checked: chosen.has(value), "aria-describedby": `${id}-about`,
      on: { change: changed } });
    inputs.push(input);
    return h("div.toolset-option", { dataset: { toolset: value } },
      h("label.choice", {}, input, h("span.toolset-name", {}, name)),
      h("span.muted.small", { id: `${id}-about` }, about));
  }
  const tools = (n) => (n === 1 ? "1 tool" : `${n} tools`);
  const el = h("fieldset.field.toolsets-chooser", {}, h("legend", {}, legend),
    h("div.toolset-options", {},
      option(DEFAULT, "Default set", "Notes, tasks, projects, today's events and the journal: what people use most."),
      option(ALL, "Everything", "Every tool you may use, including those added later."),
      lines.map((l) => option(l.name, l.name, `${l.about} (${tools(l.tools)})`)),
      [...chosen].filter((e) => !known.has(e)).map((name) => option(name, name, "In its choice: a single tool, or a toolset you cannot use now."))),
    h("p.muted.small.toolsets-hint", {}, "A client can still enable another toolset, or find a tool, while it runs."));
  function changed(event) {
    const everything = inputs.find((i) => i.value === ALL).checked;
    if (event?.target.value === ALL && !everything && !inputs.some((i) => i.checked)) {
      inputs.find((i) => i.value === DEFAULT).checked = true;  // leaving everything: back to the default set
    }
    for (const input of inputs) if (input.value !== ALL) input.disabled = everything;
    for (const fn of listeners) fn();
  }
  changed();
  return {
    el,
    read: () => (inputs.find((i) => i.value === ALL).checked ? [ALL] : inputs.filter((i) => i.checked).map((i) => i.value)),
    onChange: (fn) => listeners.push(fn),
  };
}

/** The "Tools" cell of a key's or connection's row: its choice and Edit, which opens the chooser
 * in a dialog. ``save(entries)`` stores a choice (null: the server's default); after it,
 * ``reload()`` redraws the table. A refused save says why in the dialog and changes nothing. */
export function toolsetsCell({ id, entries, name, lines, save, reload }) {
  const edit = h("button.btn.btn-ghost.btn-sm", { type: "button", dataset: { editToolsets: id },
    "aria-label": `Edit the tools “${name}” is offered`, "aria-haspopup": "dialog",
    on: { click: () => editDialog({ id, entries, name, lines, save, reload }) } }, "Edit");
  return h("td.toolsets-cell", {}, h("span.toolsets-summary", {}, summary(entries)), " ", edit);
}

function editDialog({ id, entries, name, lines, save, reload }) {
  const title = `Tools “${name}” is offered`;
  const choice = chooser(lines, entries, "Offered to its MCP client");
  const error = h("p.error.hidden", { role: "alert" });
  const buttons = [
    entries ? h("button.btn.btn-ghost", { type: "button", on: { click: () => store(null) } }, "Use the server's default") : null,
    h("span.spacer"),
    h("button.btn", { type: "button", on: { click: () => dialog.close() } }, "Cancel"),
    h("button.btn.btn-primary", { type: "submit" }, "Save"),
  ].filter(Boolean);
  const dialog = h("dialog.toolsets-dialog", { "aria-label": title }, h("h2", {}, title),
    h("form.stack", { on: { submit: (e) => { e.preventDefault(); store(choice.read()); } } },
      choice.el, error, h("div.row.toolsets-actions", {}, buttons)));
  function fail(message) {
    clear(error, message);
    error.classList.remove("hidden");
  }
  async function store(value) {
    if (value && !value.length) return fail("Choose at least one: the default set, everything or a toolset.");
    error.classList.add("hidden");
    const controls = buttons.filter((b) => b.tagName === "BUTTON");
    for (const b of controls) b.disabled = true;
    try {
      await save(value);
    } catch (e) {
      fail(e.message);
      return;
    } finally {
      for (const b of controls) b.disabled = false;
    }
    dialog.close();
    toast(`“${name}” is offered: ${summary(value)}`);
    await reload();
    focusEdit();
  }
  const focusEdit = () => document.querySelector(`[data-edit-toolsets="${CSS.escape(String(id))}"]`)?.focus();
  dialog.addEventListener("close", () => { dialog.remove(); focusEdit(); });
  document.body.append(dialog);
  dialog.showModal();
  dialog.querySelector("input:not(:disabled)")?.focus();
}
