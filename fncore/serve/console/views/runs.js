// Runs: the server's recent runs (GET /api/runs), and a waterfall of a selected run's spans.
// It polls while shown, so new runs appear without a reload.
import { el, pollWhileShown } from "../dom.js";

export const title = "Runs";
export const order = 30;

const POLL_MS = 1500;

function ms(value) {
  if (value === null || value === undefined) return "…";
  return value < 1000 ? `${value.toFixed(1)} ms` : `${(value / 1000).toFixed(2)} s`;
}

function outcomeText(outcome) {
  if (outcome.kind === "error") return `error: ${outcome.error}`;
  if (outcome.kind === "paused") return `paused (${outcome.calls.join(", ")})`;
  return outcome.kind;
}

function tokens(usage) {
  return usage ? `${usage.input_tokens} in / ${usage.output_tokens} out` : "–";
}

// Each span with its depth, parents before children, siblings in start order.
function ordered(spans) {
  const ids = new Set(spans.map((s) => s.span_id));
  const children = new Map();
  for (const span of spans) {
    const parent = ids.has(span.parent_id) ? span.parent_id : null;
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent).push(span);
  }
  const out = [];
  const walk = (parent, depth) => {
    for (const span of children.get(parent) || []) {
      out.push({ span, depth });
      walk(span.span_id, depth + 1);
    }
  };
  walk(null, 0);
  return out;
}

function waterfall(run) {
  if (!run.spans.length) {
    return el(
      "p",
      { class: "muted" },
      "No spans for this run: include the trace middleware, with OpenTelemetry's SDK (the otel extra) as the tracer provider.",
    );
  }
  const end = Math.max(...run.spans.map((s) => s.end_ms), run.duration_ms || 0, 0.001);
  const rows = ordered(run.spans).map(({ span, depth }) => {
    const left = (Math.max(span.start_ms, 0) / end) * 100;
    const width = Math.max(((span.end_ms - span.start_ms) / end) * 100, 0.5);
    const duration = span.end_ms - span.start_ms;
    const details = Object.entries(span.attributes)
      .map(([k, v]) => `${k} = ${Array.isArray(v) ? v.join(", ") : v}`)
      .join("\n");
    return el(
      "li",
      { class: `span status-${span.status}`, title: details },
      el("span", { class: "span-name", style: `padding-left: ${depth * 1.1}em` }, span.name),
      el(
        "span",
        { class: "span-track", "aria-hidden": "true" },
        el("span", { class: "span-bar", style: `left: ${left}%; width: ${Math.min(width, 100 - left)}%` }),
      ),
      el("span", { class: "span-time" }, `${ms(span.start_ms)} +${ms(duration)}`),
    );
  });
  return el("ol", { class: "waterfall", "aria-label": `Spans of run ${run.id}` }, ...rows);
}

export function mount(panel, api) {
  const list = el("tbody");
  const detail = el("div", { class: "run-detail", "aria-live": "polite" });
  const error = el("p", { class: "error", role: "alert" });
  panel.append(
    el("h2", {}, "Recent runs"),
    error,
    el(
      "div",
      { class: "table-wrap" },
      el(
        "table",
        { class: "runs" },
        el(
          "thead",
          {},
          el("tr", {}, ...["Started", "Endpoint", "Session", "Duration", "Outcome", "Tokens"].map((h) => el("th", { scope: "col" }, h))),
        ),
        list,
      ),
    ),
    detail,
  );
  let selected = null;
  let shownDetail = "";

  async function showRun(id) {
    const run = await api.json(`/api/runs/${encodeURIComponent(id)}`);
    const key = JSON.stringify(run);
    if (key === shownDetail) return;
    shownDetail = key;
    detail.replaceChildren(
      el("h3", {}, `Run ${run.id}`),
      el(
        "p",
        { class: "muted" },
        `${run.endpoint} · session ${run.session ?? "none"} · ${outcomeText(run.outcome)} · ${ms(run.duration_ms)} · ${tokens(run.usage)}`,
      ),
      waterfall(run),
    );
  }

  async function refresh() {
    try {
      const { data } = await api.json("/api/runs");
      error.textContent = "";
      list.replaceChildren(
        ...(data.length
          ? data.map((run) => {
              const open = el("button", { type: "button", class: "link" }, new Date(run.started * 1000).toLocaleTimeString());
              open.addEventListener("click", () => {
                selected = run.id;
                shownDetail = "";
                refresh();
              });
              const row = el(
                "tr",
                { "data-run": run.id, class: `outcome-${run.outcome.kind}` },
                el("td", {}, open),
                el("td", {}, run.endpoint),
                el("td", {}, run.session ?? "–"),
                el("td", {}, ms(run.duration_ms)),
                el("td", {}, outcomeText(run.outcome)),
                el("td", {}, tokens(run.usage)),
              );
              if (run.id === selected) row.setAttribute("aria-current", "true");
              return row;
            })
          : [el("tr", {}, el("td", { colspan: "6", class: "muted" }, "No runs yet."))]),
      );
      if (selected) await showRun(selected);
    } catch (failure) {
      error.textContent = failure.message;
    }
  }

  return pollWhileShown(refresh, POLL_MS);
}
