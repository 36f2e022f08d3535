"""The callable contract of each position, as type aliases.

A middleware, transformer or hook returns ``Coroutine[object, object, ...]``, which is what an
``async def`` returns: registration accepts only async functions (a plain ``def`` that returns
an awaitable fails at run time), and mypy then rejects such a ``def`` at the decorator too.
What ``call_next`` returns is only awaitable.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import TypeAlias

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
