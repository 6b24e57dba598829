// Settings → the account's email address (verified or not) and its signed-in sessions, each
// of which can be ended here; "Sign out everywhere" ends them all, this one included.
import { api } from "../api.js";
import { clear, confirmDialog, h, relativeTime, toast } from "../dom.js";

export function emailCard(user) {
  const status = h("p.small#email-status");
  const email = h("input#email-new", { type: "email", autocomplete: "email", value: user.email || "", "aria-label": "Email address" });
  // an account without a password (it signs in with its identity provider) leaves it empty: a sign-in within 10 minutes stands in
  const password = h("input#email-password", { type: "password", autocomplete: "current-password", "aria-label": "Current password" });
  const error = h("p.error.hidden", { role: "alert" });
  function show(u) {
    clear(status, !u.email ? "No email address: password reset by email is not possible."
      : u.email_verified ? `${u.email} (verified)`
        : [`${u.email} (not verified: reset links are not sent to it yet) `,
          h("button.btn.btn-ghost.btn-sm#email-resend", { type: "button", on: { click: resend } }, "Send the link again")]);
  }
  async function resend() {
    try { toast((await api.post("/auth/email/verification")).message); } catch (e) { toast(e.message, { bad: true }); }
  }
  async function change(event) {
    event.preventDefault();
    error.classList.add("hidden");
    try {
      const result = await api.put("/auth/email", { password: password.value || null, email: email.value.trim() || null });
      password.value = "";
      show(result.user);
      toast(result.user.email ? "Email changed: open the link we sent to confirm it." : "Email removed.");
    } catch (e) { error.textContent = e.message; error.classList.remove("hidden"); }
  }
  show(user);
  return h("section.card#email", {}, h("h2", {}, "Email"), status,
    h("form.form", { on: { submit: change } },
      h("label", {}, "New address", email), h("label", {}, "Current password", password), error,
      h("div", {}, h("button.btn", { type: "submit" }, "Change email"))));
}

export function sessionsCard() {
  const rows = h("tbody#sessions");
  async function load() {
    const list = await api.get("/auth/sessions");
    clear(rows, list.items.map((s) => h("tr", {},
      h("td.small", {}, s.user_agent || "unknown browser", s.current ? h("span.muted", {}, " (this one)") : null),
      h("td.muted.small", {}, s.ip || ""),
      h("td.muted.small", {}, relativeTime(s.last_seen_at)),
      h("td", {}, s.current ? null : h("button.btn.btn-ghost.btn-sm.btn-danger", { type: "button", on: { click: () => end(s) } }, "Sign out")))));
  }
  async function end(s) {
    await api.del(`/auth/sessions/${s.id}`);
    await load();
  }
  async function everywhere() {
    if (!(await confirmDialog("Sign out everywhere?", "Every browser signed in to this account, this one included, is signed out.", "Sign out"))) return;
    await api.post("/auth/logout", { everywhere: true });
    location.assign("/login");
  }
  load();
  return h("section.card#sessions-card", {}, h("h2", {}, "Signed-in browsers"),
    h("table.table", {}, h("thead", {}, h("tr", {}, ["Browser", "Address", "Last seen", ""].map((t) => h("th", {}, t)))), rows),
    h("button.btn.btn-sm.btn-danger#sign-out-everywhere", { type: "button", on: { click: everywhere } }, "Sign out everywhere"));
}
