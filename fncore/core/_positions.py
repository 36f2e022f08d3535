"""The callable contract of each position, as type aliases."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeAlias

from fncore.core._contexts import (
    CompressContext,
    ModelCallContext,
    ReasoningContext,
    RunContext,
    SystemPromptContext,
    ToolCallContext,
)
from fncore.core._events import (
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

RunNext: TypeAlias = Callable[[RunContext], Awaitable[Outcome[RunResult]]]
"""Calls the rest of the ``run`` onion."""
RunMiddleware: TypeAlias = Callable[[RunContext, RunNext], Awaitable[Outcome[RunResult]]]
"""A ``run`` middleware."""

ReasoningNext: TypeAlias = Callable[[ReasoningContext], Awaitable[Outcome[ModelResponse]]]
"""Calls the rest of the ``reasoning`` onion."""
ReasoningMiddleware: TypeAlias = Callable[
    [ReasoningContext, ReasoningNext], Awaitable[Outcome[ModelResponse]]
]
"""A ``reasoning`` middleware."""

ModelCallNext: TypeAlias = Callable[[ModelCallContext], Awaitable[Outcome[ModelResponse]]]
"""Calls the rest of the ``model_call`` onion."""
ModelCallMiddleware: TypeAlias = Callable[
    [ModelCallContext, ModelCallNext], Awaitable[Outcome[ModelResponse]]
]
"""A ``model_call`` middleware."""

ToolCallNext: TypeAlias = Callable[[ToolCallContext], Awaitable[Outcome[ToolResult]]]
"""Calls the rest of the ``tool_call`` onion."""
ToolCallMiddleware: TypeAlias = Callable[
    [ToolCallContext, ToolCallNext], Awaitable[Outcome[ToolResult]]
]
"""A ``tool_call`` middleware."""

CompressNext: TypeAlias = Callable[[CompressContext], Awaitable[Outcome[tuple[Message, ...]]]]
"""Calls the rest of the ``compress_context`` onion."""
CompressMiddleware: TypeAlias = Callable[
    [CompressContext, CompressNext], Awaitable[Outcome[tuple[Message, ...]]]
]
"""A ``compress_context`` middleware."""

SystemPromptTransformer: TypeAlias = Callable[[SystemPromptContext, str], Awaitable[Outcome[str]]]
"""A ``system_prompt`` transformer: gets the previous prompt, returns the next."""

RunStartHook: TypeAlias = Callable[[RunStart], Awaitable[None]]
"""Observes ``run_start``."""
RunEndHook: TypeAlias = Callable[[RunEnd], Awaitable[None]]
"""Observes ``run_end``."""
RoundStartHook: TypeAlias = Callable[[RoundStart], Awaitable[None]]
"""Observes ``round_start``."""
ToolStartHook: TypeAlias = Callable[[ToolStart], Awaitable[None]]
"""Observes ``tool_start``."""
ToolEndHook: TypeAlias = Callable[[ToolEnd], Awaitable[None]]
"""Observes ``tool_end``."""
CompactionHook: TypeAlias = Callable[[Compaction], Awaitable[None]]
"""Observes ``compaction``."""
ErrorHook: TypeAlias = Callable[[ErrorRaised], Awaitable[None]]
"""Observes ``error``."""
SubagentStartHook: TypeAlias = Callable[[SubagentStart], Awaitable[None]]
"""Observes ``subagent_start``."""
SubagentEndHook: TypeAlias = Callable[[SubagentEnd], Awaitable[None]]
"""Observes ``subagent_end``."""
