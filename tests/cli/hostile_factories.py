"""Middleware of "an application" whose tool results and errors carry terminal escapes.

Loaded from configuration by module path (``hostile_factories:escapes``) by the CLI tests.
"""

from __future__ import annotations

from returns.result import Failure, Success

from fncore import (
    AgentError,
    Outcome,
    Registry,
    RunContext,
    RunNext,
    RunResult,
    ToolCallContext,
    ToolCallNext,
    ToolResult,
)

HOSTILE = "\x1b]0;owned\x07\x1b[2Jfive\r\x9b31m"
"""A window title, a screen clear, a carriage return and a C1 CSI: a terminal obeys them."""
SHOWN = "\\x1b]0;owned\\x07\\x1b[2Jfive\\r\\x9b31m"
"""The same, escaped, as the CLI prints it."""
FAIL = "fail"
"""The prompt that makes the run fail with `HOSTILE` in its error message."""


def escapes() -> Registry:
    """``add`` answers `HOSTILE` (the offline model puts it in its answer); `FAIL` fails."""
    registry = Registry()

    @registry.on("run", name="failing")
    async def failing(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        if ctx.messages[-1].text == FAIL:
            return Failure(AgentError(message=f"bad {HOSTILE}"))
        return await call_next(ctx)

    @registry.on("tool_call", name="hostile", tools=("add",))
    async def hostile(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        return Success(ToolResult(HOSTILE))

    return registry
