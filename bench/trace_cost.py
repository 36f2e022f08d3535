"""Measure what the ``trace`` built-in costs per run: with no provider, and with the SDK's.

The reference workload of ``overhead.py``: one user message; the model (in-process, zero
latency) answers with one tool call ``add(a, b)``, the tool runs, the model answers with
text. Each run is one ``invoke_agent`` span, two ``chat`` spans and one ``execute_tool``
span, and two duration and four token-usage measurements.

Workloads, in interleaved rounds in one process; each figure is the minimum of the
per-round means (noise only ever adds time):

* ``bare``: ``agent.run`` with no middleware;
* ``layers``: four pass-through middleware where ``trace`` has its four (``run``, two at
  ``model_call``, ``tool_call``): what switching those positions on costs any middleware;
* ``off``: ``bare`` with ``trace()`` and no tracer or meter provider configured (the API's
  own proxies, as in a process that never set up OpenTelemetry);
* ``sdk``: the same with ``trace()`` on the SDK's tracer provider (a simple span processor
  into an in-memory exporter) and meter provider (an in-memory reader);
* ``content``: ``sdk`` with ``capture_content=True``.

Usage::

    python bench/trace_cost.py            # full run, human-readable table
    python bench/trace_cost.py --json     # the same, then one JSON object as the last line
    python bench/trace_cost.py --quick    # a fast smoke run (figures are rough)
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from returns.result import Result, Success

from fncore import Agent, Message, ModelError, ModelRequest, ModelResponse, Registry, Tool, Usage
from fncore.core import ModelStreamItem, ToolCallPart
from fncore.middleware import trace

PROMPT = "What is 1 + 2?"


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
    """Answers at once with prebuilt responses: a tool call, then text after the result."""

    name = "instant"

    async def request(self, request: ModelRequest) -> Result[ModelResponse, ModelError]:
        """The tool call, or the text once a tool result is in the history."""
        return _TEXT if request.messages[-1].role == "tool" else _CALL

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamItem]:
        """The same response, unstreamed."""
        yield (await self.request(request)).unwrap()


def agent_with(registry: Registry | None) -> Agent:
    """The workload's agent, with ``registry`` (none: no middleware)."""
    tool = Tool.from_function(add, inline=True)
    return Agent(InstantModel(), registry=registry or Registry(), tools=[tool])


def pass_through() -> Registry:
    """Four middleware that only call the next, where ``trace`` has its four."""
    registry = Registry()

    async def through(ctx: Any, call_next: Any) -> Any:
        return await call_next(ctx)

    registry.on("run", name="run")(through)
    registry.on("model_call", name="outer")(through)
    registry.on("model_call", name="inner")(through)
    registry.on("tool_call", name="tool")(through)
    return registry


def traced(**options: Any) -> Registry:
    """A registry holding ``trace(**options)``."""
    registry = Registry()
    registry.include(trace(**options))
    return registry


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


async def mean_us(agent: Agent, runs: int) -> float:
    """Mean microseconds per ``agent.run`` over ``runs`` runs."""
    started = time.perf_counter()
    for _ in range(runs):
        await agent.run(PROMPT)
    return (time.perf_counter() - started) / runs * 1e6


async def measure(rounds: int, runs: int) -> dict[str, float]:
    """Every figure: per-run costs (minimum over rounds) and their differences and ratios."""
    sdk = Sdk()
    providers = {"tracer_provider": sdk.tracer_provider, "meter_provider": sdk.meter_provider}
    agents: dict[str, Agent] = {
        "bare": agent_with(None),
        "layers": agent_with(pass_through()),
        "off": agent_with(traced()),
        "sdk": agent_with(traced(**providers)),
        "content": agent_with(traced(capture_content=True, **providers)),
    }
    for agent in agents.values():  # warm up
        await mean_us(agent, max(runs // 10, 10))
    sdk.clear()
    best: dict[str, float] = dict.fromkeys(agents, float("inf"))
    for _ in range(rounds):
        for name, agent in agents.items():
            gc.collect()
            best[name] = min(best[name], await mean_us(agent, runs))
            sdk.clear()
    bare = best["bare"]
    return {
        "bare_us": bare,
        "layers_us": best["layers"],
        "off_us": best["off"],
        "sdk_us": best["sdk"],
        "content_us": best["content"],
        "off_extra_us": best["off"] - bare,
        "off_own_us": best["off"] - best["layers"],
        "sdk_extra_us": best["sdk"] - bare,
        "content_extra_us": best["content"] - bare,
        "off_ratio": best["off"] / bare,
        "sdk_ratio": best["sdk"] / bare,
    }


ROWS: list[tuple[str, str, Callable[[float], str]]] = [
    ("bare_us", "a run, no middleware", lambda v: f"{v:8.1f} µs"),
    ("layers_us", "with 4 pass-through layers in trace's places", lambda v: f"{v:8.1f} µs"),
    ("off_us", "with trace, no provider configured", lambda v: f"{v:8.1f} µs"),
    ("sdk_us", "with trace, SDK providers, in-memory export", lambda v: f"{v:8.1f} µs"),
    ("content_us", "the same, capture_content=True", lambda v: f"{v:8.1f} µs"),
    ("off_extra_us", "trace's cost, no provider", lambda v: f"{v:8.2f} µs"),
    ("off_own_us", "  of which beyond 4 pass-through layers", lambda v: f"{v:8.2f} µs"),
    ("sdk_extra_us", "trace's cost, SDK (4 spans, 6 measurements)", lambda v: f"{v:8.1f} µs"),
    ("off_ratio", "no provider / bare", lambda v: f"{v:8.3f}"),
    ("sdk_ratio", "SDK / bare", lambda v: f"{v:8.2f}"),
]


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    parser.add_argument("--quick", action="store_true", help="a fast, rough smoke run")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds (9)")
    parser.add_argument("--runs", type=int, default=None, help="runs per round (2000)")
    args = parser.parse_args(argv)
    rounds = args.rounds or (2 if args.quick else 9)
    runs = args.runs or (100 if args.quick else 2000)
    figures = asyncio.run(measure(rounds, runs))
    print(f"trace cost per run ({rounds} rounds of {runs} runs; minimum of round means)")
    for key, label, shown in ROWS:
        print(f"  {label:<48} {shown(figures[key])}")
    if args.json:
        print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
