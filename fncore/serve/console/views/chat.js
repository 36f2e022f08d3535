// Chat: talk to the agent over POST /ag-ui (AG-UI events as server-sent events).
// The answer streams into the page as its TEXT_MESSAGE_CONTENT events arrive; tool calls and
// their results show as they happen. The thread id is the session: pick a stored one
// (GET /api/sessions, its messages from GET /api/sessions/{id}) or start a new one.
// A pause shows the pending calls and a link to the Approvals view; Stop aborts the request,
// and the server cancels the run (the session stays as it was).
import { el } from "../dom.js";

export const title = "Chat";
export const order = 10;

// A random id; crypto.getRandomValues works outside secure contexts too (unlike randomUUID).
function newId(prefix) {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return `${prefix}-${[...bytes].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

function compact(value) {
  if (typeof value === "string") {
    try {
      return JSON.stringify(JSON.parse(value));
    } catch {
      return value;
    }
  }
  return JSON.stringify(value);
}

// The server-sent events of a response body, parsed: yields each event's JSON data.
async function* sseEvents(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    const frames = buffer.split(/\r\n\r\n|\n\n|\r\r/);
    buffer = frames.pop();
    for (const frame of frames) {
      const data = frame
        .split(/\r\n|\n|\r/)
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).replace(/^ /, ""))
        .join("\n");
      if (data) yield JSON.parse(data);
    }
  }
}

// The conversation: user and assistant messages, and tool calls with their results.
class Transcript {
  constructor(list) {
    this.list = list;
    this.texts = new Map(); // message id -> its text node
    this.calls = new Map(); // tool call id -> { args, result, raw }
  }

  clear() {
    this.list.replaceChildren();
    this.texts.clear();
    this.calls.clear();
  }

  message(role, text = "", id = null) {
    const body = el("div", { class: "chat-text" }, text);
    const who = role === "user" ? "You" : "Agent";
    const item = el("li", { class: `chat-msg chat-${role}` }, el("span", { class: "chat-who" }, who), body);
    if (id) {
      item.dataset.message = id;
      this.texts.set(id, body);
    }
    this.list.append(item);
    return body;
  }

  append(id, delta) {
    const body = this.texts.get(id) || this.message("assistant", "", id);
    body.append(delta);
  }

  call(id, name, args = "") {
    const argsNode = el("code", { class: "chat-tool-args" }, args);
    const result = el("span", { class: "chat-tool-result muted" }, "running…");
    const item = el(
      "li",
      { class: "chat-tool", "data-call": id },
      el("span", { class: "chat-who" }, "Tool"),
      el("span", { class: "chat-tool-line" }, el("code", { class: "chat-tool-name" }, name), "(", argsNode, ")", " → ", result),
    );
    this.list.append(item);
    this.calls.set(id, { args: argsNode, result, raw: args });
  }

  args(id, delta) {
    const call = this.calls.get(id);
    if (!call) return;
    call.raw += delta;
    call.args.textContent = call.raw;
  }

  ended(id) {
    const call = this.calls.get(id);
    if (call) call.args.textContent = compact(call.raw);
  }

  result(id, content, isError = false) {
    const call = this.calls.get(id);
    if (!call) return;
    call.result.textContent = content;
    call.result.className = isError ? "chat-tool-result error" : "chat-tool-result";
  }

  // A stored session's messages (GET /api/sessions/{id}), in fncore's JSON form.
  show(messages) {
    this.clear();
    for (const message of messages) {
      if (message.role === "system") continue;
      let text = null;
      for (const part of message.parts) {
        if (part.type === "text") {
          if (text === null) text = this.message(message.role === "user" ? "user" : "assistant");
          text.append(part.text);
        } else if (part.type === "tool_call") {
          this.call(part.id, part.name, compact(part.arguments));
        } else if (part.type === "tool_result") {
          this.result(part.call_id, part.content, part.is_error);
        }
      }
    }
  }
}

export function mount(panel, api) {
  const picker = el("select", { id: "chat-session" });
  const log = el("ol", { class: "chat-log", "aria-label": "Conversation", "aria-live": "polite" });
  const pause = el("div", { class: "chat-pause", hidden: "" });
  const error = el("p", { class: "error", role: "alert" });
  const status = el("p", { class: "muted chat-status", role: "status" });
  const input = el("textarea", { id: "chat-input", rows: "3", required: "" });
  const send = el("button", { type: "submit" }, "Send");
  const stop = el("button", { type: "button", disabled: "" }, "Stop");
  const form = el(
    "form",
    { class: "chat-form" },
    el("label", { for: "chat-input" }, "Message"),
    input,
    el("div", { class: "chat-actions" }, send, stop),
  );
  panel.append(
    el("h2", {}, "Chat"),
    el("div", { class: "chat-session" }, el("label", { for: "chat-session" }, "Session"), picker),
    log,
    pause,
    error,
    status,
    form,
  );
  const transcript = new Transcript(log);
  let thread = newId("console");
  let running = null; // the AbortController of the run in flight
  let failed = false; // the run in flight ended with RUN_ERROR
  let paused = null; // a pause is shown: the session's version then (null: not stored yet)
  const versions = new Map(); // session id -> its version, from the last listing

  async function loadSessions() {
    try {
      const { data } = await api.json("/api/sessions");
      versions.clear();
      for (const s of data) versions.set(s.id, s.version);
      const ids = data.map((s) => s.id);
      if (!ids.includes(thread) && log.childElementCount) ids.unshift(thread);
      const options = [el("option", { value: "" }, "New session")];
      for (const id of ids) options.push(el("option", { value: id }, id));
      picker.replaceChildren(...options);
      picker.value = ids.includes(thread) ? thread : "";
    } catch (failure) {
      error.textContent = failure.message;
    }
  }

  async function loadSession(id) {
    try {
      const session = await api.json(`/api/sessions/${encodeURIComponent(id)}`);
      transcript.show(session.messages);
      error.textContent = "";
    } catch (failure) {
      error.textContent = failure.message;
    }
  }

  // Back from a pause: once the session moved on (the run was decided and committed), show it.
  async function afterPause() {
    const response = await api.request(`/api/sessions/${encodeURIComponent(thread)}`);
    if (!response.ok || paused === null) return;
    const session = await response.json();
    if (session.version === paused.version) return;
    paused = null;
    pause.hidden = true;
    status.textContent = "";
    transcript.show(session.messages);
  }

  function showPause(interrupts) {
    paused = { version: versions.get(thread) ?? null };
    const calls = interrupts.map((interrupt) => {
      const meta = interrupt.metadata || {};
      const what = meta.tool ? `${meta.tool}(${compact(meta.arguments ?? {})})` : interrupt.message || interrupt.id;
      return el("li", { "data-call": meta.call_id || interrupt.toolCallId || "" }, el("code", {}, what));
    });
    const inbox = document.getElementById("tab-inbox");
    const next = inbox
      ? el("a", { href: "#inbox" }, "Decide in Approvals")
      : el("span", {}, "Decide through the approvals API (POST /api/approvals/{checkpoint}).");
    pause.replaceChildren(
      el("p", {}, el("strong", {}, "Paused for approval."), " Waiting for a decision on:"),
      el("ul", {}, ...calls),
      el("p", {}, next),
    );
    pause.hidden = false;
  }

  function handle(event) {
    switch (event.type) {
      case "TEXT_MESSAGE_START":
        transcript.message("assistant", "", event.messageId);
        break;
      case "TEXT_MESSAGE_CONTENT":
        transcript.append(event.messageId, event.delta);
        break;
      case "TOOL_CALL_START":
        transcript.call(event.toolCallId, event.toolCallName);
        break;
      case "TOOL_CALL_ARGS":
        transcript.args(event.toolCallId, event.delta);
        break;
      case "TOOL_CALL_END":
        transcript.ended(event.toolCallId);
        break;
      case "TOOL_CALL_RESULT":
        transcript.result(event.toolCallId, event.content);
        break;
      case "RUN_FINISHED":
        if (event.outcome && event.outcome.type === "interrupt") showPause(event.outcome.interrupts);
        break;
      case "RUN_ERROR":
        failed = true;
        error.textContent = event.code ? `${event.code}: ${event.message}` : event.message;
        break;
      default:
        break;
    }
  }

  async function run(text) {
    const controller = new AbortController();
    running = controller;
    send.disabled = true;
    stop.disabled = false;
    error.textContent = "";
    pause.hidden = true;
    paused = null;
    failed = false;
    log.setAttribute("aria-busy", "true"); // read out once the answer is whole
    status.textContent = "Answering…";
    transcript.message("user", text);
    const body = {
      threadId: thread,
      runId: newId("run"),
      messages: [{ id: newId("msg"), role: "user", content: text }],
    };
    try {
      const response = await api.request("/ag-ui", {
        method: "POST",
        headers: { "content-type": "application/json", accept: "text/event-stream" },
        body: JSON.stringify(body),
        signal: controller.signal,
      });
      if (!response.ok) {
        const failure = await response.json().catch(() => null);
        const message = failure && failure.error ? failure.error.message : response.statusText;
        throw new Error(`${response.status}: ${message}`);
      }
      for await (const event of sseEvents(response)) handle(event);
      await loadSessions(); // a new session is listed (and picked) once its first turn is stored
      status.textContent = failed ? "The run failed." : paused ? "Paused." : "Done.";
    } catch (failure) {
      if (controller.signal.aborted) status.textContent = "Stopped: the run was cancelled.";
      else {
        error.textContent = failure.message;
        status.textContent = "";
      }
      loadSessions();
    } finally {
      log.removeAttribute("aria-busy");
      running = null;
      send.disabled = false;
      stop.disabled = true;
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = input.value.trim();
    if (!text || running) return;
    input.value = "";
    run(text);
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  stop.addEventListener("click", () => running && running.abort());
  picker.addEventListener("change", () => {
    if (running) running.abort();
    error.textContent = "";
    status.textContent = "";
    pause.hidden = true;
    paused = null;
    if (picker.value) {
      thread = picker.value;
      loadSession(thread);
    } else {
      thread = newId("console");
      transcript.clear();
    }
  });

  return (visible) => {
    if (!visible) return;
    loadSessions();
    if (paused && !running) afterPause().catch((failure) => (error.textContent = failure.message));
  };
}
