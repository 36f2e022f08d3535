"""Faults: wrong values, odd tool results, BaseExceptions, cancellation, things that hang.

Each case here once made ``run()`` raise or hang; each must now be a typed value, or behave
as documented (docs/concepts/outcomes.md, "What can go wrong").
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict
from returns.result import Failure, Result, Success
from support import add, run_ok

from fncore import (
    Agent,
    AgentError,
    CompressContext,
    CompressNext,
    InMemorySessionStore,
    InvalidPrompt,
    LoopSettings,
    Message,
    MiddlewareError,
    ModelCallContext,
    ModelCallNext,
    ModelError,
    ModelRequest,
    ModelResponse,
    Outcome,
    ReasoningContext,
    ReasoningNext,
    RegistrationError,
    Registry,
    RunContext,
    RunNext,
    RunResult,
    SystemPromptContext,
    Tool,
    ToolCallContext,
    ToolCallNext,
    ToolResult,
)
from fncore.core import ModelStreamItem
from fncore.events import RunCompleted, RunEnd, StreamEvent, TextDelta, ToolStart
from fncore.testing import ScriptedModel, TestModel, tool_calls

# -- 1. wrong values never escape ------------------------------------------------------------


def middleware_returning(position: str, value: object) -> Registry:
    """A registry with one middleware at ``position`` returning ``value`` without calling on."""
    registry = Registry()

    async def wrong(ctx: Any, call_next: Any) -> Any:
        return value

    async def wrong_prompt(ctx: Any, prompt: str) -> Any:
        return value

    registry.on(position, name="wrong")(wrong_prompt if position == "system_prompt" else wrong)  # type: ignore[call-overload]
    return registry


WRONG_VALUES = [Success(None), Success("81"), Success(object()), Failure("text"), None, 42]


@pytest.mark.parametrize(
    "position", ["run", "reasoning", "model_call", "tool_call", "compress_context", "system_prompt"]
)
@pytest.mark.parametrize("value", WRONG_VALUES, ids=repr)
@pytest.mark.parametrize("streaming", [False, True])
async def test_a_wrong_value_is_a_middleware_error_naming_everything(
    position: str, value: object, streaming: bool
) -> None:
    """Success of the wrong type, Failure of a non-error, a bare value: a MiddlewareError."""
    if position == "system_prompt" and value == Success("81"):
        value = Success(81)  # text is a fine prompt; a number is not
    agent = Agent(TestModel(), registry=middleware_returning(position, value), tools=[add])
    if streaming:
        out = await agent.stream("add 1 2").result()
    else:
        out = await agent.run("add 1 2")
    assert isinstance(out, Failure)
    error = out.failure()
    assert type(error) is MiddlewareError
    assert (error.position, error.middleware) == (position, "wrong")
    assert "returned " in error.message
    assert "Failure(Terminate(...)), Failure(Pause(...)) or Failure(AgentError)" in error.message


@pytest.mark.parametrize(
    ("prompt", "found"),
    [
        (None, "the prompt is None (NoneType)"),
        (123, "the prompt is 123 (int)"),
        (b"hi", "the prompt is b'hi' (bytes)"),
        ({"role": "user"}, "the prompt is {'role': 'user'} (dict)"),
        ([Message.user("hi"), "there"], "a sequence holding 'there' (str)"),
    ],
    ids=["None", "int", "bytes", "dict", "list with a str"],
)
async def test_a_prompt_of_the_wrong_type_is_an_invalid_prompt(prompt: Any, found: str) -> None:
    """Not text, a message or messages: InvalidPrompt saying what a prompt may be, both modes."""
    model, store = TestModel(), InMemorySessionStore()
    agent = Agent(model, registry=Registry(), sessions=store)
    out = await agent.run(prompt, session_id="s")
    error = out.failure()
    assert type(error) is InvalidPrompt
    assert found in error.message
    assert "a str), a Message, or a sequence of Messages" in error.message
    events = [event async for event in agent.stream(prompt)]
    assert len(events) == 1
    assert isinstance(events[0], RunCompleted)
    assert type(events[0].outcome.failure()) is InvalidPrompt
    assert model.requests == []
    assert await store.load("s") is None


async def test_the_langchain_cache_port_is_told_to_wrap_the_text() -> None:
    """`return Success(cached_text)` from tool_call says to write Success(ToolResult(...))."""
    registry = Registry()

    @registry.on("tool_call")
    async def cache(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        return Success("81")  # type: ignore[arg-type]

    error = (await Agent(TestModel(), registry=registry, tools=[add]).run("1 2")).failure()
    assert isinstance(error, MiddlewareError)
    assert "returned Success('81')" in error.message
    assert "wrap the text: Success(ToolResult('81'))" in error.message


async def test_a_failure_carrying_text_names_what_a_failure_must_carry() -> None:
    """Failure("text") is not a Terminate or AgentError: the error says what is."""
    error = (
        await Agent(TestModel(), registry=middleware_returning("model_call", Failure("no"))).run(
            "hi"
        )
    ).failure()
    assert isinstance(error, AgentError)
    assert "returned Failure('no')" in error.message
    assert "a Failure carries Terminate(...) or an AgentError" in error.message


async def test_a_wrong_system_prompt_is_blamed_on_the_transformer_not_the_model() -> None:
    """A transformer returning Success(None) fails at system_prompt; the model is never called."""
    model = TestModel()
    error = (
        await Agent(model, registry=middleware_returning("system_prompt", Success(None))).run("hi")
    ).failure()
    assert isinstance(error, MiddlewareError)
    assert (error.position, error.middleware) == ("system_prompt", "wrong")
    assert model.requests == []


class OddModel:
    """A model whose request returns ``value`` and whose stream yields ``items``."""

    def __init__(self, value: object = None, items: tuple[object, ...] = ()) -> None:
        self.value = value
        self.items = items

    @property
    def name(self) -> str:
        """The model's name."""
        return "odd"

    async def request(self, request: ModelRequest) -> Result[ModelResponse, ModelError]:
        """Return the configured value, whatever it is."""
        return self.value  # type: ignore[return-value]

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamItem]:
        """Yield the configured items, whatever they are."""
        for item in self.items:
            yield item  # type: ignore[misc]


