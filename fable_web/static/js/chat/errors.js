// What the chat says when something fails: plain words, never an internal address, a tool's
// name or an argument's.

const URL = /\b(?:https?:\/\/|\/api\/)\S+/g;
const SETTING = /\s*\(([A-Z][A-Z0-9]*_[A-Z0-9_]+)\)/g;

const BY_STATUS = {
  404: "This conversation no longer exists; start a new one.",
  409: "The assistant is still answering here; wait for it or stop it first.",
  413: "That message is too long.",
  429: "The model is busy with your other requests; try again in a moment.",
  503: "No model is available right now; try again later.",
};

/** A server's message with its addresses and setting names taken out. */
export function humanError(message) {
  const text = String(message || "").replace(URL, "the model server").replace(SETTING, "").trim();
  return text ? text.charAt(0).toUpperCase() + text.slice(1) : "Something went wrong.";
}

/** What to tell people about a failed request (an ApiError, or a network failure). */
export function requestError(error) {
  if (error?.status === 422) return "That cannot be sent: it is empty, too long or no longer fits the conversation.";
  if (BY_STATUS[error?.status]) return BY_STATUS[error.status];
  if (!error?.status) return "Fable cannot be reached; check the connection and try again.";
  return "Something went wrong on the server; try again.";
}
