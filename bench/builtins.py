"""Measure what the built-in middleware cost per run: each alone, and a production stack.

The reference workload of ``overhead.py``: one user message; the model (in-process, zero
latency) answers with one tool call ``add(a, b)``, the tool runs, the model answers with
text. Every run's prompt is new (numbered), so that a cache misses; only ``cache_hit``
repeats one prompt.

Workloads, in interleaved rounds in one process; each figure is the minimum of the
per-round means (noise only ever adds time). Each round starts with what the process holds
frozen out of the garbage collector's sight (see ``_measure``), so that a round pays for
collecting what its own runs keep (the spans exported, a cache's entries), not for walking
every other workload's agents and stores:

* ``bare``: ``agent.run`` with no middleware;
* ``stack``: a production stack: ``trace`` on the SDK's tracer provider (a simple span
  processor into an in-memory exporter, emptied between rounds) and meter provider (an
  in-memory reader); ``retry``, ``limit_calls`` and ``budget`` with their defaults;
  ``rate_limit`` on ``memory://`` with requests and tokens per minute far above what the
  benchmark sends (its windows are emptied between rounds); ``cache`` on ``memory://``,
  missing each time (a real miss: the store is read, the model called, the answer written);
* ``stack_untraced``: the same stack less ``trace``;
* ``sdk_baseline``: ``bare`` with the same four spans and six measurements as ``trace``
  made by hand with the SDK's API, from the model and the tool themselves (checked to have
  the same names, kinds, parents and attributes as ``trace``'s): what the OpenTelemetry SDK
  itself costs for this run;
* ``bare`` plus one built-in, for each built-in (``fallback`` with its primary model
  answering, ``cache`` both missing and hitting, ``timeout`` with its defaults,
  ``repair_history`` on a valid history, ``patch_tool_calls`` on valid arguments, ``guard``
  with a deny pattern and an output guardrail, ``instructions`` with a function and the date,
  ``emulate_tools`` answering ``add`` with a second instant model instead of running it,
  ``select_tools`` with its defaults, below its threshold so no selection call is made,
  ``cache_prompt`` with its defaults on a model that is not OpenAI's, so no key is hashed,
  ``compact`` with its defaults, under its trigger);
* one compaction by ``compact`` of a 1,000-message history (a task, 499 rounds of a tool
  call and its result, a question), straight through its ``compress_context`` middleware:
  with the sliding window (``max_messages=500, keep=100``) and with tool-result clearing
  (``max_messages=500``), each on the same uncompacted history every time;
* ``bare``, ``stack`` and ``rate_limit`` again with a model that gives the event loop one
  turn per call, as a real model's network call does: what a run schedules for later (a
  background task, a worker thread's work) runs then, and is timed; with the zero-latency
  model the loop never turns during a run.

Figures: ``stack_ratio`` is the production stack over the bare run. It has no target: one
span exported through the OpenTelemetry SDK costs about as much as several bare runs, so
the targets are set against what fncore controls, each met in one run of this script:

* ``stack_ratio_untraced``, the stack less ``trace`` over the bare run: at most 6;
* ``stack_ratio_vs_sdk_baseline``, the stack over the SDK baseline (what fncore adds to
  what the SDK costs anyway): at most 1.5;
* ``rate_limit_yielding_marginal_us``, ``rate_limit``'s cost per run with the model that
  yields (bare plus it, minus bare, both yielding; what its storage schedules on the event
  loop or a worker thread is timed): at most 60 µs.

``marginal_us`` holds each built-in's cost: bare plus it, minus bare, in microseconds.
``stack_ratio_yielding`` is ``stack_ratio`` with the model that yields.
``compact_window_1k_us`` and ``compact_clear_1k_us`` are the microseconds of one
compaction of the 1,000-message history. How the figures grow with a conversation's
length is ``growth.py``'s.

Usage::

    python bench/builtins.py            # full run, human-readable table
    python bench/builtins.py --json     # the same, then one JSON object as the last line
    python bench/builtins.py --quick    # a fast smoke run (figures are rough)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from returns.result import Success

from fncore import (
    Agent,
    CompressContext,
    Message,
    ModelRequest,
    Outcome,
    Registry,
    RunInfo,
    State,
    SystemPromptContext,
    ToolCallPart,
    ToolResultPart,
)
from fncore.core import check_pairing
from fncore.middleware import (
    Allow,
    GuardCheck,
    Verdict,
    budget,
    cache,
    cache_prompt,
    compact,
    emulate_tools,
    fallback,
    guard,
    instructions,
    limit_calls,
    patch_tool_calls,
    redact_pii,
    repair_history,
    retry,
    retry_tools,
    select_tools,
    timeout,
)
from fncore.middleware._pii import BUILTIN
from fncore.middleware._redactor import Rules, Streamer

if TYPE_CHECKING:  # mypy reads bench/ as a package (see bench/__init__.py)
    from bench import _measure
    from bench._stack import empty_windows, generous_rate_limit, production_stack, sdk_trace
else:  # run as a script, whose folder is on sys.path
    import _measure
    from _stack import empty_windows, generous_rate_limit, production_stack, sdk_trace

TARGET_STACK_RATIO_UNTRACED = 6.0
"""Goal: a run with the production stack less ``trace`` costs at most this many bare runs."""
TARGET_STACK_RATIO_VS_SDK_BASELINE = 1.5
"""Goal: a run with the production stack costs at most this many SDK baseline runs."""
TARGET_RATE_LIMIT_YIELDING_US = 60.0
"""Goal: ``rate_limit`` adds at most this many µs to a run whose model yields."""

ANSWER = "1 + 2 = 3."
"""The final text of every run."""


def allow_all(check: GuardCheck) -> Verdict:
    """An output guardrail that allows everything (``guard``'s figure)."""
    return Allow()


def house_rules(ctx: SystemPromptContext) -> str:
    """A prompt function (``instructions``' figure)."""
    return "Answer in one line."


def long_history(size: int = 1000) -> tuple[Message, ...]:
    """A task, rounds of one tool call and its result, and a question: ``size`` messages."""
    out = [Message.user("Find the cheapest flight to Oslo.")]
    for i in range((size - 2) // 2):
        call = ToolCallPart(f"c{i}", "search", f'{{"day": {i}, "from": "Paris"}}')
        out.append(Message("assistant", (call,)))
        out.append(Message("tool", (ToolResultPart(call.id, "search", f"{100 + i} EUR, " * 8),)))
    out.append(Message.user("And now?"))
    return tuple(out)


async def _unchanged(ctx: CompressContext) -> Outcome[tuple[Message, ...]]:
    return Success(ctx.messages)


class Compaction:
    """One ``compact`` middleware, called straight at ``compress_context`` on a long history."""

    def __init__(self, registry: Registry) -> None:
        (registration,) = registry.middleware
        self.compress = registration.function
        self.context = CompressContext(RunInfo("bench", {}, State()), 1, long_history())

    async def once(self, prompt: str) -> Outcome[tuple[Message, ...]]:
        """One compaction of the same 1,000 messages (``prompt`` is not used)."""
        return await self.compress(self.context, _unchanged)  # type: ignore[no-any-return]

    async def check(self, name: str) -> None:
        """Fail loudly unless the history really is compacted and stays paired."""
        messages = (await self.once("")).unwrap()
        before = self.context.messages
        cleared = sum(
            r.content != o.content
            for m, n in zip(messages, before, strict=False)
            for r, o in zip(m.tool_results, n.tool_results, strict=True)
        )
        shorter = len(messages) < len(before)
        if check_pairing(messages) is not None or not (shorter or cleared > 400):
            msg = f"{name}: the history was not compacted as expected"
            raise RuntimeError(msg)


class Setup:
    """The agents of every workload, with what is emptied between rounds."""

    def __init__(self) -> None:
        self.sdk = sdk = _measure.Sdk()
        self.registries: list[Registry] = []
        self.alone: dict[str, Registry] = {
            "trace_sdk": sdk_trace(sdk),
            "retry": retry(),
            "retry_tools": retry_tools(),
            "fallback": fallback(models=[_measure.InstantModel()]),
            "limit_calls": limit_calls(),
            "budget": budget(),
            "rate_limit": generous_rate_limit(),
            "cache_miss": cache(),
            "cache_hit": cache(),
            "timeout": timeout(),
            "repair_history": repair_history(),
            "patch_tool_calls": patch_tool_calls(),
            "redact_pii": redact_pii(),
            "guard": guard(deny=[r"\bpassword\b"], output_guards=[allow_all]),
            "instructions": instructions(function=house_rules, date=True),
            "emulate_tools": emulate_tools(model=_measure.InstantModel()),
            "select_tools": select_tools(),
            "cache_prompt": cache_prompt(),
            "compact": compact(),
        }
        self.compactions = {
            "compact_window_1k": Compaction(compact(strategies=["window"], max_messages=500)),
            "compact_clear_1k": Compaction(
                compact(strategies=["clear_tool_results"], max_messages=500)
            ),
        }
        self.by_hand = _measure.HandTraced(sdk)
        self.agents: dict[str, Agent] = {
            "bare": self._agent(Registry()),
            "stack": self._agent(production_stack(sdk)),
            "stack_untraced": self._agent(production_stack(sdk, untraced=True)),
            **{name: self._agent(registry) for name, registry in self.alone.items()},
        }
        self.yielding: dict[str, Agent] = {
            "bare": self._agent(Registry(), yield_once=True),
            "stack": self._agent(production_stack(sdk), yield_once=True),
            "rate_limit": self._agent(generous_rate_limit(), yield_once=True),
        }

    def _agent(self, registry: Registry, *, yield_once: bool = False) -> Agent:
        self.registries.append(registry)
        return _measure.agent_with(registry, yield_once=yield_once)

    def workloads(self) -> list[_measure.Workload]:
        """What is timed: every agent's ``run``, and the SDK baseline."""
        works = [
            _measure.Workload(name, agent.run, vary=name != "cache_hit")
            for name, agent in self.agents.items()
        ]
        works.insert(2, _measure.Workload("sdk_baseline", self.by_hand.run, vary=True))
        works += [
            _measure.Workload(f"{name}_yielding", agent.run, vary=True)
            for name, agent in self.yielding.items()
        ]
        works += [_measure.Workload(name, c.once) for name, c in self.compactions.items()]
        return works

    async def between(self) -> None:
        """Empty the exporter and the rate limits' windows (memory stays flat)."""
        self.sdk.clear()
        await empty_windows(self.registries)

    async def check(self) -> None:
        """Fail loudly if a workload is not what its figure claims it is."""
        checked = f"{_measure.PROMPT} (check)"
        for name, agent in (*self.agents.items(), *self.yielding.items()):
            result = (await agent.run(checked)).unwrap()
            if result.output != ANSWER or result.rounds != 2:
                msg = f"{name}: unexpected run result {result!r}"
                raise RuntimeError(msg)
        self.sdk.clear()
        for name, compaction in self.compactions.items():
            await compaction.check(name)
        hits: dict[str, list[object]] = {}
        for name, prompt in (
            ("miss", f"{_measure.PROMPT} (new)"),
            ("hit", checked),
        ):  # cached above
            await self.agents["stack"].run(prompt)
            spans = self.sdk.exporter.get_finished_spans()
            hits[name] = [
                (s.attributes or {}).get("fncore.cache.hit")
                for s in spans
                if s.name == "chat instant"
            ]
            self.sdk.clear()
        if hits != {"miss": [False, False], "hit": [True, True]}:
            msg = f"the stack's cache did not miss, then hit, as expected: {hits}"
            raise RuntimeError(msg)
        traced, by_hand = _measure.Sdk(), _measure.Sdk()
        await _measure.agent_with(sdk_trace(traced)).run(_measure.PROMPT)
        await _measure.HandTraced(by_hand).run(_measure.PROMPT)
        expected, made = _measure.recorded(traced), _measure.recorded(by_hand)
        if made != expected:
            msg = f"the SDK baseline does not record what trace does:\n{expected}\n{made}"
            raise RuntimeError(msg)


REDACT_TEXT = (
    "Thanks for the update on the quarterly report. Please send the draft to "
    "ann.lee@example.org before Friday, and copy the team lead. "
)
"""A message of ordinary length with one value to find, for the redaction figures."""


def _per_call_us(fn: Callable[[], object], calls: int, rounds: int) -> float:
    """The best mean cost of ``fn`` over ``rounds`` rounds of ``calls`` calls, in µs."""
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - started) / calls * 1e6)
    return best


