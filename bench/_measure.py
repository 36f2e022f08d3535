"""What the benchmarks of the built-in middleware share: the workload, the SDK, the timing.

The reference workload of ``overhead.py``: one user message; the model (in-process, zero
latency) answers with one tool call ``add(a, b)``, the tool runs, the model answers with
text. Its responses carry usage, as a provider's do, so what counts tokens has some to count.

Timing: every workload is timed in each of several rounds, one after the other in the same
process and event loop; a workload's figure is the minimum of its per-round means (on a
shared machine noise only ever adds time, so the quietest round is the best estimate).
Before each workload's round, what the process holds is collected and then moved out of
the garbage collector's sight (``gc.freeze``, as ``growth.py`` does): a full collection
that a round sets off walks what that workload's runs made and kept, not every other
workload's agents, stores and exported spans. Otherwise whether a round pays a walk of the
whole process (about 390,000 objects in ``builtins.py``) depends on whether its runs keep
more than a quarter of that alive: the stack's rounds did, its SDK baseline's, keeping a
little less, did not. The collector still runs as usual, counting from what it does not
hold frozen.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.metrics import Histogram
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Tracer
from opentelemetry.util.types import AttributeValue
from returns.result import Result, Success

from fncore import (
    Agent,
    Message,
    ModelError,
    ModelRequest,
    ModelResponse,
    Registry,
    RunOutcome,
    Tool,
    Usage,
)
from fncore.core import ModelStreamItem, ToolCallPart

PROMPT = "What is 1 + 2?"
"""The user message of every run (numbered, where each run must differ)."""


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


_CALL: Result[ModelResponse, ModelError] = Success(
    ModelResponse(
        Message("assistant", (ToolCallPart("call_0", "add", '{"a": 1, "b": 2}'),)),
        Usage(12, 8, requests=1),
        "tool_calls",
        "instant",
    )
)
_TEXT: Result[ModelResponse, ModelError] = Success(
    ModelResponse(Message.assistant("1 + 2 = 3."), Usage(20, 6, requests=1), "stop", "instant")
)


class InstantModel:
    """Answers at once with prebuilt responses: a tool call, then text after the result.

    Args:
        yield_once: Give the event loop one turn per request (``asyncio.sleep(0)``), as a
            real model's network call does; without it a run never lets the loop turn, so
            what is scheduled to run later (a background task, a worker thread's result)
            is not timed.
    """

    name = "instant"

    def __init__(self, *, yield_once: bool = False) -> None:
        self._yield = yield_once

    async def request(self, request: ModelRequest) -> Result[ModelResponse, ModelError]:
        """The tool call, or the text once a tool result is in the history."""
        if self._yield:
            await asyncio.sleep(0)
        return _TEXT if request.messages[-1].role == "tool" else _CALL

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamItem]:
        """The same response, unstreamed."""
        yield (await self.request(request)).unwrap()


def agent_with(registry: Registry | None, *, yield_once: bool = False) -> Agent:
    """The workload's agent, with ``registry`` (none: no middleware).

    Args:
        registry: The middleware.
        yield_once: Passed to `InstantModel`.
    """
    tool = Tool.from_function(add, inline=True)
    model = InstantModel(yield_once=yield_once)
    return Agent(model, registry=registry or Registry(), tools=[tool])


class Sdk:
    """The SDK's providers, exporting to memory; `clear` empties them between rounds."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider(shutdown_on_exit=False)
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader], shutdown_on_exit=False)

    def clear(self) -> None:
        """Forget the spans exported so far (metrics aggregate and do not grow)."""
        self.exporter.clear()


# -- the same spans and measurements as ``trace``, made by hand --------------------------

_RUN_START: dict[str, AttributeValue] = {
    "gen_ai.operation.name": "invoke_agent",
    "gen_ai.agent.name": "agent",
    "fncore.run.id": "by-hand",
}
_CHAT_START: dict[str, AttributeValue] = {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": __name__,
    "gen_ai.request.model": "instant",
    "fncore.attempt": 1,
}
_MEASURED: dict[str, AttributeValue] = {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": __name__,
    "gen_ai.request.model": "instant",
    "gen_ai.response.model": "instant",
}
_INPUT: dict[str, AttributeValue] = {**_MEASURED, "gen_ai.token.type": "input"}
_OUTPUT: dict[str, AttributeValue] = {**_MEASURED, "gen_ai.token.type": "output"}
_TOOL: dict[str, AttributeValue] = {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": "add",
    "gen_ai.tool.call.id": "call_0",
    "gen_ai.tool.type": "function",
    "gen_ai.tool.description": "Add two integers.",
}


