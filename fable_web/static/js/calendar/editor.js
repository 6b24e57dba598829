// The slide-over that creates, changes and deletes an event: for an occurrence of a recurring
// event, the change or deletion is of "this occurrence" or of "all occurrences" (the series).
// Everything goes through the REST API the registry generates (/api/events).
import { api } from "../api.js";
import { confirmDialog, focusBack, h, toast } from "../dom.js";
import { addDays, dayOf, timeOf } from "./dates.js";

const REPEATS = [
  ["", "Does not repeat"], ["FREQ=DAILY", "Every day"], ["FREQ=WEEKLY", "Every week"],
  ["FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR", "Every weekday"], ["FREQ=MONTHLY", "Every month"],
  ["FREQ=YEARLY", "Every year"], ["custom", "Custom rule…"],
];
const COLORS = [["", "No colour"], ["#2f5d8a", "Blue"], ["#2f7a4f", "Green"], ["#a33a2f", "Red"],
  ["#b8741a", "Orange"], ["#6b4fa0", "Purple"]];

let open = null;
let opener = null;  // what opened the editor: focus goes back there when it closes

export function closeEditor() {
  if (!open) return;
  const focused = open.contains(document.activeElement);
  open.remove();
  open = null;
  if (focused) focusBack(opener, "#new-event");
}

/** What the form shows for an event (or a new one): dates and times split, the end inclusive for all-day. */
function initial(event, defaults) {
  if (!event) {
    const time = defaults.time || "09:00";
    const endTime = `${String(Math.min(23, Number(time.slice(0, 2)) + 1)).padStart(2, "0")}:${time.slice(3)}`;
    return { title: "", all_day: Boolean(defaults.allDay), start_date: defaults.date, start_time: time,
      end_date: defaults.date, end_time: endTime, rrule: "", location: "", color: "", description: "" };
  }
  return { title: event.title, all_day: Boolean(event.all_day), start_date: dayOf(event.start),
    start_time: timeOf(event.start) || "09:00", end_date: event.all_day ? addDays(dayOf(event.end), -1) : dayOf(event.end),
    end_time: timeOf(event.end) || "10:00", rrule: event.rrule || "", location: event.location || "",
    color: event.color || "", description: event.description || "" };
}

function field(label, control) { return h("label", {}, label, control); }

/** The form's values as API arguments: only those that changed (all of them for a new event). */
function changes(values, before, isNew, scope) {
  const times = ["all_day", "start_date", "start_time", "end_date", "end_time"];
  const out = {};
  if (isNew || times.some((k) => values[k] !== before[k])) {
    out.all_day = values.all_day;
    out.start = values.all_day ? values.start_date : `${values.start_date}T${values.start_time}`;
    out.end = values.all_day ? addDays(values.end_date, 1) : `${values.end_date}T${values.end_time}`;
  }
  for (const key of ["title", "location", "description"]) if (isNew || values[key] !== before[key]) out[key] = values[key];
  const clearing = [];
  if (isNew || values.color !== before.color) { if (values.color) out.color = values.color; else if (!isNew) clearing.push("color"); }
  if (scope !== "occurrence" && (isNew || values.rrule !== before.rrule)) {
    if (values.rrule) out.rrule = values.rrule; else if (!isNew) clearing.push("rrule");
  }
  if (clearing.length) out.clear = clearing;
  return out;
}

/** Open the slide-over. ``item``: an occurrence from list_events (to edit), or null with
 * ``defaults`` {date, time, allDay} (to create); ``onDone`` runs after a save or a delete. */
