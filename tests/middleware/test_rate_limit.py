"""``rate_limit``: requests and tokens per minute, calls in flight, waiting, shared stores."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import config_error, configured, outcome_of
from processes import BARRIER, PRELUDE, run_processes
from returns.result import Success

from fncore import (
    Agent,
    DataPart,
    Message,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    Registry,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Usage,
    load_container,
)
from fncore.errors import ProviderUnavailable, RateLimitExceeded
from fncore.middleware import rate_limit
from fncore.middleware.rate_limit import _give_up as give_up
from fncore.middleware.rate_limit import estimate_tokens
from fncore.testing import FunctionModel, TestModel


@pytest.fixture(params=["memory", "redis"])
def store(request: pytest.FixtureRequest) -> str:
    """Each store the limits can count in: this process's memory, and a real Redis."""
    if request.param == "memory":
        return "memory://"
    return str(request.getfixturevalue("redis_url"))


def answering(input_tokens: int = 3, output_tokens: int = 2, *, name: str = "m") -> FunctionModel:
    """A model answering every request with the given usage."""
    usage = Usage(input_tokens, output_tokens, requests=1)
    return FunctionModel(
        lambda request: ModelResponse(Message.assistant("ok"), usage, "stop", name), name=name
    )


@pytest.mark.parametrize("streaming", [False, True])
async def test_requests_over_the_rate_are_refused_exactly(store: str, streaming: bool) -> None:
    """1,000 concurrent runs against 100 requests per minute, no waiting: exactly 100 pass."""
    registry = rate_limit(requests_per_minute=100, max_wait=0, store=store)
    agent = Agent(answering(), registry=registry)
    outcomes = await asyncio.gather(
        *(outcome_of(agent, f"run {i}", streaming=streaming) for i in range(1000))
    )
    assert sum(isinstance(o, Success) for o in outcomes) == 100
    errors = [o.failure() for o in outcomes if not isinstance(o, Success)]
    assert all(isinstance(e, RateLimitExceeded) for e in errors)
    first = errors[0]
    assert isinstance(first, RateLimitExceeded)
    assert (first.limit, first.scope, first.middleware) == (
        "requests_per_minute",
        "shared",
        "rate_limit",
    )
    assert first.retry_after is not None
    assert 0 < first.retry_after <= 60
    await registry.aclose()


async def test_four_processes_on_one_redis_admit_exactly_the_quota(
    redis_url: str, sessions_url: str
) -> None:
    """Four processes on one Redis, one rate of 20 per 5-second window: exactly 20 pass.

    Then, the window past: 40 calls that may wait all pass, 20 of them after waiting. Each
    run has its own session, in its process's memory or in one PostgreSQL: every run that
    passed committed it, and no refused one did.
    """
    script = (
        PRELUDE
        + BARRIER
        + """
from fncore import Agent, open_session_store
from fncore.errors import RateLimitExceeded
from fncore.middleware import rate_limit
from fncore.testing import TestModel


async def main():
    url, sessions_url, index = sys.argv[1], sys.argv[2], int(sys.argv[3])
    # the window is long enough for a burst on a busy machine to fall in it whole
    refusing = rate_limit(requests_per_minute=20, window=5, max_wait=0, store=url)
    waiting = rate_limit(requests_per_minute=20, window=5, max_wait=30, store=url)
    model = TestModel()
    sessions = open_session_store(sessions_url)
    names = [f"{index}.burst.{i}" for i in range(15)] + [f"{index}.wait.{i}" for i in range(10)]

    async def run(registry, name):
        agent = Agent(model, registry=registry, sessions=sessions)
        return await agent.run(name, session_id=name)

    await barrier(url, "burst", 4)
    burst = await asyncio.gather(*(run(refusing, name) for name in names[:15]))
    errors = [o.failure() for o in burst if o.value_or(None) is None]
    assert all(isinstance(e, RateLimitExceeded) for e in errors), errors
    assert all(e.limit == "requests_per_minute" and 0 < e.retry_after <= 5 for e in errors)
    await barrier(url, "burst done", 4)
    await asyncio.sleep(5.1)  # the window is past for every process
    await barrier(url, "wait", 4)
    waited = await asyncio.gather(*(run(waiting, name) for name in names[15:]))
    await refusing.aclose()
    await waiting.aclose()
    passed = [o.value_or(None) is not None for o in (*burst, *waited)]
    saved = [await sessions.load(name) is not None for name in names]
    if hasattr(sessions, "aclose"):
        await sessions.aclose()
    print(json.dumps([
        len(burst) - len(errors),
        len(errors),
        sum(o.value_or(None) is not None for o in waited),
        len(model.requests),
        sum(p != s for p, s in zip(passed, saved)),
    ]))


asyncio.run(main())
"""
    )
    counts = await run_processes(script, redis_url, sessions_url, count=4)
    admitted, refused, waited, calls, unsaved = (sum(c) for c in zip(*counts, strict=True))
    assert (admitted, refused) == (20, 40)  # of 60 calls at once, the quota passed
    assert waited == 40  # of 40 calls that may wait: 20 at once, 20 when the window moved
    assert calls == 20 + 40  # every admitted call reached the model, no refused one did
    assert unsaved == 0  # a session for every run that passed, none for a refused one


