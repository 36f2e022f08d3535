"""Pairing as providers check it, ids the loop assigns, and the seeds' loop semantics."""

from __future__ import annotations

import dataclasses

import pytest
from returns.result import Success
from support import add, mul, run_ok

from fncore import (
    Agent,
    CompressContext,
    CompressNext,
    InvalidHistory,
    LoopSettings,
    Message,
    ModelCallContext,
    ModelCallNext,
    ModelRequest,
    ModelResponse,
    Outcome,
    ReasoningContext,
    ReasoningNext,
    Registry,
    RequireTool,
    ToolCallPart,
    ToolResultPart,
)
from fncore.core import check_pairing
from fncore.events import RoundFinished
from fncore.testing import FunctionModel, ScriptedModel, TestModel, tool_calls

USER = Message.user("go")


def call(call_id: str, name: str = "add") -> Message:
    return Message("assistant", (ToolCallPart(call_id, name, '{"a": 1, "b": 2}'),))


def result(call_id: str, name: str = "add") -> Message:
    return Message("tool", (ToolResultPart(call_id, name, "3"),))


@pytest.mark.parametrize(
    ("history", "words"),
    [
        ((USER, call("call_0"), USER), "tool calls without a result: add (call_0)"),
        ((USER, result("call_0"), call("call_0")), "orphan result"),
        ((USER, call("a"), result("a"), result("b")), "answers no call"),
        (
            (USER, call("call_0"), result("call_0"), call("call_0"), Message.assistant("?"), USER),
            "an assistant turn starts",
        ),
        (
            (USER, call("call_0"), result("call_0"), result("call_0"), USER),
            "answered a second time",
        ),
    ],
    ids=["dangling", "result before call", "orphan", "dangling, reused ids", "twice, reused ids"],
)
async def test_an_unpaired_input_is_invalid_before_any_model_call(
    history: tuple[Message, ...], words: str
) -> None:
    """Every break providers answer 400 to is an InvalidHistory, and the model is never called."""
    model = TestModel()
    error = (await Agent(model, registry=Registry(), tools=[add]).run(history)).failure()
    assert isinstance(error, InvalidHistory)
    assert words in error.message
    assert model.requests == []


async def test_reused_ids_across_rounds_are_valid_end_to_end() -> None:
    """A server sending call_0 every round works; every request is correctly paired."""
    model = ScriptedModel(
        [tool_calls(("add", {"a": 1, "b": 2})), tool_calls(("mul", {"a": 3, "b": 4})), "done"]
    )
    result = run_ok(await Agent(model, registry=Registry(), tools=[add, mul]).run("go"))
    assert result.output == "done"
    assert [c.id for m in model.requests[2].messages for c in m.tool_calls] == ["call_0"] * 2
    assert all(check_pairing(r.messages) is None for r in model.requests)


async def test_a_compress_rewrite_that_breaks_pairing_is_invalid() -> None:
    """Dropping a tool result while compacting fails the run at compress_context."""
    registry = Registry()

    @registry.on("compress_context")
    async def drop_results(
        ctx: CompressContext, call_next: CompressNext
    ) -> Outcome[tuple[Message, ...]]:
        return Success(tuple(m for m in ctx.messages if m.role != "tool"))

    model = TestModel()
    error = (await Agent(model, registry=registry, tools=[add]).run("1 2")).failure()
    assert isinstance(error, InvalidHistory)
    assert error.position == "compress_context"
    assert len(model.requests) == 1  # the first round's request was fine


@pytest.mark.parametrize("position", ["reasoning", "model_call"])
async def test_a_middleware_breaking_pairing_never_reaches_the_model(position: str) -> None:
    """A reasoning or model_call middleware that drops results gets InvalidHistory instead."""
    registry = Registry()

    def broken(messages: tuple[Message, ...]) -> tuple[Message, ...]:
        return tuple(m for m in messages if m.role != "tool")

    if position == "reasoning":

        @registry.on("reasoning")
        async def strip(ctx: ReasoningContext, call_next: ReasoningNext) -> Outcome[ModelResponse]:
            return await call_next(dataclasses.replace(ctx, messages=broken(ctx.messages)))

    else:

        @registry.on("model_call")
        async def strip_request(
            ctx: ModelCallContext, call_next: ModelCallNext
        ) -> Outcome[ModelResponse]:
            request = dataclasses.replace(ctx.request, messages=broken(ctx.request.messages))
            return await call_next(dataclasses.replace(ctx, request=request))

    model = TestModel()
    error = (await Agent(model, registry=registry, tools=[add]).run("1 2")).failure()
    assert isinstance(error, InvalidHistory)
    assert error.position == position
    assert len(model.requests) == 1