def redaction_costs(rounds: int, runs: int) -> dict[str, float]:
    """``redact_pii``'s redactor alone: per streamed chunk, and per 1,000-message history."""
    detectors = tuple(BUILTIN.values())
    rules = Rules(detectors, {d.name: "redact" for d in detectors}, None)
    chunks = [REDACT_TEXT[i : i + 8] for i in range(0, len(REDACT_TEXT), 8)]
    streamer = Streamer(rules.outward(None), 256)
    cycle = iter(range(0))

    def one_chunk() -> None:
        nonlocal cycle
        index = next(cycle, None)
        if index is None:
            cycle = iter(range(len(chunks)))
            index = next(cycle)
        streamer.feed(chunks[index])

    history = tuple(
        Message.user(REDACT_TEXT) if n % 2 == 0 else Message.assistant(REDACT_TEXT)
        for n in range(1000)
    )
    request = ModelRequest(history)
    return {
        "redact_chunk_us": _per_call_us(one_chunk, max(runs, 100), rounds),
        "redact_1k_messages_us": _per_call_us(
            lambda: rules.inward(None).request(request), max(runs // 100, 2), rounds
        ),
    }


STACK = ("trace_sdk", "retry", "limit_calls", "budget", "rate_limit", "cache_miss")
"""The production stack's built-ins, by their ``marginal_us`` names."""


async def measure(rounds: int, runs: int) -> _measure.Figures:
    """Every figure: per-run costs (minimum over rounds), differences and ratios."""
    setup = Setup()
    await setup.check()
    best = await _measure.minimum_of_rounds(setup.workloads(), rounds, runs, setup.between)
    bare, stack, baseline = best["bare"], best["stack"], best["sdk_baseline"]
    untraced = best["stack_untraced"]
    marginal = {name: best[name] - bare for name in setup.alone}
    bare_yielding = best["bare_yielding"]
    return {
        "bare_us": bare,
        "stack_us": stack,
        "sdk_baseline_us": baseline,
        "stack_ratio": stack / bare,
        "stack_ratio_vs_sdk_baseline": stack / baseline,
        "target_stack_ratio_vs_sdk_baseline": TARGET_STACK_RATIO_VS_SDK_BASELINE,
        "stack_untraced_us": untraced,
        "stack_ratio_untraced": untraced / bare,
        "target_stack_ratio_untraced": TARGET_STACK_RATIO_UNTRACED,
        "stack_extra_us": stack - bare,
        "sdk_by_hand_us": baseline - bare,
        "stack_over_sdk_baseline_us": stack - baseline,
        "marginal_us": marginal,
        "marginal_sum_stack_us": sum(marginal[name] for name in STACK),
        "with_us": {name: best[name] for name in setup.alone},
        "bare_yielding_us": bare_yielding,
        "stack_yielding_us": best["stack_yielding"],
        "stack_ratio_yielding": best["stack_yielding"] / bare_yielding,
        "rate_limit_yielding_marginal_us": best["rate_limit_yielding"] - bare_yielding,
        "target_rate_limit_yielding_marginal_us": TARGET_RATE_LIMIT_YIELDING_US,
        **redaction_costs(rounds, runs),
        "compact_window_1k_us": best["compact_window_1k"],
        "compact_clear_1k_us": best["compact_clear_1k"],
        "rounds": rounds,
        "runs": runs,
    }


def _us(value: float) -> str:
    return f"{value:8.1f} µs"


def _extra(value: float) -> str:
    return f"{value:+8.1f} µs"


ROWS: list[tuple[str, str, Callable[[float], str]]] = [
    ("bare_us", "a run, no middleware", _us),
    ("stack_us", "with the production stack", _us),
    ("stack_untraced_us", "with the production stack less trace", _us),
    ("sdk_baseline_us", "bare + the same spans and metrics by hand (SDK)", _us),
    ("stack_extra_us", "the stack's cost", _extra),
    ("sdk_by_hand_us", "  of which the SDK's spans and metrics by hand", _extra),
    ("stack_over_sdk_baseline_us", "  of which fncore's (stack - SDK baseline)", _extra),
    ("marginal_sum_stack_us", "  the stack's built-ins one by one, summed", _extra),
]

YIELDING_ROWS: list[tuple[str, str, Callable[[float], str]]] = [
    ("bare_yielding_us", "a run, no middleware", _us),
    ("stack_yielding_us", "with the production stack", _us),
]

REDACT_ROWS: list[tuple[str, str, Callable[[float], str]]] = [
    ("redact_chunk_us", "per streamed chunk of 8 characters (window 256)", _us),
    ("redact_1k_messages_us", "per request of 1,000 messages (~130 characters)", _us),
]

COMPACT_ROWS: list[tuple[str, str, Callable[[float], str]]] = [
    ("compact_window_1k_us", "sliding window (keep 100 groups)", _us),
    ("compact_clear_1k_us", "tool-result clearing (keep 3 results)", _us),
]

LABELS = {
    "trace_sdk": "trace (SDK providers, in-memory export)",
    "retry": "retry (nothing fails)",
    "retry_tools": "retry_tools (nothing fails)",
    "fallback": "fallback (the primary answers)",
    "limit_calls": "limit_calls (defaults)",
    "budget": "budget (defaults)",
    "rate_limit": "rate_limit (memory://, never waits)",
    "cache_miss": "cache, missing (memory://)",
    "cache_hit": "cache, hitting (memory://)",
    "timeout": "timeout (defaults)",
    "repair_history": "repair_history (a valid history)",
    "patch_tool_calls": "patch_tool_calls (valid arguments)",
    "redact_pii": "redact_pii (defaults; nothing to redact)",
    "guard": "guard (a deny pattern, an output guardrail)",
    "instructions": "instructions (a prompt function and the date)",
    "emulate_tools": "emulate_tools (a model call instead of the tool)",
    "select_tools": "select_tools (one tool: no selection call)",
    "cache_prompt": "cache_prompt (defaults; not an OpenAI model)",
    "compact": "compact (defaults, under its trigger)",
}


def _verdict(value: float, target: float) -> str:
    return f"target <= {target:g}  {'PASS' if value <= target else 'MISS'}"


def report(figures: _measure.Figures) -> str:
    """The figures as a human-readable table."""
    ratio = figures["stack_ratio"]
    untraced = figures["stack_ratio_untraced"]
    vs_sdk = figures["stack_ratio_vs_sdk_baseline"]
    ratio_yielding = figures["stack_ratio_yielding"]
    rate_limit_yielding = figures["rate_limit_yielding_marginal_us"]
    lines = [
        f"built-in middleware, cost per run ({figures['rounds']} rounds of {figures['runs']} "
        "runs; minimum of round means)",
        "workload: 1 user message -> model calls add(a, b) -> tool runs -> model answers text",
        "stack: trace (SDK), retry, limit_calls, budget, rate_limit (memory://), cache (miss)",
        "",
        *(f"  {label:<50} {shown(figures[key])}" for key, label, shown in ROWS),
        "",
        f"  {'stack_ratio (stack / bare)':<50} {ratio:8.2f}",
        f"  {'stack_ratio_untraced (stack less trace / bare)':<50} {untraced:8.2f}     "
        f"{_verdict(untraced, TARGET_STACK_RATIO_UNTRACED)}",
        f"  {'stack_ratio_vs_sdk_baseline (stack / SDK by hand)':<50} {vs_sdk:8.2f}     "
        f"{_verdict(vs_sdk, TARGET_STACK_RATIO_VS_SDK_BASELINE)}",
        "",
        "  each built-in alone: bare + it, minus bare",
        *(f"    {LABELS[k]:<48} {_extra(v)}" for k, v in figures["marginal_us"].items()),
        "",
        "  the model yielding to the event loop once per call, as a real one does",
        *(f"  {label:<50} {shown(figures[key])}" for key, label, shown in YIELDING_ROWS),
        f"  {'stack / bare, yielding':<50} {ratio_yielding:8.2f}",
        f"  {'rate_limit alone: bare + it, minus bare':<50} {_extra(rate_limit_yielding)}  "
        f"{_verdict(rate_limit_yielding, TARGET_RATE_LIMIT_YIELDING_US)}",
        "",
        "  redact_pii's redactor alone (every detector, redact)",
        *(f"  {label:<50} {shown(figures[key])}" for key, label, shown in REDACT_ROWS),
        "",
        "  compact: one compaction of a 1,000-message history with tool groups",
        *(f"  {label:<50} {shown(figures[key])}" for key, label, shown in COMPACT_ROWS),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its figures."""
    return _measure.main(__doc__, argv, measure, report)


if __name__ == "__main__":
    raise SystemExit(main())
