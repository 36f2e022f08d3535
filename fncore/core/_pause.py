"""Pausing a run for a human: requests, decisions, and where a resume goes on from.

A middleware pauses a run by returning ``Failure(Pause(...))``: from ``tool_call`` (the call
waits; the round's other calls run) or from a position inside a round (``reasoning``,
``model_call``, ``system_prompt``, ``compress_context``: the round starts again on resume).
The run then returns a `RunResult` with ``stop_reason == "paused"`` and `Paused` (the
checkpoint's id and what it waits for); ``Agent.resume(checkpoint_id, decisions)`` goes on
from there, in this process or another, and middleware read the decisions with
``ctx.run.decision(call_id)``. The checkpoint that keeps a paused run is in `_checkpoint`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias, final

from fncore.core._messages import Message, ToolCallPart, ToolResultPart
from fncore.core._tool_choice import ToolChoice
from fncore.core._usage import NO_USAGE, Usage
from fncore.core._value import value

__all__ = [
    "ALL_DECISIONS",
    "Approve",
    "Decision",
    "DecisionKind",
    "Edit",
    "Pause",
    "Paused",
    "PendingRequest",
    "Reject",
    "Respond",
    "ResumePoint",
]

DecisionKind: TypeAlias = Literal["approve", "edit", "reject", "respond"]
"""What a human may decide about a pending request."""

ALL_DECISIONS: tuple[DecisionKind, ...] = ("approve", "edit", "reject", "respond")
"""Every decision, in the order they are offered."""


@final
@value
@dataclass(frozen=True, slots=True)
class Approve:
    """Run the call as the model made it."""

    kind: Literal["approve"] = "approve"


@final
@value
@dataclass(frozen=True, slots=True)
class Edit:
    """Run the call with these arguments instead; the model is told it was edited."""

    arguments: Mapping[str, object]
    """The arguments to run the tool with (checked against its schema on resume)."""
    kind: Literal["edit"] = "edit"


@final
@value
@dataclass(frozen=True, slots=True)
class Reject:
    """Do not run the call; ``message`` becomes its (error) result."""

    message: str = "The user rejected this tool call."
    """What the model is told."""
    kind: Literal["reject"] = "reject"


@final
@value
@dataclass(frozen=True, slots=True)
class Respond:
    """Do not run the call; ``message`` becomes its result (the human answers instead)."""

    message: str
    """The result the model gets."""
    kind: Literal["respond"] = "respond"


Decision: TypeAlias = Approve | Edit | Reject | Respond
"""A human's answer to one pending request."""


@final
@value
@dataclass(frozen=True, slots=True)
class PendingRequest:
    """One thing a paused run waits for a human to decide.

    Example:
        >>> r = PendingRequest("call_1", "delete_file", {"path": "a.txt"}, "Delete a.txt?")
        >>> r.allowed
        ('approve', 'edit', 'reject', 'respond')
    """

    call_id: str
    """The id of the tool call waiting (or, for a pause that is not about a call, the id
    the pausing middleware chose)."""
    tool: str | None
    """The tool the call would run (``None`` for a pause that is not about a call)."""
    arguments: Mapping[str, object]
    """The call's arguments as the model gave them (JSON values)."""
    description: str = ""
    """What is being asked, for the human."""
    allowed: tuple[DecisionKind, ...] = ALL_DECISIONS
    """The decisions the human may take."""
    middleware: str = ""
    """The middleware that asked."""


@final
@dataclass(frozen=True, slots=True)
class Pause:
    """Pause the run until a human decides: return ``Failure(Pause(...))``.

    From ``tool_call``, the call waits while the round's other calls run; on resume, the
    call goes through its ``tool_call`` middleware again, where ``ctx.run.decision(...)``
    gives the decision. From a position inside a round, the round starts again on resume.
    Upstream middleware see it pass like a `Terminate`: it is neither retried nor an error.

    Example:
        >>> from returns.result import Failure
        >>> ask = PendingRequest("q1", None, {}, "Which city?", allowed=("respond",))
        >>> Failure(Pause((ask,))).failure().requests[0].description
        'Which city?'
    """

    requests: tuple[PendingRequest, ...]
    """What the run waits for."""
    one_at_a_time: bool = False
    """Ask for this request alone, even when other calls of the round also wait (they
    are asked for after it is decided): ``approve``'s per-call mode."""


@final
@value
@dataclass(frozen=True, slots=True)
class ResumePoint:
    """Where a paused run goes on from (internal, but stored in checkpoints)."""

    history: tuple[Message, ...]
    """The conversation as the next request would send it (the loop's history)."""
    new: tuple[Message, ...]
    """The messages the run added so far; with ``calls``, the last is the pending
    assistant turn."""
    round: int
    """The round in progress."""
    errors_in_a_row: int = 0
    """Consecutive rounds with a failing tool call."""
    usage: Usage = NO_USAGE
    """Tokens spent so far."""
    calls: tuple[tuple[ToolCallPart, ToolResultPart | None], ...] | None = None
    """The round's tool calls in order, each with its result if it already has one;
    ``None`` when the pause came before the round's response (the round starts again)."""
    choice: ToolChoice = "auto"
    """The tool choice the round's request was sent with."""


@final
@value
@dataclass(frozen=True, slots=True)
class Paused:
    """What a paused run waits for, and the checkpoint to resume it from."""

    checkpoint_id: str
    """Pass it to ``Agent.resume``."""
    requests: tuple[PendingRequest, ...]
    """The requests to decide, in call order."""
    _point: ResumePoint | None = field(default=None, repr=False, compare=False)