class _HandTracedModel(InstantModel):
    """`InstantModel` opening a ``chat`` span and recording metrics around each answer."""

    def __init__(self, tracer: Tracer, duration: Histogram, tokens: Histogram) -> None:
        super().__init__()
        self._tracer = tracer
        self._duration = duration
        self._tokens = tokens

    async def request(self, request: ModelRequest) -> Result[ModelResponse, ModelError]:
        """The answer, in its span; its duration and tokens recorded."""
        started = time.perf_counter()
        span = self._tracer.start_span("chat instant", kind=SpanKind.CLIENT, attributes=_CHAT_START)
        token = otel_context.attach(otel_trace.set_span_in_context(span))
        try:
            outcome = await super().request(request)
        finally:
            otel_context.detach(token)
        seconds = time.perf_counter() - started
        response = outcome.unwrap()
        usage = response.usage
        span.set_attributes(
            {
                "gen_ai.response.finish_reasons": (response.finish_reason,),
                "gen_ai.response.model": response.model_name,
                "gen_ai.usage.input_tokens": usage.input_tokens,
                "gen_ai.usage.output_tokens": usage.output_tokens,
            }
        )
        span.end()
        self._duration.record(seconds, _MEASURED)
        self._tokens.record(usage.input_tokens, _INPUT)
        self._tokens.record(usage.output_tokens, _OUTPUT)
        return outcome


class HandTraced:
    """A run with no middleware, its spans and metrics made by hand with the SDK's API.

    The same four spans as ``trace`` (``invoke_agent`` around the run, a ``chat`` span per
    model call and an ``execute_tool`` span, each current while it lasts) with the same
    attributes, and the same six measurements, from the model and the tool themselves: what
    the OpenTelemetry SDK costs for this run, with nothing of fncore's middleware.
    """

    def __init__(self, sdk: Sdk) -> None:
        tracer = sdk.tracer_provider.get_tracer("by_hand")
        meter = sdk.meter_provider.get_meter("by_hand")
        duration = meter.create_histogram("gen_ai.client.operation.duration", unit="s")
        tokens = meter.create_histogram("gen_ai.client.token.usage", unit="{token}")
        self._tracer = tracer

        def add(a: int, b: int) -> int:
            """Add two integers."""
            span = tracer.start_span("execute_tool add", attributes=_TOOL)
            token = otel_context.attach(otel_trace.set_span_in_context(span))
            try:
                return a + b
            finally:
                otel_context.detach(token)
                span.end()

        tool = Tool.from_function(add, inline=True)
        model = _HandTracedModel(tracer, duration, tokens)
        self._agent = Agent(model, registry=Registry(), tools=[tool])

    async def run(self, prompt: str) -> RunOutcome:
        """``agent.run(prompt)`` in an ``invoke_agent`` span."""
        span = self._tracer.start_span("invoke_agent agent", attributes=_RUN_START)
        token = otel_context.attach(otel_trace.set_span_in_context(span))
        try:
            outcome = await self._agent.run(prompt)
        finally:
            otel_context.detach(token)
        result = outcome.unwrap()
        usage = result.usage
        span.set_attributes(
            {
                "gen_ai.provider.name": __name__,
                "gen_ai.request.model": "instant",
                "fncore.stop_reason": result.stop_reason,
                "fncore.rounds": result.rounds,
                "gen_ai.usage.input_tokens": usage.input_tokens,
                "gen_ai.usage.output_tokens": usage.output_tokens,
            }
        )
        span.end()
        return outcome


def recorded(sdk: Sdk) -> list[tuple[str, ...]]:
    """What ``sdk`` recorded, by shape; then forgets the spans.

    Each span's name, kind, parent and attribute names; each metric point's name, count and
    attribute names. Equal shapes, equal work for the SDK.
    """
    spans = sdk.exporter.get_finished_spans()
    ids = {s.context.span_id: s.name for s in spans if s.context is not None}
    shapes = [
        (
            s.name,
            s.kind.name,
            ids.get(s.parent.span_id, "?") if s.parent else "-",
            *sorted(s.attributes or {}),
        )
        for s in spans
    ]
    data = sdk.reader.get_metrics_data()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    count = str(getattr(point, "count", "?"))
                    shapes.append((metric.name, count, *sorted(point.attributes or {})))
    sdk.clear()
    return sorted(shapes)


# -- timing -------------------------------------------------------------------------------

_numbers = itertools.count()


def prompts(runs: int, *, vary: bool) -> list[str]:
    """``runs`` prompts: each one never seen before (``vary``), or `PROMPT` each time."""
    if not vary:
        return [PROMPT] * runs
    return [f"{PROMPT} (#{n})" for n in itertools.islice(_numbers, runs)]


@dataclass(frozen=True)
class Workload:
    """One timed thing: an async function of the prompt, such as ``agent.run``."""

    name: str
    run: Callable[[str], Awaitable[object]]
    vary: bool = False
    """Give each run a prompt never seen before (else the same prompt every run)."""


