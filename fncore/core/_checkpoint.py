"""The checkpoint of a paused run, and the changes a resume makes to it under a claim.

A checkpoint is data, not a suspended coroutine: everything a fresh process needs to go on
with the run. `config_hash` is what it must match to be resumed (the same stack and settings).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, TypeAlias, final

from fncore.core._messages import Message
from fncore.core._model import ModelSettings
from fncore.core._pause import Decision, PendingRequest, ResumePoint
from fncore.core._result import RunResult
from fncore.core._session import SessionUpdate
from fncore.core._tool_choice import ToolChoice
from fncore.core._value import value

__all__ = [
    "ChangeResult",
    "Checkpoint",
    "CheckpointChange",
    "CheckpointStage",
]

if TYPE_CHECKING:
    from fncore.core._loop import LoopSettings

_EMPTY: Mapping[str, object] = MappingProxyType({})
_NO_DECISIONS: Mapping[str, Decision] = MappingProxyType({})


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


@final
class ChangeResult(StrEnum):
    """What became of a `CheckpointChange` a store was asked to apply.

    Each member equals its lower-case name as a string (``ChangeResult.OK == "ok"``).

    Example:
        >>> ChangeResult.LOST
        <ChangeResult.LOST: 'lost'>
    """

    OK = "ok"
    """Applied, whole."""
    LOST = "lost"
    """The claim no longer holds: nothing was written."""
    CONFLICT = "conflict"
    """The change's session commit found the session moved on: nothing was written."""


def config_hash(stack: str, instructions: str, settings: LoopSettings, output: object) -> str:
    """What a checkpoint must match to be resumed: the stack, instructions, settings, output.

    Args:
        stack: The built stack's description, as text.
        instructions: The agent's base system prompt.
        settings: The loop settings.
        output: How structured output is asked for (``None`` for text).

    Example:
        >>> from fncore.core._loop import LoopSettings
        >>> len(config_hash("run: trace", "Be brief.", LoopSettings(), None))
        32
    """
    fingerprint = f"{stack}\n{instructions}\n{settings!r}"
    if output is not None:
        fingerprint += f"\n{output!r}"
    return hashlib.sha256(fingerprint.encode()).hexdigest()[:32]
