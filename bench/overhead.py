"""Measure fncore's own overhead against a hand-written loop and bare async closures.

The reference workload is one user message; the model answers with one tool call
``add(a, b)``, the tool runs, the model answers with text. The model is in-process and
answers at once with prebuilt responses, so what is measured is the framework.

Figures, all from one process and one event loop, in interleaved rounds. The headline
figure of each workload is the minimum of its per-round means: on a shared machine the
noise only ever adds time, so the quietest round is the best estimate; the median is
shown too, with the spread (max - min) / median across rounds.

* ``base``: ``agent.run`` with no middleware;
* ``mw``: the same with 10 pass-through middleware at each of ``run``, ``model_call`` and
  ``tool_call`` (40 layer calls per run: 10 + 2 x 10 + 1 x 10);
* ``mw1``: the same with 1 middleware at each of the three positions (4 layer calls), so
  that the cost of one *extra* layer, ``(mw - mw1) / 36``, is told apart from the one-off
  cost of switching a position on (a context object and the innermost adapter);
* ``floor``: the same workload as a hand-written async loop over plain dicts and lists;
* ``closure``: a chain of 10 bare async closures, the floor of one layer;
* ``closure_run``: ``base`` with the model behind 10 bare async closures (against 1 in
  ``closure_run1``), so that a bare closure layer is also timed where a middleware layer
  is, inside a run (an informative figure, ``layer_ratio_in_run``; the target is on
  ``layer_ratio``);
* ``history``: ``base`` continuing a session that holds 1,000 prior messages (tool rounds
  included), loaded from and committed to a session store each run;
* ``concurrent``: wall time and peak memory of 1,000 runs gathered on one agent.

Usage::

    python bench/overhead.py            # full run, human-readable table
    python bench/overhead.py --json     # the same, then one JSON object as the last line
    python bench/overhead.py --quick    # a fast smoke run (figures are rough)
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import platform
import resource
import statistics
import sys
import time
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from returns.result import Result, Success

from fncore import (
    Agent,
    InMemorySessionStore,
    Message,
    ModelCallContext,
    ModelCallNext,
    ModelError,
    ModelRequest,
    ModelResponse,
    Outcome,
    Registry,
    RunContext,
    RunNext,
    RunResult,
    Session,
    SessionUpdate,
    Tool,
    ToolCallContext,
    ToolCallNext,
    ToolCallPart,
    ToolResult,
    ToolResultPart,
)
from fncore.core import ModelStreamItem
from fncore.core._fold import Handler, fold_onion

PROMPT = "What is 1 + 2?"
"""The user message of every run."""
ARGUMENTS = '{"a": 1, "b": 2}'
"""The JSON arguments of the model's tool call."""
ANSWER = "1 + 2 = 3."
"""The model's final text."""
DEPTH = 10
"""Middleware per position, and closures in the floor chain."""
LAYER_CALLS = DEPTH + 2 * DEPTH + DEPTH
"""Layer calls per run with the middleware stack: run once, model_call twice, tool_call once."""
ONE_LAYER_CALLS = 1 + 2 + 1
"""Layer calls per run with one middleware per position."""
MODEL_CALLS = 2
"""Model calls per run: the tool call, then the text."""
TARGET_BASE_RATIO = 4.5
"""Goal: a 0-middleware run costs at most this many hand-written loops."""
TARGET_LAYER_RATIO = 3.0
"""Goal: one middleware layer costs at most this many bare closure layers."""
TARGET_HISTORY_RATIO = 2.0
"""Goal: a run of a session with `HISTORY` prior messages costs at most this many base runs."""
HISTORY = 1000
"""Prior messages in the ``history`` workload's session."""


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


ADD = Tool.from_function(add, inline=True)
"""The agent's tool: ``add`` called inline, as the hand-written loop calls it (a sync tool
otherwise runs in a worker thread, which would time the thread hop, not the framework)."""


# -- fncore side ---------------------------------------------------------------------------

_CALL_RESPONSE: Result[ModelResponse, ModelError] = Success(
    ModelResponse(
        Message("assistant", (ToolCallPart("call_0", "add", ARGUMENTS),)),
        finish_reason="tool_calls",
    )
)
_TEXT_RESPONSE: Result[ModelResponse, ModelError] = Success(
    ModelResponse(Message.assistant(ANSWER), finish_reason="stop")
)