async def mean_us(run: Callable[[str], Awaitable[object]], texts: Sequence[str]) -> float:
    """Mean microseconds per ``run(text)``, over ``texts`` one after the other."""
    started = time.perf_counter()
    for text in texts:
        await run(text)
    return (time.perf_counter() - started) / len(texts) * 1e6


async def minimum_of_rounds(
    workloads: Sequence[Workload],
    rounds: int,
    runs: int,
    between: Callable[[], Awaitable[None]],
) -> dict[str, float]:
    """Each workload's minimum over ``rounds`` of its mean µs per run (``runs`` runs a round).

    Each workload is warmed up first; ``between`` runs after each timed round of each
    workload (to empty what the round filled), outside the timing, and then the event loop
    gets a turn (to drop the timers a run cancelled, say, if the run never let it turn).
    Before each timed round, a full collection, then what is alive is frozen (``gc.freeze``)
    so that the round's collections walk only what its own runs made, and one more (of
    nothing) so that the collector's count of what it holds starts from nothing: a full
    collection comes when the round's runs have kept enough, not a quarter of the process.
    """
    for work in workloads:
        await work.run(PROMPT)  # a first run makes what is made once (a cache's entry, say)
        await mean_us(work.run, prompts(max(runs // 10, 10), vary=work.vary))
    await between()
    best: dict[str, float] = dict.fromkeys((w.name for w in workloads), float("inf"))
    for _ in range(rounds):
        for work in workloads:
            texts = prompts(runs, vary=work.vary)
            gc.collect()
            gc.freeze()  # what the process holds now is no garbage of this round's runs
            gc.collect()  # the collector counts from what is not frozen: from nothing
            best[work.name] = min(best[work.name], await mean_us(work.run, texts))
            await between()
            await asyncio.sleep(0)
    return best


Figures = Mapping[str, Any]
"""What a benchmark measured, by name; ``rounds`` and ``runs`` among them."""


def arguments(
    doc: str | None, *, rounds: tuple[int, int], runs: tuple[int, int]
) -> argparse.ArgumentParser:
    """A benchmark's parser: ``--json``, ``--quick``, ``--rounds`` and ``--runs``.

    Args:
        doc: The script's docstring (its first line describes the command).
        rounds: The default rounds: of a full run, of a ``--quick`` one.
        runs: The default runs per round: of a full run, of a ``--quick`` one.
    """
    parser = argparse.ArgumentParser(description=doc.splitlines()[0] if doc else None)
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    parser.add_argument("--quick", action="store_true", help="a fast, rough smoke run")
    parser.add_argument("--rounds", type=int, default=None, help=f"rounds ({rounds[0]})")
    parser.add_argument("--runs", type=int, default=None, help=f"runs per round ({runs[0]})")
    return parser


def chosen(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    *,
    rounds: tuple[int, int],
    runs: tuple[int, int],
) -> tuple[int, int]:
    """The rounds and runs per round ``args`` ask for (a usage error unless positive).

    Args:
        parser: The parser of `arguments`, which reports a usage error.
        args: What it parsed.
        rounds: The default rounds: of a full run, of a ``--quick`` one.
        runs: The default runs per round: of a full run, of a ``--quick`` one.
    """
    quick = 1 if args.quick else 0
    chosen_rounds, chosen_runs = args.rounds or rounds[quick], args.runs or runs[quick]
    if chosen_rounds < 1 or chosen_runs < 1:
        parser.error("--rounds and --runs must be positive")
    return chosen_rounds, chosen_runs


def main(
    doc: str | None,
    argv: list[str] | None,
    measure: Callable[[int, int], Coroutine[Any, Any, Figures]],
    report: Callable[[Figures], str],
    *,
    rounds: tuple[int, int] = (9, 2),
    runs: tuple[int, int] = (2000, 100),
) -> int:
    """A benchmark script's command line: measure, print the table and, asked, one JSON line.

    Args:
        doc: The script's docstring (its first line describes the command).
        argv: Command-line arguments (default: ``sys.argv[1:]``).
        measure: Takes rounds and runs per round, returns the figures.
        report: The figures as a human-readable table.
        rounds: The default rounds: of a full run, of a ``--quick`` one.
        runs: The default runs per round: of a full run, of a ``--quick`` one.

    Returns:
        The exit status.
    """
    parser = arguments(doc, rounds=rounds, runs=runs)
    args = parser.parse_args(argv)
    rounds_chosen, runs_chosen = chosen(parser, args, rounds=rounds, runs=runs)
    figures = asyncio.run(measure(rounds_chosen, runs_chosen))
    print(report(figures))
    if args.json:
        print(json.dumps(figures))
    return 0
