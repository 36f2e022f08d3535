"""Hooks, tool sources and tool filters, observed through the real `Agent`."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from returns.result import Failure
from support import add, mul, run_ok

from fncore import (
    Agent,
    LoopSettings,
    Message,
    ModelCallContext,
    ModelCallNext,
    ModelError,
    ModelResponse,
    Outcome,
    RegistrationError,
    Registry,
    Terminate,
    Tool,
    ToolCallContext,
    ToolCallNext,
    ToolResult,
    ToolResultPart,
)
from fncore.events import ErrorRaised, RoundStart, RunEnd, RunStart, ToolEnd, ToolStart
from fncore.testing import FunctionModel, ScriptedModel, TestModel, tool_calls


def fncore_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The warning messages logged on the ``fncore`` logger."""
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "fncore" and r.levelno == logging.WARNING
    ]


# -- lifecycle events -----------------------------------------------------------------------


def _recording_registry(events: list[Any]) -> Registry:
    registry = Registry()

    @registry.hook("run_start")
    async def on_run_start(event: RunStart) -> None:
        events.append(event)

    @registry.hook("round_start")
    async def on_round_start(event: RoundStart) -> None:
        events.append(event)

    @registry.hook("tool_start")
    async def on_tool_start(event: ToolStart) -> None:
        events.append(event)

    @registry.hook("tool_end")
    async def on_tool_end(event: ToolEnd) -> None:
        events.append(event)

    @registry.hook("error")
    async def on_error(event: ErrorRaised) -> None:
        events.append(event)

    @registry.hook("run_end")
    async def on_run_end(event: RunEnd) -> None:
        events.append(event)

    return registry


async def test_hooks_fire_in_lifecycle_order_with_their_events() -> None:
    """run_start, round_start, tool_start/tool_end, round_start, run_end, with the right data."""
    events: list[Any] = []
    registry = _recording_registry(events)
    calls = tool_calls(("add", {"a": 2, "b": 3}))
    model = ScriptedModel([calls, "5"])
    agent = Agent(model, registry=registry, tools=[add])
    outcome = await agent.run("add 2 3", metadata={"user": "ann"})
    result = run_ok(outcome)

    assert [type(e).__name__ for e in events] == [
        "RunStart",
        "RoundStart",
        "ToolStart",
        "ToolEnd",
        "RoundStart",
        "RunEnd",
    ]
    start, round1, tool_start, tool_end, round2, end = events
    assert start.messages == (Message.user("add 2 3"),)
    assert (round1.round, round2.round) == (1, 2)
    assert tool_start.call == calls.tool_calls[0]
    assert tool_end.call == calls.tool_calls[0]
    assert tool_end.result == ToolResultPart("call_0", "add", "5")
    assert end.outcome == outcome
    assert end.outcome.unwrap() == result
    assert len({e.run.run_id for e in events}) == 1
    assert start.run.metadata == {"user": "ann"}


async def test_error_hook_fires_on_failure_before_run_end() -> None:
    """A failed run fires error (with the error value), then run_end (with the Failure)."""
    events: list[Any] = []
    registry = _recording_registry(events)
    model = FunctionModel(lambda r: ModelError(message="down"))
    agent = Agent(model, registry=registry)
    outcome = await agent.run("hi")
    assert isinstance(outcome, Failure)
    assert [type(e).__name__ for e in events] == ["RunStart", "RoundStart", "ErrorRaised", "RunEnd"]
    assert events[2].error == outcome.failure()
    assert events[3].outcome == outcome