async def test_a_short_window_admits_its_quota_again_once_past(store: str) -> None:
    """window=1: three calls a second; once the second is past, three more pass."""
    registry = rate_limit(requests_per_minute=3, window=1, max_wait=0, store=store)
    agent = Agent(answering(), registry=registry)
    for _ in range(2):
        outcomes = await asyncio.gather(*(agent.run(f"run {i}") for i in range(5)))
        assert sum(isinstance(o, Success) for o in outcomes) == 3
        await asyncio.sleep(1.1)
    await registry.aclose()


async def test_a_call_waits_for_capacity_then_fails_typed() -> None:
    """No capacity within max_wait: the call waited (at least max_wait), then a typed error."""
    registry = rate_limit(requests_per_minute=1, max_wait=0.3)
    model = answering()
    agent = Agent(model, registry=registry)
    assert isinstance(await agent.run("first"), Success)
    started = time.monotonic()
    error = (await agent.run("second")).failure()
    assert time.monotonic() - started >= 0.3
    assert isinstance(error, RateLimitExceeded)
    assert error.limit == "requests_per_minute"
    assert len(model.requests) == 1


async def test_a_waiting_call_gets_in_when_a_reservation_is_given_back() -> None:
    """Tokens a call reserved but did not use are given back; a waiting call then gets in."""
    release, started = asyncio.Event(), asyncio.Event()
    order: list[str] = []

    async def slow(request: ModelRequest) -> ModelResponse:
        text = request.messages[-1].text
        order.append(f"start {text}")
        if text == "first":
            started.set()
            await release.wait()
        order.append(f"end {text}")
        return ModelResponse(Message.assistant("ok"), Usage(3, 2))

    registry = rate_limit(requests_per_minute=None, tokens_per_minute=100, max_wait=10)
    agent = Agent(FunctionModel(slow), registry=registry)
    settings = ModelSettings(max_tokens=60)  # each reserves ~5 + 60 tokens: one at a time
    first = asyncio.create_task(agent.run("first", model_settings=settings))
    await started.wait()
    second = asyncio.create_task(agent.run("second", model_settings=settings))
    await asyncio.sleep(0.05)
    assert order == ["start first"]  # the second is waiting for tokens
    release.set()
    assert isinstance(await first, Success)
    assert isinstance(await second, Success)
    assert order == ["start first", "end first", "start second", "end second"]


@pytest.mark.parametrize("streaming", [False, True])
async def test_usage_beyond_the_reservation_is_counted(store: str, streaming: bool) -> None:
    """A call that used more than it reserved is settled with what it used."""
    registry = rate_limit(
        requests_per_minute=None, tokens_per_minute=100, output_reserve=10, max_wait=0, store=store
    )
    agent = Agent(answering(80, 10), registry=registry)
    assert isinstance(await outcome_of(agent, "hi", streaming=streaming), Success)
    error = (await outcome_of(agent, "hi", streaming=streaming)).failure()  # 90 + ~15 > 100
    assert isinstance(error, RateLimitExceeded)
    assert error.limit == "tokens_per_minute"
    await registry.aclose()


async def test_a_call_that_used_exactly_its_reservation_keeps_it_counted(store: str) -> None:
    """Usage equal to the reservation settles nothing: it stays counted, no more, no less."""

    def exact(request: ModelRequest) -> ModelResponse:
        reserved = estimate_tokens(request) + 40  # its input, estimated, and max_tokens
        return ModelResponse(Message.assistant("ok"), Usage(reserved, 0))

    registry = rate_limit(requests_per_minute=None, tokens_per_minute=100, max_wait=0, store=store)
    agent = Agent(FunctionModel(exact), registry=registry)
    settings = ModelSettings(max_tokens=40)  # each reserves ~5 + 40 tokens: two fit in 100
    outcomes = [await agent.run("hi", model_settings=settings) for _ in range(3)]
    assert [isinstance(o, Success) for o in outcomes] == [True, True, False]
    await registry.aclose()


