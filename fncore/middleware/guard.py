"""``guard``: input, output and tool guardrails.

A guardrail is a function, sync or async, that looks at a text and answers `Allow`,
`Block` (with a reason) or `Rewrite` (with the new text). Tool guardrails look at one tool
call and answer `Allow`, `Reject` (an error result the model sees) or `Block`.

* Input guardrails see the text of every user message of the run's input (``ctx.messages``
  at ``run``: what ``Agent.run`` was given, not the session's earlier turns, which were
  checked when they were new), one message at a time.
* Output guardrails see the text of every response of the agent's model (each round's,
  not only the final answer: text that comes with tool calls is streamed too), not the
  model calls other built-ins make through ``call_model``.
* Streaming, ``mode="blocking"`` holds the streamed events and runs the output guardrails
  on the text so far each time ``window`` new characters (or ``window_seconds``) have
  arrived; only events before text that every guardrail allowed are released. So the
  consumer only ever sees a prefix that the guardrails allowed. ``mode="parallel"`` streams
  at once and checks alongside; a trip stops the stream with `GuardTripped`.

A block ends the run with `GuardBlocked` (``on_block="error"``) or with ``Terminate(message)``
(``on_block="terminate"``); streaming, `GuardTripped` comes first either way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Annotated, Literal

from pydantic import Field
from returns.result import Success

from fncore.core import (
    ModelCallContext,
    ModelCallNext,
    ModelResponse,
    Outcome,
    Registry,
    RunContext,
    RunNext,
    RunResult,
    ToolCallContext,
    ToolCallNext,
    ToolResult,
)
from fncore.core._position_names import MODEL_CALL, RUN, TOOL_CALL
from fncore.middleware._checked import Seconds, checked
from fncore.middleware._guard_stream import Gate
from fncore.middleware._guardrails import (
    MESSAGE,
    Allow,
    Block,
    GuardBlocked,
    GuardCheck,
    Guardrail,
    Policy,
    Reject,
    Rewrite,
    ToolGuardrail,
    ToolVerdict,
    Verdict,
    answer,
    denied,
    functions,
    judge,
    with_text,
)
from fncore.middleware._place import place

__all__ = [
    "Allow",
    "Block",
    "GuardBlocked",
    "GuardCheck",
    "Guardrail",
    "Reject",
    "Rewrite",
    "ToolGuardrail",
    "ToolVerdict",
    "Verdict",
    "denied",
    "guard",
]


@checked
def guard(
    *,
    input_guards: Sequence[Guardrail | str] = (),
    output_guards: Sequence[Guardrail | str] = (),
    tool_guards: Mapping[str, Sequence[ToolGuardrail | str]] | None = None,
    deny: Sequence[str] = (),
    mode: Literal["blocking", "parallel"] = "blocking",
    window: Annotated[int, Field(ge=1)] = 200,
    window_seconds: Seconds | None = None,
    on_block: Literal["error", "terminate"] = "error",
    message: str = MESSAGE,
    name: str = "guard",
) -> Registry:
    """Guardrails on the user's input, the model's output and tool calls.

    One with nothing to check (no guardrail, no ``deny``) is refused: it would do nothing.

    Args:
        input_guards: Guardrails for each user message of the run's input, in order
            (functions, or ``"package.module:function"`` names from configuration).
        output_guards: Guardrails for the text of each response of the agent's model.
        tool_guards: Tool guardrails by tool name (``"*"``: every tool), run in order
            before the tool. Names are matched at each call, so one configuration serves
            agents with different tools (a name no agent has is never matched).
        deny: Regular expressions (case-insensitive) that block any input or output text
            they are found in; a guardrail run before ``input_guards`` and ``output_guards``.
        mode: Streaming, ``blocking`` (hold text until the guardrails allowed it) or
            ``parallel`` (stream at once, stop the stream on a block).
        window: Characters of new streamed text after which the output guardrails run on
            the text so far.
        window_seconds: If set, they also run when text has waited this long unchecked.
        on_block: ``error``: the run fails with `GuardBlocked`; ``terminate``: it ends
            with ``message`` as its output (``stop_reason == "terminated"``).
        message: The output of a blocked run with ``on_block="terminate"``.
        name: The middleware's name, to tell two instances apart.

    Raises:
        ValueError: for nothing to check, a ``deny`` pattern that is not a regular
            expression, or a guardrail name that does not import.

    Example:
        >>> registry = Registry()
        >>> registry.include(guard(deny=["password"]))
        >>> sorted((m.position, m.name) for m in registry.middleware)
        [('model_call', 'guard'), ('run', 'guard')]
    """
    policy = Policy(name, on_block, message)
    first = [denied(deny)] if deny else []
    inputs: list[Guardrail] = first + functions(input_guards)
    outputs: list[Guardrail] = first + functions(output_guards)
    per_tool = {tool: fs for tool, gs in (tool_guards or {}).items() if (fs := functions(gs))}
    if not (inputs or outputs or per_tool):
        msg = (
            "guard has nothing to check: give input_guards, output_guards, tool_guards or "
            "deny (or leave guard out)"
        )
        raise ValueError(msg)
    registry = Registry()
    where = place("guard")
    if inputs:
        registry.on(RUN, name=name, **where)(_input_guard(inputs, policy))
    if outputs:
        registry.on(MODEL_CALL, name=name, **where)(
            _output_guard(outputs, policy, mode, window, window_seconds)
        )
    if per_tool:
        registry.on(TOOL_CALL, name=name, **where)(_tool_guard(per_tool, policy))
    return registry


def _input_guard(
    guards: Sequence[Guardrail], policy: Policy
) -> Callable[[RunContext, RunNext], Coroutine[object, object, Outcome[RunResult]]]:
    async def guard_input(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        messages = list(ctx.messages)
        for index, message in enumerate(messages):
            if message.role != "user":
                continue
            verdict = await judge(guards, GuardCheck(message.text, "input", ctx.run))
            if isinstance(verdict, Block):
                return policy.blocked(ctx.run, "input", verdict.reason, RUN, ctx.run.emit)
            if isinstance(verdict, Rewrite):
                messages[index] = with_text(message, verdict.text)
        if any(a is not b for a, b in zip(messages, ctx.messages, strict=True)):
            ctx = dataclasses.replace(ctx, messages=tuple(messages))
        return await call_next(ctx)

    return guard_input


def _output_guard(
    guards: Sequence[Guardrail],
    policy: Policy,
    mode: Literal["blocking", "parallel"],
    window: int,
    seconds: float | None,
) -> Callable[[ModelCallContext, ModelCallNext], Coroutine[object, object, Outcome[ModelResponse]]]:
    async def guard_output(
        ctx: ModelCallContext, call_next: ModelCallNext
    ) -> Outcome[ModelResponse]:
        if ctx.run.calling is not None:  # a built-in's own call (ours included)
            return await call_next(ctx)
        gate = Gate(guards, ctx.run, policy, mode == "parallel", window, seconds)
        return await gate.run(ctx, call_next)

    return guard_output


def _tool_guard(
    per_tool: Mapping[str, Sequence[ToolGuardrail]], policy: Policy
) -> Callable[[ToolCallContext, ToolCallNext], Coroutine[object, object, Outcome[ToolResult]]]:
    every = per_tool.get("*", ())

    async def guard_tool(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        for guard_fn in (*per_tool.get(ctx.tool.name, ()), *every):
            verdict = await answer(guard_fn(ctx), guard_fn)
            if isinstance(verdict, Reject):
                return Success(ToolResult(verdict.message, True))
            if isinstance(verdict, Block):
                return policy.blocked(ctx.run, "tool", verdict.reason, TOOL_CALL, ctx.run.emit)
            if isinstance(verdict, Rewrite):
                msg = f"tool guardrail answered Rewrite for {ctx.tool.name!r}; use Reject"
                raise TypeError(msg)
        return await call_next(ctx)

    return guard_tool
