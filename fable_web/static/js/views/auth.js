// Signed-out pages: sign in and create an account (one card, two modes; an invitation link
// opens the second), forgot password, reset password, and confirming an email address.
import { api, setCsrfToken } from "../api.js";
import { clear, h } from "../dom.js";

/** An error as a person reads it: the server's message, or what a failed connection means. */
function plain(error) {
  if (error.type === "offline") return error.message;
  if (!error.status || (error.status >= 500 && !["unavailable", "slow"].includes(error.type))) {
    return "Something went wrong on our side. Try again in a moment.";
  }
  return error.message;
}

function card(...children) {
  return h("div.auth", {}, h("main.card.auth-card", {},
    h("div.brand", {}, h("span.brand-mark", {}, "F"), "Fable"), ...children));
}

// /login?error=<code>: our words for each code (fable_web/oidc_api.py ERROR_CODES), never the link's
const OIDC_ERRORS = {
  oidc_not_configured: "Sign-in with the identity provider is not set up on this Fable.",
  oidc_unavailable: "The identity provider did not answer. Try again later.",
  oidc_expired: "That sign-in expired or was started in another browser. Start again.",
  oidc_state: "That sign-in did not match the one started here. Start again.",
  oidc_response: "The identity provider's answer was incomplete. Start again.",
  oidc_denied: "The identity provider did not sign you in.",
  oidc_token: "The identity provider's answer could not be verified. Start again.",
  oidc_no_account: "No Fable account matches this sign-in. Ask an admin for an account with your email address.",
  oidc_disabled: "This account is disabled.",
  oidc_failed: "Sign-in with the identity provider failed. Start again.",
};

export function authView(params, onSignedIn, registering = false) {
  const invited = Boolean(params.get("invitation"));
  let mode = registering || params.get("mode") === "register" || invited ? "register" : "login";
  let registerHint = invited ? "You were invited: choose a username and a password."
    : "The first account on a new Fable becomes its administrator.";
  const username = h("input#username", { type: "text", name: "username", autocomplete: "username", required: true, autofocus: true });
  const password = h("input#password", { type: "password", name: "password", required: true, minLength: 1 });
  const error = h("p.error.hidden", { role: "alert" });
  const submit = h("button.btn.btn-primary", { type: "submit" });
  const hint = h("p.muted.small");
  const email = h("input#email", { type: "email", name: "email", autocomplete: "email" });
  const emailLabel = h("label", { for: "email" }, "Email (optional: for password resets)", email);
  const forgot = h("a.small#forgot", { href: "/forgot-password" }, "Forgot your password?");
  const heading = h("h1.auth-title");
  const tabs = ["login", "register"].map((m) =>
    h("button", { type: "button", dataset: { mode: m }, on: { click: () => setMode(m) } },
      m === "login" ? "Sign in" : "Create account"));

  function setMode(m) {
    mode = m;
    for (const tab of tabs) tab.setAttribute("aria-pressed", String(tab.dataset.mode === mode));
    submit.textContent = mode === "login" ? "Sign in" : "Create account";
    heading.textContent = mode === "login" ? "Sign in" : "Create an account";
    document.title = `${heading.textContent} · Fable`;
    password.autocomplete = mode === "login" ? "current-password" : "new-password";
    hint.textContent = mode === "login" ? "" : registerHint;
    emailLabel.classList.toggle("hidden", mode === "login");
    forgot.classList.toggle("hidden", mode !== "login");
    error.classList.add("hidden");
  }

  async function onSubmit(event) {
    event.preventDefault();
    submit.disabled = true;
    error.classList.add("hidden");
    const body = { username: username.value.trim(), password: password.value };
    if (mode === "register") {
      if (email.value.trim()) body.email = email.value.trim();
      if (params.get("invitation")) body.invitation = params.get("invitation");
    }
    try {
      const signedIn = await api.post(mode === "register" ? "/auth/register" : "/auth/login", body);
      setCsrfToken(signedIn.csrf_token);
      onSignedIn(signedIn.user);
    } catch (e) {
      error.textContent = plain(e);
      error.classList.remove("hidden");
    } finally {
      submit.disabled = false;
    }
  }

  setMode(mode);
  if (params.get("error")) {  // a sign-in with the OIDC provider that failed comes back here, with a code
    error.textContent = OIDC_ERRORS[params.get("error")] || OIDC_ERRORS.oidc_failed;
    error.classList.remove("hidden");
  }
  const segmented = h("div.segmented", { role: "group", "aria-label": "Sign in or create an account" }, tabs);
  const form = h("form.form", { on: { submit: onSubmit } },
    h("label", { for: "username" }, "Username", username),
    h("label", { for: "password" }, "Password", password),
    emailLabel, submit, hint, forgot);
  const sso = h("div.stack.sso.hidden");
  // Who may sign up here: the form says so before anyone fills it in for nothing.
  if (!invited) {
    api.get("/auth/registration").then((registration) => {
      if (registration.first_user) {
        // an empty instance opened (sent here from its pages): nobody can sign in yet, so it
        // offers to make the first account; /login asked for by name stays the sign-in form
        if (params.has("next") && params.get("mode") !== "login") {
          setMode("register");
          heading.textContent = "Create the first account";
          document.title = `${heading.textContent} · Fable`;
        }
        return;
      }
      if (registration.mode === "closed") {
        tabs[1].classList.add("hidden");
        registerHint = "";
        if (mode === "register") setMode("login");
        hint.textContent = "New accounts are not open here: an administrator creates them.";
      } else if (registration.mode === "invite") {
        registerHint = "Accounts here are by invitation: open the link an administrator sent you.";
        if (mode === "register") hint.textContent = registerHint;
      } else {
        registerHint = "";
        if (mode === "register") hint.textContent = "";
      }
    }).catch(() => {});
  }
  // How one signs in here is the server's to say: the provider's button, the password form, or both.
  api.get("/auth/methods").then((methods) => {
    if (methods.oidc) {
      // target: a server page, which the client-side router must leave to the browser
      clear(sso, h("a.btn.btn-primary#oidc-sign-in", { href: methods.oidc.url, target: "_self" }, `Sign in with ${methods.oidc.name}`));
      sso.classList.remove("hidden");
    }
    if (!methods.password) {
      segmented.classList.add("hidden");
      form.classList.add("hidden");
    }
  }).catch(() => {});
  return card(heading,
    h("p.tagline", {}, "Notes, tasks and projects — yours, and your agents'."),
    segmented, error, form, sso);
}