export async function openEditor({ item = null, defaults = {}, onDone = () => {} }) {
  closeEditor();
  opener = document.activeElement;
  const series = item ? await api.get(`/events/${item.event_id}`) : null;
  const recurring = Boolean(item?.occurrence);
  // an occurrence shows its own times (and, when changed alone, its own title and place)
  const shown = item ? { ...series, title: item.title, location: item.location || "", color: item.color || "",
    start: item.start, end: item.end } : null;
  const before = initial(shown, defaults);
  let scope = recurring ? "occurrence" : "series";

  const title = h("input#event-title", { type: "text", value: before.title, required: true, autocomplete: "off" });
  const allDay = h("input#event-all-day", { type: "checkbox", checked: before.all_day });
  const startDate = h("input#event-start-date", { type: "date", value: before.start_date, required: true });
  const startTime = h("input#event-start-time", { type: "time", value: before.start_time });
  const endDate = h("input#event-end-date", { type: "date", value: before.end_date, required: true });
  const endTime = h("input#event-end-time", { type: "time", value: before.end_time });
  const preset = REPEATS.some(([v]) => v === before.rrule) ? before.rrule : "custom";
  const repeat = h("select#event-repeat", {}, REPEATS.map(([v, l]) => h("option", { value: v, selected: v === preset }, l)));
  const rule = h("input#event-rrule", { type: "text", value: before.rrule, placeholder: "FREQ=WEEKLY;BYDAY=MO,TH",
    "aria-label": "Recurrence rule (RRULE)", hidden: preset !== "custom" });
  const location = h("input#event-location", { type: "text", value: before.location, autocomplete: "off" });
  const color = h("select#event-color", {}, COLORS.map(([v, l]) => h("option", { value: v, selected: v === before.color }, l)));
  const description = h("textarea#event-description", { rows: 4 }, before.description);
  const error = h("p.error#event-error", { role: "alert", hidden: true });
  const repeatRow = h("div.repeat-row", {}, field("Repeats", repeat), rule);

  const sync = () => {
    startTime.hidden = endTime.hidden = allDay.checked;
    rule.hidden = repeat.value !== "custom";
    repeatRow.hidden = scope === "occurrence";
  };
  allDay.addEventListener("change", sync);
  repeat.addEventListener("change", () => { if (repeat.value !== "custom") rule.value = repeat.value; sync(); });

  const scopes = recurring ? h("div.segmented#event-scope", { role: "group", "aria-label": "Change" },
    [["occurrence", "This occurrence"], ["series", "All occurrences"]].map(([value, text]) =>
      h("button", { type: "button", "aria-pressed": String(value === scope), dataset: { scope: value }, on: { click: (e) => {
        scope = value;
        for (const b of e.target.parentElement.children) b.setAttribute("aria-pressed", String(b.dataset.scope === scope));
        sync();
      } } }, text))) : null;

  function values() {
    return { title: title.value.trim(), all_day: allDay.checked, start_date: startDate.value, start_time: startTime.value,
      end_date: endDate.value, end_time: endTime.value, rrule: repeat.value === "custom" ? rule.value.trim() : repeat.value,
      location: location.value.trim(), color: color.value, description: description.value };
  }
  function failed(e) { error.textContent = e.message; error.hidden = false; }

  async function save(event) {
    event.preventDefault();
    error.hidden = true;
    try {
      if (!item) {
        await api.post("/events", changes(values(), before, true, scope));
      } else {
        const body = changes(values(), before, false, scope);
        if (scope === "occurrence") body.occurrence = item.occurrence;
        await api.patch(`/events/${item.event_id}`, body);
      }
      closeEditor();
      toast(item ? "Event saved" : "Event added");
      onDone();
    } catch (e) { failed(e); }
  }

  async function remove() {
    const one = scope === "occurrence";
    const question = one ? "Delete this occurrence?" : recurring ? "Delete every occurrence?" : "Delete this event?";
    if (!(await confirmDialog(question, one ? "The other occurrences stay." : "It cannot be undone."))) return;
    try {
      await api.del(`/events/${item.event_id}`, one ? { occurrence: item.occurrence } : undefined);
      closeEditor();
      toast("Event deleted");
      onDone();
    } catch (e) { failed(e); }
  }

  const form = h("form.form", { on: { submit: save } },
    scopes, field("Title", title), h("label.row", {}, allDay, "All day"),
    h("div.field-row", {}, field("Starts", startDate), h("label", {}, h("span.sr-only", {}, "Start time"), startTime)),
    h("div.field-row", {}, field("Ends", endDate), h("label", {}, h("span.sr-only", {}, "End time"), endTime)),
    repeatRow, field("Location", location), field("Colour", color), field("Description", description), error,
    h("div.row", {},
      item ? h("button.btn.btn-danger#event-delete", { type: "button", on: { click: remove } }, "Delete") : null,
      h("span.spacer"),
      h("button.btn", { type: "button", on: { click: closeEditor } }, "Cancel"),
      h("button.btn.btn-primary#event-save", { type: "submit" }, "Save")));
  open = h("aside.slideover#event-editor", { role: "dialog", "aria-label": item ? "Edit event" : "New event",
    on: { keydown: (e) => { if (e.key === "Escape") closeEditor(); } } },
  h("h2", {}, item ? "Edit event" : "New event", h("span.spacer"),
    h("button.btn.btn-ghost.btn-sm", { type: "button", "aria-label": "Close", on: { click: closeEditor } }, "✕")),
  form);
  document.body.append(open);
  sync();
  title.focus();
}
