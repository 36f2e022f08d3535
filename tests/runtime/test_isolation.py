"""Isolation: concurrent runs of one agent never see each other's metadata or state."""

from __future__ import annotations

import asyncio
import random

import fncore
from fncore import (
    Agent,
    ModelCallContext,
    ModelCallNext,
    ModelResponse,
    Outcome,
    Registry,
    RunContext,
    RunNext,
    RunResult,
    StateKey,
)
from fncore.testing import TestModel

MODEL_CALLS = StateKey("model_calls", default=lambda: 0)
RNG = random.Random(20261101)


def build(seen_by_middleware: list[tuple[object, object]]) -> Agent:
    """One agent whose middleware and tool report the metadata and state they see."""
    registry = Registry()

    @registry.on("model_call")
    async def observe(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        state = ctx.run.state
        state.set(MODEL_CALLS, state.get(MODEL_CALLS) + 1)
        before = ctx.run.metadata["user"]
        await asyncio.sleep(RNG.uniform(0, 0.003))
        seen_by_middleware.append((before, ctx.run.metadata["user"]))
        return await call_next(ctx)

    @registry.on("run")
    async def report(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        out = await call_next(ctx)
        calls = ctx.run.state.get(MODEL_CALLS)
        return out.map(lambda r: RunResult(f"{r.output}|calls={calls}", r.messages))

    async def whoami(tag: str) -> str:
        """Say which user's run this tool is part of."""
        await asyncio.sleep(RNG.uniform(0, 0.003))
        run = fncore.current_run()
        assert run is not None
        return f"{fncore.current_metadata()['user']}/{run.metadata['user']}"

    return Agent(TestModel(), registry=registry, tools=[whoami])


async def test_two_concurrent_runs_keep_their_own_metadata_and_state() -> None:
    """Two interleaved runs each see only their own metadata and model-call counter."""
    seen: list[tuple[object, object]] = []
    agent = build(seen)
    a, b = await asyncio.gather(
        agent.run("a", metadata={"user": "alice"}), agent.run("b", metadata={"user": "bob"})
    )
    assert a.unwrap().output == "whoami: alice/alice|calls=2"
    assert b.unwrap().output == "whoami: bob/bob|calls=2"
    assert all(before == after for before, after in seen)
    assert sorted(u for u, _ in seen) == ["alice", "alice", "bob", "bob"]


async def test_fifty_concurrent_runs_of_one_agent_stay_isolated() -> None:
    """Fifty interleaved runs (half streamed) each see only their own metadata and state."""
    seen: list[tuple[object, object]] = []
    agent = build(seen)

    async def one(i: int) -> str:
        meta = {"user": f"u{i}"}
        if i % 2:
            outcome = await agent.stream(f"q{i}", metadata=meta).result()
        else:
            outcome = await agent.run(f"q{i}", metadata=meta)
        return outcome.unwrap().output

    outputs = await asyncio.gather(*(one(i) for i in range(50)))
    assert outputs == [f"whoami: u{i}/u{i}|calls=2" for i in range(50)]
    assert len(seen) == 100
    assert all(before == after for before, after in seen)


async def test_current_run_is_none_outside_a_run() -> None:
    """Outside any run current_run() is None and current_metadata() is empty."""
    assert fncore.current_run() is None
    assert dict(fncore.current_metadata()) == {}
    agent = build([])
    await agent.run("x", metadata={"user": "carol"})
    assert fncore.current_run() is None
    assert dict(fncore.current_metadata()) == {}


async def test_metadata_is_read_only_and_a_copy() -> None:
    """The run sees a read-only snapshot: mutating the caller's dict later changes nothing."""
    registry = Registry()
    captured: list[object] = []

    @registry.on("run")
    async def grab(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        captured.append(ctx.run.metadata)
        return await call_next(ctx)

    meta = {"user": "dave"}
    agent = Agent(TestModel(), registry=registry)
    await agent.run("x", metadata=meta)
    meta["user"] = "eve"
    seen = captured[0]
    assert dict(seen) == {"user": "dave"}  # type: ignore[call-overload]
    try:
        seen["user"] = "mallory"  # type: ignore[index]
    except TypeError:
        pass
    else:
        raise AssertionError("metadata should be read-only")


async def test_each_run_gets_a_distinct_run_id_and_fresh_state() -> None:
    """Sequential runs without a session start with fresh state and distinct run ids."""
    registry = Registry()
    ids: list[str] = []
    counts: list[int] = []

    @registry.on("model_call")
    async def count(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        ids.append(ctx.run.run_id)
        ctx.run.state.set(MODEL_CALLS, ctx.run.state.get(MODEL_CALLS) + 1)
        counts.append(ctx.run.state.get(MODEL_CALLS))
        return await call_next(ctx)

    agent = Agent(TestModel(), registry=registry)
    await agent.run("one")
    await agent.run("two")
    assert counts == [1, 1]
    assert len(set(ids)) == 2
