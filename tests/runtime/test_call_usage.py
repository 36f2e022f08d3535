"""Model calls that middleware make themselves (`RunInfo.call_model`) count in the run's usage."""

from __future__ import annotations

from typing import Any

import pytest
from otel_support import Otel
from returns.result import Success

from fncore import (
    Agent,
    Approve,
    Message,
    ModelRequest,
    ModelResponse,
    Outcome,
    Registry,
    RunContext,
    RunNext,
    RunResult,
    Usage,
)
from fncore.events import RunCompleted
from fncore.middleware import (
    Allow,
    Block,
    GuardCheck,
    Verdict,
    approve,
    budget,
    compact,
    emulate_tools,
    guard,
)
from fncore.testing import FunctionModel, tool_calls

MAIN = Usage(input_tokens=10, output_tokens=1, requests=1)
"""What each of the agent's own model calls spends."""
SIDE = Usage(input_tokens=300, output_tokens=20, reasoning_tokens=5, requests=1)
"""What each of a middleware's own model calls spends."""


def costing(usage: Usage, text: str = "ok") -> FunctionModel:
    """A model answering ``text``, every answer spending ``usage``."""
    return FunctionModel(lambda request: ModelResponse(Message.assistant(text), usage))


async def finished(agent: Agent, prompt: Any, streaming: bool, **options: Any) -> RunResult:
    """The run's result, by ``run`` or from the stream's `RunCompleted`."""
    if not streaming:
        outcome = await agent.run(prompt, **options)
    else:
        events = [e async for e in agent.stream(prompt, **options)]
        last = events[-1]
        assert isinstance(last, RunCompleted)
        outcome = last.outcome
    assert isinstance(outcome, Success), outcome
    result: RunResult = outcome.unwrap()
    return result


def history(n: int) -> list[Message]:
    """``n`` user/assistant turns, then a question."""
    turns = [m for i in range(n) for m in (Message.user(f"q{i}"), Message.assistant(f"a{i}"))]
    return [*turns, Message.user("go")]


STREAMING = pytest.mark.parametrize("streaming", [False, True])


@STREAMING
async def test_a_compaction_summary_counts_in_the_runs_usage(streaming: bool) -> None:
    """The summary call of `compact`: its usage is the run's, next to the agent's own call's."""
    cheap = costing(SIDE, "summary")
    registry = compact(strategies=["summarize"], max_messages=4, keep=1, model=cheap)
    agent = Agent(costing(MAIN), registry=registry)
    result = await finished(agent, history(3), streaming)
    assert len(cheap.requests) == 1
    assert result.usage == MAIN + SIDE


@STREAMING
async def test_a_summary_in_request_mode_counts_once_per_call(streaming: bool) -> None:
    """With apply="request", the summary of the call's request counts like the call."""
    cheap = costing(SIDE, "summary")
    registry = compact(
        strategies=["summarize"], max_messages=4, keep=1, model=cheap, apply="request"
    )
    result = await finished(Agent(costing(MAIN), registry=registry), history(3), streaming)
    assert result.usage == MAIN + SIDE


def moderated_by(moderator: FunctionModel) -> Any:
    """A guardrail asking ``moderator``; ``UNSAFE`` blocks."""

    async def moderated(check: GuardCheck) -> Verdict:
        request = ModelRequest((Message.user(check.text),))
        answer = (await check.run.call_model(request, model=moderator, by="guard")).unwrap()
        return Block("flagged") if answer.text == "UNSAFE" else Allow()

    return moderated


@STREAMING
async def test_guard_moderation_calls_count_in_the_runs_usage(streaming: bool) -> None:
    """The input check's and the output check's moderation calls are both in the usage."""
    moderator = costing(SIDE, "SAFE")
    moderated = moderated_by(moderator)
    registry = guard(input_guards=[moderated], output_guards=[moderated], window=10_000)
    result = await finished(Agent(costing(MAIN), registry=registry), "hello", streaming)
    assert len(moderator.requests) == 2
    assert result.usage == MAIN + SIDE + SIDE