@pytest.mark.parametrize("style", ["duplicate", "empty"])
async def test_duplicate_or_empty_ids_get_the_same_unique_ids_streaming_or_not(style: str) -> None:
    """The loop renames bad ids deterministically; streamed and plain runs send the same ids."""
    ids = {"duplicate": ["x", "x", "x"], "empty": ["", "", ""]}[style]

    def reply(request: ModelRequest) -> Message | str:
        if len(request.messages) > 1:
            return "done"
        return Message(
            "assistant",
            tuple(ToolCallPart(i, "add", f'{{"a": {n}, "b": 1}}') for n, i in enumerate(ids)),
        )

    sent: list[list[str]] = []
    for streaming in (False, True):
        model = FunctionModel(reply)
        agent = Agent(model, registry=Registry(), tools=[add])
        if streaming:
            events = [e async for e in agent.stream("go")]
            finished = next(e for e in events if isinstance(e, RoundFinished))
            assert [c.id for c in finished.response.tool_calls] == sent[0]
        else:
            run_ok(await agent.run("go"))
        second = model.requests[1].messages
        sent.append([c.id for c in second[1].tool_calls])
        assert [r.call_id for r in second[2].tool_results] == sent[-1]
        assert check_pairing(second) is None
    expected = {"duplicate": ["x", "call_1", "call_2"], "empty": ["call_0", "call_1", "call_2"]}
    assert sent == [expected[style]] * 2


# -- loop semantics from the seeds ---------------------------------------------------------


@pytest.mark.parametrize("position", ["reasoning", "model_call"])
async def test_a_per_round_required_choice_returns_after_the_calls(position: str) -> None:
    """A middleware forcing tool_choice='required' for a round ends the run after its calls."""
    registry = Registry()
    if position == "reasoning":

        @registry.on("reasoning")
        async def force(ctx: ReasoningContext, call_next: ReasoningNext) -> Outcome[ModelResponse]:
            return await call_next(dataclasses.replace(ctx, tool_choice="required"))

    else:

        @registry.on("model_call")
        async def force_call(
            ctx: ModelCallContext, call_next: ModelCallNext
        ) -> Outcome[ModelResponse]:
            request = dataclasses.replace(ctx.request, tool_choice=RequireTool("mul"))
            return await call_next(dataclasses.replace(ctx, request=request))

    model = TestModel()
    result = run_ok(await Agent(model, registry=registry, tools=[add, mul]).run("3 4"))
    assert (result.stop_reason, result.rounds) == ("tool_required", 1)
    assert len(model.requests) == 1
    assert result.output in ("7\n12", "12")


async def test_a_per_round_none_choice_rejects_calls_like_a_per_run_one() -> None:
    """A round sent with tool_choice='none' answers any call made anyway with an error result."""
    registry = Registry()

    @registry.on("model_call")
    async def no_tools(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        request = dataclasses.replace(ctx.request, tool_choice="none")
        return await call_next(dataclasses.replace(ctx, request=request))

    model = ScriptedModel([tool_calls(("add", {"a": 1, "b": 2})), "fine"])
    result = run_ok(await Agent(model, registry=registry, tools=[add]).run("go"))
    assert result.messages[1].tool_results[0].content.startswith("Tool calls are disabled")


async def test_disabled_invocation_returns_the_calls_and_a_later_run_continues() -> None:
    """LoopSettings(enabled=False): the calls come back unexecuted; their results continue."""
    ran: list[int] = []

    def record(a: int, b: int) -> int:
        """Add, remembering that it ran."""
        ran.append(a + b)
        return a + b

    model = TestModel()
    agent = Agent(model, registry=Registry(), tools=[record], settings=LoopSettings(enabled=False))
    first = run_ok(await agent.run("2 3"))
    assert (first.stop_reason, ran, first.rounds) == ("awaiting_tools", [], 1)
    (pending,) = first.messages[-1].tool_calls
    answer = Message("tool", (ToolResultPart(pending.id, pending.name, "5"),))
    second = run_ok(await agent.run([Message.user("2 3"), *first.messages, answer]))
    assert (second.output, second.stop_reason, ran) == ("record: 5", "completed", [])
