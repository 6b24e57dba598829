// The OAuth consent page (/oauth/consent): an MCP client asks to act as the signed-in person.
// It shows who asks (the name the client gave itself: not proof of anything), where the answer
// goes (the redirect host, which is), and what it may do; approving or denying is a session
// POST (CSRF-checked), whose answer is the URL to send the browser back to the client.
import { api } from "../api.js";
import { h } from "../dom.js";

const SCOPES = {
  read: "Read your notes, tasks, projects, calendar and everything else you can see",
  write: "Create, change and delete them",
};

function page(...children) {
  return h("div.auth.consent", {}, h("main.card.auth-card.consent-card", {},
    h("div.brand", {}, h("span.brand-mark", {}, "F"), "Fable"), ...children));
}

export function consentView(params) {
  const body = h("div.stack#consent", {}, h("p.muted", {}, "Checking the request…"));
  const asked = Object.fromEntries(params.entries());
  load(body, asked);
  return page(body);
}

async function load(body, asked) {
  let info;
  try {
    info = await api.get("/oauth/authorization", asked);
  } catch (error) {
    body.replaceChildren(h("h1.consent-title", {}, "This connection request cannot be used"),
      h("p.error#consent-error", { role: "alert" }, error.message),
      h("p.muted.small", {}, "Nothing was shared. Start the connection again from the app that sent you here."),
      h("a.btn#consent-home", { href: "/" }, "Go to Fable"));
    return;
  }
  const decide = async (approve, button) => {
    for (const b of body.querySelectorAll("button")) b.disabled = true;
    button.textContent = approve ? "Allowing…" : "Denying…";
    try {
      const { redirect } = await api.post("/oauth/authorization", { ...asked, approve });
      location.assign(redirect);
    } catch (error) {
      body.append(h("p.error", { role: "alert" }, error.message));
      for (const b of body.querySelectorAll("button")) b.disabled = false;
    }
  };
  const allow = h("button.btn.btn-primary#consent-allow", { type: "button", on: { click: (e) => decide(true, e.target) } }, "Allow");
  const deny = h("button.btn#consent-deny", { type: "button", on: { click: (e) => decide(false, e.target) } }, "Deny");
  body.replaceChildren(
    h("h1.consent-title", {}, h("span#consent-client", {}, info.client.name), " wants to use your Fable"),
    h("p.muted.small", {}, `Signed in as ${info.user}. `, info.remembered ? "You allowed this app before." : ""),
    h("dl.consent-facts", {},
      h("dt", {}, "It will send you back to"), h("dd.mono#consent-host", {}, info.redirect_host),
      info.client.uri ? [h("dt", {}, "It says its site is"), h("dd.mono", {}, info.client.uri)] : null),
    h("p", {}, "If you allow it, it may:"),
    h("ul.consent-scopes#consent-scopes", {}, info.scopes.map((s) => h("li", { dataset: { scope: s } }, SCOPES[s] || s))),
    h("p.muted.small", {}, "Only allow apps you trust and started yourself. You can end this connection at any time in Settings → Connections."),
    h("div.row.consent-actions", {}, deny, allow));
  allow.focus();
}
