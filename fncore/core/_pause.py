"""Pausing a run for a human: requests, decisions, and the checkpoint a resume starts from.

A middleware pauses a run by returning ``Failure(Pause(...))``: from ``tool_call`` (the call
waits; the round's other calls run) or from a position inside a round (``reasoning``,
``model_call``, ``system_prompt``, ``compress_context``: the round starts again on resume).
The run then returns a `RunResult` with ``stop_reason == "paused"`` and `Paused` (the
checkpoint's id and what it waits for); ``Agent.resume(checkpoint_id, decisions)`` goes on
from there, in this process or another, and middleware read the decisions with
``ctx.run.decision(call_id)``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, TypeAlias, final

from fncore.core._messages import Message, ToolCallPart, ToolResultPart
from fncore.core._model import ModelSettings, ToolChoice
from fncore.core._usage import NO_USAGE, Usage
from fncore.core._value import value

if TYPE_CHECKING:
    from fncore.core._contexts import RunInfo
    from fncore.core._errors import AgentError
    from fncore.core._result import RunResult
    from fncore.core._session import SessionUpdate

__all__ = [
    "ALL_DECISIONS",
    "Approve",
    "ChangeResult",
    "Checkpoint",
    "CheckpointChange",
    "CheckpointStage",
    "Decision",
    "DecisionKind",
    "Edit",
    "Pause",
    "Paused",
    "PendingRequest",
    "Reject",
    "Respond",
    "Resume",
    "ResumePoint",
]

_EMPTY: Mapping[str, object] = MappingProxyType({})

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

_NO_DECISIONS: Mapping[str, Decision] = MappingProxyType({})


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


CheckpointStage: TypeAlias = Literal["paused", "decided", "done"]
"""``paused``: waiting for decisions. ``decided``: decisions taken and the waiting calls run
(their results are in the point); the reply goes on from there. ``done``: the resumed reply
ended, with ``outcome``."""


@final
@value
@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Everything a fresh process needs to resume a paused run, as a session store keeps it.

    Stores keep it whole (the SQL stores as one versioned JSON record) and change it only
    under a claim: see ``CheckpointStore`` in `fncore.runtime`.
    """

    id: str
    """The checkpoint's id."""
    run_id: str
    """The paused run's id (a resumed reply keeps it)."""
    agent: str
    """The name of the agent that paused."""
    config: str
    """A hash of the agent's stack and settings; a resume with another refuses."""
    created: float
    """When it was written (seconds since the epoch)."""
    expires: float
    """When it can no longer be resumed."""
    session_id: str | None
    """The session the run continues, if any."""
    session_version: int
    """The session's version when the run loaded it; the resumed reply commits against it."""
    input: tuple[Message, ...]
    """The run's input (committed with its reply)."""
    point: ResumePoint
    """Where the loop goes on from."""
    requests: tuple[PendingRequest, ...]
    """What it waits for."""
    tool_choice: ToolChoice = "auto"
    """The run's tool choice."""
    model_settings: ModelSettings = field(default_factory=ModelSettings)
    """The run's sampling settings."""
    metadata: Mapping[str, object] = field(default_factory=lambda: _EMPTY)
    """The run's request metadata."""
    state: Mapping[str, object] = field(default_factory=lambda: _EMPTY)
    """The reply-scoped state (limits, budgets) at the pause."""
    session_state: Mapping[str, object] = field(default_factory=lambda: _EMPTY)
    """The session-scoped state as the run left it (not yet committed)."""
    stage: CheckpointStage = "paused"
    """How far the resume went."""
    decisions: Mapping[str, Decision] = field(default_factory=lambda: _NO_DECISIONS)
    """The decisions taken (from ``decided`` on), by call id."""
    key: str = ""
    """The idempotency key of ``decisions``: a resume with other decisions is refused."""
    outcome: RunResult | None = None
    """The resumed reply's result (``done`` only): a repeated resume returns it."""
    claim: str = ""
    """Who is resuming it now (empty: nobody)."""
    claim_until: float = 0.0
    """When that claim lapses, if not renewed (a resumer that died frees it then)."""


@final
@dataclass(frozen=True, slots=True)
class CheckpointChange:
    """A change to a checkpoint, made under a claim, that a store applies whole or not at all."""

    checkpoint: Checkpoint
    """The checkpoint as it is to be stored (its ``id`` names the one to change)."""
    claim: str
    """The claim the change is made under; it applies only while the store's checkpoint
    still holds it."""
    session: SessionUpdate | None = None
    """A session commit to apply in the same transaction (compare-and-set as usual)."""
    follow: Checkpoint | None = None
    """A new checkpoint to write in the same transaction (the reply paused again)."""


ChangeResult: TypeAlias = Literal["ok", "lost", "conflict"]
"""``ok``: applied. ``lost``: the claim no longer holds (nothing written). ``conflict``: the
session moved on (nothing written)."""


AfterTools = Callable[["ResumePoint", "RunInfo"], Awaitable["AgentError | None"]]
"""Called once the waiting calls of a resumed round have results (internal)."""


@final
@dataclass(frozen=True, slots=True)
class Resume:
    """How the loop of a resumed reply starts (internal)."""

    point: ResumePoint
    after_tools: AfterTools | None = None
