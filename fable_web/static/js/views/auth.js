// Sign in and create an account: one card, two modes.
import { api, setCsrfToken } from "../api.js";
import { h } from "../dom.js";

export function authView(params, onSignedIn) {
  let mode = params.get("mode") === "register" ? "register" : "login";
  const username = h("input#username", { type: "text", name: "username", autocomplete: "username", required: true, autofocus: true });
  const password = h("input#password", { type: "password", name: "password", required: true, minLength: 1 });
  const error = h("p.error.hidden", { role: "alert" });
  const submit = h("button.btn.btn-primary", { type: "submit" });
  const hint = h("p.muted.small");
  const tabs = ["login", "register"].map((m) =>
    h("button", { type: "button", dataset: { mode: m }, on: { click: () => setMode(m) } },
      m === "login" ? "Sign in" : "Create account"));

  function setMode(m) {
    mode = m;
    for (const tab of tabs) tab.setAttribute("aria-pressed", String(tab.dataset.mode === mode));
    submit.textContent = mode === "login" ? "Sign in" : "Create account";
    password.autocomplete = mode === "login" ? "current-password" : "new-password";
    hint.textContent = mode === "login" ? "" : "The first account on a new Fable becomes its administrator.";
    error.classList.add("hidden");
  }

  async function onSubmit(event) {
    event.preventDefault();
    submit.disabled = true;
    error.classList.add("hidden");
    const body = { username: username.value.trim(), password: password.value };
    try {
      const signedIn = await api.post(mode === "register" ? "/auth/register" : "/auth/login", body);
      setCsrfToken(signedIn.csrf_token);
      onSignedIn(signedIn.user);
    } catch (e) {
      error.textContent = e.message;
      error.classList.remove("hidden");
    } finally {
      submit.disabled = false;
    }
  }

  setMode(mode);
  return h("div.auth", {},
    h("div.card.auth-card", {},
      h("div.brand", {}, h("span.brand-mark", {}, "F"), "Fable"),
      h("p.tagline", {}, "Notes, tasks and projects — yours, and your agents'."),
      h("div.segmented", { role: "group", "aria-label": "Sign in or create an account" }, tabs),
      h("form.form", { on: { submit: onSubmit } },
        h("label", { for: "username" }, "Username", username),
        h("label", { for: "password" }, "Password", password),
        error, submit, hint)));
}