@STREAMING
async def test_a_moderation_call_that_blocks_the_input_still_counts(streaming: bool) -> None:
    """Blocked before the loop (on_block="terminate"): the run made one call, the moderator's."""
    moderator = costing(SIDE, "UNSAFE")
    registry = guard(input_guards=[moderated_by(moderator)], on_block="terminate")
    model = costing(MAIN)
    result = await finished(Agent(model, registry=registry), "hello", streaming)
    assert (result.stop_reason, model.requests) == ("terminated", [])
    assert result.usage == SIDE


async def test_a_run_middlewares_call_after_the_loop_counts_too() -> None:
    """A call a run middleware makes once the loop has ended is added after the run onion."""
    side = costing(SIDE)
    registry = Registry()

    @registry.on("run")
    async def review(ctx: Any, call_next: Any) -> Any:
        outcome = await call_next(ctx)
        await ctx.run.call_model(ModelRequest((Message.user("review"),)), model=side, by="me")
        return outcome

    result = (await Agent(costing(MAIN), registry=registry).run("hi")).unwrap()
    assert result.usage == MAIN + SIDE


@pytest.mark.parametrize("run_layer", [False, True])
async def test_an_emulated_tool_before_a_pause_counts_once_in_the_resumed_reply(
    run_layer: bool,
) -> None:
    """The emulator's call, made before a pause, is in both results, and once in the last.

    With a ``run`` middleware too, which sees the result (and its usage) of each invocation.
    """
    replies = iter(
        [tool_calls(("lookup", {"q": "x"}), ("transfer", {"amount": 5})), Message.assistant("done")]
    )
    model = FunctionModel(lambda request: ModelResponse(next(replies), MAIN))
    emulator = costing(SIDE, "found")

    def lookup(q: str) -> str:
        """Look something up."""
        raise AssertionError("emulated: never runs")

    def transfer(amount: int) -> str:
        """Move money."""
        return f"moved {amount}"

    registry = Registry()
    registry.include(approve(["transfer"]))
    registry.include(emulate_tools(tools=["lookup"], model=emulator))
    seen: list[Usage] = []
    if run_layer:

        @registry.on("run")
        async def watch(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
            outcome = await call_next(ctx)
            seen.append(outcome.unwrap().usage)
            return outcome

    agent = Agent(model, registry=registry, tools=[lookup, transfer])
    paused = (await agent.run("go")).unwrap()
    assert paused.stop_reason == "paused"
    assert paused.paused is not None
    assert paused.usage == MAIN + SIDE
    resumed = (await agent.resume(paused.paused.checkpoint_id, Approve())).unwrap()
    assert resumed.output == "done"
    assert resumed.usage == MAIN + SIDE + MAIN
    assert len(emulator.requests) == 1
    assert seen == ([paused.usage, resumed.usage] if run_layer else [])


async def test_the_run_span_and_budget_see_what_the_chat_spans_add_up_to() -> None:
    """The run span of `trace` holds what its chat spans add up to; budget spent as much."""
    otel = Otel()
    registry = otel.registry()
    registry.include(budget(tokens_per_reply=None, tokens_per_session=10_000))
    cheap = costing(SIDE, "summary")
    registry.include(compact(strategies=["summarize"], max_messages=4, keep=1, model=cheap))
    agent = Agent(costing(MAIN), registry=registry)
    result = (await agent.run(history(3), session_id="s")).unwrap()
    chats = [s for s in otel.spans() if s.name.startswith("chat ")]
    assert len(chats) == 2
    run = otel.one("invoke_agent agent").attributes or {}
    for field, attribute in (
        ("input_tokens", "gen_ai.usage.input_tokens"),
        ("output_tokens", "gen_ai.usage.output_tokens"),
    ):
        total = sum(int((s.attributes or {})[attribute]) for s in chats)  # type: ignore[call-overload]
        assert run[attribute] == total == getattr(result.usage, field)
    session = await agent.sessions.load("s")
    assert session is not None
    assert session.state["budget.tokens_per_session"] == result.usage.total_tokens
