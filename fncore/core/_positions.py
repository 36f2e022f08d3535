"""The positions: the table that describes each, and its callable contract as type aliases.

`POSITIONS` is the one place a position is described: its context and value types, its
kind, the end its onion wraps. The registry, the fold, the stack's description and the
engine read it, so adding a position takes an entry here (with its name in
`fncore.core._position_names`, its overload on `Registry.on` and its aliases below) and
its innermost function in the engine.

A middleware, transformer or hook returns ``Coroutine[object, object, ...]``, which is what an
``async def`` returns: registration accepts only async functions (a plain ``def`` that returns
an awaitable fails at run time), and mypy then rejects such a ``def`` at the decorator too.
What ``call_next`` returns is only awaitable.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal, TypeAlias, final

from fncore.core._contexts import (
    CompressContext,
    ModelCallContext,
    ReasoningContext,
    RunContext,
    SystemPromptContext,
    ToolCallContext,
)
from fncore.core._hook_events import (
    Compaction,
    ErrorRaised,
    RoundStart,
    RunEnd,
    RunStart,
    SubagentEnd,
    SubagentStart,
    ToolEnd,
    ToolStart,
)
from fncore.core._messages import Message
from fncore.core._model import ModelResponse
from fncore.core._outcomes import Outcome
from fncore.core._position_names import (
    COMPRESS_CONTEXT,
    MODEL_CALL,
    REASONING,
    RUN,
    SYSTEM_PROMPT,
    TOOL_CALL,
    Position,
)
from fncore.core._result import RunResult
from fncore.core._tools import ToolResult

__all__ = [
    "CompactionHook",
    "CompressMiddleware",
    "CompressNext",
    "ErrorHook",
    "ModelCallMiddleware",
    "ModelCallNext",
    "ReasoningMiddleware",
    "ReasoningNext",
    "RoundStartHook",
    "RunEndHook",
    "RunMiddleware",
    "RunNext",
    "RunStartHook",
    "SystemPromptTransformer",
    "ToolCallMiddleware",
    "ToolCallNext",
    "ToolEndHook",
    "ToolStartHook",
]

Kind: TypeAlias = Literal["onion", "chain"]
"""An onion wraps an innermost end; a chain passes a value along its steps, left to right."""


@final
@dataclass(frozen=True, slots=True)
class PositionInfo:
    """What defines one position (internal): read by registration, folding and the engine."""

    name: Position
    """The name middleware are registered under."""
    kind: Kind
    """``onion`` (``(ctx, call_next)``) or ``chain`` (``(ctx, value)``)."""
    context: type
    """The context type its middleware receive."""
    value: type
    """The exact type a ``Success`` carries there."""
    signature: str
    """A middleware's parameters, as registration errors show them."""
    returns: str
    """A ``Success`` of the value, as error values show it."""
    end: str
    """What the onion wraps (what a chain starts from), as the stack's description shows it."""
    accepts: Callable[[Any, object], bool] | None = None
    """A further check of a value that has the right type, if its type is not enough."""
    per_tool: bool = False
    """Whether a middleware there may apply to only some tools (``tools=[...]``)."""


def _messages_ok(ctx: CompressContext, value: object) -> bool:
    """A compressed history is a tuple of messages (unchanged, or checked one by one)."""
    return value is ctx.messages or all(type(m) is Message for m in value)  # type: ignore[attr-defined]


