"""Streaming: the same result as a plain run, events in order, deferred start, cancellation."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from returns.result import Failure, Success
from support import add

from fncore import (
    Agent,
    Message,
    ModelCallContext,
    ModelCallNext,
    ModelError,
    ModelResponse,
    Outcome,
    Registry,
    RunContext,
    RunNext,
    RunResult,
)
from fncore.events import (
    RoundFinished,
    RoundStarted,
    RunCompleted,
    StreamEvent,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallStarted,
    ToolResultReady,
    UsageReported,
)
from fncore.testing import ScriptedModel, TestModel, tool_calls


def echo(text: str) -> str:
    """Echo the text."""
    return text


def two_agents(make_model: object, registry: Registry | None = None) -> tuple[Agent, Agent]:
    """Two agents on fresh models from the same factory and the same registry."""
    reg = registry or Registry()
    assert callable(make_model)
    return (
        Agent(make_model(), registry=reg, tools=[add, echo]),
        Agent(make_model(), registry=reg, tools=[add, echo]),
    )


async def test_stream_and_run_agree_for_test_model_with_tools() -> None:
    """TestModel calling tools gives equal RunResults streamed and not."""
    plain, streamed = two_agents(TestModel)
    ran = await plain.run("add 2 and 3")
    got = await streamed.stream("add 2 and 3").result()
    assert isinstance(ran, Success)
    assert ran == got
    assert ran.unwrap().output == "add: 5; echo: add 2 and 3"


async def test_stream_and_run_agree_for_scripted_text_and_calls() -> None:
    """ScriptedModel with tool calls then text gives equal RunResults streamed and not."""
    script = [
        tool_calls(("add", {"a": 1, "b": 2}), ("echo", {"text": "hi there, long text"})),
        "the sum is 3 and that is a fairly long sentence",
    ]
    plain, streamed = two_agents(lambda: ScriptedModel(script, chunk=3))
    ran = await plain.run("go")
    got = await streamed.stream("go").result()
    assert ran == got
    assert ran.unwrap().rounds == 2


async def test_stream_and_run_agree_on_errors() -> None:
    """A model error is the same Failure whether streamed or not."""
    script = [tool_calls(("add", {"a": 1, "b": 2})), ModelError(message="overloaded")]
    plain, streamed = two_agents(lambda: ScriptedModel(script))
    ran = await plain.run("go")
    got = await streamed.stream("go").result()
    assert isinstance(ran, Failure)
    assert ran == got
    assert ran.failure() == ModelError(message="overloaded")


async def test_event_order_of_a_run_with_one_tool_round() -> None:
    """Events come as RoundStarted, deltas, RoundFinished, ToolResultReady, ..., RunCompleted."""
    model = ScriptedModel([tool_calls(("add", {"a": 1, "b": 2})), "three"], chunk=4)
    agent = Agent(model, registry=Registry(), tools=[add])
    events = [e async for e in agent.stream("go")]
    kinds = [type(e) for e in events]
    collapsed = [k for i, k in enumerate(kinds) if i == 0 or kinds[i - 1] is not k]
    assert collapsed == [
        RoundStarted,
        ToolCallStarted,
        ToolCallArgsDelta,
        UsageReported,
        RoundFinished,
        ToolResultReady,
        RoundStarted,
        TextDelta,
        UsageReported,
        RoundFinished,
        RunCompleted,
    ]
    args = "".join(e.delta for e in events if isinstance(e, ToolCallArgsDelta))
    assert args == '{"a":1,"b":2}'
    assert kinds.count(ToolCallArgsDelta) == 4
    assert [e.round for e in events if isinstance(e, RoundStarted | RoundFinished)] == [1, 1, 2, 2]
    ready = [e for e in events if isinstance(e, ToolResultReady)]
    assert ready[0].result.content == "3"
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "three"
    last = events[-1]
    assert isinstance(last, RunCompleted)
    assert last.outcome.unwrap().output == "three"


async def test_nothing_runs_until_iteration_starts() -> None:
    """Creating a stream does not call the model; the first __anext__ does."""
    model = TestModel()
    agent = Agent(model, registry=Registry())
    stream = agent.stream("hello")
    await asyncio.sleep(0.01)
    assert model.requests == []
    first = await anext(stream)
    assert isinstance(first, RoundStarted)
    outcome = await stream.result()
    assert outcome.unwrap().output == "hello"
    assert len(model.requests) == 1


async def test_result_consumes_remaining_events_and_can_be_awaited_again() -> None:
    """stream.result() runs to the end; a second call returns the same outcome."""
    agent = Agent(TestModel(), registry=Registry(), tools=[add])
    stream = agent.stream("add 1 2")
    first = await stream.result()
    assert first.unwrap().output == "add: 3"
    assert await stream.result() == first
    assert [e async for e in stream] == []


async def test_breaking_out_of_iteration_cancels_the_run() -> None:
    """Leaving the loop early with break cancels the run: the never-ending tool stops."""
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def slow(x: int) -> int:
        """Wait for something that never comes, recording the cancellation."""
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return x

    model = ScriptedModel([tool_calls(("slow", {"x": 1})), "done"])
    agent = Agent(model, registry=Registry(), tools=[slow])
    async for event in agent.stream("go"):
        if isinstance(event, RoundFinished):
            await asyncio.wait_for(started.wait(), 60)
            break
    await asyncio.wait_for(cancelled.wait(), 60)
    assert len(model.requests) == 1


async def test_aclose_cancels_the_run() -> None:
    """aclose() on a stream mid-run cancels the running tool."""
    started = asyncio.Event()
    cancelled: list[bool] = []

    async def slow(x: int) -> int:
        """Sleep, recording cancellation."""
        started.set()
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return x

    model = ScriptedModel([tool_calls(("slow", {"x": 1})), "done"])
    agent = Agent(model, registry=Registry(), tools=[slow])
    stream = agent.stream("go")
    async for event in stream:
        if isinstance(event, RoundFinished):
            break
    await asyncio.wait_for(started.wait(), 60)
    await stream.aclose()
    assert cancelled == [True]
    with pytest.raises(RuntimeError, match="closed before the run completed"):
        await stream.result()


def _redact_registry(seen: list[str] | None = None) -> Registry:
    registry = Registry()

    @registry.on("model_call")
    async def redact(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        def scrub(event: StreamEvent) -> StreamEvent:
            if isinstance(event, TextDelta):
                return TextDelta(event.text.replace("secret", "[redacted]"))
            return event

        out = await call_next(ctx.map_events(scrub))
        return out.map(
            lambda r: dataclasses.replace(
                r, message=Message.assistant(r.text.replace("secret", "[redacted]"))
            )
        )

    return registry


async def test_one_model_call_middleware_redacts_stream_and_final_result() -> None:
    """The same middleware redacts streamed chunks (via map_events) and the final response."""
    model = ScriptedModel(["the secret is 42, keep the secret"], chunk=100)
    agent = Agent(model, registry=_redact_registry())
    events = [e async for e in agent.stream("tell me")]
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "the [redacted] is 42, keep the [redacted]"
    finished = [e for e in events if isinstance(e, RoundFinished)]
    assert finished[0].response.text == text
    last = events[-1]
    assert isinstance(last, RunCompleted)
    assert last.outcome.unwrap().output == text


async def test_redacting_middleware_in_plain_mode_changes_only_the_final_result() -> None:
    """Without streaming, map_events is a no-op and the final result is still redacted."""
    model = ScriptedModel(["my secret"])
    agent = Agent(model, registry=_redact_registry())
    result = (await agent.run("tell me")).unwrap()
    assert result.output == "my [redacted]"
    assert result.messages == (Message.assistant("my [redacted]"),)


async def test_inner_middleware_sees_each_event_first() -> None:
    """With two event-mapping middleware, the inner one maps each event before the outer."""
    order: list[str] = []
    registry = Registry()

    def recorder(label: str) -> object:
        async def mw(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
            def note(event: StreamEvent) -> StreamEvent:
                if isinstance(event, TextDelta):
                    order.append(f"{label}:{event.text}")
                    return TextDelta(f"{event.text}+{label}")
                return event

            return await call_next(ctx.map_events(note))

        return mw

    registry.on("model_call", name="outer")(recorder("outer"))  # type: ignore[type-var]
    registry.on("model_call", name="inner")(recorder("inner"))  # type: ignore[type-var]
    agent = Agent(ScriptedModel(["ab"], chunk=1), registry=registry)
    events = [e async for e in agent.stream("go")]
    assert order == ["inner:a", "outer:a+inner", "inner:b", "outer:b+inner"]
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert deltas == ["a+inner+outer", "b+inner+outer"]


async def test_plain_model_call_middleware_works_in_both_modes() -> None:
    """A model_call middleware that never touches chunks works streamed and not."""
    registry = Registry()
    calls: list[int] = []

    @registry.on("model_call")
    async def count(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        calls.append(len(ctx.request.messages))
        return await call_next(ctx)

    plain = Agent(TestModel(), registry=registry, tools=[add])
    streamed = Agent(TestModel(), registry=registry, tools=[add])
    ran = await plain.run("add 4 5")
    stream = streamed.stream("add 4 5")
    events = [e async for e in stream]
    assert ran == await stream.result()
    assert ran.unwrap().output == "add: 9"
    assert calls == [1, 3, 1, 3]
    assert any(isinstance(e, ToolCallStarted) for e in events)


async def test_short_circuit_run_middleware_streams_only_run_completed() -> None:
    """A run middleware that answers directly yields just RunCompleted, and equals run()."""
    registry = Registry()

    @registry.on("run")
    async def cached(ctx: object, call_next: object) -> Outcome[object]:
        return Success(RunResult("cached", (Message.assistant("cached"),)))

    model = TestModel()
    agent = Agent(model, registry=registry)
    events = [e async for e in agent.stream("hi")]
    assert [type(e) for e in events] == [RunCompleted]
    assert events[0].outcome == await agent.run("hi")  # type: ignore[union-attr]
    assert model.requests == []


async def test_run_middleware_can_drop_events_for_the_whole_run() -> None:
    """A run middleware's map_events sees every event of the run and can drop some."""
    registry = Registry()

    @registry.on("run")
    async def quiet(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        def keep(event: StreamEvent) -> StreamEvent | None:
            return None if isinstance(event, UsageReported | ToolCallArgsDelta) else event

        return await call_next(ctx.map_events(keep))

    agent = Agent(TestModel(), registry=registry, tools=[add])
    stream = agent.stream("add 1 2")
    kinds = {type(e) for e in [e async for e in stream]}
    assert UsageReported not in kinds
    assert ToolCallArgsDelta not in kinds
    assert {RoundStarted, ToolCallStarted, RoundFinished, ToolResultReady, RunCompleted} <= kinds
    assert (await stream.result()).unwrap().output == "add: 3"