async def test_tokens_given_back_after_their_window_are_no_credit_in_the_next(store: str) -> None:
    """A call that outlives its window gives back into nothing: the next window is whole."""
    release = asyncio.Event()

    async def slow(request: ModelRequest) -> ModelResponse:
        if request.messages[-1].text == "slow":
            await asyncio.sleep(1.2)  # past the end of its one-second window
        else:
            await release.wait()
        return ModelResponse(Message.assistant("ok"), Usage(3, 2))

    registry = rate_limit(
        requests_per_minute=None, tokens_per_minute=100, window=1, max_wait=0, store=store
    )
    agent = Agent(FunctionModel(slow), registry=registry)
    settings = ModelSettings(max_tokens=60)  # each reserves ~5 + 60 tokens
    assert isinstance(await agent.run("slow", model_settings=settings), Success)
    # had the slow call's ~60 unused tokens become credit, both of these would pass
    runs = [asyncio.create_task(agent.run("quick", model_settings=settings)) for _ in "ab"]
    await asyncio.wait(runs, return_when=asyncio.FIRST_COMPLETED)  # one is refused at once
    release.set()
    outcomes = [await run for run in runs]
    assert sum(isinstance(o, Success) for o in outcomes) == 1
    await registry.aclose()


async def test_tokens_go_back_only_to_the_window_they_were_reserved_in(store: str) -> None:
    """A call that outlives its window gives nothing back to the next, which others fill."""
    events = {text: asyncio.Event() for text in ("first", "second")}
    entered = {text: asyncio.Event() for text in ("first", "second")}

    async def held(request: ModelRequest) -> ModelResponse:
        text = request.messages[-1].text
        if text in events:
            entered[text].set()
            await events[text].wait()
        return ModelResponse(Message.assistant("ok"), Usage(3, 2))

    # the second and third calls must fall in one window on a busy machine too: 2 s
    registry = rate_limit(
        requests_per_minute=None, tokens_per_minute=100, window=2, max_wait=0, store=store
    )
    agent = Agent(FunctionModel(held), registry=registry)
    settings = ModelSettings(max_tokens=60)  # each reserves ~5 + 60 tokens
    first = asyncio.create_task(agent.run("first", model_settings=settings))
    await entered["first"].wait()
    await asyncio.sleep(2.1)  # the first call's window ends while it runs
    second = asyncio.create_task(agent.run("second", model_settings=settings))
    await entered["second"].wait()  # the second reserved ~65 of the new window
    events["first"].set()
    assert isinstance(await first, Success)  # used 5: its ~60 must not free the new window
    error = (await agent.run("third", model_settings=settings)).failure()
    assert isinstance(error, RateLimitExceeded)
    assert error.limit == "tokens_per_minute"
    events["second"].set()
    assert isinstance(await second, Success)
    await registry.aclose()


async def test_concurrent_give_backs_never_take_a_window_below_zero(redis_url: str) -> None:
    """Two clients (as two processes) give back more than the window holds: it ends at 0."""
    registries = [rate_limit(tokens_per_minute=1000, store=redis_url) for _ in range(2)]
    owners = [registry.resources[0] for registry in registries]
    tokens = owners[0].tokens
    await owners[0].storage.incr(owners[0]._key(tokens, "m"), 60, amount=50)
    await asyncio.gather(*(owner.give_back(tokens, "m", 40) for owner in owners * 5))
    assert await owners[1].storage.get(owners[1]._key(tokens, "m")) == 0
    await owners[0].give_back(tokens, "absent", 40)  # a window that is gone stays gone
    assert await owners[0].storage.get(owners[0]._key(tokens, "absent")) == 0
    for registry in registries:
        await registry.aclose()


async def test_a_failed_call_gives_its_whole_reservation_back(store: str) -> None:
    """A model error used no tokens: its reservation is free again at once."""
    calls: list[int] = []

    def flaky(request: ModelRequest) -> Any:
        calls.append(1)
        if len(calls) == 1:
            return ProviderUnavailable(message="down")
        return "ok"

    registry = rate_limit(tokens_per_minute=100, max_wait=0, store=store)
    agent = Agent(FunctionModel(flaky), registry=registry)
    settings = ModelSettings(max_tokens=60)
    assert isinstance(
        (await agent.run("a", model_settings=settings)).failure(), ProviderUnavailable
    )
    assert isinstance(await agent.run("b", model_settings=settings), Success)
    await registry.aclose()