/** A one-field form that posts to the API and then says what happened. */
function oneStep({ title, intro, fields, action, done }) {
  const error = h("p.error.hidden", { role: "alert" });
  const submit = h("button.btn.btn-primary", { type: "submit" }, title);
  const body = h("div.stack");
  async function onSubmit(event) {
    event.preventDefault();
    submit.disabled = true;
    error.classList.add("hidden");
    try { clear(body, h("p#auth-done", { role: "status" }, done(await action())), h("a", { href: "/login" }, "Sign in")); }
    catch (e) { error.textContent = plain(e); error.classList.remove("hidden"); }
    finally { submit.disabled = false; }
  }
  clear(body, h("p.muted.small", {}, intro), h("form.form", { on: { submit: onSubmit } }, ...fields, error, submit));
  document.title = `${title} · Fable`;
  return card(h("h1.auth-title", {}, title), body);
}

export function forgotView() {
  const login = h("input#login", { type: "text", required: true, autocomplete: "username" });
  return oneStep({
    title: "Reset your password",
    intro: "We mail a reset link to the account's confirmed email address.",
    fields: [h("label", { for: "login" }, "Username or email", login)],
    action: () => api.post("/auth/forgot-password", login.value.includes("@") ? { email: login.value.trim() } : { username: login.value.trim() }),
    done: (r) => r.message,
  });
}

export function resetView(params) {
  const password = h("input#new-password", { type: "password", required: true, autocomplete: "new-password" });
  return oneStep({
    title: "Choose a new password",
    intro: "Every browser signed in to the account is signed out.",
    fields: [h("label", { for: "new-password" }, "New password", password)],
    action: () => api.post("/auth/reset-password", { token: params.get("token") || "", password: password.value }),
    done: () => "Your password is changed.",
  });
}

export function verifyView(params) {
  const status = h("p#auth-done", { role: "status" }, "Confirming your email address…");
  api.post("/auth/verify-email", { token: params.get("token") || "" })
    .then((r) => { status.textContent = `${r.user.email} is confirmed.`; })
    .catch((e) => { status.textContent = plain(e); status.classList.add("error"); });
  document.title = "Email address · Fable";
  return card(h("h1.auth-title", {}, "Email address"), status, h("a", { href: "/" }, "Go to Fable"));
}
