// Form controls generated from a JSON Schema (what GET /api/settings/{key} says a setting
// accepts): text, number, time, a choice, several choices, a list of objects, an object.
// field(schema, value) gives { el, read }: the control, and a function reading its value back.
import { h } from "../dom.js";

let zoneList = null;

/** A datalist of the time zones this browser knows (the server checks the one chosen). */
function zones() {
  if (!zoneList) {
    const names = typeof Intl.supportedValuesOf === "function" ? Intl.supportedValuesOf("timeZone") : [];
    zoneList = h("datalist#time-zones", {}, ["UTC", ...names].map((z) => h("option", { value: z })));
    document.body.append(zoneList);
  }
  return zoneList.id;
}

export function humanize(name) {
  const special = { timezone: "Time zone", lat: "Latitude", lon: "Longitude" };
  return special[name] || (name.charAt(0).toUpperCase() + name.slice(1)).replaceAll("_", " ");
}

function resolve(schema, defs) {
  if (schema.$ref) return resolve({ ...defs[schema.$ref.split("/").pop()], ...schema, $ref: undefined }, defs);
  const branches = schema.anyOf || [];
  const other = branches.filter((b) => b.type !== "null");
  if (branches.length && other.length === 1) return { ...resolve(other[0], defs), nullable: true, description: schema.description };
  return schema;
}

/** A control for ``value`` as ``schema`` describes it; ``name`` (a property's) picks helpers. */
export function field(schema, value, { defs = {}, name = "", label = "" } = {}) {
  const s = resolve(schema, { ...defs, ...(schema.$defs || {}) });
  const allDefs = { ...defs, ...(schema.$defs || {}) };
  if (s.enum) return choice(s, value, label);
  if (s.type === "array" && s.items && resolve(s.items, allDefs).enum) return several(resolve(s.items, allDefs), value || [], label);
  if (s.type === "array") return list(s, value || [], allDefs, label);
  if (s.type === "object") return object(s, value || {}, allDefs);
  if (s.type === "boolean") {
    const box = h("input", { type: "checkbox", checked: Boolean(value), "aria-label": label });
    return { el: box, read: () => box.checked };
  }
  const input = h("input", { "aria-label": label, autocomplete: "off" });
  if (s.type === "number" || s.type === "integer") {
    input.type = "number";
    input.step = s.type === "integer" ? "1" : "any";
  } else if (s.format === "time") {
    input.type = "time";
  } else {
    input.type = "text";
    if (s.maxLength) input.maxLength = s.maxLength;
    if (name === "timezone") input.setAttribute("list", zones());
  }
  input.value = value === null || value === undefined ? "" : s.format === "time" ? String(value).slice(0, 5) : String(value);
  if (s.nullable) input.placeholder = "not set";
  return {
    el: input,
    read: () => {
      const text = input.value.trim();
      if (text === "") return s.nullable ? null : text;
      return input.type === "number" ? Number(text) : text;
    },
  };
}

function choice(s, value, label) {
  const select = h("select", { "aria-label": label },
    s.nullable ? h("option", { value: "" }, "not set") : null,
    s.enum.map((v) => h("option", { value: v }, humanize(v))));
  select.value = value ?? "";
  return { el: select, read: () => (select.value === "" && s.nullable ? null : select.value) };
}

function several(items, values, label) {
  const boxes = items.enum.map((v) => h("input", { type: "checkbox", value: v, checked: values.includes(v) }));
  const el = h("div.choices", { role: "group", "aria-label": label },
    boxes.map((box) => h("label.row", {}, box, humanize(box.value))));
  return { el, read: () => boxes.filter((b) => b.checked).map((b) => b.value) };
}

function list(s, values, defs, label) {
  const rows = h("div.field-list");
  const entries = [];
  function add(value) {
    const entry = field(s.items, value, { defs, label });
    const row = h("div.field-list-row", {}, entry.el,
      h("button.btn.btn-ghost.btn-sm", { type: "button", on: { click: () => {
        entries.splice(entries.indexOf(entry), 1);
        row.remove();
      } } }, "Remove"));
    entries.push(entry);
    rows.append(row);
  }
  values.forEach(add);
  const el = h("div.stack", {}, rows,
    h("div", {}, h("button.btn.btn-sm", { type: "button", on: { click: () => add({}) } }, `Add ${label.toLowerCase().replace(/s$/, "")}`)));
  return { el, read: () => entries.map((e) => e.read()) };
}

function object(s, value, defs) {
  const parts = Object.entries(s.properties || {}).map(([key, prop]) => {
    const label = humanize(key);
    const part = field(prop, value[key], { defs, name: key, label });
    const resolved = resolve(prop, defs);
    const help = resolved.description ? h("span.small.muted", {}, resolved.description) : null;
    const composite = resolved.type === "array" || resolved.type === "object";
    const el = composite
      ? h("fieldset.field", { dataset: { field: key } }, h("legend", {}, label), part.el, help)
      : h("label.field", { dataset: { field: key } }, label, part.el, help);
    return { key, part, el };
  });
  const el = h("div.field-object", {}, parts.map((p) => p.el));
  return { el, read: () => Object.fromEntries(parts.map((p) => [p.key, p.part.read()])) };
}