async def test_a_call_bigger_than_the_token_rate_fails_at_once() -> None:
    """A reservation over tokens_per_minute could never pass: it fails without waiting."""
    model = answering()
    registry = rate_limit(tokens_per_minute=50, output_reserve=100, max_wait=30)
    error = (await Agent(model, registry=registry).run("hi")).failure()
    assert isinstance(error, RateLimitExceeded)
    assert error.limit == "tokens_per_minute"
    assert "more than tokens_per_minute=50 ever allows" in error.message
    assert model.requests == []


async def test_a_thousand_concurrent_runs_never_exceed_the_calls_in_flight() -> None:
    """max_concurrent=3 over 1,000 concurrent runs: never more than 3 calls at once, all pass."""
    running = peak = 0

    async def busy(request: ModelRequest) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        for _ in range(3):
            await asyncio.sleep(0)
        running -= 1
        return "ok"

    registry = rate_limit(requests_per_minute=None, max_concurrent=3)
    agent = Agent(FunctionModel(busy), registry=registry)
    outcomes = await asyncio.gather(*(agent.run(f"run {i}") for i in range(1000)))
    assert all(isinstance(o, Success) for o in outcomes)
    assert peak == 3


def held_calls(**options: Any) -> tuple[Agent, asyncio.Event]:
    """An agent whose model calls all wait for the event, rate limited with ``options``."""
    release = asyncio.Event()

    async def held(request: ModelRequest) -> str:
        await release.wait()
        return "ok"

    registry = rate_limit(requests_per_minute=None, **options)
    return Agent(FunctionModel(held), registry=registry), release


async def test_no_free_slot_within_max_wait_is_a_typed_error() -> None:
    """With max_wait=0, calls beyond max_concurrent in flight fail at once."""
    agent, release = held_calls(max_concurrent=3, max_wait=0)
    tasks = [asyncio.create_task(agent.run(f"run {i}")) for i in range(10)]
    await asyncio.wait(tasks[3:])  # the first three hold the slots; the others fail at once
    release.set()
    outcomes = [await t for t in tasks]
    assert sum(isinstance(o, Success) for o in outcomes) == 3
    errors = [o.failure() for o in outcomes if not isinstance(o, Success)]
    assert all(isinstance(e, RateLimitExceeded) and e.limit == "max_concurrent" for e in errors)


async def test_a_call_waits_for_a_slot_then_fails_typed() -> None:
    """No slot frees within max_wait: the call waited (at least max_wait), then an error."""
    agent, release = held_calls(max_concurrent=1, max_wait=0.2)
    holder = asyncio.create_task(agent.run("holder"))
    await asyncio.sleep(0)
    started = time.monotonic()
    error = (await agent.run("waiter")).failure()
    assert time.monotonic() - started >= 0.2
    assert isinstance(error, RateLimitExceeded)
    assert error.limit == "max_concurrent"
    release.set()
    assert isinstance(await holder, Success)
    assert isinstance(await agent.run("after"), Success)  # the slot is free again


async def test_a_run_cancelled_while_waiting_for_a_slot_leaves_no_slot_taken() -> None:
    """Cancelling a waiting run gives up its wait; the slots are all free afterwards."""
    release = asyncio.Event()
    running = peak = 0

    async def held(request: ModelRequest) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        if request.messages[-1].text == "holder":
            await release.wait()
        running -= 1
        return "ok"

    registry = rate_limit(requests_per_minute=None, max_concurrent=1, max_wait=30)
    agent = Agent(FunctionModel(held), registry=registry)
    holder = asyncio.create_task(agent.run("holder"))
    await asyncio.sleep(0)
    waiter = asyncio.create_task(agent.run("waiter"))
    await asyncio.sleep(0.01)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    release.set()
    assert isinstance(await holder, Success)
    outcomes = await asyncio.gather(*(agent.run(f"run {i}") for i in range(5)))
    assert all(isinstance(o, Success) for o in outcomes)
    assert peak == 1


async def test_a_slot_granted_just_as_the_wait_is_given_up_goes_back() -> None:
    """The race where a slot is granted as its wait ends: the slot is released, not lost."""
    slot = asyncio.Semaphore(1)
    waiter = asyncio.ensure_future(slot.acquire())
    await waiter  # granted, but the caller has stopped waiting
    give_up(waiter, slot)
    await asyncio.sleep(0)
    assert not slot.locked()