async def test_terminated_run_is_not_an_error_for_hooks() -> None:
    """A terminated run fires run_end with its Success and no error hook."""
    events: list[Any] = []
    registry = _recording_registry(events)

    @registry.on("model_call")
    async def stop(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        return Failure(Terminate("stopped"))

    agent = Agent(TestModel(), registry=registry)
    result = run_ok(await agent.run("hi"))
    assert result.stop_reason == "terminated"
    assert [type(e).__name__ for e in events] == ["RunStart", "RoundStart", "RunEnd"]
    assert events[-1].outcome.unwrap() == result


async def test_rejected_calls_fire_no_tool_hooks() -> None:
    """An unknown tool is answered without running, so tool_start/tool_end do not fire for it."""
    events: list[Any] = []
    registry = _recording_registry(events)
    model = ScriptedModel([tool_calls(("nope", {}), ("add", {"a": 1, "b": 1})), "ok"])
    agent = Agent(model, registry=registry, tools=[add])
    run_ok(await agent.run("go"))
    started = [e.call.name for e in events if isinstance(e, ToolStart)]
    ended = [e.call.name for e in events if isinstance(e, ToolEnd)]
    assert started == ended == ["add"]


# -- misbehaving hooks ------------------------------------------------------------------------


async def test_hanging_hook_is_skipped_after_its_timeout(caplog: pytest.LogCaptureFixture) -> None:
    """A hook exceeding its timeout is skipped with a warning; the run still succeeds."""
    registry = Registry()
    later: list[str] = []

    @registry.hook("run_start", timeout=0.05)
    async def hangs(event: RunStart) -> None:
        await asyncio.sleep(30)

    @registry.hook("run_start")
    async def after_it(event: RunStart) -> None:
        later.append("ran")

    caplog.set_level(logging.WARNING, logger="fncore")
    agent = Agent(TestModel(), registry=registry)
    assert run_ok(await agent.run("hi")).output == "hi"
    assert later == ["ran"]
    (warning,) = fncore_warnings(caplog)
    assert "'hangs'" in warning
    assert "skipped" in warning
    assert "0.05" in warning


async def test_hook_timeout_defaults_to_the_loop_settings(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Without its own timeout a hook gets LoopSettings.hook_timeout."""
    registry = Registry()

    @registry.hook("round_start")
    async def slow(event: RoundStart) -> None:
        await asyncio.sleep(30)

    caplog.set_level(logging.WARNING, logger="fncore")
    settings = LoopSettings(hook_timeout=0.05)
    agent = Agent(TestModel(), registry=registry, settings=settings)
    assert run_ok(await agent.run("hi")).output == "hi"
    (warning,) = fncore_warnings(caplog)
    assert "'slow'" in warning
    assert "RoundStart" in warning


async def test_raising_hook_is_skipped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    """A hook that raises is skipped with a warning naming it; other hooks and the run go on."""
    registry = Registry()
    seen: list[int] = []

    @registry.hook("tool_end")
    async def broken(event: ToolEnd) -> None:
        raise ValueError("hook bug")

    @registry.hook("tool_end")
    async def fine(event: ToolEnd) -> None:
        seen.append(1)

    caplog.set_level(logging.WARNING, logger="fncore")
    model = ScriptedModel([tool_calls(("add", {"a": 1, "b": 2})), "3"])
    agent = Agent(model, registry=registry, tools=[add])
    assert run_ok(await agent.run("go")).output == "3"
    assert seen == [1]
    (warning,) = fncore_warnings(caplog)
    assert "'broken'" in warning
    assert "ValueError: hook bug" in warning


# -- tool sources, tool filters, registration errors ----------------------------------------


async def test_tool_source_contributes_tools() -> None:
    """A @registry.tool_source's tools are offered to the model and run like any other."""
    registry = Registry()

    @registry.tool_source
    def arithmetic() -> list[Any]:
        return [mul, Tool.from_function(add, name="plus")]

    model = TestModel()
    agent = Agent(model, registry=registry)
    assert sorted(agent.tools) == ["mul", "plus"]
    result = run_ok(await agent.run("3 4"))
    assert sorted(t.name for t in model.requests[0].tools) == ["mul", "plus"]
    assert result.output == "mul: 12; plus: 7"


async def test_registry_tool_and_agent_tools_merge() -> None:
    """@registry.tool tools and Agent(tools=...) are both offered."""
    registry = Registry()
    registry.tool(mul)
    agent = Agent(TestModel(), registry=registry, tools=[add])
    assert sorted(agent.tools) == ["add", "mul"]
    assert sorted(agent.describe().tools) == ["add", "mul"]


async def test_additional_tools_run_but_are_not_offered() -> None:
    """additional_tools are runnable when called, yet absent from the model's tool list."""

    def secret(x: int) -> int:
        """Hidden tool."""
        return x * 10

    model = ScriptedModel([tool_calls(("secret", {"x": 4})), "done"])
    agent = Agent(model, registry=Registry(), tools=[add], additional_tools=[secret])
    run_ok(await agent.run("go"))
    assert [t.name for t in model.requests[0].tools] == ["add"]
    assert model.requests[1].messages[-1].tool_results == (
        ToolResultPart("call_0", "secret", "40"),
    )


async def test_tool_filter_applies_only_to_named_tools() -> None:
    """@registry.on('tool_call', tools=['add']) sees add's calls and not mul's."""
    registry = Registry()
    seen: list[str] = []

    @registry.on("tool_call", tools=["add"])
    async def only_add(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        seen.append(ctx.call.name)
        return (await call_next(ctx)).map(lambda r: ToolResult(f"add said {r.content}"))

    model = TestModel()
    agent = Agent(model, registry=registry, tools=[add, mul])
    result = run_ok(await agent.run("2 5"))
    assert seen == ["add"]
    assert result.output == "add: add said 7; mul: 10"
    assert "only_add[add]" in str(agent.describe())


def test_duplicate_tool_names_fail_at_build() -> None:
    """Two tools with one name raise RegistrationError when the Agent is built."""
    registry = Registry()
    registry.tool(add)
    with pytest.raises(RegistrationError, match="two tools are named 'add'"):
        Agent(TestModel(), registry=registry, tools=[add])


def test_duplicate_between_source_and_additional_tools_fails_at_build() -> None:
    """A tool source and additional_tools clashing on a name is also a build error."""
    registry = Registry()

    @registry.tool_source
    def source() -> list[Any]:
        return [mul]

    with pytest.raises(RegistrationError, match="'mul'"):
        Agent(TestModel(), registry=registry, additional_tools=[mul])


def test_tool_filter_naming_an_unknown_tool_fails_at_build() -> None:
    """A tool_call filter naming a tool the agent lacks raises RegistrationError at build."""
    registry = Registry()

    @registry.on("tool_call", tools=["add", "divide"])
    async def guard(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        return await call_next(ctx)

    with pytest.raises(RegistrationError, match="'divide'") as info:
        Agent(TestModel(), registry=registry, tools=[add])
    assert "guard" in str(info.value)
    assert "known tools: add" in str(info.value)


def test_raising_tool_source_fails_at_build() -> None:
    """A tool source that raises is a RegistrationError naming it."""
    registry = Registry()

    @registry.tool_source
    def flaky_source() -> list[Any]:
        raise OSError("config dir missing")

    with pytest.raises(RegistrationError, match="flaky_source"):
        Agent(TestModel(), registry=registry)


def test_tool_filter_outside_tool_call_is_rejected() -> None:
    """tools=... on a position other than tool_call raises at registration."""
    registry = Registry()

    async def guard(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        return await call_next(ctx)

    with pytest.raises(RegistrationError, match="tool_call"):
        registry.on("model_call", tools=["add"])(guard)  # type: ignore[call-overload]
    assert registry.middleware == ()
