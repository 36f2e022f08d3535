"""``limit_calls(session_counts="store")``: a session's calls counted in a shared store."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from helpers import config_error
from processes import BARRIER, PRELUDE, run_processes
from returns.result import Success

from fncore import (
    Agent,
    InMemorySessionStore,
    Message,
    ModelRequest,
    ModelResponse,
    Registry,
    load_container,
)
from fncore.errors import CallLimitExceeded, ProviderUnavailable, SessionConflict
from fncore.middleware import limit_calls
from fncore.middleware.limit_calls import MESSAGE
from fncore.shared_stores import RedisStore, SharedStore
from fncore.testing import FunctionModel, tool_calls


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def agent_with(registry: Registry, model: Any, **options: Any) -> Agent:
    return Agent(model, registry=registry, tools=[add], **options)


async def counted(registry: Registry, key: str) -> float:
    """What the registry's store holds under ``key`` (0 if nothing)."""
    store = registry.resources[0]
    assert isinstance(store, SharedStore)
    return await store.incr(key, 0.0)


@pytest.fixture(params=["memory", "redis"])
def store(request: pytest.FixtureRequest) -> str:
    """Each store a session can count in: this process's memory, and a real Redis."""
    if request.param == "memory":
        return "memory://"
    return str(request.getfixturevalue("redis_url"))


async def slow_answer(request: ModelRequest) -> ModelResponse:
    """An answer that takes a moment, so concurrent runs overlap."""
    await asyncio.sleep(0.001)
    return ModelResponse(Message.assistant("ok"))


@pytest.mark.parametrize("exit", ["end", "error"])
async def test_concurrent_runs_of_a_session_never_exceed_its_model_calls(
    store: str, exit: str
) -> None:
    """100 concurrent runs of one session, 10 model calls for it: exactly 10 are made.

    Every other run stops without a call (``end``) or fails (``error``: `CallLimitExceeded`).
    (Of the runs that got to commit, the first wins and the others are `SessionConflict`s,
    as for any concurrent runs of a session.)
    """
    model = FunctionModel(slow_answer)
    registry = limit_calls(
        model_calls_per_reply=None,
        model_calls_per_session=10,
        session_counts="store",
        store=store,
        exit=exit,
    )
    agent = agent_with(registry, model)
    outcomes = await asyncio.gather(*(agent.run(f"run {i}", session_id="s") for i in range(100)))
    assert len(model.requests) == 10
    assert await counted(registry, "limit_calls.model_calls_per_session:s") == 10.0
    errors = [o.failure() for o in outcomes if not isinstance(o, Success)]
    refused = [e for e in errors if isinstance(e, CallLimitExceeded)]
    assert all(isinstance(e, (CallLimitExceeded, SessionConflict)) for e in errors)
    if exit == "error":
        assert len(refused) == 90
        assert {(e.limit, e.scope) for e in refused} == {("model_calls_per_session", "session")}
    else:
        assert refused == []
    await registry.aclose()


async def test_concurrent_tool_calls_of_a_session_never_exceed_its_tool_calls(store: str) -> None:
    """20 concurrent runs calling `add` once each, 5 tool calls for the session: 5 run."""
    ran: list[int] = []

    async def counting_add(a: int, b: int) -> int:
        """Add two integers."""
        ran.append(a)
        await asyncio.sleep(0.001)
        return a + b

    def reply(request: ModelRequest) -> Any:
        if request.messages[-1].role == "tool":
            return "done"
        return tool_calls(("counting_add", {"a": 1, "b": 2}))

    registry = limit_calls(
        model_calls_per_reply=None,
        tool_calls_per_session=5,
        session_counts="store",
        store=store,
        exit="continue",
    )
    agent = Agent(FunctionModel(reply), registry=registry, tools=[counting_add])
    outcomes = await asyncio.gather(*(agent.run(f"run {i}", session_id="s") for i in range(20)))
    assert len(ran) == 5
    assert await counted(registry, "limit_calls.tool_calls_per_session:s") == 5.0
    assert all(isinstance(o, Success) or isinstance(o.failure(), SessionConflict) for o in outcomes)
    await registry.aclose()


async def test_a_session_counted_in_the_store_ends_its_replies_gracefully() -> None:
    """One run after another: the last allowed call answers without tools, then no call."""

    def eager(request: ModelRequest) -> Any:
        return "answer" if request.tool_choice == "none" else tool_calls(("add", {"a": 1, "b": 2}))

    model = FunctionModel(eager)
    registry = limit_calls(
        model_calls_per_reply=None, model_calls_per_session=3, session_counts="store"
    )
    agent = agent_with(registry, model)
    first = (await agent.run("one", session_id="s")).unwrap()
    second = (await agent.run("two", session_id="s")).unwrap()
    assert (first.rounds, first.output) == (3, "answer")
    assert [r.tool_choice for r in model.requests] == ["auto", "auto", "none"]
    assert (second.stop_reason, second.output) == ("terminated", MESSAGE)
    assert len(model.requests) == 3
    await registry.aclose()


