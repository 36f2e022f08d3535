// Approvals: the runs paused for a person (GET /api/approvals), and their decisions
// (POST /api/approvals/{checkpoint}). It polls while shown, so new pauses appear without a
// reload. Edited arguments are checked against the tool's JSON schema before anything is sent.
import { Validator } from "../vendor/json-schema/index.js";
import { el, pollWhileShown } from "../dom.js";

export const title = "Approvals";
export const order = 20;

const POLL_MS = 2000;

const KINDS = {
  approve: "Approve",
  reject: "Reject",
  edit: "Edit arguments",
  respond: "Respond",
};

// Schema keywords whose errors only say that something inside failed: the inner error says what.
const WRAPPERS = new Set(["properties", "items", "prefixItems", "$ref", "$dynamicRef", "allOf", "false"]);

let uid = 0;

function pretty(value) {
  return JSON.stringify(value, null, 2);
}

function age(created) {
  const seconds = Math.max(0, Date.now() / 1000 - created);
  if (seconds < 5) return "just now";
  if (seconds < 60) return `${Math.floor(seconds)} s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  return `${Math.floor(seconds / 86400)} d ago`;
}

// "#/items/0/name" (a JSON pointer into the arguments) as "arguments.items.0.name".
function where(pointer) {
  const parts = pointer
    .replace(/^#\/?/, "")
    .split("/")
    .filter((p) => p !== "")
    .map((p) => decodeURIComponent(p).replaceAll("~1", "/").replaceAll("~0", "~"));
  return ["arguments", ...parts].join(".");
}

// The problems with an edit's text: [] when it is a JSON object the call's schema accepts.
export function problems(text, parameters) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return [`arguments: not valid JSON (${error.message})`];
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return ["arguments: must be a JSON object, {...}"];
  }
  if (!parameters) return [];
  const { valid, errors } = new Validator(parameters, "2020-12", false).validate(value);
  if (valid) return [];
  const leaves = errors.filter((e) => !WRAPPERS.has(e.keyword));
  return [...new Set((leaves.length ? leaves : errors).map((e) => `${where(e.instanceLocation)}: ${e.error}`))];
}

function errorText(body, response) {
  const error = body && body.error;
  return error ? error.message : `${response.status} ${response.statusText}`;
}

function outputText(output) {
  return typeof output === "string" ? output : pretty(output);
}

// One pending call: what it is, and a group of radio buttons for its decision.
function callPart(checkpointId, call) {
  const id = `inbox-${++uid}`;
  const fieldError = el("ul", { class: "error field-error", id: `${id}-error`, role: "alert" });
  const field = el("textarea", { id: `${id}-text`, rows: "4", spellcheck: "false", "aria-describedby": fieldError.id });
  const fieldLabel = el("label", { for: field.id });
  const fieldBox = el("div", { class: "decision-field", hidden: "" }, fieldLabel, field, fieldError);
  const choices = call.allowed.map((kind) => {
    const radio = el("input", { type: "radio", name: `${id}-kind`, value: kind, id: `${id}-${kind}` });
    radio.addEventListener("change", () => choose(kind));
    return el("label", { for: radio.id, class: "choice" }, radio, ` ${KINDS[kind] ?? kind}`);
  });
  const tool = call.tool ?? "(no tool)";
  const part = el(
    "fieldset",
    { class: "call", "data-call": call.call_id, "data-tool": tool },
    el("legend", {}, el("code", {}, tool), ` · call ${call.call_id}`),
    call.description ? el("p", { class: "description" }, call.description) : null,
    el("pre", { class: "arguments", "aria-label": `Arguments of ${tool}` }, pretty(call.arguments)),
    el("div", { class: "choices", role: "radiogroup", "aria-label": `Decision for ${tool} (${call.call_id})` }, ...choices),
    fieldBox,
  );

  function choose(kind) {
    showErrors([]);
    fieldBox.hidden = kind === "approve";
    field.required = kind === "edit" || kind === "respond";
    if (kind === "edit") {
      fieldLabel.textContent = "Arguments (JSON)";
      field.rows = Math.min(16, pretty(call.arguments).split("\n").length + 1);
      field.value = pretty(call.arguments);
    } else if (kind === "respond") {
      fieldLabel.textContent = "Response (the tool's result, instead of running it)";
      field.rows = 3;
      field.value = "";
    } else if (kind === "reject") {
      fieldLabel.textContent = "Message (optional)";
      field.rows = 2;
      field.value = "";
    }
  }

  function showErrors(messages) {
    fieldError.replaceChildren(...messages.map((m) => el("li", {}, m)));
    if (messages.length) field.setAttribute("aria-invalid", "true");
    else field.removeAttribute("aria-invalid");
  }

  // The call's decision as the API takes it, or null (with the reason shown) when it is not ready.
  function decision() {
    const picked = part.querySelector("input[type=radio]:checked");
    if (!picked) {
      showErrors([`Choose a decision for ${tool}.`]);
      return null;
    }
    const kind = picked.value;
    if (kind === "approve") return { kind };
    if (kind === "reject") return field.value.trim() ? { kind, message: field.value } : { kind };
    if (kind === "respond") {
      if (field.value.trim()) return { kind, message: field.value };
      showErrors(["Write the response to send instead of the tool's result."]);
      field.focus();
      return null;
    }
    const found = problems(field.value, call.parameters);
    if (found.length) {
      showErrors(found);
      field.focus();
      return null;
    }
    showErrors([]);
    return { kind, arguments: JSON.parse(field.value) };
  }

  // The server refused this call's decision: show why next to its field.
  function refused(message) {
    fieldBox.hidden = false;
    showErrors([message]);
  }

  return { part, decision, refused, showErrors, callId: call.call_id };
}

export function mount(panel, api) {
  const error = el("p", { class: "error", role: "alert" });
  const outcomes = el("ol", { class: "outcomes", "aria-live": "polite", "aria-label": "Decided here" });
  const empty = el("p", { class: "muted" }, "Nothing waits for a decision.");
  const list = el("div", { class: "approvals" });
  panel.append(el("h2", {}, "Approvals"), error, outcomes, empty, list);

  const items = new Map(); // checkpoint id -> { article, doc, sending, ages }
  const gone = new Set(); // decided here (or elsewhere, as a 409 said): never listed again
  let polling = false;
  let generation = 0; // bumped as each poll starts: a poll forgets only what was listed before it

  function note(checkpointId, kind, ...children) {
    outcomes.prepend(el("li", { class: `outcome outcome-${kind}`, "data-checkpoint": checkpointId }, ...children));
    while (outcomes.children.length > 20) outcomes.lastElementChild.remove();
  }

  function label(doc) {
    const tools = [...new Set(doc.pending.map((c) => c.tool ?? "(no tool)"))].join(", ");
    return `${tools}${doc.session_id ? ` · session ${doc.session_id}` : ""}`;
  }

  function leave(checkpointId) {
    const item = items.get(checkpointId);
    if (item) item.article.remove();
    items.delete(checkpointId);
    gone.add(checkpointId);
    empty.hidden = items.size > 0;
  }

  function render(doc) {
    const heading = el("h3", {}, label(doc));
    const ages = el("p", { class: "muted meta" });
    const calls = doc.pending.map((call) => callPart(doc.id, call));
    const formError = el("p", { class: "error", role: "alert" });
    const send = el("button", { type: "submit", class: "primary" }, calls.length > 1 ? "Send decisions" : "Send decision");
    const box = el("fieldset", { class: "plain" }, ...calls.map((c) => c.part));
    const form = el("form", { novalidate: "" }, box, formError, el("div", { class: "actions" }, send));
    const article = el("article", { class: "approval", "data-checkpoint": doc.id, "aria-label": `Approval: ${label(doc)}` }, heading, ages, form);
    const item = { article, doc, sending: false, ages };

    if (calls.length > 1) {
      const common = ["approve", "reject"].filter((k) => doc.pending.every((c) => c.allowed.includes(k)));
      const everyone = common.map((kind) => {
        const button = el("button", { type: "button" }, `${KINDS[kind]} all`);
        button.addEventListener("click", () => decide({ decision: { kind } }));
        return button;
      });
      if (everyone.length) {
        box.prepend(el("div", { class: "for-all", role: "group", "aria-label": "For all calls" }, el("span", { class: "muted" }, "For all calls:"), ...everyone));
      }
    }

    form.addEventListener("submit", (event) => {
      event.preventDefault();
      formError.textContent = "";
      const decisions = {};
      let ready = true;
      for (const call of calls) {
        const decided = call.decision();
        if (decided) decisions[call.callId] = decided;
        else ready = false;
      }
      if (ready) decide({ decisions });
    });

    async function decide(body) {
      if (item.sending) return;
      item.sending = true;
      box.disabled = true;
      send.disabled = true;
      article.setAttribute("aria-busy", "true");
      formError.textContent = "";
      for (const call of calls) call.showErrors([]);
      try {
        const response = await api.request(`/api/approvals/${encodeURIComponent(doc.id)}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        });
        const answer = await response.json().catch(() => null);
        if (response.ok) return decided(answer);
        const code = answer && answer.error ? answer.error.code : null;
        if (response.status === 409 && code === "checkpoint_decided") {
          leave(doc.id);
          note(doc.id, "elsewhere", el("strong", {}, "Already decided: "), `${label(doc)} was decided by someone else; it left the list.`);
          return;
        }
        if (response.status === 404) {
          leave(doc.id);
          note(doc.id, "elsewhere", el("strong", {}, "Gone: "), `${label(doc)}: ${errorText(answer, response)}`);
          return;
        }
        const param = answer && answer.error ? answer.error.param || "" : "";
        const call = calls.find((c) => param.startsWith(`decisions.${c.callId}`));
        if (response.status === 400 && call) call.refused(errorText(answer, response));
        else formError.textContent = `The server refused: ${errorText(answer, response)}`;
      } catch (failure) {
        formError.textContent = `Could not send: ${failure.message}`;
      } finally {
        item.sending = false;
        box.disabled = false;
        send.disabled = false;
        article.removeAttribute("aria-busy");
      }
    }

    function decided(answer) {
      leave(doc.id);
      if (answer.status === "paused" && answer.checkpoint) {
        const next = { session_id: doc.session_id, created: Date.now() / 1000, ...answer.checkpoint };
        note(doc.id, "paused", el("strong", {}, "Paused again: "), `${label(doc)} now waits for ${label(next)}.`);
        show(next);
        return;
      }
      const outcome = answer.status === "completed" ? "Completed" : `Ended (${answer.status})`;
      const output = answer.output === null || answer.output === undefined ? null : el("pre", { class: "answer" }, outputText(answer.output));
      note(doc.id, "done", el("strong", {}, `${outcome}: `), label(doc), output);
    }

    return item;
  }

  function tick(item) {
    const created = item.doc.created;
    const expires = item.doc.expires;
    const parts = [created ? `paused ${age(created)}` : null, `checkpoint ${item.doc.id}`];
    if (item.doc.run_id) parts.push(`run ${item.doc.run_id}`);
    if (expires) parts.push(`expires ${new Date(expires * 1000).toLocaleString()}`);
    item.ages.textContent = parts.filter(Boolean).join(" · ");
    if (created) item.ages.title = new Date(created * 1000).toLocaleString();
  }

  // Lists the checkpoint (newest first), unless it is listed already or was decided.
  function show(doc) {
    if (gone.has(doc.id) || items.has(doc.id)) return;
    const item = render(doc);
    item.since = generation;
    items.set(doc.id, item);
    tick(item);
    const after = [...items.values()].find((other) => other !== item && (other.doc.created ?? 0) < (doc.created ?? 0));
    list.insertBefore(item.article, after ? after.article : null);
    empty.hidden = true;
  }

  async function refresh() {
    if (polling) return;
    polling = true;
    const asked = ++generation;
    try {
      const { data } = await api.json("/api/approvals");
      error.textContent = "";
      const listed = new Set(data.map((doc) => doc.id));
      for (const [id, item] of items) {
        if (!listed.has(id) && !item.sending && item.since < asked) leave(id); // decided elsewhere, or expired
      }
      for (const doc of data) show(doc);
      for (const item of items.values()) tick(item);
      empty.hidden = items.size > 0;
    } catch (failure) {
      error.textContent = failure.message;
    } finally {
      polling = false;
    }
  }

  return pollWhileShown(refresh, POLL_MS);
}
