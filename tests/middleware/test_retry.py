"""`retry` and `retry_tools`: backoff, attempts, Retry-After, the only retry layer, config."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from anthropic_wire import KEY, events, text
from fake_provider import FakeProvider, Reply, sse
from fncore_anthropic import AnthropicModel
from resilience_helpers import (  # noqa: F401
    Scheduled,
    Stalling,
    agent_with,
    answer,
    retries_fixture,
    streamed,
)
from returns.result import Failure, Success
from support import run_ok

from fncore import (
    AgentError,
    ConfigError,
    Message,
    ModelCallContext,
    ModelCallNext,
    ModelError,
    ModelRequest,
    ModelResponse,
    Outcome,
    Registry,
    Terminate,
    ToolCallContext,
    ToolCallNext,
    ToolResult,
    load_container,
)
from fncore.errors import (
    BadRequest,
    ProviderUnavailable,
    RateLimited,
    RateLimitExceeded,
    StreamInterrupted,
)
from fncore.events import TextDelta
from fncore.middleware import retry, retry_tools
from fncore.testing import FunctionModel, ScriptedModel, TestModel, tool_calls

QUICK: dict[str, Any] = {"wait_initial": 0.0, "wait_jitter": 0.0}
"""No backoff: the tests check what is retried, not how long it waits."""

MODES = pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])

BUSY = ProviderUnavailable(message="busy")


@MODES
async def test_a_retryable_error_is_sent_again_until_an_answer(stream: bool) -> None:
    """Two retryable failures, then an answer: three requests, one answer."""
    model = ScriptedModel([BUSY, RateLimited(message="slow down"), "fine"])
    outcome = await answer(agent_with(model, retry(**QUICK)), "hi", stream)
    assert run_ok(outcome).output == "fine"
    assert len(model.requests) == 3


@MODES
async def test_attempts_run_out_with_the_last_error(stream: bool) -> None:
    """max_attempts counts the first: three attempts, then the third error is returned."""
    errors = [ProviderUnavailable(message=f"busy {n}") for n in range(1, 5)]
    model = ScriptedModel([*errors, "never"])
    outcome = await answer(agent_with(model, retry(**QUICK)), "hi", stream)
    assert outcome.failure() == errors[2]
    assert len(model.requests) == 3


async def test_one_attempt_is_no_retry() -> None:
    """max_attempts=1 sends once and returns the error."""
    model = ScriptedModel([BUSY, "never"])
    assert (await agent_with(model, retry(max_attempts=1)).run("hi")).failure() == BUSY
    assert len(model.requests) == 1


@pytest.mark.parametrize(
    "error",
    [
        BadRequest(message="no such field"),
        ProviderUnavailable(message="told not to", retryable=False),
        ModelError(message="unknown trouble"),
    ],
    ids=["bad-request", "not-retryable", "model-error"],
)
async def test_only_retryable_errors_are_retried_by_default(error: AgentError) -> None:
    """An error without ``retryable`` is returned at once."""
    model = ScriptedModel([error, "never"])
    assert (await agent_with(model, retry(**QUICK)).run("hi")).failure() == error
    assert len(model.requests) == 1


async def test_a_termination_is_never_retried() -> None:
    """An inner middleware's Terminate passes through: a deliberate stop."""
    inner = Registry()
    calls: list[int] = []

    @inner.on("model_call")
    async def stop(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        calls.append(1)
        return Failure(Terminate("stopped"))

    result = run_ok(await agent_with(TestModel(), retry(**QUICK), inner).run("hi"))
    assert (result.output, result.stop_reason, calls) == ("stopped", "terminated", [1])


async def test_on_names_error_types_and_the_retryable_keyword() -> None:
    """The on list names what to retry: types (and their subclasses), 'retryable' the default."""
    bad = BadRequest(message="flaky proxy")
    model = ScriptedModel([bad, BUSY, "fine"])
    assert (await agent_with(model, retry(on=["BadRequest"], **QUICK)).run("hi")).failure() == BUSY
    model = ScriptedModel([bad, BUSY, "fine"])
    both = retry(on=["retryable", "BadRequest"], **QUICK)
    assert run_ok(await agent_with(model, both).run("hi")).output == "fine"
    model = ScriptedModel([bad, "fine"])
    assert run_ok(await agent_with(model, retry(on=["ModelError"], **QUICK)).run("hi"))


async def test_on_may_be_a_function_of_the_error() -> None:
    """In code, on= is a predicate over the error."""
    model = ScriptedModel([BadRequest(message="try again"), BadRequest(message="final"), "x"])
    registry = retry(on=lambda e: "again" in e.message, **QUICK)
    assert (await agent_with(model, registry).run("hi")).failure().message == "final"
    assert len(model.requests) == 2


async def test_backoff_grows_and_is_capped(retries: list[Scheduled]) -> None:
    """Waits double from wait_initial, never above wait_max (no jitter here)."""
    model = ScriptedModel([BUSY] * 4)
    registry = retry(max_attempts=4, wait_initial=0.01, wait_max=0.03, wait_jitter=0.0)
    await agent_with(model, registry).run("hi")
    assert [round(r.wait_for, 3) for r in retries] == [0.01, 0.02, 0.03]
    assert "ProviderUnavailable: busy" in retries[0].caused_by


async def test_retry_after_is_the_wait(retries: list[Scheduled]) -> None:
    """A RateLimited error's retry_after replaces the backoff, and is waited."""
    model = ScriptedModel([RateLimited(message="429", retry_after=0.2), "fine"])
    started = time.monotonic()
    assert run_ok(await agent_with(model, retry(wait_initial=5.0)).run("hi")).output == "fine"
    assert time.monotonic() - started >= 0.2
    assert [r.wait_for for r in retries] == [0.2]


async def test_retry_after_beyond_the_cap_is_returned_at_once() -> None:
    """Asked to wait longer than max_retry_after, retry gives up: the error comes back now."""
    limited = RateLimited(message="quota", retry_after=3600.0)
    model = ScriptedModel([limited, "never"])
    assert (await agent_with(model, retry(max_retry_after=60.0)).run("hi")).failure() == limited
    assert len(model.requests) == 1


async def test_retry_after_ending_past_max_time_is_not_waited() -> None:
    """A wait that would end after max_time is not taken."""
    limited = RateLimited(message="429", retry_after=5.0)
    model = ScriptedModel([limited, "never"])
    assert (await agent_with(model, retry(max_time=1.0)).run("hi")).failure() == limited
    assert len(model.requests) == 1


async def test_no_retry_is_scheduled_after_max_time() -> None:
    """An attempt that ends after max_time is the last."""

    async def slow_failure(request: ModelRequest) -> ProviderUnavailable:
        await asyncio.sleep(0.05)
        return BUSY

    model = FunctionModel(slow_failure)
    registry = retry(max_time=0.01, **QUICK)
    assert (await agent_with(model, registry).run("hi")).failure() == BUSY
    assert len(model.requests) == 1


async def test_a_stream_is_retried_until_it_shows_something() -> None:
    """An error before the first chunk is retried; the consumer sees one answer only."""
    model = ScriptedModel([BUSY, "hello there"], chunk=3)
    text_seen, outcome = await streamed(agent_with(model, retry(**QUICK)), "hi")
    assert (text_seen, run_ok(outcome).output) == ("hello there", "hello there")


async def test_a_stream_that_showed_a_chunk_is_not_retried() -> None:
    """After a chunk reached the consumer, the error is returned, not retried."""
    cut = StreamInterrupted(message="cut off")
    model = Stalling(deltas=(TextDelta("Hel"),), ending=cut)
    text_seen, outcome = await streamed(agent_with(model, retry(**QUICK)), "hi")
    assert (text_seen, outcome.failure(), model.started) == ("Hel", cut, 1)


async def test_an_inner_map_that_drops_every_chunk_allows_a_retry() -> None:
    """Only events that reach retry's layer count as shown."""
    inner = Registry()

    @inner.on("model_call")
    async def quiet(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        return await call_next(ctx.map_events(lambda event: None))

    model = Stalling(deltas=(TextDelta("Hel"),), ending=StreamInterrupted(message="cut"))
    agent = agent_with(model, retry(max_attempts=2, **QUICK), inner)
    text_seen, outcome = await streamed(agent, "hi")
    assert (text_seen, model.started) == ("", 2)
    assert isinstance(outcome.failure(), StreamInterrupted)


async def test_cancelling_the_run_during_a_wait_stops_it() -> None:
    """A retry waiting its backoff is cancelled with the run; nothing is left running."""
    model = ScriptedModel([BUSY, "never"])
    task = asyncio.create_task(agent_with(model, retry(wait_initial=30.0)).run("hi"))
    for _ in range(100):  # until the first attempt failed and the wait began
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(model.requests) == 1
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_cancelling_the_run_during_a_second_attempt_stops_it() -> None:
    """Cancellation inside a retried attempt propagates; it is never taken for a failure."""
    seen: list[str] = []

    async def busy_then_stall(request: ModelRequest) -> str | ProviderUnavailable:
        if not seen:
            seen.append("busy")
            return BUSY
        seen.append("waiting")
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        return "never"

    task = asyncio.create_task(agent_with(FunctionModel(busy_then_stall), retry(**QUICK)).run("hi"))
    for _ in range(100):  # until the second attempt waits
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == ["busy", "waiting", "cancelled"]


async def test_many_concurrent_runs_each_retry_exactly_their_own() -> None:
    """1,000 runs whose first request fails: each retries once, 2,000 requests in all."""
    seen: Counter[str] = Counter()

    def first_fails(request: ModelRequest) -> str | ProviderUnavailable:
        key = request.messages[-1].text
        seen[key] += 1
        return BUSY if seen[key] == 1 else f"ok {key}"

    agent = agent_with(FunctionModel(first_fails), retry(**QUICK))
    outcomes = await asyncio.gather(*(agent.run(f"run {n}") for n in range(1000)))
    assert [run_ok(o).output for o in outcomes] == [f"ok run {n}" for n in range(1000)]
    assert sum(seen.values()) == 2000
    assert set(seen.values()) == {2}


# --- the only retry layer: SDK retries off, through the real SDK ----------------------------


def anthropic_on(fake: FakeProvider) -> AnthropicModel:
    """An Anthropic model on the fake server with the SDK's default two retries."""
    return AnthropicModel("claude-test-1", api_key=KEY, base_url=fake.url, timeout=5.0)


def unavailable(**headers: str) -> Reply:
    """A 503 the SDK would retry (quickly: retry-after-ms 1)."""
    return Reply(
        503,
        {"type": "error", "error": {"type": "api_error", "message": "busy"}},
        {},
        headers={"retry-after-ms": "1", **headers},
    )


@MODES
async def test_sdk_and_framework_retries_do_not_stack(
    fake_provider: FakeProvider, stream: bool
) -> None:
    """With retry(max_attempts=3), three failures are three requests, not nine."""
    model = anthropic_on(fake_provider)
    assert model.client.max_retries == 2
    try:
        fake_provider.reply(*[unavailable() for _ in range(9)])
        outcome = await answer(agent_with(model, retry(**QUICK)), "hi", stream)
        assert isinstance(outcome.failure(), ProviderUnavailable)
        assert len(fake_provider.requests) == 3
        fake_provider.replies.clear()
        fake_provider.requests.clear()
        fake_provider.reply(unavailable(), unavailable(), unavailable())
        assert isinstance((await agent_with(model).run("hi")).failure(), ProviderUnavailable)
        assert len(fake_provider.requests) == 3  # without retry the SDK's own retries apply
    finally:
        await model.aclose()


async def test_a_429_retry_after_from_the_wire_is_honoured(
    fake_provider: FakeProvider, retries: list[Scheduled]
) -> None:
    """The provider's retry-after header reaches retry through the adapter: that is the wait."""
    model = anthropic_on(fake_provider)
    limited = Reply(
        429,
        {"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}},
        headers={"retry-after": "0.25"},
    )
    try:
        fake_provider.reply(limited, sse(*events(text("fine"))))
        text_seen, outcome = await streamed(agent_with(model, retry(wait_initial=9.0)), "hi")
        assert (text_seen, run_ok(outcome).output) == ("fine", "fine")
        assert [r.wait_for for r in retries] == [0.25]
        assert len(fake_provider.requests) == 2
    finally:
        await model.aclose()


async def test_a_stream_cut_after_its_first_chunks_is_not_retried(
    fake_provider: FakeProvider,
) -> None:
    """StreamInterrupted mid-answer is retryable, but the consumer saw part of it: returned."""
    model = anthropic_on(fake_provider)
    try:
        fake_provider.reply(sse(*events(text("Hello there")), cut_after=5), Reply(body={}))
        text_seen, outcome = await streamed(agent_with(model, retry(**QUICK)), "hi")
        assert text_seen
        assert "Hello there".startswith(text_seen)
        assert isinstance(outcome.failure(), StreamInterrupted)
        assert len(fake_provider.requests) == 1
    finally:
        await model.aclose()


# --- retry_tools ---------------------------------------------------------------------------


def flaky(failures: int) -> tuple[Any, list[int]]:
    """A tool ``fetch`` failing its first ``failures`` calls, and the list of its calls."""
    calls: list[int] = []

    async def fetch(page: int) -> str:
        """Fetch a page."""
        calls.append(page)
        if len(calls) <= failures:
            raise ConnectionError("reset")
        return f"page {page}"

    return fetch, calls


def one_call(*names: str) -> ScriptedModel:
    """A model calling each named tool once (page=1), then answering 'done'."""
    return ScriptedModel([tool_calls(*[(n, {"page": 1}) for n in names]), "done"])


async def test_a_failing_tool_is_run_again_until_it_works() -> None:
    """Two error results, then the page: the model sees only the last result."""
    fetch, calls = flaky(2)
    result = run_ok(
        await agent_with(one_call("fetch"), retry_tools(**QUICK), tools=[fetch]).run("go")
    )
    assert calls == [1, 1, 1]
    assert result.messages[1].tool_results[0].content == "page 1"


async def test_a_tool_failing_every_time_gives_its_last_error_result() -> None:
    """After max_attempts the last error result is what the model sees."""
    fetch, calls = flaky(10)
    result = run_ok(
        await agent_with(
            one_call("fetch"), retry_tools(max_attempts=2, **QUICK), tools=[fetch]
        ).run("go")
    )
    assert len(calls) == 2
    assert result.messages[1].tool_results[0].is_error


async def test_tools_limits_retries_to_the_named_tools() -> None:
    """tools=[...] retries only those: the others fail once."""
    fetch, fetched = flaky(1)
    post, posted = flaky(1)
    post.__name__ = "post"
    registry = retry_tools(tools=["fetch"], **QUICK)
    result = run_ok(
        await agent_with(one_call("fetch", "post"), registry, tools=[fetch, post]).run("go")
    )
    assert (len(fetched), len(posted)) == (2, 1)
    assert [r.is_error for r in result.messages[1].tool_results] == [False, True]


async def test_retry_tools_retries_an_inner_error_it_is_told_to() -> None:
    """Named in on, a RateLimitExceeded from inside is waited out and retried."""
    inner = Registry()
    refusals: list[int] = []

    @inner.on("tool_call")
    async def limiter(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        if not refusals:
            refusals.append(1)
            return Failure(RateLimitExceeded(message="no capacity", retry_after=0.01))
        return await call_next(ctx)

    fetch, _ = flaky(0)
    registry = retry_tools(on=["RateLimitExceeded"], **QUICK)
    result = run_ok(await agent_with(one_call("fetch"), registry, inner, tools=[fetch]).run("go"))
    assert result.messages[1].tool_results[0].content == "page 1"
    default = retry_tools(**QUICK)
    refusals.clear()
    outcome = await agent_with(one_call("fetch"), default, inner, tools=[fetch]).run("go")
    assert isinstance(outcome.failure(), RateLimitExceeded)  # not retried by default


async def test_retry_tools_on_may_be_a_function() -> None:
    """In code, on= sees each error result (or error) and says whether to retry."""
    fetch, calls = flaky(10)
    seen: list[Any] = []

    def once(failure: AgentError | ToolResult) -> bool:
        seen.append(failure)
        return len(seen) < 2

    await agent_with(one_call("fetch"), retry_tools(on=once, **QUICK), tools=[fetch]).run("go")
    assert len(calls) == 2
    assert all(isinstance(f, ToolResult) and f.is_error for f in seen)


async def test_a_good_tool_result_and_a_termination_are_not_retried() -> None:
    """Only failures are retried."""
    fetch, calls = flaky(0)
    inner = Registry()

    @inner.on("tool_call")
    async def stop(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        await call_next(ctx)
        return Failure(Terminate("enough"))

    result = run_ok(
        await agent_with(one_call("fetch"), retry_tools(**QUICK), inner, tools=[fetch]).run("go")
    )
    assert (result.stop_reason, calls) == ("terminated", [1])


async def test_many_concurrent_runs_retry_their_own_tool_calls() -> None:
    """1,000 runs, each with a tool failing its first call: 2,000 tool calls in all."""
    seen: Counter[int] = Counter()

    async def fetch(page: int) -> str:
        """Fetch a page."""
        seen[page] += 1
        if seen[page] == 1:
            raise ConnectionError("reset")
        return f"page {page}"

    def script(request: ModelRequest) -> Message | str:
        if request.messages[-1].role == "tool":
            return request.messages[-1].tool_results[0].content
        return tool_calls(("fetch", {"page": int(request.messages[-1].text)}))

    agent = agent_with(FunctionModel(script), retry_tools(**QUICK), tools=[fetch])
    outcomes = await asyncio.gather(*(agent.run(str(n)) for n in range(1000)))
    assert [run_ok(o).output for o in outcomes] == [f"page {n}" for n in range(1000)]
    assert sum(seen.values()) == 2000


# --- configuration ---------------------------------------------------------------------------


async def test_retry_from_configuration_with_use_alone() -> None:
    """The entries use = 'retry' and use = 'retry_tools' load with their defaults."""
    container = load_container(
        overrides={"middleware": [{"use": "retry_tools"}, {"use": "retry"}]}, environ={}
    )
    positions = container.agent().describe().positions
    assert (positions["model_call"], positions["tool_call"]) == (("retry",), ("retry_tools",))


async def test_retry_from_a_toml_file(tmp_path: Path) -> None:
    """The same from a file, with parameters: on names, tools, numbers."""
    path = tmp_path / "fncore.toml"
    path.write_text(
        """
[[middleware]]
use = "retry"
max_attempts = 2
wait_initial = 0
wait_jitter = 0
on = ["retryable", "BadRequest"]

[[middleware]]
use = "retry_tools"
tools = ["fetch"]
wait_initial = 0
"""
    )
    container = load_container(path, environ={})
    fetch = flaky(0)[0]
    assert "retry_tools[fetch]" in str(container.agent(tools=[fetch]).describe())
    model = ScriptedModel(
        [BadRequest(message="flaky"), "fine", BadRequest(message="1"), BadRequest(message="2")]
    )
    agent = container.agent(model=model, tools=[fetch])
    assert run_ok(await agent.run("hi")).output == "fine"
    assert (await agent.run("hi")).failure().message == "2"


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"use": "retry", "max_attempts": 0}, "parameter 'max_attempts': Input should be greater"),
        ({"use": "retry", "wait_initial": -1}, "parameter 'wait_initial':"),
        ({"use": "retry", "max_time": 0}, "parameter 'max_time':"),
        ({"use": "retry", "on": ["Nope"]}, "on: 'Nope' is not an error type; name 'retryable'"),
        ({"use": "retry_tools", "on": ["retryable"]}, "name 'error_result' or error types"),
        ({"use": "retry", "attempts": 3}, "parameter 'attempts': unknown parameter"),
    ],
)
def test_a_bad_retry_entry_is_one_line(entry: dict[str, Any], words: str) -> None:
    """Out-of-range numbers, unknown error names and keys name the entry, on one line."""
    with pytest.raises(ConfigError) as info:
        load_container(overrides={"middleware": [entry]}, environ={}).agent()
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("config key 'middleware[0]'")
    assert words in message


def test_calling_a_factory_with_a_bad_value_fails_at_once() -> None:
    """Code gets the same checks when it calls the factory."""
    with pytest.raises(ValueError, match="max_attempts"):
        retry(max_attempts=0)
    with pytest.raises(ValueError, match="'Nope' is not an error type"):
        retry_tools(on=["Nope"])


async def test_two_instances_need_two_names() -> None:
    """name= tells two retries apart; the default names clash, as any two middleware do."""
    agent = agent_with(TestModel(), retry(name="outer", **QUICK), retry(**QUICK))
    assert agent.describe().positions["model_call"] == ("outer", "retry")
    assert isinstance(await agent.run("hi"), Success)
