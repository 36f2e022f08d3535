"""`timeout`: deadlines for each model call, each tool call and the whole reply.

A deadline that passes cancels what runs inside it (the model's request or stream, the
tool, every round of the reply, the tools running in it) and becomes an error value:

| deadline | what is returned |
|---|---|
| ``model_call`` | `ModelTimeout` (``retryable``, so a `retry` outside sends it again) |
| ``tool_call`` | an error result the model sees, as for the loop's ``tool_timeout`` |
| ``reply`` | `DeadlineExceeded` (``limit="reply"``) |

Each deadline is one scope around what it guards; the scopes of one length share one timer
per event loop (`fncore.middleware._deadlines`), so a run arms no timer of its own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import lru_cache
from typing import TypeVar

from returns.result import Failure, Success

from fncore.core import (
    DeadlineExceeded,
    ModelCallContext,
    ModelCallNext,
    ModelResponse,
    ModelTimeout,
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
from fncore.middleware._deadlines import Deadlines
from fncore.middleware._place import place

__all__ = ["timeout"]

_T = TypeVar("_T")


@lru_cache(maxsize=64)
def _deadlines(seconds: float) -> Deadlines:
    """The deadlines of ``seconds``, shared by everything that sets one of that length."""
    return Deadlines(seconds)


async def within(seconds: float, pending: Awaitable[_T], late: Callable[[], _T]) -> _T:
    """``pending``'s value, or ``late()`` if ``seconds`` passed first (``pending`` is cancelled).

    Example:
        >>> import asyncio
        >>> asyncio.run(within(0.01, asyncio.sleep(5, "on time"), lambda: "late"))
        'late'
    """
    return await _deadlines(seconds).within(pending, late)


@checked
def timeout(
    *,
    model_call: Seconds | None = 120.0,
    tool_call: Seconds | None = None,
    reply: Seconds | None = 600.0,
    name: str = "timeout",
) -> Registry:
    """Deadlines in seconds for each model call, each tool call and the whole reply.

    ``None`` sets no deadline there (and registers nothing at that position).

    Args:
        model_call: Seconds one model call may take, streamed or not, each attempt of a
            `retry` on its own; then `ModelTimeout`.
        tool_call: Seconds one tool call may take, middleware inside included; then an
            error result. ``None``: only the loop's ``tool_timeout`` (300 s by default).
        reply: Seconds the whole reply may take, every round and tool call included; then
            `DeadlineExceeded`.
        name: The middleware's name, to tell two instances apart.

    Raises:
        ValueError: when all three are ``None``.

    Example:
        >>> registry = Registry()
        >>> registry.include(timeout(tool_call=30))
        >>> sorted((m.position, m.name) for m in registry.middleware)
        [('model_call', 'timeout'), ('run', 'timeout'), ('tool_call', 'timeout')]
    """
    if model_call is None and tool_call is None and reply is None:
        msg = "timeout needs a deadline: set model_call, tool_call or reply (in seconds)"
        raise ValueError(msg)
    registry = Registry()
    if reply is not None:
        reply_seconds = reply
        replies = _deadlines(reply)

        @registry.on(RUN, name=name, **place("timeout"))
        async def reply_deadline(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
            return await replies.within(call_next(ctx), passed)

        def passed() -> Outcome[RunResult]:
            return Failure(
                DeadlineExceeded(
                    message=(
                        f"the reply took longer than its deadline of {reply_seconds}s; "
                        "raise timeout's reply or ask for less"
                    ),
                    position=RUN,
                    middleware=name,
                    limit="reply",
                    scope="reply",
                    seconds=reply_seconds,
                )
            )

    if model_call is not None:
        call_seconds = model_call
        calls = _deadlines(model_call)

        @registry.on(MODEL_CALL, name=name, **place("timeout"))
        async def call_deadline(
            ctx: ModelCallContext, call_next: ModelCallNext
        ) -> Outcome[ModelResponse]:
            return await calls.within(call_next(ctx), lambda: model_late(ctx))

        def model_late(ctx: ModelCallContext) -> Outcome[ModelResponse]:
            return Failure(
                ModelTimeout(
                    message=(
                        f"model {ctx.model.name!r} did not answer within {call_seconds}s; "
                        "retry, or raise timeout's model_call"
                    ),
                    position=MODEL_CALL,
                    middleware=name,
                )
            )

    if tool_call is not None:
        tool_seconds = tool_call
        tools = _deadlines(tool_call)

        @registry.on(TOOL_CALL, name=name, **place("timeout"))
        async def tool_deadline(
            ctx: ToolCallContext, call_next: ToolCallNext
        ) -> Outcome[ToolResult]:
            return await tools.within(call_next(ctx), lambda: tool_late(ctx))

        def tool_late(ctx: ToolCallContext) -> Outcome[ToolResult]:
            text = f"Tool {ctx.tool.name!r} timed out after {tool_seconds}s."
            return Success(ToolResult(text, True))

    return registry
