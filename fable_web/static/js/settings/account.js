// Settings → Account: who you are, your email address, your password, the browsers signed in.
import { api } from "../api.js";
import { h, toast } from "../dom.js";
import { emailCard, sessionsCard } from "../widgets/sessions.js";

function passwordCard() {
  const current = h("input", { type: "password", autocomplete: "current-password", required: true });
  const next = h("input", { type: "password", autocomplete: "new-password", required: true });
  const error = h("p.error.hidden", { role: "alert" });
  async function change(event) {
    event.preventDefault();
    error.classList.add("hidden");
    try {
      await api.post("/auth/password", { current_password: current.value, new_password: next.value });
      current.value = next.value = "";
      toast("Password changed. Other sessions are signed out.");
    } catch (e) { error.textContent = e.message; error.classList.remove("hidden"); }
  }
  return h("section.card#password-card", {}, h("h2", {}, "Password"),
    h("form.form", { on: { submit: change } },
      h("label", {}, "Current password", current), h("label", {}, "New password", next), error,
      h("div", {}, h("button.btn", { type: "submit" }, "Change password"))));
}

async function signOut() {
  await api.post("/auth/logout");
  location.assign("/login");
}

export function render(panel, user) {
  panel.append(h("div.grid-2", {},
    h("div.stack", {},
      h("section.card#account-card", {}, h("h2", {}, "Account"), h("dl.kv", {},
        h("dt", {}, "Username"), h("dd", {}, user.username),
        h("dt", {}, "Role"), h("dd", {}, user.role),
        h("dt", {}, "Shortcuts"), h("dd", {}, h("kbd", {}, "?"))),
        h("button.btn.btn-sm.sign-out-inline", { type: "button", on: { click: signOut } }, "Sign out")),
      emailCard(user),
      passwordCard()),
    sessionsCard()));
}
