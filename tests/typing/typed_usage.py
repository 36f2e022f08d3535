"""Checked by ``mypy --strict``: what user code written against fncore infers to.

Every ``assert_type`` line is a claim about the public types; CI runs mypy over this file,
with ``disallow_any_expr`` (``pyproject.toml``), so no expression here may be ``Any``.
"""

from __future__ import annotations

import dataclasses
from typing import Literal, assert_never, assert_type

from dependency_injector.wiring import Provide
from returns.result import Failure, Result, Success

from fncore import (
    Agent,
    AgentError,
    CompressContext,
    CompressNext,
    Container,
    LoopError,
    Message,
    ModelCallContext,
    ModelCallNext,
    ModelResponse,
    Outcome,
    Pause,
    ReasoningContext,
    ReasoningNext,
    Registry,
    RunContext,
    RunNext,
    RunOutcome,
    RunResult,
    RunStream,
    StateKey,
    SystemPromptContext,
    Terminate,
    ToolCallContext,
    ToolCallNext,
    ToolResult,
    cases,
    load_container,
    recover,
)
from fncore.events import ToolEnd
from fncore.testing import TestModel

registry = Registry()
CALLS = StateKey("calls", default=lambda: 0)


@registry.on("run")
async def on_run(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
    """Pass through, upper-casing the final output."""
    out = await call_next(ctx)
    return out.map(lambda r: dataclasses.replace(r, output=r.output.upper()))


@registry.on("reasoning")
async def on_reasoning(ctx: ReasoningContext, call_next: ReasoningNext) -> Outcome[ModelResponse]:
    """Offer no tools after the third round."""
    if ctx.round > 3:
        return await call_next(dataclasses.replace(ctx, tools=()))
    return await call_next(ctx)


@registry.on("model_call", name="count", order="outermost")
async def count(
    ctx: ModelCallContext, call_next: ModelCallNext, limit: int = Provide["config.limit"]
) -> Outcome[ModelResponse]:
    """Count model calls in run state; terminate past a limit injected from the container."""
    calls = ctx.run.state.get(CALLS) + 1
    ctx.run.state.set(CALLS, calls)
    if calls > limit:
        return Failure(Terminate("budget exhausted"))
    return await call_next(ctx)


@registry.on("tool_call", tools=["add"], after=["count"])
async def cache(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
    """Short-circuit with a cached result; read and change arguments with their types."""
    if ctx.call.arguments == "{}":
        return Success(ToolResult("0"))
    assert_type(ctx.arg("a", int), int)
    assert_type(ctx.with_args(b=2), ToolCallContext)
    assert_type(ctx.with_args(add, a=1, b=ctx.arg("b", int) * 2), ToolCallContext)
    assert_type(ctx.with_args(add, 1, 2), ToolCallContext)
    return await call_next(ctx)


@registry.on("model_call", order="innermost")
async def retry_once(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
    """Retry once on an error; a Terminate passes through untouched."""

    async def again(error: AgentError) -> Outcome[ModelResponse]:
        return await call_next(ctx)

    outcome = await recover(await call_next(ctx), again)
    assert_type(outcome, Outcome[ModelResponse])
    match cases(outcome):
        case Failure(Terminate(output=text)):
            assert_type(text, str)
        case Failure(halt):
            assert_type(halt, Terminate | Pause | AgentError)
        case Success(response):
            assert_type(response, ModelResponse)
    return outcome


class MyContainer(Container):
    """A user's container subclass."""


@registry.on("compress_context")
async def keep_last(ctx: CompressContext, call_next: CompressNext) -> Outcome[tuple[Message, ...]]:
    """Keep the history as is."""
    return await call_next(ctx)


@registry.on("system_prompt")
async def add_rules(ctx: SystemPromptContext, prompt: str) -> Outcome[str]:
    """Append a line to the system prompt."""
    return Success(prompt + "\nBe brief.")


@registry.hook("tool_end", timeout=1.0)
async def audit(event: ToolEnd) -> None:
    """Observe a finished tool call."""
    assert_type(event.result.content, str)


@registry.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@registry.tool(name="mul", timeout=2.0)
async def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


async def main() -> None:
    """Run an agent and look at what comes back."""
    assert_type(add(1, 2), int)
    agent = Agent(TestModel(), registry=registry)
    outcome = await agent.run("What is 2 + 3?", metadata={"user": "u1"})
    assert_type(outcome, Result[RunResult, AgentError])
    named: RunOutcome = outcome
    assert_type(named, RunOutcome)
    assert_type(named, RunOutcome[str])
    # Narrowing: through `cases`, each branch keeps its exact type, and two cases cover all.
    match cases(outcome):
        case Success(RunResult(output=output, rounds=rounds)):
            assert_type(output, str)
            assert_type(rounds, int)
        case Failure(error):
            assert_type(error, AgentError)
        case unreachable:
            assert_never(unreachable)
    match cases(outcome):
        case Success(whole):
            assert_type(whole, RunResult[str])
        case Failure(LoopError(messages=messages)):
            assert_type(messages, tuple[Message, ...])
    checked = cases(outcome)
    assert_type(checked, Success[RunResult[str]] | Failure[AgentError])
    if isinstance(checked, Success):
        assert_type(checked.unwrap(), RunResult[str])
        assert_type(checked.unwrap().output, str)
    else:
        assert_type(checked.failure(), AgentError)
    assert_type(load_container(environ={}, container=MyContainer()), MyContainer)
    assert_type(outcome.map(lambda r: r.output), Result[str, AgentError])
    assert_type(
        outcome.unwrap().stop_reason,
        Literal["completed", "tool_required", "terminated", "awaiting_tools", "paused"],
    )
    stream = agent.stream("hi")
    assert_type(stream, RunStream)
    assert_type(await stream.result(), Result[RunResult, AgentError])
    assert_type(load_container(environ={}).agent(), Agent)
    configured = load_container(overrides={"loop": {"max_iterations": 5}}, environ={})
    assert_type(configured, Container)
    assert_type(await multiply(2, 3), int)
    assert_type(CALLS, StateKey[int])
    direct = await count(ModelCallContext.__new__(ModelCallContext), on_model_call_next, limit=3)
    assert_type(direct, Outcome[ModelResponse])


async def on_model_call_next(ctx: ModelCallContext) -> Outcome[ModelResponse]:
    """A stand-in for the rest of the onion."""
    return Success(ModelResponse(Message.assistant("ok")))