@pytest.mark.parametrize("session_counts", ["state", "store"])
async def test_the_calls_of_a_failed_run_count_in_the_store_only(session_counts: str) -> None:
    """A run that called, then failed: the store keeps its calls, the session's state not."""
    replies: list[Any] = [
        tool_calls(("add", {"a": 1, "b": 2})),
        ProviderUnavailable(message="down"),
    ]
    model = FunctionModel(lambda request: replies[len(model.requests) - 1])
    sessions = InMemorySessionStore()
    registry = limit_calls(
        model_calls_per_reply=None, model_calls_per_session=10, session_counts=session_counts
    )
    agent = agent_with(registry, model, sessions=sessions)
    assert isinstance((await agent.run("go", session_id="s")).failure(), ProviderUnavailable)
    assert await sessions.load("s") is None  # a failed run commits nothing
    if session_counts == "store":
        assert await counted(registry, "limit_calls.model_calls_per_session:s") == 2.0
    else:
        assert registry.resources == ()
    await registry.aclose()


async def test_a_run_cancelled_in_its_turn_lets_the_next_run_of_the_session_in(
    store: str,
) -> None:
    """Cancelled while its round holds the session's turn, a run gives the turn up."""
    entered = asyncio.Event()

    async def answer(request: ModelRequest) -> str:
        if request.messages[-1].text == "stuck":
            entered.set()
            await asyncio.Event().wait()  # until cancelled
        return "ok"

    registry = limit_calls(
        model_calls_per_reply=None, model_calls_per_session=50, session_counts="store", store=store
    )
    agent = agent_with(registry, FunctionModel(answer))
    stuck = asyncio.create_task(agent.run("stuck", session_id="s"))
    await entered.wait()
    stuck.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stuck
    result = await asyncio.wait_for(agent.run("next", session_id="s"), 10)
    assert result.unwrap().output == "ok"
    await registry.aclose()


async def test_four_processes_never_exceed_a_session_limit_on_redis(redis_url: str) -> None:
    """Four processes, 15 concurrent runs of one session each, 20 model calls for it."""
    script = (
        PRELUDE
        + BARRIER
        + """
from fncore import Agent, Message, ModelResponse
from fncore.errors import CallLimitExceeded
from fncore.middleware import limit_calls
from fncore.testing import FunctionModel


async def answer(request):
    await asyncio.sleep(0.002)
    return ModelResponse(Message.assistant("ok"))


async def main():
    url = sys.argv[1]
    registry = limit_calls(
        model_calls_per_reply=None,
        model_calls_per_session=20,
        session_counts="store",
        store=url,
        exit="error",
    )
    model = FunctionModel(answer)
    agent = Agent(model, registry=registry)
    await barrier(url, "start", 4)
    outcomes = await asyncio.gather(*(agent.run("hi", session_id="shared") for _ in range(15)))
    await registry.aclose()
    errors = [o.swap().value_or(None) for o in outcomes]
    print(json.dumps([len(model.requests), sum(isinstance(e, CallLimitExceeded) for e in errors)]))


asyncio.run(main())
"""
    )
    counts = await run_processes(script, redis_url, count=4)
    calls, refused = zip(*counts, strict=True)
    assert sum(calls) == 20
    assert sum(refused) == 60 - 20
    store = RedisStore(redis_url)
    assert await store.incr("limit_calls.model_calls_per_session:shared", 0.0) == 20.0
    await store.aclose()


async def test_configuration_counts_a_session_on_redis(tmp_path: Path, redis_url: str) -> None:
    """session_counts = "store" in TOML: two containers (as two processes) share the count."""
    path = tmp_path / "fncore.toml"
    path.write_text(
        f"""
[[middleware]]
use = "limit_calls"
model_calls_per_reply = 5
model_calls_per_session = 1
session_counts = "store"
store = "{redis_url}"
"""
    )
    async with (
        load_container(path, environ={}) as first,
        load_container(path, environ={}) as second,
    ):
        answered = (await first.agent().run("hello", session_id="s")).unwrap()
        stopped = (await second.agent().run("hello again", session_id="s")).unwrap()
    assert (answered.stop_reason, stopped.stop_reason) == ("completed", "terminated")


def test_store_without_a_session_limit_is_a_value_error() -> None:
    """session_counts='store' counts per-session limits: without one it is refused."""
    with pytest.raises(ValueError, match="counts per-session limits only"):
        limit_calls(session_counts="store")


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"use": "limit_calls", "session_counts": "redis"}, "parameter 'session_counts'"),
        ({"use": "limit_calls", "session_counts": "store"}, "counts per-session limits only"),
        (
            {
                "use": "limit_calls",
                "model_calls_per_session": 1,
                "session_counts": "store",
                "store": "x://",
            },
            "unknown scheme 'x'",
        ),
    ],
)
def test_configuration_errors_are_one_line(entry: dict[str, Any], words: str) -> None:
    """Wrong values and combinations are one ConfigError line naming the entry."""
    assert words in config_error(entry)
