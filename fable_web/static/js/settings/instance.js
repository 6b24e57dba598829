// Settings → Instance (admins): who may register and the public URL; invitation links, made
// with a lifetime, shown once, listed and revoked; the mail server and a test mail.
import { api } from "../api.js";
import { clear, confirmDialog, formatIn, h, relativeTime, toast } from "../dom.js";
import { copyButton } from "./keys.js";

const MODES = [
  ["open", "Open", "Anyone who reaches this Fable may create an account."],
  ["invite", "By invitation", "Only people with an invitation link made below."],
  ["closed", "Closed", "Nobody; operators create accounts with `fable user create`."],
];

function registrationCard() {
  const url = h("input#public-url", { type: "url", placeholder: "https://fable.example.com", "aria-label": "Public URL" });
  const note = h("p.muted.small#public-url-source");
  const radios = MODES.map(([mode]) => h("input", { type: "radio", name: "registration", value: mode, id: `registration-${mode}` }));
  function show(s) {
    url.value = s.public_url || "";
    url.disabled = s.public_url_source === "configured";
    for (const radio of radios) radio.checked = radio.value === s.registration;
    note.textContent = s.public_url_source === "configured" ? "Set by FABLE_BASE_URL on the server."
      : s.public_url_source === "pinned" ? "Links in mail (password resets, email confirmation) use this address."
        : "Not set: password reset mail is not sent until it is.";
  }
  async function save(event) {
    event.preventDefault();
    const body = { registration: radios.find((r) => r.checked)?.value };
    if (!url.disabled && url.value.trim()) body.public_url = url.value.trim();
    try { show(await api.patch("/admin/settings", body)); toast("Saved"); } catch (e) { toast(e.message, { bad: true }); }
  }
  api.get("/admin/settings").then(show).catch((e) => toast(e.message, { bad: true }));
  return h("section.card#instance", {}, h("h2", {}, "Registration and address"),
    h("form.form", { on: { submit: save } },
      h("fieldset.field", {}, h("legend", {}, "Who may create an account"),
        MODES.map(([, label, help], i) => h("label.choice", { for: radios[i].id }, radios[i],
          h("span", {}, h("strong", {}, label), " ", h("span.muted.small", {}, help))))),
      h("label", {}, "Public URL", url), note,
      h("div", {}, h("button.btn", { type: "submit" }, "Save"))));
}

function invitationsCard() {
  const rows = h("tbody#invitations");
  const reveal = h("div");
  const email = h("input#invite-email", { type: "email", placeholder: "only this address (optional)", "aria-label": "Email" });
  const lifetime = h("select#invite-lifetime", { "aria-label": "Valid for" },
    h("option", { value: "24" }, "1 day"), h("option", { value: "168" }, "7 days"), h("option", { value: "720" }, "30 days"));
  lifetime.value = "168";
  async function load() {
    const { items } = await api.get("/admin/invitations");
    clear(rows, items.length ? items.map((i) => h("tr", {},
      h("td", {}, i.email || h("span.muted", {}, "anyone")), h("td.muted.small", {}, i.created_by || ""),
      h("td.muted.small", { title: i.expires_at }, formatIn(i.expires_at)),
      h("td", {}, h("button.btn.btn-ghost.btn-sm.btn-danger", { type: "button", on: { click: () => revoke(i) } }, "Revoke"))))
      : h("tr", {}, h("td.empty", { colSpan: 4 }, "No pending invitations.")));
  }
  async function revoke(invitation) {
    if (!(await confirmDialog("Revoke this invitation?", "Its link stops working at once.", "Revoke"))) return;
    try { await api.del(`/admin/invitations/${invitation.id}`); } catch (e) { toast(e.message, { bad: true }); }
    await load();
  }
  async function create(event) {
    event.preventDefault();
    try {
      const made = await api.post("/admin/invitations", { email: email.value.trim() || null, expires_in_hours: Number(lifetime.value) });
      email.value = "";
      clear(reveal, h("div.secret#new-invitation", { role: "status" },
        h("strong", {}, "Send this link: it is shown only now."),
        h("div.row", {}, h("code#invitation-url", {}, made.url), copyButton(made.url))));
      await load();
    } catch (e) { toast(e.message, { bad: true }); }
  }
  load();
  return h("section.card#invitations-card", {}, h("h2", {}, "Invitations"),
    h("p.muted.small", {}, "Each link admits one registration before it expires."),
    h("form.row", { on: { submit: create } }, h("div.spacer", {}, email), lifetime,
      h("button.btn.btn-primary", { type: "submit" }, "Create link")),
    reveal,
    h("table.table", {}, h("thead", {}, h("tr", {}, ["For", "By", "Expires", ""].map((t) => h("th", {}, t)))), rows));
}

