"""Tracing middleware: each writes one line per step, saying what it saw.

They are built by `register_trace` around a writer (the CLI's writes to stderr), so the
trace goes wherever the caller wants and the middleware keep no state of their own.
"""

from __future__ import annotations

from collections.abc import Callable

from returns.result import Failure

from fncore import (
    Edit,
    Halt,
    ModelCallContext,
    ModelCallNext,
    ModelResponse,
    Outcome,
    Pause,
    Registry,
    RunContext,
    RunNext,
    RunResult,
    StateKey,
    Terminate,
    ToolCallContext,
    ToolCallNext,
    ToolResult,
)
from fncore.core._position_names import MODEL_CALL, RUN, TOOL_CALL

Trace = Callable[[str], None]
"""Receives one trace line (without its newline)."""

MODEL_CALLS: StateKey[int] = StateKey("fncore.cli.model_calls", default=int)
"""How many model calls this run has made so far."""


def count(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1.

    Example:
        >>> count(1, "tool"), count(3, "tool")
        ('1 tool', '3 tools')
    """
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _halt(halt: Halt) -> str:
    """How a ``Failure`` reads: a termination, a pause (not an error), or an error."""
    if isinstance(halt, Terminate):
        return f"terminated: {halt.output}"
    if isinstance(halt, Pause):
        return f"paused: waiting for approval ({', '.join(r.call_id for r in halt.requests)})"
    return f"error: {halt}"


def _call(ctx: ToolCallContext) -> str:
    """The call as it runs, ``tool({arguments as JSON})``, with a human's edit if any.

    A call resumed with an `Edit` runs with the edited arguments (``approve``, inside this
    middleware, applies the edit): they are shown as the tool validates them, as it runs
    them. A resume refuses edited arguments that do not fit the tool before anything runs.
    """
    name = ctx.tool.name
    decision = ctx.run.decision(ctx.call.id)
    if not isinstance(decision, Edit):
        return f"{name}({ctx.args.model_dump_json()})"
    edited = ctx.tool.args_model.model_validate(dict(decision.arguments))
    return f"{name}({edited.model_dump_json()}) edited"


def _describe_response(response: ModelResponse) -> str:
    calls = response.tool_calls
    if calls:
        return count(len(calls), "tool call")
    return f"text ({count(len(response.text), 'char')})"


def _describe_run(result: RunResult) -> str:
    usage = result.usage
    return (
        f"{count(result.rounds, 'round')}, {usage.input_tokens} tokens in, "
        f"{usage.output_tokens} out, stop: {result.stop_reason}"
    )


def register_trace(registry: Registry, trace: Trace) -> None:
    """Register the tracing middleware (``run``, ``model_call``, ``tool_call``) in ``registry``.

    Args:
        registry: Where to register them; first registered is outermost.
        trace: Where each trace line goes.
    """

    @registry.on(RUN, name="log_run")
    async def log_run(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        trace(f"[run] start: {count(len(ctx.messages), 'message')}, tool_choice {ctx.tool_choice}")
        outcome = await call_next(ctx)
        if isinstance(outcome, Failure):
            trace(f"[run] stopped: {_halt(outcome.failure())}")
        else:
            trace(f"[run] done: {_describe_run(outcome.unwrap())}")
        return outcome

    @registry.on(MODEL_CALL, name="trace_model_call")
    async def trace_model_call(
        ctx: ModelCallContext, call_next: ModelCallNext
    ) -> Outcome[ModelResponse]:
        state = ctx.run.state
        number = state.get(MODEL_CALLS) + 1
        state.set(MODEL_CALLS, number)
        request = ctx.request
        seen = (
            f"[model_call] round {number}: {ctx.model.name} model, "
            f"{count(len(request.messages), 'message')}, {count(len(request.tools), 'tool')}"
        )
        outcome = await call_next(ctx)
        if isinstance(outcome, Failure):
            trace(f"{seen} -> {_halt(outcome.failure())}")
        else:
            trace(f"{seen} -> {_describe_response(outcome.unwrap())}")
        return outcome

    @registry.on(TOOL_CALL, name="trace_tool_call")
    async def trace_tool_call(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        seen = f"[tool_call] {_call(ctx)}"
        outcome = await call_next(ctx)
        if isinstance(outcome, Failure):
            trace(f"{seen} -> {_halt(outcome.failure())}")
        else:
            result = outcome.unwrap()
            shown = f"error: {result.content}" if result.is_error else result.content
            trace(f"{seen} -> {shown}")
        return outcome
