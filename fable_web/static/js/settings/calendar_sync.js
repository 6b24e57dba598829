// Settings → Calendar sync: your CalDAV server (URL, login), the calendar chosen from discovery,
// "Sync now", and the sync's status (last success, last error, next attempt).
import { api } from "../api.js";
import { clear, formatIn, h, relativeTime, toast } from "../dom.js";

function when(iso) {
  return iso ? `${relativeTime(iso)} (${formatIn(iso)})` : "never";
}

export function render(panel) {
  const url = h("input#caldav-url", { type: "url", required: true, placeholder: "https://dav.example.com/", autocomplete: "url" });
  const username = h("input#caldav-username", { type: "text", required: true, autocomplete: "username" });
  const password = h("input#caldav-password", { type: "password", required: true, autocomplete: "current-password" });
  const error = h("p.error.hidden#caldav-error", { role: "alert" });
  const status = h("dl.kv#caldav-status");
  const calendars = h("div#caldav-calendars");
  const actions = h("div.row#caldav-actions");

  function fail(e) { error.textContent = e.message; error.classList.remove("hidden"); }

  function showStatus(s) {
    error.classList.add("hidden");
    if (!s.connected) {
      clear(status, h("dt", {}, "Status"), h("dd", {}, "Not connected"));
      clear(actions);
      clear(calendars);
      return;
    }
    url.value = s.url;
    username.value = s.username;
    clear(status,
      h("dt", {}, "Server"), h("dd.mono", {}, `${s.username} @ ${s.url}`),
      h("dt", {}, "Calendar"), h("dd#caldav-calendar-name", {}, s.calendar || "none chosen: choose one below"),
      h("dt", {}, "Last success"), h("dd#caldav-last-success", {}, when(s.last_success_at)),
      ...(s.last_error ? [h("dt", {}, "Last error"),
        h("dd.error#caldav-last-error", {}, s.failures > 1 ? `${s.last_error} (${s.failures} attempts in a row)` : s.last_error)] : []),
      ...(s.next_attempt_at ? [h("dt", {}, "Next sync"), h("dd#caldav-next", {}, when(s.next_attempt_at))] : []));
    clear(actions,
      h("button.btn.btn-primary#caldav-sync", { type: "button", disabled: !s.calendar_href, on: { click: syncNow } }, "Sync now"),
      h("button.btn#caldav-discover", { type: "button", on: { click: discover } }, "Discover calendars"),
      h("button.btn.btn-ghost.btn-danger#caldav-disconnect", { type: "button", on: { click: disconnect } }, "Disconnect"));
  }

  function showCalendars(listed) {
    clear(calendars, listed.calendars.length
      ? h("fieldset.stack", {}, h("legend", {}, "Calendar to sync"), listed.calendars.map((c) =>
        h("label.row", {}, h("input", { type: "radio", name: "caldav-calendar", value: c.href, checked: c.href === listed.chosen,
          on: { change: () => choose(c.href) } }), c.name, h("span.muted.small.mono", {}, c.href))))
      : h("p.muted", {}, "This login has no calendars on the server."));
  }

  async function load() { showStatus(await api.get("/caldav/status")); }

  async function connect(event) {
    event.preventDefault();
    error.classList.add("hidden");
    try {
      const listed = await api.put("/caldav/account", { url: url.value.trim(), username: username.value.trim(), password: password.value });
      password.value = "";
      showCalendars(listed);
      await load();
      toast(listed.chosen ? "Connected" : "Connected: choose a calendar");
    } catch (e) { fail(e); }
  }
  async function discover() {
    try { showCalendars(await api.get("/caldav/calendars")); } catch (e) { fail(e); }
  }
  async function choose(href) {
    try { showStatus(await api.put("/caldav/calendar", { calendar: href })); toast("Calendar chosen"); } catch (e) { fail(e); }
  }
  async function syncNow(event) {
    const button = event.target;
    button.disabled = true;
    try {
      const result = await api.post("/caldav/sync");
      showStatus(result.status);
      toast(`Synced: ${result.pulled} in, ${result.pushed} out, ${result.deleted} deleted`);
    } catch (e) { await load(); fail(e); } finally { button.disabled = false; }
  }
  async function disconnect() {
    showStatus(await api.del("/caldav/account"));
    toast("Disconnected: your events stay in Fable");
  }

  panel.append(h("section.card#caldav-card", {}, h("h2", {}, "Calendar sync"),
    h("p.muted.small", {}, "Sync your events both ways with your own CalDAV server (Nextcloud, Radicale, iCloud, Fastmail). "
      + "The password is stored encrypted and never shown again."),
    status, actions,
    h("form.form#caldav-form", { on: { submit: connect } },
      h("label", {}, "CalDAV URL", url), h("label", {}, "Username", username), h("label", {}, "Password", password), error,
      h("div", {}, h("button.btn#caldav-connect", { type: "submit" }, "Connect and discover"))),
    calendars));
  return load();
}