function mailCard(me) {
  const body = h("div.stack");
  const status = h("p.small#mail-test-status", { role: "status" });
  const to = h("input#mail-test-to", { type: "email", value: me.email || "", placeholder: "you@example.com", "aria-label": "Send a test mail to" });

  function input(id, label, attrs = {}) {
    const el = h(`input#${id}`, { type: "text", autocomplete: "off", ...attrs });
    return [el, h("label", {}, label, el)];
  }
  function show(view) {
    const configured = view.source === "environment";
    const [host, hostLabel] = input("mail-host", "Server", { required: true, placeholder: "smtp.example.com" });
    const [port, portLabel] = input("mail-port", "Port", { type: "number", min: "1", max: "65535", required: true });
    const [username, userLabel] = input("mail-username", "Username");
    const [password, passwordLabel] = input("mail-password", "Password", { type: "password", autocomplete: "new-password" });
    const [sender, senderLabel] = input("mail-sender", "From address", { type: "email", required: true });
    const tls = h("select#mail-tls", {}, h("option", { value: "starttls" }, "STARTTLS"),
      h("option", { value: "tls" }, "TLS (usually port 465)"), h("option", { value: "none" }, "none (not encrypted)"));
    host.value = view.host || "";
    port.value = String(view.port || 587);
    username.value = view.username || "";
    sender.value = view.sender || "";
    tls.value = view.tls || "starttls";
    password.placeholder = view.password_unreadable ? "unreadable: enter it again"
      : view.password_set ? "unchanged" : "none";
    for (const el of [host, port, username, password, sender, tls]) el.disabled = configured;
    async function save(event) {
      event.preventDefault();
      const change = { host: host.value.trim(), port: Number(port.value), tls: tls.value,
        username: username.value.trim() || null, sender: sender.value.trim() };
      if (password.value) change.password = password.value;
      try { show(await api.put("/admin/mail", change)); toast("Mail settings saved"); } catch (e) { toast(e.message, { bad: true }); }
    }
    async function forget() {
      if (!(await confirmDialog("Remove the mail settings?", "Fable sends no mail until a server is set again.", "Remove"))) return;
      try { show(await api.del("/admin/mail")); } catch (e) { toast(e.message, { bad: true }); }
    }
    clear(body,
      configured ? h("p.notice#mail-source", {}, "Mail is configured on the server by SMTP_HOST and the other SMTP_* "
        + "variables, which win over settings made here.")
        : view.source === "unset" ? h("p.muted.small#mail-source", {}, "No mail server yet: Fable cannot send password resets.")
          : null,
      h("form.form#mail-form", { on: { submit: save } },
        h("div.grid-2", {}, hostLabel, portLabel), h("label", {}, "Encryption", tls),
        h("div.grid-2", {}, userLabel, passwordLabel), senderLabel,
        configured ? null : h("div.row", {}, h("button.btn", { type: "submit" }, "Save"),
          view.source === "instance" ? h("button.btn.btn-ghost.btn-danger", { type: "button", on: { click: forget } }, "Remove") : null)));
  }
  async function test(event) {
    event.preventDefault();
    status.textContent = "Sending…";
    status.className = "small";
    try {
      const sent = await api.post("/admin/mail/test", { to: to.value.trim() || null });
      status.textContent = `Sent to ${sent.to} through ${sent.server}.`;
      status.classList.add("ok");
    } catch (e) { status.textContent = e.message; status.classList.add("error"); }
  }
  api.get("/admin/mail").then(show).catch((e) => toast(e.message, { bad: true }));
  return h("section.card#mail-card", {}, h("h2", {}, "Mail"), body,
    h("div.mail-test", {}, h("div.pane-label", {}, "Test mail"),
      h("form.row#mail-test", { on: { submit: test } }, h("div.spacer", {}, to),
        h("button.btn#send-test-mail", { type: "submit" }, "Send test mail")),
      status));
}

export function render(panel, me) {
  panel.append(h("div.grid-2", {}, h("div.stack", {}, registrationCard(), invitationsCard()), mailCard(me)));
}
