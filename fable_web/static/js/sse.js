// Following a server-sent event stream with fetch (EventSource cannot send our headers or stop
// cleanly): frames are parsed from the ReadableStream, and a dropped connection is resumed with
// Last-Event-ID, so the server continues exactly after the last event we saw. A stream that
// answers a POST (the note assist, a model pull) cannot be resumed: answer() reads it once, to
// its end, and returns the final `result` event.
import { ApiError } from "./api.js";

// A tool's stream (the generic SSE form of a streaming tool's route) ends with `result` or
// `error`; an assistant answer's events end with `done` or `error` before that.
const FINAL = new Set(["done", "error", "result"]);
const RETRIES = 5;

/** Split a byte stream into SSE frames: {id, event, data (parsed JSON)}; comments are skipped. */
export async function* frames(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let pending = "";
  let frame = {};
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    pending += value;
    const lines = pending.split(/\r?\n/);
    pending = lines.pop();
    for (const line of lines) {
      if (line === "") {
        if (frame.event || frame.data !== undefined) yield { ...frame, data: frame.data ? JSON.parse(frame.data) : null };
        frame = {};
      } else if (!line.startsWith(":")) {
        const at = line.indexOf(":");
        const name = at < 0 ? line : line.slice(0, at);
        const value = at < 0 ? "" : line.slice(at + 1).replace(/^ /, "");
        frame[name] = name === "data" && frame.data !== undefined ? `${frame.data}\n${value}` : value;
      }
    }
  }
}

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * follow(url, onEvent, {signal, lastEventId}): deliver every event until a final one (done,
 * error or the stored answer as `result`). A connection that ends early is reopened with Last-Event-ID;
 * an HTTP error is thrown as ApiError and not retried.
 */
export async function follow(url, onEvent, { signal, lastEventId = null } = {}) {
  let last = lastEventId;
  let failures = 0;
  for (;;) {
    try {
      const headers = { Accept: "text/event-stream" };
      if (last) headers["Last-Event-ID"] = last;
      const response = await fetch(url, { headers, credentials: "same-origin", signal });
      if (!response.ok) {
        const data = await response.json().catch(() => null);
        throw new ApiError(response.status, data?.error);
      }
      for await (const event of frames(response.body)) {
        if (event.id) last = event.id;
        failures = 0;
        onEvent(event);
        if (FINAL.has(event.event)) return;
      }
    } catch (error) {
      // a busy server refused to begin the stream, having done nothing: followed again, below
      const busy = error instanceof ApiError && error.status === 503 && error.type === "busy";
      if ((error instanceof ApiError && !busy) || signal?.aborted) throw error;
    }
    if (++failures > RETRIES) throw new Error("Lost the connection to the answer. Reload to see what was saved.");
    await pause(200 * failures);
  }
}

/**
 * answer(response, onEvent): deliver the events of a streamed response that cannot be resumed
 * (a POST's, e.g. from api.stream) until a final one, and return that one. An `error` event is
 * thrown as ApiError (status 0: the failure came after the answer began); a stream that ends
 * without a final event throws too.
 */
export async function answer(response, onEvent) {
  for await (const event of frames(response.body)) {
    onEvent(event);
    if (event.event === "error") throw new ApiError(0, event.data);
    if (FINAL.has(event.event)) return event;
  }
  throw new Error("The connection ended before the answer was complete.");
}