class InstantModel:
    """A model that answers at once with prebuilt responses.

    It asks for ``add`` until it sees a tool result, then answers with text. Its cost is
    one attribute check, so the measurement is the framework's.

    Args:
        yield_once: Give the event loop one turn per request (``asyncio.sleep(0)``), so
            that gathered runs are really in flight at the same time.
    """

    __slots__ = ("_yield", "in_flight", "peak_in_flight")

    name = "instant"

    def __init__(self, *, yield_once: bool = False) -> None:
        self._yield = yield_once
        self.in_flight = 0
        self.peak_in_flight = 0

    async def request(self, request: ModelRequest) -> Result[ModelResponse, ModelError]:
        """Return the tool call, or the text answer once a tool result is in the history."""
        if self._yield:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            await asyncio.sleep(0)
            self.in_flight -= 1
        if request.messages[-1].role == "tool":
            return _TEXT_RESPONSE
        return _CALL_RESPONSE

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamItem]:
        """Yield the same response ``request`` returns (no deltas)."""
        yield (await self.request(request)).unwrap()


def _run_layer() -> Callable[[RunContext, RunNext], Coroutine[object, object, Outcome[RunResult]]]:
    async def passthrough(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        return await call_next(ctx)

    return passthrough


def _model_layer() -> Callable[
    [ModelCallContext, ModelCallNext], Coroutine[object, object, Outcome[ModelResponse]]
]:
    async def passthrough(
        ctx: ModelCallContext, call_next: ModelCallNext
    ) -> Outcome[ModelResponse]:
        return await call_next(ctx)

    return passthrough


def _tool_layer() -> Callable[
    [ToolCallContext, ToolCallNext], Coroutine[object, object, Outcome[ToolResult]]
]:
    async def passthrough(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        return await call_next(ctx)

    return passthrough


def middleware_registry(depth: int) -> Registry:
    """A registry with ``depth`` distinct pass-through middleware at run, model_call, tool_call.

    Args:
        depth: Middleware per position.

    Returns:
        The registry.
    """
    registry = Registry()
    for i in range(depth):
        registry.on("run", name=f"run_{i}")(_run_layer())
        registry.on("model_call", name=f"model_call_{i}")(_model_layer())
        registry.on("tool_call", name=f"tool_call_{i}")(_tool_layer())
    return registry


def counting_registry(depth: int, counter: list[int]) -> Registry:
    """Like `middleware_registry`, but every layer adds one to ``counter[0]``.

    Args:
        depth: Middleware per position.
        counter: A one-element list incremented by each layer call.

    Returns:
        The registry.
    """
    registry = Registry()

    async def run_mw(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        counter[0] += 1
        return await call_next(ctx)

    async def model_mw(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        counter[0] += 1
        return await call_next(ctx)

    async def tool_mw(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        counter[0] += 1
        return await call_next(ctx)

    for i in range(depth):
        registry.on("run", name=f"run_{i}")(run_mw)
        registry.on("model_call", name=f"model_call_{i}")(model_mw)
        registry.on("tool_call", name=f"tool_call_{i}")(tool_mw)
    return registry


def make_agent(depth: int, *, yield_once: bool = False) -> Agent:
    """An agent on `InstantModel` with tool ``add`` and ``depth`` layers per position.

    Args:
        depth: Pass-through middleware per position (0 for none).
        yield_once: Passed to `InstantModel`.

    Returns:
        The agent.
    """
    return Agent(
        InstantModel(yield_once=yield_once),
        registry=middleware_registry(depth),
        tools=[ADD],
    )


class ClosureModel:
    """`InstantModel` behind ``depth`` bare async closures: closure layers inside a run.

    Args:
        depth: Closures around the model's ``request``.
    """

    __slots__ = ("_chain", "_model")

    name = "instant"

    def __init__(self, depth: int) -> None:
        self._model = InstantModel()
        # Not `closure_chain`'s code: closures of one code object share CPython's inline
        # caches, and timing these in runs would slow that chain's tight loop by a third.
        chain: Callable[[ModelRequest], Awaitable[Result[ModelResponse, ModelError]]]
        chain = self._model.request
        for _ in range(depth):

            def wrap(
                nxt: Callable[[ModelRequest], Awaitable[Result[ModelResponse, ModelError]]],
            ) -> Callable[[ModelRequest], Awaitable[Result[ModelResponse, ModelError]]]:
                async def layer(request: ModelRequest) -> Result[ModelResponse, ModelError]:
                    return await nxt(request)

                return layer

            chain = wrap(chain)
        self._chain = chain

    async def request(self, request: ModelRequest) -> Result[ModelResponse, ModelError]:
        """The model's answer, through the closures."""
        return await self._chain(request)

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamItem]:
        """The model's stream (no closures: only ``request`` is timed)."""
        return self._model.stream(request)


def prior_history(size: int) -> tuple[Message, ...]:
    """``size`` messages of earlier turns: a question, a tool call, its result, an answer.

    Args:
        size: How many messages (a multiple of 4).

    Returns:
        The history.
    """
    turn = (
        Message.user(PROMPT),
        Message("assistant", (ToolCallPart("call_0", "add", ARGUMENTS),)),
        Message("tool", (ToolResultPart("call_0", "add", "3"),)),
        Message.assistant(ANSWER),
    )
    return turn * (size // len(turn))


class SteadySessionStore:
    """An in-memory store whose session stays at the same size, run after run.

    Each commit is applied as `InMemorySessionStore` applies it (the history is extended), but
    the next load serves the session as it was, so every timed run continues a session of
    exactly `HISTORY` messages, loaded and committed as a real one is.
    """

    __slots__ = ("_session",)

    def __init__(self, session: Session) -> None:
        self._session = session

    async def load(self, session_id: str) -> Session | None:
        """The session, at its original size."""
        return self._session

    async def commit(self, update: SessionUpdate) -> Session | None:
        """Apply the update as a store does; the result is not kept."""
        return update.apply(self._session)


async def history_agent() -> tuple[Agent, str]:
    """An agent whose session ``"long"`` holds `HISTORY` prior messages.

    Returns:
        The agent and the session id to run with.
    """
    store = InMemorySessionStore()
    session = await store.commit(SessionUpdate("long", 0, 0, prior_history(HISTORY)))
    assert session is not None
    agent = Agent(
        InstantModel(), registry=Registry(), tools=[ADD], sessions=SteadySessionStore(session)
    )
    return agent, "long"


# -- the floors ----------------------------------------------------------------------------

_FLOOR_TOOLS: dict[str, Callable[..., Any]] = {"add": add}
_FLOOR_SPECS: list[dict[str, Any]] = [
    {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    }
]
_FLOOR_CALL: dict[str, Any] = {
    "role": "assistant",
    "content": None,
    "tool_calls": [{"id": "call_0", "name": "add", "arguments": ARGUMENTS}],
}
_FLOOR_TEXT: dict[str, Any] = {"role": "assistant", "content": ANSWER, "tool_calls": None}


async def floor_model(request: dict[str, Any]) -> dict[str, Any]:
    """The hand-written loop's model: the same decision as `InstantModel`, on dicts.

    Args:
        request: ``messages``, ``tools`` and ``tool_choice``.

    Returns:
        The prebuilt assistant message.
    """
    if request["messages"][-1]["role"] == "tool":
        return _FLOOR_TEXT
    return _FLOOR_CALL


async def floor_run(prompt: str, max_rounds: int = 40) -> str:
    """The workload with no framework: dicts and lists, ``json.loads``, a direct call.

    Args:
        prompt: The user's text.
        max_rounds: Most model calls.

    Returns:
        The model's final text.

    Raises:
        RuntimeError: if the model still calls tools after ``max_rounds``.
    """
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    for _ in range(max_rounds):
        reply = await floor_model(
            {"messages": messages, "tools": _FLOOR_SPECS, "tool_choice": "auto"}
        )
        messages.append(reply)
        calls = reply["tool_calls"]
        if not calls:
            return str(reply["content"])
        for call in calls:
            function = _FLOOR_TOOLS[call["name"]]
            try:
                content = str(function(**json.loads(call["arguments"])))
            except Exception as exc:
                content = f"error: {exc}"
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
    msg = "too many rounds"
    raise RuntimeError(msg)


Closure = Callable[[object], Awaitable[object]]


async def _leaf(x: object) -> object:
    return x


def closure_chain(depth: int) -> Closure:
    """``depth`` bare async closures, each awaiting the next, around an identity leaf.

    Args:
        depth: Closures in the chain (0 returns the leaf itself).

    Returns:
        The outermost closure.
    """
    handler: Closure = _leaf
    for _ in range(depth):

        def wrap(nxt: Closure) -> Closure:
            async def layer(x: object) -> object:
                return await nxt(x)

            return layer

        handler = wrap(handler)
    return handler


def fold_chain(depth: int) -> Closure:
    """``depth`` pass-through middleware folded by fncore's own fold, around the same leaf.

    This is the layer mechanism alone (the per-layer guard and the user's function), in the
    same tight loop as `closure_chain`, without the rest of a run around it.

    Args:
        depth: Middleware in the fold.

    Returns:
        The folded handler.
    """

    async def passthrough(ctx: object, call_next: Handler[object, object]) -> Outcome[object]:
        return await call_next(ctx)

    async def leaf(x: object) -> Outcome[object]:
        return Success(x)

    folded: Closure = fold_onion(
        "run", [(f"m{i}", passthrough) for i in range(depth)], leaf, type(None)
    )
    return folded


# -- measurement ---------------------------------------------------------------------------


@dataclass
class Workload:
    """One timed thing: an async function called with one argument, ``n`` times per round."""

    name: str
    function: Callable[[Any], Awaitable[object]]
    argument: object
    n: int = 1
    samples_ns: list[float] = field(default_factory=list)
    """Mean ns per call of each round."""


async def _time(work: Workload, n: int) -> float:
    """Mean nanoseconds per call over ``n`` back-to-back awaits."""
    fn = work.function
    arg = work.argument
    gc.collect()
    start = time.perf_counter_ns()
    for _ in range(n):
        await fn(arg)
    return (time.perf_counter_ns() - start) / n


async def _calibrate(work: Workload, seconds: float) -> None:
    """Warm ``work`` up for about ``seconds`` and size its rounds to about that long."""
    n = 16
    while True:
        per_call = await _time(work, n)
        if per_call * n >= seconds * 1e9 / 4:
            break
        n *= 4
    await _time(work, max(1, int(seconds * 1e9 / per_call)))
    work.n = max(1, int(seconds * 1e9 / per_call))


def _rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def _current_rss_mb() -> float | None:
    """Current resident set size in MiB, where ``/proc`` tells it."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * resource.getpagesize() / (1024 * 1024)


async def _gather(agent: Agent, count: int) -> float:
    """Seconds to gather ``count`` runs on ``agent``; checks that each one succeeded."""
    gc.collect()
    start = time.perf_counter_ns()
    outcomes = await asyncio.gather(*(agent.run(PROMPT) for _ in range(count)))
    wall = (time.perf_counter_ns() - start) / 1e9
    bad = [o for o in outcomes if o.value_or(None) is None]
    if bad:
        msg = f"{len(bad)} concurrent runs failed, e.g. {bad[0]}"
        raise RuntimeError(msg)
    return wall


def _check_workload() -> None:
    """Fail loudly if the workload is not what the figures claim it is."""

    async def check() -> None:
        counter = [0]
        agent = Agent(InstantModel(), registry=counting_registry(DEPTH, counter), tools=[ADD])
        result = (await agent.run(PROMPT)).unwrap()
        if counter[0] != LAYER_CALLS:
            msg = f"expected {LAYER_CALLS} layer calls per run, counted {counter[0]}"
            raise RuntimeError(msg)
        if result.output != ANSWER or result.rounds != 2 or len(result.messages) != 3:
            msg = f"unexpected run result: {result!r}"
            raise RuntimeError(msg)
        tool_message = result.messages[1]
        if tool_message.tool_results[0].content != "3":
            msg = f"the tool did not run as expected: {tool_message!r}"
            raise RuntimeError(msg)
        long_agent, long_session = await history_agent()
        long = (await long_agent.run(PROMPT, session_id=long_session)).unwrap()
        if long.output != ANSWER or len(long.messages) != 3:
            msg = f"the history run went wrong: {long!r}"
            raise RuntimeError(msg)
        for depth in (0, DEPTH):
            output = (await make_agent(depth).run(PROMPT)).unwrap().output
            if output != ANSWER:
                msg = f"depth {depth}: unexpected output {output!r}"
                raise RuntimeError(msg)
        if await floor_run(PROMPT) != ANSWER:
            msg = "the hand-written loop gave an unexpected answer"
            raise RuntimeError(msg)

    asyncio.run(check())


@dataclass
class Options:
    """Command-line options."""

    rounds: int
    seconds: float
    concurrency: int
    as_json: bool


async def measure(options: Options) -> dict[str, Any]:
    """Run every measurement in this one event loop and return the figures.

    Args:
        options: What to run and for how long.

    Returns:
        The figures, by name (times in microseconds).
    """
    base_agent = make_agent(0)
    mw_agent = make_agent(DEPTH)
    mw1_agent = make_agent(1)
    long_agent, long_session = await history_agent()

    async def history_run(prompt: str) -> object:
        return await long_agent.run(prompt, session_id=long_session)

    works = [
        Workload("base", base_agent.run, PROMPT),
        Workload("history", history_run, PROMPT),
        Workload("mw", mw_agent.run, PROMPT),
        Workload("mw1", mw1_agent.run, PROMPT),
        Workload("floor", floor_run, PROMPT),
        Workload("closure", closure_chain(DEPTH), None),
        Workload("closure_run", Agent(ClosureModel(DEPTH), tools=[ADD]).run, PROMPT),
        Workload("closure_run1", Agent(ClosureModel(1), tools=[ADD]).run, PROMPT),
        Workload("leaf", closure_chain(0), None),
        Workload("fold", fold_chain(DEPTH), None),
        Workload("fold_leaf", fold_chain(0), None),
    ]
    for work in works:
        await _calibrate(work, options.seconds)

    # Memory first, before the timed rounds could raise the process's peak.
    concurrent_agent = make_agent(0, yield_once=True)
    await _gather(concurrent_agent, min(options.concurrency, 50))  # warm up
    concurrent_model = concurrent_agent.model
    assert isinstance(concurrent_model, InstantModel)
    concurrent_model.peak_in_flight = 0
    gc.collect()
    rss_before = _rss_mb()
    current_before = _current_rss_mb()
    walls = [await _gather(concurrent_agent, options.concurrency)]
    rss_after = _rss_mb()
    current_after = _current_rss_mb()
    in_flight = concurrent_model.peak_in_flight
    tracemalloc.start()
    await _gather(concurrent_agent, options.concurrency)
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    for r in range(options.rounds):
        shift = r % len(works)
        for work in works[shift:] + works[:shift]:
            work.samples_ns.append(await _time(work, work.n))
        walls.append(await _gather(concurrent_agent, options.concurrency))

    low = {w.name: min(w.samples_ns) / 1000 for w in works}
    med = {w.name: statistics.median(w.samples_ns) / 1000 for w in works}
    closure_layer_us = (low["closure"] - low["leaf"]) / DEPTH
    fold_layer_us = (low["fold"] - low["fold_leaf"]) / DEPTH
    extra_calls = LAYER_CALLS - ONE_LAYER_CALLS
    per_layer_us = (low["mw"] - low["mw1"]) / extra_calls
    average_layer_us = (low["mw"] - low["base"]) / LAYER_CALLS
    switch_on_us = low["mw1"] - low["base"] - ONE_LAYER_CALLS * per_layer_us
    closure_layer_median = (med["closure"] - med["leaf"]) / DEPTH
    closure_in_run_us = (low["closure_run"] - low["closure_run1"]) / ((DEPTH - 1) * MODEL_CALLS)
    spread = {
        w.name: (max(w.samples_ns) - min(w.samples_ns)) / statistics.median(w.samples_ns)
        for w in works
    }
    return {
        "base_us": low["base"],
        "mw_us": low["mw"],
        "mw1_us": low["mw1"],
        "average_layer_us": average_layer_us,
        "fold_layer_us": fold_layer_us,
        "fold_layer_ratio": fold_layer_us / closure_layer_us,
        "average_layer_ratio": average_layer_us / closure_layer_us,
        "positions_switch_on_us": switch_on_us,
        "floor_us": low["floor"],
        "closure_call_us": low["closure"],
        "closure_leaf_us": low["leaf"],
        "closure_layer_us": closure_layer_us,
        "per_layer_us": per_layer_us,
        "base_ratio": low["base"] / low["floor"],
        "layer_ratio": per_layer_us / closure_layer_us,
        "closure_layer_in_run_us": closure_in_run_us,
        "layer_ratio_in_run": per_layer_us / closure_in_run_us,
        "history_us": low["history"],
        "history_us_median": med["history"],
        "history_messages": HISTORY,
        "history_ratio": low["history"] / low["base"],
        "history_ratio_median": med["history"] / med["base"],
        "base_us_median": med["base"],
        "mw_us_median": med["mw"],
        "mw1_us_median": med["mw1"],
        "floor_us_median": med["floor"],
        "closure_layer_us_median": closure_layer_median,
        "base_ratio_median": med["base"] / med["floor"],
        "layer_ratio_median": ((med["mw"] - med["mw1"]) / extra_calls) / closure_layer_median,
        "spread": spread,
        "iterations": {w.name: w.n for w in works},
        "rounds": options.rounds,
        "layer_calls_per_run": LAYER_CALLS,
        "concurrency": options.concurrency,
        "concurrent_in_flight": in_flight,
        "concurrent_wall_s": min(walls),
        "concurrent_wall_s_median": statistics.median(walls),
        "concurrent_wall_s_first": walls[0],
        "concurrent_per_run_us": min(walls) / options.concurrency * 1e6,
        "concurrent_peak_rss_mb": rss_after,
        "concurrent_rss_delta_mb": rss_after - rss_before,
        "concurrent_current_rss_delta_mb": (
            current_after - current_before
            if current_after is not None and current_before is not None
            else None
        ),
        "concurrent_tracemalloc_peak_mb": traced_peak / (1024 * 1024),
        "python": platform.python_version(),
    }


def _verdict(value: float, target: float) -> str:
    return "PASS" if value <= target else "MISS"


def report(figures: dict[str, Any]) -> str:
    """The figures as a human-readable table.

    Args:
        figures: What `measure` returned.

    Returns:
        The table.
    """
    f = figures
    spread = f["spread"]
    lines = [
        f"fncore overhead (Python {f['python']}, {f['rounds']} rounds, min of round means; "
        "median in brackets)",
        "workload: 1 user message -> model calls add(a, b) -> tool runs -> model answers text",
        "",
        f"  fncore, 0 middleware         {f['base_us']:8.2f} us/run   [{f['base_us_median']:.2f}]"
        f"   spread {spread['base']:.0%}",
        f"  fncore, 3x{DEPTH} middleware      {f['mw_us']:8.2f} us/run   [{f['mw_us_median']:.2f}]"
        f"   spread {spread['mw']:.0%}",
        f"  fncore, 3x1 middleware       {f['mw1_us']:8.2f} us/run   [{f['mw1_us_median']:.2f}]"
        f"   spread {spread['mw1']:.0%}",
        f"  hand-written loop (floor)    {f['floor_us']:8.2f} us/run   [{f['floor_us_median']:.2f}]"
        f"   spread {spread['floor']:.0%}",
        f"  0 middleware, {f['history_messages']} prior msgs "
        f"{f['history_us']:7.2f} us/run   [{f['history_us_median']:.2f}]"
        f"   spread {spread['history']:.0%}   (a session store load + commit each run)",
        f"  {DEPTH} bare async closures       {f['closure_call_us']:8.3f} us/call  "
        f"(leaf alone {f['closure_leaf_us']:.3f} us)",
        "",
        f"  per closure layer            {f['closure_layer_us'] * 1000:8.1f} ns"
        f"   [{f['closure_layer_us_median'] * 1000:.1f}]",
        f"  per extra middleware layer   {f['per_layer_us'] * 1000:8.1f} ns"
        f"   (({f['mw_us']:.2f} - {f['mw1_us']:.2f}) us / "
        f"{LAYER_CALLS - ONE_LAYER_CALLS} extra calls)",
        f"  switching the 3 positions on {f['positions_switch_on_us'] * 1000:8.1f} ns per run"
        "   (contexts and innermost adapters, paid once per position call)",
        f"  fold layer alone             {f['fold_layer_us'] * 1000:8.1f} ns"
        f"   (the guard + the middleware, in the closures' tight loop: "
        f"{f['fold_layer_ratio']:.2f} closure layers)",
        f"  average over all 40 calls    {f['average_layer_us'] * 1000:8.1f} ns"
        f"   (({f['mw_us']:.2f} - {f['base_us']:.2f}) us / {f['layer_calls_per_run']} calls; "
        f"{f['average_layer_ratio']:.2f} closure layers)",
        "",
        f"  base_ratio  (0-mw run / floor)         {f['base_ratio']:6.2f}  "
        f"target <= {TARGET_BASE_RATIO:g}  {_verdict(f['base_ratio'], TARGET_BASE_RATIO)}"
        f"   [median-based {f['base_ratio_median']:.2f}]",
        f"  layer_ratio (extra layer / closure)    {f['layer_ratio']:6.2f}  "
        f"target <= {TARGET_LAYER_RATIO:g}  {_verdict(f['layer_ratio'], TARGET_LAYER_RATIO)}"
        f"   [median-based {f['layer_ratio_median']:.2f}]",
        f"    in a run, a closure layer costs {f['closure_layer_in_run_us'] * 1000:.1f} ns: "
        f"a middleware layer is {f['layer_ratio_in_run']:.2f} of those (informative)",
        f"  history_ratio (1,000 msgs / base)      {f['history_ratio']:6.2f}  "
        f"target <= {TARGET_HISTORY_RATIO:g}  "
        f"{_verdict(f['history_ratio'], TARGET_HISTORY_RATIO)}"
        f"   [median-based {f['history_ratio_median']:.2f}]",
        "",
        f"  {f['concurrency']} concurrent runs (asyncio.gather, one agent, model yields once "
        f"per call; {f['concurrent_in_flight']} in flight at peak)",
        f"    wall                       {f['concurrent_wall_s'] * 1000:8.1f} ms  "
        f"({f['concurrent_per_run_us']:.1f} us/run; "
        f"median {f['concurrent_wall_s_median'] * 1000:.1f} ms)",
        f"    peak RSS                   {f['concurrent_peak_rss_mb']:8.1f} MiB "
        f"(+{f['concurrent_rss_delta_mb']:.1f} MiB over the peak before)",
    ]
    if f["concurrent_current_rss_delta_mb"] is not None:
        lines.append(
            f"    current RSS growth         {f['concurrent_current_rss_delta_mb']:8.1f} MiB"
        )
    lines.append(
        f"    tracemalloc peak           {f['concurrent_tracemalloc_peak_mb']:8.1f} MiB "
        "(Python allocations live at once)"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Parse options, check the workload, measure, print.

    Args:
        argv: Command-line arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit status.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    parser.add_argument("--quick", action="store_true", help="a fast, rough smoke run")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds (15)")
    parser.add_argument(
        "--seconds", type=float, default=None, help="seconds per workload per round (0.1)"
    )
    parser.add_argument(
        "--concurrency", type=int, default=1000, help="runs gathered at once (1000)"
    )
    args = parser.parse_args(argv)
    options = Options(
        rounds=args.rounds or (2 if args.quick else 15),
        seconds=args.seconds or (0.01 if args.quick else 0.1),
        concurrency=args.concurrency,
        as_json=args.json,
    )
    if options.rounds < 1 or options.seconds <= 0 or options.concurrency < 1:
        parser.error("--rounds, --seconds and --concurrency must be positive")
    _check_workload()
    figures = asyncio.run(measure(options))
    print(report(figures))
    if options.as_json:
        print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
