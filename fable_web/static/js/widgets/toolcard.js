// A tool call the assistant made: its name, arguments and result. A call the server answered
// with requires_confirmation (a near-duplicate note) offers Confirm, which repeats the call
// with confirm=true through the REST API as the user, or Deny, which leaves things as they are.
import { api } from "../api.js";
import { clear, h } from "../dom.js";
import { humanError, requestError } from "../chat/errors.js";

function json(value) {
  const text = JSON.stringify(value, null, 2) ?? "";
  return text.length > 4000 ? `${text.slice(0, 4000)}\n…` : text;
}

function resultLine(event) {
  if (event.error) return humanError(event.error.message || event.error.type);
  const r = event.result;
  if (r && typeof r === "object" && r.title && r.id) return `${r.kind === "task" ? "Task" : "Note"} “${r.title}” (#${r.id})`;
  return "Done";
}

/** The card for a tool_call event; call .settle(resultEvent) when its tool_result arrives. */
export function toolCard(call) {
  const status = h("span.badge.tool-status", {}, "running");
  const body = h("div.tool-result");
  const card = h("div.tool-card", { dataset: { tool: call.name, state: "running" } },
    h("div.row", {}, h("span.tool-icon", { "aria-hidden": "true" }, "⚙"), h("code.tool-name", {}, call.name),
      h("span.spacer"), status),
    h("details.tool-args", {}, h("summary", {}, "Arguments"), h("pre", {}, json(call.arguments))),
    body);

  function state(name, label) {
    card.dataset.state = name;
    status.textContent = label;
  }

  function confirmBox(event) {
    const confirm = h("button.btn.btn-primary.btn-sm.tool-confirm", { type: "button" }, "Confirm");
    const deny = h("button.btn.btn-sm.tool-deny", { type: "button" }, "Deny");
    confirm.addEventListener("click", async () => {
      confirm.disabled = deny.disabled = true;
      try {
        const result = await api.tool(call.name, event.confirm_arguments);
        state("ok", "confirmed");
        clear(body, h("p.small", {}, resultLine({ result })), link(result));
      } catch (e) {
        confirm.disabled = deny.disabled = false;
        clear(body, h("p.error", { role: "alert" }, requestError(e)));
      }
    });
    deny.addEventListener("click", () => {
      state("denied", "denied");
      clear(body, h("p.small.muted", {}, "Not done."));
    });
    return [h("p.small", {}, event.error?.message ? humanError(event.error.message) : "This needs your confirmation."),
      h("div.row", {}, confirm, deny)];
  }

  function link(result) {
    return result && result.id && result.title ? h("a.small", { href: `/notes/${result.id}` }, "Open") : null;
  }

  card.settle = (event) => {
    if (event.requires_confirmation) {
      state("confirm", "needs confirmation");
      clear(body, confirmBox(event));
    } else if (event.ok === false || event.error) {
      state("error", "failed");
      clear(body, h("p.small.tool-error", {}, resultLine(event)));
    } else {
      state("ok", "done");
      clear(body, h("div.row", {}, h("span.small", {}, resultLine(event)), link(event.result)),
        h("details.tool-args", {}, h("summary", {}, "Result"), h("pre", {}, json(event.result))));
    }
    return card;
  };
  return card;
}
