"""Stream events: what ``Agent.stream`` yields (what hooks observe is in `_hook_events`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Literal, TypeAlias, final

from returns.result import Result
from typing_extensions import TypeVar

from fncore.core._errors import AgentError
from fncore.core._messages import ToolResultPart
from fncore.core._model import (
    ModelResponse,
    ReasoningDelta,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallStarted,
    UsageReported,
)
from fncore.core._pause import Paused
from fncore.core._value import value

if TYPE_CHECKING:
    from fncore.core._result import RunResult

__all__ = [
    "GuardTripped",
    "RoundFinished",
    "RoundStarted",
    "RunCompleted",
    "RunPaused",
    "StreamEvent",
    "SubagentEvent",
    "ToolResultReady",
]

_OutputT = TypeVar("_OutputT", default=str)


@final
@value
@dataclass(frozen=True, slots=True)
class RoundStarted:
    """A round began: the context is (maybe) compressed, then the model is called."""

    round: int
    """The round's number, from 1."""


@final
@value
@dataclass(frozen=True, slots=True)
class RoundFinished:
    """A round's model response is in."""

    round: int
    """The round's number, from 1."""
    response: ModelResponse
    """The response of the round."""


@final
@value
@dataclass(frozen=True, slots=True)
class ToolResultReady:
    """A tool call has its result."""

    result: ToolResultPart
    """The result, paired with its call by ``call_id``."""


@final
@value
@dataclass(frozen=True, slots=True)
class GuardTripped:
    """A guardrail stopped the stream: nothing more of this reply is streamed.

    The run then ends blocked (the last event, `RunCompleted`, says how). What the consumer
    saw before this event depends on the guard's mode (see the ``guard`` built-in).
    """

    middleware: str
    """The name of the middleware whose guardrail tripped."""
    stage: Literal["input", "output", "tool"]
    """What it checked: the user's input, the model's output, or a tool call."""
    reason: str
    """Why it blocked."""


@final
@value
@dataclass(frozen=True, slots=True)
class RunPaused:
    """The run paused for a human, and its checkpoint is saved.

    `RunCompleted` follows, with a result whose ``stop_reason`` is ``"paused"``.
    """

    paused: Paused
    """The checkpoint to resume from and the requests to decide."""


@final
@value
@dataclass(frozen=True, slots=True)
class SubagentEvent:
    """An event of a sub-agent (``Agent.as_tool``), surfacing in its caller's stream.

    Nested sub-agents nest: an event of C, called by B, called by A, reaches A's consumer
    as ``SubagentEvent("b", ..., SubagentEvent("c", ..., event))``.
    """

    agent: str
    """The sub-agent's tool name."""
    call_id: str
    """The id of the tool call running it (tells two calls of one sub-agent apart)."""
    event: StreamEvent
    """The sub-agent's event, as its own stream would have yielded it."""


@final
@dataclass(frozen=True, slots=True)
class RunCompleted(Generic[_OutputT]):
    """The last event of a stream: how the run ended.

    ``RunCompleted[T]`` for an agent with ``output_type=T``.
    """

    outcome: Result[RunResult[_OutputT], AgentError]
    """The same value ``Agent.run`` would have returned."""


Progress: TypeAlias = (
    TextDelta
    | ReasoningDelta
    | ToolCallStarted
    | ToolCallArgsDelta
    | UsageReported
    | RoundStarted
    | RoundFinished
    | ToolResultReady
    | GuardTripped
    | RunPaused
    | SubagentEvent
)
"""Everything ``Agent.stream`` yields before its last event, `RunCompleted`."""

StreamEvent: TypeAlias = Progress | RunCompleted
"""Everything ``Agent.stream`` yields."""

STREAM_EVENT_TYPES: frozenset[type] = frozenset(
    {
        TextDelta,
        ReasoningDelta,
        ToolCallStarted,
        ToolCallArgsDelta,
        UsageReported,
        RoundStarted,
        RoundFinished,
        ToolResultReady,
        GuardTripped,
        RunPaused,
        SubagentEvent,
    }
)
"""The types an event map may return (every stream event but the final `RunCompleted`)."""
