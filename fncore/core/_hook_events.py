"""Hook events: what hooks observe of a run's life (the stream events are in `_events`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias, final

from returns.result import Result

from fncore.core._errors import AgentError
from fncore.core._messages import Message, ToolCallPart, ToolResultPart

__all__ = [
    "Compaction",
    "ErrorRaised",
    "HookEvent",
    "HookEventName",
    "RoundStart",
    "RunEnd",
    "RunStart",
    "SubagentEnd",
    "SubagentStart",
    "ToolEnd",
    "ToolStart",
]

if TYPE_CHECKING:
    from fncore.core._contexts import RunInfo
    from fncore.core._result import RunResult


@final
@dataclass(frozen=True, slots=True)
class RunStart:
    """Hook event: a run is starting."""

    run: RunInfo
    """The run."""
    messages: tuple[Message, ...]
    """The input messages, history included."""


@final
@dataclass(frozen=True, slots=True)
class RunEnd:
    """Hook event: a run ended, successfully or not."""

    run: RunInfo
    """The run."""
    outcome: Result[RunResult, AgentError]
    """How it ended."""


@final
@dataclass(frozen=True, slots=True)
class RoundStart:
    """Hook event: a round is starting."""

    run: RunInfo
    """The run."""
    round: int
    """The round's number, from 1."""


@final
@dataclass(frozen=True, slots=True)
class ToolStart:
    """Hook event: a tool call is about to run."""

    run: RunInfo
    """The run."""
    call: ToolCallPart
    """The call."""


@final
@dataclass(frozen=True, slots=True)
class ToolEnd:
    """Hook event: a tool call has its result."""

    run: RunInfo
    """The run."""
    call: ToolCallPart
    """The call."""
    result: ToolResultPart
    """Its result."""


@final
@dataclass(frozen=True, slots=True)
class Compaction:
    """Hook event: ``compress_context`` changed the history."""

    run: RunInfo
    """The run."""
    before: tuple[Message, ...]
    """The history before."""
    after: tuple[Message, ...]
    """The history after."""


@final
@dataclass(frozen=True, slots=True)
class ErrorRaised:
    """Hook event: the run failed with an error value."""

    run: RunInfo
    """The run."""
    error: AgentError
    """The error."""


@final
@dataclass(frozen=True, slots=True)
class SubagentStart:
    """Hook event: a sub-agent (``Agent.as_tool``) is starting, or resuming, for a call."""

    run: RunInfo
    """The calling run."""
    agent: str
    """The sub-agent's tool name."""
    call: ToolCallPart
    """The call that runs it."""
    prompt: str
    """What it is asked (empty when it resumes from a pause)."""


@final
@dataclass(frozen=True, slots=True)
class SubagentEnd:
    """Hook event: a sub-agent ended (answered, failed or paused)."""

    run: RunInfo
    """The calling run."""
    agent: str
    """The sub-agent's tool name."""
    call: ToolCallPart
    """The call that ran it."""
    outcome: Result[RunResult, AgentError]
    """How the sub-agent's run ended, as its own ``run`` returned it."""


HookEventName: TypeAlias = Literal[
    "run_start",
    "run_end",
    "round_start",
    "tool_start",
    "tool_end",
    "compaction",
    "error",
    "subagent_start",
    "subagent_end",
]
"""The lifecycle events hooks can observe."""

HookEvent: TypeAlias = (
    RunStart
    | RunEnd
    | RoundStart
    | ToolStart
    | ToolEnd
    | Compaction
    | ErrorRaised
    | SubagentStart
    | SubagentEnd
)
"""Any hook event."""