async def test_each_model_has_its_own_rate() -> None:
    """Limits are per model name: one model's calls do not use another's."""
    registry = rate_limit(requests_per_minute=1, max_wait=0)
    first = Agent(answering(name="alpha"), registry=registry)
    second = Agent(answering(name="beta"), registry=registry)
    assert isinstance(await first.run("hi"), Success)
    assert isinstance(await second.run("hi"), Success)
    assert isinstance((await first.run("again")).failure(), RateLimitExceeded)


def test_the_estimate_counts_every_part_of_the_request() -> None:
    """Text, tool calls and results, images, instructions and tool schemas all count."""
    message = Message(
        "assistant", (ToolCallPart("c1", "add", '{"a": 1}'), DataPart(b"png", "image/png"))
    )
    request = ModelRequest(
        (Message.user("x" * 40), message, Message("tool", (ToolResultPart("c1", "add", "7"),))),
        instructions="y" * 40,
        tools=(ToolSpec("add", "Add.", {"type": "object"}),),
    )
    chars = 40 + 16 + (16 + 3 + 8 + 4000) + (16 + 1) + 40 + (3 + 4 + len("{'type': 'object'}"))
    assert estimate_tokens(request) == -(-chars // 4)


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"requests_per_minute": None}, "rate_limit needs a limit"),
        ({"store": "ftp://host"}, "unknown scheme 'ftp'"),
        ({"store": "memory://?max_entries=5"}, "memory:// takes no host or options"),
    ],
)
def test_bad_parameters_are_value_errors(options: dict[str, Any], words: str) -> None:
    """No limit, or a store it cannot use, is refused when the registry is made."""
    with pytest.raises(ValueError, match=words):
        rate_limit(**options)


def test_redis_without_its_client_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """A redis:// store without the redis package names the extra to install."""
    monkeypatch.setitem(sys.modules, "redis", None)
    monkeypatch.setitem(sys.modules, "redis.asyncio", None)
    with pytest.raises(ValueError, match=r"pip install 'fncore-agents\[redis\]'"):
        rate_limit(store="redis://127.0.0.1:1/0")


async def test_configuration_loads_it_with_use_alone() -> None:
    """Configured by name alone: 60 requests per minute per model, in memory."""
    container = configured({"use": "rate_limit"})
    agent = container.agent()
    assert agent.describe().positions["model_call"] == ("rate_limit",)
    assert (await agent.run("hi")).unwrap().output == "hi"
    await container.shutdown()


async def test_configuration_from_a_toml_file_on_redis(tmp_path: Path, redis_url: str) -> None:
    """A TOML block with a Redis store; the container closes its connections on shutdown."""
    path = tmp_path / "fncore.toml"
    path.write_text(
        f"""
[[middleware]]
use = "rate_limit"
requests_per_minute = 2
tokens_per_minute = 100000
max_concurrent = 4
max_wait = 0
store = "{redis_url}"
"""
    )
    container = load_container(path, environ={})
    agent = container.agent()
    outcomes = [await agent.run("hi") for _ in range(3)]
    assert [isinstance(o, Success) for o in outcomes] == [True, True, False]
    await container.shutdown()


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"use": "rate_limit", "requests_per_minute": 0}, "greater than or equal to 1"),
        ({"use": "rate_limit", "max_wait": -1}, "greater than or equal to 0"),
        ({"use": "rate_limit", "window": 0}, "greater than or equal to 1"),
        ({"use": "rate_limit", "window": 1.5}, "valid integer"),
        ({"use": "rate_limit", "requests_per_minute": None}, "needs a limit"),
        ({"use": "rate_limit", "store": "ftp://x"}, "unknown scheme 'ftp'"),
    ],
)
def test_configuration_errors_are_one_line(entry: dict[str, Any], words: str) -> None:
    """Out-of-range values and unusable stores are one ConfigError line naming the entry."""
    assert words in config_error(entry)


async def test_it_stands_inside_the_other_limits() -> None:
    """Declared place: inside limit_calls and budget, so each attempt is rate limited."""
    from fncore.middleware import budget, limit_calls

    registry = Registry()
    registry.include(rate_limit())
    registry.include(budget())
    registry.include(limit_calls())
    order = Agent(TestModel(), registry=registry).describe().positions["model_call"]
    assert order == ("limit_calls", "budget", "rate_limit")
