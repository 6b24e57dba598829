// What the chat (and the pages built on it) say when something fails: plain words, never an
// internal address, a tool's name, an argument's or a setting's.

const URL = /\b(?:https?:\/\/|\/api\/)\S+/g;
const SETTING = /\s*\(([A-Z][A-Z0-9]*_[A-Z0-9_]+)\)/g;

const BY_STATUS = {
  403: "You may not change this.",
  404: "It no longer exists; reload the page.",
  409: "It conflicts with what is there now; reload and try again.",
  413: "That is too long.",
  422: "That cannot be done: something is empty, too long or not valid.",
  429: "Too many requests at once; try again in a moment.",
  503: "No model is available right now; try again later.",
};

/** What the chat page says instead, where a status means something more precise there. */
export const IN_CHAT = {
  404: "This conversation no longer exists; start a new one.",
  409: "The assistant is still answering here; wait for it or stop it first.",
  422: "That cannot be sent: it is empty or too long.",
};

/** A server's message with its addresses and setting names taken out. */
export function humanError(message) {
  const text = String(message || "").replace(URL, "the model server").replace(SETTING, "").trim();
  return text ? text.charAt(0).toUpperCase() + text.slice(1) : "Something went wrong.";
}

/** What to tell people about a failed request (an ApiError, or a network failure); ``words``
 * override the message of some statuses. */
export function requestError(error, words = {}) {
  const status = error?.status;
  if (!status) return "Fable cannot be reached; check the connection and try again.";
  return words[status] || BY_STATUS[status] || "Something went wrong on the server; try again.";
}
