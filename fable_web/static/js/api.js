// The REST API, as the UI uses it: JSON in and out, cookies for the session.
// Unsafe requests carry the browser's Origin header, which the server's CSRF check accepts.

export class ApiError extends Error {
  constructor(status, error) {
    super(error?.message || `request failed (${status})`);
    this.status = status;
    this.type = error?.type || "error";
    this.details = error?.details || {};
  }
}

/** fetch() itself failed (no network, the server down): an ApiError of type "offline", status 0. */
async function reach(url, init) {
  try { return await fetch(url, init); } catch (error) {
    if (error?.name === "AbortError") throw error;  // the caller gave up on it (a newer search started)
    throw new ApiError(0, { type: "offline", message: "Fable could not be reached. Check your connection, then try again." });
  }
}

const BUSY_TRIES = 4;  // a request refused as "busy" is sent again up to 3 times

/** Milliseconds to wait before sending a request refused as busy again: its Retry-After, spread
 * (so that the pages refused together do not all come back at the same moment). */
function busyWait(response, attempt) {
  const seconds = Number(response.headers.get("Retry-After")) || 1;
  return seconds * 1000 * (0.5 + Math.random()) * attempt;
}

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

let onUnauthenticated = () => {};
let csrfToken = null;
/** The session's CSRF token (from sign-in or /auth/me), sent on unsafe requests besides Origin. */
export function setCsrfToken(token) { csrfToken = token || null; }
export function setUnauthenticatedHandler(fn) { onUnauthenticated = fn; }

function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params || {})) {
    if (value === undefined || value === null || value === "") continue;
    for (const v of Array.isArray(value) ? value : [value]) search.append(key, v);
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

async function request(method, path, { params, body, raw, signal } = {}) {
  const init = { method, credentials: "same-origin", headers: { Accept: "application/json" }, signal };
  if (method !== "GET" && csrfToken) init.headers["X-CSRF-Token"] = csrfToken;
  if (raw !== undefined) {  // bytes (a file) as the body: a tool's binary argument
    init.headers["Content-Type"] = "application/octet-stream";
    init.body = raw;
  } else if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response, data;
  for (let attempt = 1; ; attempt++) {
    response = await reach(`/api${path}${query(params)}`, init);
    data = response.status === 204 ? null : await response.json().catch(() => null);
    // A busy server refused it at once, having done nothing: asking again is safe, whatever the method.
    if (response.status !== 503 || data?.error?.type !== "busy" || attempt >= BUSY_TRIES) break;
    await pause(busyWait(response, attempt));
  }
  if (!response.ok) {
    const error = new ApiError(response.status, data?.error);
    if (response.status === 401 && !path.startsWith("/auth/")) onUnauthenticated(error);
    throw error;
  }
  return data;
}

/** POST whose answer is streamed (server-sent events): the Response, for its body; errors known
 * before the stream began (a bad argument, no model) as ApiError. */
async function postStream(path, body) {
  const headers = { Accept: "text/event-stream", "Content-Type": "application/json" };
  if (csrfToken) headers["X-CSRF-Token"] = csrfToken;
  const response = await reach(`/api${path}`, { method: "POST", credentials: "same-origin", headers, body: JSON.stringify(body) });
  if (!response.ok) throw new ApiError(response.status, (await response.json().catch(() => null))?.error);
  return response;
}

export const api = {
  /** GET; `options.signal` (an AbortSignal) cancels it, rejecting with an AbortError. */
  get: (path, params, options = {}) => request("GET", path, { params, signal: options.signal }),
  post: (path, body = {}) => request("POST", path, { body }),
  /** POST a file's bytes as the body, the other arguments in the query string. */
  upload: (path, file, params) => request("POST", path, { raw: file, params }),
  put: (path, body = {}) => request("PUT", path, { body }),
  patch: (path, body = {}) => request("PATCH", path, { body }),
  del: (path, params) => request("DELETE", path, { params }),
  /** Any registered tool, by name: POST /api/tools/{name}. */
  tool: (name, args = {}) => request("POST", `/tools/${name}`, { body: args }),
  stream: postStream,
};
