// Settings → Preferences: every per-user setting the server declares (GET /api/settings), each
// with a control built from the JSON Schema it accepts, saved and reset on its own.
import { api } from "../api.js";
import { clear, h, toast } from "../dom.js";
import { session } from "../session.js";
import { field, humanize } from "./fields.js";

function settingCard(setting, accepts) {
  const error = h("p.error.hidden", { role: "alert" });
  const slot = h("div.setting-control");
  let control = null;
  function show(value) {
    if (setting.key === "timezone") session.zone = value;  // every page's "today" from now on
    control = field(accepts, value, { name: setting.key, label: humanize(setting.key) });
    clear(slot, control.el);
  }
  async function save(event) {
    event.preventDefault();
    error.classList.add("hidden");
    try {
      show((await api.put(`/settings/${setting.key}`, { value: control.read() })).value);
      toast(`${humanize(setting.key)} saved`);
    } catch (e) { error.textContent = e.message; error.classList.remove("hidden"); }
  }
  async function reset() {
    error.classList.add("hidden");
    show((await api.del(`/settings/${setting.key}`)).value);
    toast(`${humanize(setting.key)} is back to its default`);
  }
  show(setting.value);
  return h("section.card.setting", { id: `setting-${setting.key}` },
    h("h2", {}, humanize(setting.key)), h("p.muted.small", {}, setting.description),
    h("form.form", { on: { submit: save } }, slot, error,
      h("div.row", {}, h("button.btn.btn-primary", { type: "submit" }, "Save"),
        h("button.btn.btn-ghost", { type: "button", on: { click: reset } }, "Reset to default"))));
}

export async function render(panel) {
  const { items } = await api.get("/settings");
  const details = await Promise.all(items.map((s) => api.get(`/settings/${s.key}`)));
  panel.append(h("div.settings-cards", {}, items.map((s, i) => settingCard(s, details[i].accepts))));
}
