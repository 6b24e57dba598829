// Structured notes: a person's or place's fields as a card, a list's items as checkboxes.
import { api } from "../api.js";
import { h, toast } from "../dom.js";

const LABELS = {
  email: "Email", phone: "Phone", birthday: "Birthday", organisation: "Organisation", role: "Role",
  relation: "Relation", address: "Address", links: "Links", category: "Category", url: "Website",
  hours: "Hours", lat: "Latitude", lon: "Longitude",
};

function value(name, v) {
  if (name === "email") return h("a", { href: `mailto:${v}` }, v);
  if (name === "phone") return h("a", { href: `tel:${v.replace(/\s/g, "")}` }, v);
  if (name === "url") return h("a", { href: v, rel: "noopener noreferrer", target: "_blank" }, v);
  if (name === "links") return v.map((link) => h("div", {}, h("a", { href: link, rel: "noopener noreferrer", target: "_blank" }, link)));
  return String(v);
}

/** A person's or place's fields (a card of label / value rows), or null when it has none. */
export function entityCard(note) {
  const fields = Object.entries(note.fields || {});
  if (!fields.length) return null;
  return h(`section.card#entity-card`, { "aria-label": note.kind === "person" ? "Person" : "Place" },
    h("dl.kv", {}, fields.map(([name, v]) => [h("dt", {}, LABELS[name] || name), h("dd", { dataset: { field: name } }, value(name, v))])));
}

/** A list's items as checkboxes: checking one asks update_list (PATCH /lists/{id}). */
export function checklist(note, reload, editable) {
  const items = note.fields?.items || [];
  async function toggle(index, checked) {
    try {
      await api.patch(`/lists/${note.id}`, { [checked ? "check" : "uncheck"]: [index + 1] });
      await reload();
    } catch (e) { toast(e.message, { bad: true }); await reload(); }
  }
  const open = items.filter((item) => !item.checked).length;
  return h("section.card#checklist", { "aria-label": "List" },
    h("p.muted.small.checklist-count", {}, `${open} of ${items.length} open`),
    items.length ? h("ul.checklist", {}, items.map((item, index) => h("li", {},
      h("label.choice", {}, h("input", { type: "checkbox", checked: item.checked, disabled: !editable,
        on: { change: (e) => toggle(index, e.target.checked) } }), " ",
      h(item.checked ? "s" : "span", {}, item.text))))) : h("p.empty", {}, "No items yet."));
}