@pytest.mark.parametrize(
    "value",
    [None, Success("x"), ModelResponse(Message.assistant("bare")), Failure("down"), 3],
    ids=repr,
)
async def test_a_model_breaking_its_contract_is_a_model_error_naming_it(value: object) -> None:
    """None, Success("x"), a bare response, Failure of a non-error: a ModelError naming it."""
    for registry in (Registry(), middleware_passing("model_call")):
        error = (await Agent(OddModel(value), registry=registry).run("hi")).failure()
        assert type(error) is ModelError
        assert error.position == "model_call"
        assert error.message.startswith("model 'odd' returned ")
        assert "must return Success(ModelResponse)" in error.message


def middleware_passing(position: str) -> Registry:
    """A registry with one pass-through middleware at ``position``."""
    registry = Registry()

    async def passing(ctx: Any, call_next: Any) -> Any:
        return await call_next(ctx)

    registry.on(position, name="passing")(passing)  # type: ignore[call-overload]
    return registry


async def test_junk_in_a_model_stream_never_reaches_the_consumer() -> None:
    """A stream yielding something not a delta fails the run, naming the model; no junk event."""
    model = OddModel(items=(TextDelta("ok "), "junk", TextDelta("never")))
    events: list[StreamEvent] = []
    stream = Agent(model, registry=Registry()).stream("hi")
    async for event in stream:
        events.append(event)
    error = (await stream.result()).failure()
    assert isinstance(error, ModelError)
    assert "model 'odd' streamed str 'junk'" in error.message
    assert [type(e).__name__ for e in events] == ["RoundStarted", "TextDelta", "RunCompleted"]