POSITIONS: Mapping[Position, PositionInfo] = MappingProxyType(
    {
        p.name: p
        for p in (
            PositionInfo(
                RUN,
                "onion",
                RunContext,
                RunResult,
                "(ctx: RunContext, call_next: RunNext)",
                "Success(RunResult(...))",
                "agent loop",
            ),
            PositionInfo(
                REASONING,
                "onion",
                ReasoningContext,
                ModelResponse,
                "(ctx: ReasoningContext, call_next: ReasoningNext)",
                "Success(ModelResponse(...))",
                "system prompt + model_call",
            ),
            PositionInfo(
                MODEL_CALL,
                "onion",
                ModelCallContext,
                ModelResponse,
                "(ctx: ModelCallContext, call_next: ModelCallNext)",
                "Success(ModelResponse(...))",
                "model",
            ),
            PositionInfo(
                TOOL_CALL,
                "onion",
                ToolCallContext,
                ToolResult,
                "(ctx: ToolCallContext, call_next: ToolCallNext)",
                "Success(ToolResult(...))",
                "tool",
                per_tool=True,
            ),
            PositionInfo(
                COMPRESS_CONTEXT,
                "onion",
                CompressContext,
                tuple,
                "(ctx: CompressContext, call_next: CompressNext)",
                "Success(tuple of Message)",
                "history unchanged",
                accepts=_messages_ok,
            ),
            PositionInfo(
                SYSTEM_PROMPT,
                "chain",
                SystemPromptContext,
                str,
                "(ctx: SystemPromptContext, prompt: str)",
                "Success(str)",
                "agent instructions",
            ),
        )
    }
)
"""Every position, in the order the stack's description lists them."""

RunNext: TypeAlias = Callable[[RunContext], Awaitable[Outcome[RunResult]]]
"""Calls the rest of the ``run`` onion."""
RunMiddleware: TypeAlias = Callable[
    [RunContext, RunNext], Coroutine[object, object, Outcome[RunResult]]
]
"""A ``run`` middleware."""

ReasoningNext: TypeAlias = Callable[[ReasoningContext], Awaitable[Outcome[ModelResponse]]]
"""Calls the rest of the ``reasoning`` onion."""
ReasoningMiddleware: TypeAlias = Callable[
    [ReasoningContext, ReasoningNext], Coroutine[object, object, Outcome[ModelResponse]]
]
"""A ``reasoning`` middleware."""

ModelCallNext: TypeAlias = Callable[[ModelCallContext], Awaitable[Outcome[ModelResponse]]]
"""Calls the rest of the ``model_call`` onion."""
ModelCallMiddleware: TypeAlias = Callable[
    [ModelCallContext, ModelCallNext], Coroutine[object, object, Outcome[ModelResponse]]
]
"""A ``model_call`` middleware."""

ToolCallNext: TypeAlias = Callable[[ToolCallContext], Awaitable[Outcome[ToolResult]]]
"""Calls the rest of the ``tool_call`` onion."""
ToolCallMiddleware: TypeAlias = Callable[
    [ToolCallContext, ToolCallNext], Coroutine[object, object, Outcome[ToolResult]]
]
"""A ``tool_call`` middleware."""

CompressNext: TypeAlias = Callable[[CompressContext], Awaitable[Outcome[tuple[Message, ...]]]]
"""Calls the rest of the ``compress_context`` onion."""
CompressMiddleware: TypeAlias = Callable[
    [CompressContext, CompressNext], Coroutine[object, object, Outcome[tuple[Message, ...]]]
]
"""A ``compress_context`` middleware."""

SystemPromptTransformer: TypeAlias = Callable[
    [SystemPromptContext, str], Coroutine[object, object, Outcome[str]]
]
"""A ``system_prompt`` transformer: gets the previous prompt, returns the next."""

RunStartHook: TypeAlias = Callable[[RunStart], Coroutine[object, object, None]]
"""Observes ``run_start``."""
RunEndHook: TypeAlias = Callable[[RunEnd], Coroutine[object, object, None]]
"""Observes ``run_end``."""
RoundStartHook: TypeAlias = Callable[[RoundStart], Coroutine[object, object, None]]
"""Observes ``round_start``."""
ToolStartHook: TypeAlias = Callable[[ToolStart], Coroutine[object, object, None]]
"""Observes ``tool_start``."""
ToolEndHook: TypeAlias = Callable[[ToolEnd], Coroutine[object, object, None]]
"""Observes ``tool_end``."""
CompactionHook: TypeAlias = Callable[[Compaction], Coroutine[object, object, None]]
"""Observes ``compaction``."""
ErrorHook: TypeAlias = Callable[[ErrorRaised], Coroutine[object, object, None]]
"""Observes ``error``."""
SubagentStartHook: TypeAlias = Callable[[SubagentStart], Coroutine[object, object, None]]
"""Observes ``subagent_start``."""
SubagentEndHook: TypeAlias = Callable[[SubagentEnd], Coroutine[object, object, None]]
"""Observes ``subagent_end``."""