@pytest.mark.parametrize("position", ["model_call", "run"])
async def test_an_event_map_that_raises_is_blamed_on_its_middleware(position: str) -> None:
    """An exception in an event map fails the run with a MiddlewareError naming the middleware."""
    registry = Registry()

    async def redact(ctx: Any, call_next: Any) -> Any:
        def scrub(event: StreamEvent) -> StreamEvent | None:
            if isinstance(event, TextDelta):
                msg = "scrubber broke"
                raise ValueError(msg)
            return event

        return await call_next(ctx.map_events(scrub))

    registry.on(position)(redact)  # type: ignore[call-overload]
    stream = Agent(TestModel(), registry=registry).stream("hello")
    error = (await stream.result()).failure()
    assert type(error) is MiddlewareError
    assert (error.position, error.middleware) == (position, "redact")
    assert "redact.<locals>.scrub" in error.message
    assert "raised ValueError: scrubber broke" in error.message


async def test_an_event_map_returning_junk_is_blamed_on_its_middleware() -> None:
    """A map returning something that is not an event fails the run instead of emitting it."""
    registry = Registry()

    @registry.on("model_call")
    async def upper(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        return await call_next(ctx.map_events(lambda e: e.text if isinstance(e, TextDelta) else e))  # type: ignore[arg-type, return-value]

    events = []
    stream = Agent(TestModel(), registry=registry).stream("hello")
    async for event in stream:
        events.append(event)
    error = (await stream.result()).failure()
    assert isinstance(error, MiddlewareError)
    assert "returned str, not a stream event" in error.message
    assert not any(isinstance(e, str) for e in events)


# -- 2. tool values become text inside the failure boundary -----------------------------------


class Unprintable:
    """Its text conversion raises."""

    def __str__(self) -> str:
        msg = "no text"
        raise ValueError(msg)


class Opaque(BaseModel):
    """A model holding a value pydantic cannot serialise."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    handle: object


def nested() -> list[object]:
    """A list nested too deeply to serialise."""
    value: list[object] = []
    for _ in range(100_000):  # deep enough for every Python's json encoder to give up
        value = [value]
    return value


@pytest.mark.parametrize(
    "value", [Unprintable(), nested(), Opaque(handle=threading.Lock())], ids=type
)
async def test_a_value_that_cannot_become_text_is_an_error_result(value: object) -> None:
    """A raising __str__, a RecursionError, an unserialisable model: an error tool result."""

    def produce() -> object:
        """Return the odd value."""
        return value

    model = ScriptedModel([tool_calls(("produce", {})), "handled"])
    result = run_ok(await Agent(model, registry=Registry(), tools=[produce]).run("go"))
    (part,) = result.messages[1].tool_results
    assert part.is_error
    assert part.content.startswith(f"Tool 'produce' returned a {type(value).__name__} that ")
    assert result.output == "handled"


def test_an_annotation_pydantic_cannot_describe_is_a_registration_error() -> None:
    """A parameter typed with something pydantic cannot describe fails at registration."""

    def use(lock: threading.Lock) -> str:  # type: ignore[valid-type]
        """Use a lock."""
        return "ok"

    with pytest.raises(RegistrationError, match=r"tool 'use': parameter 'lock' is annotated"):
        Tool.from_function(use)


# -- 3. one BaseException policy; spurious cancellation is not cancellation ---------------------


class Stop(BaseException):
    """Not an Exception, like KeyboardInterrupt."""


def stopper(kind: type[BaseException]) -> Any:
    async def halt_now(x: int) -> int:
        """Raise a BaseException."""
        raise kind("stop now")

    return halt_now


async def slow_ok(x: int) -> int:
    """Take a while, then answer."""
    await asyncio.sleep(0.05)
    return x


@pytest.mark.parametrize("kind", [KeyboardInterrupt, SystemExit, Stop])
@pytest.mark.parametrize("calls", [1, 3])
@pytest.mark.parametrize("streaming", [False, True])
async def test_a_base_exception_from_a_tool_reaches_the_caller_as_itself(
    kind: type[BaseException], calls: int, streaming: bool
) -> None:
    """KeyboardInterrupt, SystemExit and friends: raised unwrapped, the session unchanged."""
    store = InMemorySessionStore()
    requested = [("halt_now", {"x": 1})] + [("slow_ok", {"x": i}) for i in range(calls - 1)]
    model = ScriptedModel([tool_calls(*requested), "never"])
    agent = Agent(
        model,
        registry=Registry(),
        tools=[Tool.from_function(stopper(kind), name="halt_now"), slow_ok],
        sessions=store,
    )

    async def consume() -> None:
        if streaming:
            async for _ in agent.stream("go", session_id="s"):
                pass
        else:
            await agent.run("go", session_id="s")

    with pytest.raises(kind, match="stop now") as caught:
        await consume()
    assert type(caught.value) is kind  # not a BaseExceptionGroup
    assert await store.load("s") is None
    assert len(model.requests) == 1


async def test_a_tool_raising_cancelled_error_nobody_asked_for_is_an_error_result() -> None:
    """A tool awaiting something cancelled elsewhere fails as a tool, the run goes on."""

    async def waits_on_cancelled() -> str:
        """Await a future somebody else cancelled."""
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        future.cancel()
        return await future

    model = ScriptedModel([tool_calls(("waits_on_cancelled", {})), "recovered"])
    result = run_ok(await Agent(model, registry=Registry(), tools=[waits_on_cancelled]).run("go"))
    (part,) = result.messages[1].tool_results
    assert part.is_error
    assert "raised CancelledError, but nothing cancelled it" in part.content
    assert result.output == "recovered"


async def test_a_hook_raising_cancelled_error_nobody_asked_for_is_skipped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A hook raising a spurious CancelledError is skipped with a warning; the run succeeds."""
    registry = Registry()

    @registry.hook("tool_start")
    async def odd(event: ToolStart) -> None:
        raise asyncio.CancelledError

    with caplog.at_level(logging.WARNING, logger="fncore"):
        result = run_ok(await Agent(TestModel(), registry=registry, tools=[add]).run("1 2"))
    assert result.output == "add: 3"
    assert "hook 'odd' failed on ToolStart and was skipped: CancelledError" in caplog.text


async def test_real_cancellation_still_propagates_from_a_tool() -> None:
    """Cancelling the task awaiting run() cancels the tool and raises CancelledError."""
    started = asyncio.Event()

    async def forever() -> str:
        """Never finish."""
        started.set()
        await asyncio.sleep(60)
        return "never"

    agent = Agent(
        ScriptedModel([tool_calls(("forever", {}))]), registry=Registry(), tools=[forever]
    )
    task = asyncio.ensure_future(agent.run("go"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


# -- 4. nothing holds a run forever --------------------------------------------------------------


async def test_a_hook_that_swallows_its_timeout_is_abandoned(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A hook catching its cancellation and waiting on does not hold the run past its timeout."""
    registry = Registry()
    swallowed, release, finished = asyncio.Event(), asyncio.Event(), asyncio.Event()

    @registry.hook("run_end", timeout=0.05)
    async def stubborn(event: RunEnd) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            swallowed.set()
            await release.wait()  # keeps waiting: the run must not wait with it
            finished.set()

    agent = Agent(TestModel(), registry=registry)
    with caplog.at_level(logging.WARNING, logger="fncore"):
        async with asyncio.timeout(60):  # the hook waits until the run is over: only if the
            run_ok(await agent.run("hi"))  # run waited for it would this fire
    await asyncio.wait_for(swallowed.wait(), 60)
    assert "hook 'stubborn' skipped: it took longer than 0.05s on RunEnd" in caplog.text
    release.set()
    await finished.wait()  # the abandoned hook ends before the loop closes


def test_tools_have_a_finite_default_timeout() -> None:
    """The seeds leave tools unbounded; fncore bounds them at 300 s by default."""
    assert LoopSettings().tool_timeout == 300.0


async def test_stuck_sync_tools_never_starve_later_ones() -> None:
    """Twelve runs with a stuck sync tool, then a trivial sync tool still runs at once."""
    release = threading.Event()

    def stuck() -> str:
        """Block until released, after the test."""
        release.wait()
        return "late"

    def quick() -> str:
        """Answer at once."""
        return "quick"

    agent = Agent(
        ScriptedModel([tool_calls(("stuck", {}))] * 12 + [tool_calls(("quick", {})), "done"] * 13),
        registry=Registry(),
        # quick's timeout is long, yet it would run out with quick waiting for a thread
        tools=[Tool.from_function(stuck, timeout=0.05), Tool.from_function(quick, timeout=30)],
        settings=LoopSettings(max_tool_threads=4, max_consecutive_errors_per_request=1),
    )
    try:
        stuck_runs = await asyncio.gather(*[agent.run("stuck") for _ in range(12)])
        assert all(isinstance(out, Failure) for out in stuck_runs)  # each timed out
        result = run_ok(await agent.run("quick"))
        assert result.messages[1].tool_results[0].content == "quick"
    finally:
        release.set()


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "soon", True])
def test_every_timeout_is_validated_at_construction(bad: Any) -> None:
    """NaN, negative, zero, infinite or non-number timeouts are refused with a clear message."""
    words = r"must be a positive, finite number of seconds"
    with pytest.raises(ValueError, match=words):
        LoopSettings(tool_timeout=bad)
    with pytest.raises(ValueError, match=words):
        LoopSettings(hook_timeout=bad)
    with pytest.raises(RegistrationError, match=r"tool 'add': timeout " + words):
        Tool.from_function(add, timeout=bad)
    registry = Registry()
    with pytest.raises(RegistrationError, match=r"hook 'h': timeout " + words):

        @registry.hook("run_end", timeout=bad)
        async def h(event: RunEnd) -> None: ...


def test_no_tool_timeout_is_still_allowed() -> None:
    """None means no limit, for those who need it."""
    assert LoopSettings(tool_timeout=None).tool_timeout is None


# -- contexts that stay usable -------------------------------------------------------------------


async def test_reasoning_and_compress_see_what_they_should() -> None:
    """compress_context sees the assembled system prompt; reasoning gets its round's tools."""
    registry = Registry()
    seen: list[str] = []

    @registry.on("system_prompt")
    async def rules(ctx: SystemPromptContext, prompt: str) -> Outcome[str]:
        return Success(prompt + " Be brief.")

    @registry.on("compress_context")
    async def look(ctx: CompressContext, call_next: CompressNext) -> Outcome[tuple[Message, ...]]:
        seen.append(ctx.instructions)
        return await call_next(ctx)

    @registry.on("reasoning")
    async def narrow(ctx: ReasoningContext, call_next: ReasoningNext) -> Outcome[ModelResponse]:
        return await call_next(ctx)

    agent = Agent(TestModel(), registry=registry, instructions="You help.", tools=[add])
    run_ok(await agent.run("1 2"))
    assert seen == ["You help. Be brief.", "You help. Be brief."]


async def test_run_result_keeps_accounting_when_a_run_middleware_terminates() -> None:
    """Terminate from run after the loop ran keeps its rounds, usage and transcript."""
    registry = Registry()

    @registry.on("run")
    async def veto(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        await call_next(ctx)
        from fncore import Terminate

        return Failure(Terminate("vetoed"))

    result = run_ok(await Agent(TestModel(), registry=registry, tools=[add]).run("1 2"))
    assert (result.stop_reason, result.output, result.rounds) == ("terminated", "vetoed", 2)
    assert result.usage.requests == 2
    assert [m.role for m in result.messages] == ["assistant", "tool", "assistant", "assistant"]
