"""What a session store is: where conversations, and paused runs, live between runs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, final, runtime_checkable

from fncore.core import (
    ChangeResult,
    Checkpoint,
    CheckpointChange,
    PendingRequest,
    Session,
    SessionUpdate,
)


class SessionStore(Protocol):
    """Where sessions live. A run commits to its session only when it succeeds.

    Commits are compare-and-set: a run loads a session at some version and commits an
    update made against that version; if another run committed in between, the store
    writes nothing and the run fails with `SessionConflict`. A store applies an update
    whole or not at all.
    """

    async def load(self, session_id: str) -> Session | None:
        """Return the session as last committed, or ``None`` if there is none yet."""
        ...

    async def commit(self, update: SessionUpdate) -> Session | None:
        """Apply ``update`` if the session is still at ``update.version``, atomically.

        Returns:
            The session as stored now (version ``update.version + 1``), or ``None`` when the
            session is at another version (a conflict), in which case nothing was written.
        """
        ...


@runtime_checkable
class CheckpointStore(Protocol):
    """A session store that also keeps the checkpoints of paused runs.

    A checkpoint is written once, when its run pauses. A resume then claims it (so two
    resumes never run the same decision), and changes it only under that claim: once the
    waiting calls ran (``decided``), and once the reply ended (``done``, in the same
    transaction as the session commit, or as the next checkpoint when it paused again).
    fncore's stores (memory, SQLite, PostgreSQL) all are checkpoint stores.
    """

    async def save_checkpoint(self, checkpoint: Checkpoint) -> None:
        """Write a new checkpoint (and forget the expired ones)."""
        ...

    async def load_checkpoint(self, checkpoint_id: str) -> Checkpoint | None:
        """The checkpoint as stored, or ``None`` if there is none by this id."""
        ...

    async def claim_checkpoint(
        self, checkpoint_id: str, claim: str, until: float, now: float
    ) -> Checkpoint | None:
        """Claim the checkpoint until ``until``, atomically, unless it is done or held.

        It is held while someone else's claim has not lapsed (``claim_until`` after ``now``).

        Returns:
            The checkpoint as stored now (its ``claim`` is ``claim`` if the claim was
            taken), or ``None`` if there is none.
        """
        ...

    async def change_checkpoint(self, change: CheckpointChange) -> ChangeResult:
        """Apply ``change`` whole, in one transaction, if its claim still holds.

        Returns:
            ``ChangeResult.OK``; ``ChangeResult.LOST`` if the stored checkpoint no longer
            holds the claim; or ``ChangeResult.CONFLICT`` if the change's session commit
            found the session moved on. Nothing is written unless ``OK``.
        """
        ...


@final
@dataclass(frozen=True, slots=True)
class SessionInfo:
    """What `SessionCatalog.list_sessions` tells about one session, without its messages.

    Example:
        >>> SessionInfo("ada", version=2, message_count=8)
        SessionInfo(id='ada', version=2, message_count=8)
    """

    id: str
    """The session's id."""
    version: int
    """How many runs have committed to it."""
    message_count: int
    """How many messages its history holds."""


@runtime_checkable
class SessionCatalog(SessionStore, Protocol):
    """A `SessionStore` that can also list its sessions and delete one.

    Every store fncore makes is one (`InMemorySessionStore`, `SqliteSessionStore`,
    `PostgresSessionStore`); ``fncore sessions`` needs one. A store of your own needs only
    `SessionStore`'s two methods to run agents; add these two to browse it too.

    Example:
        >>> from fncore import InMemorySessionStore
        >>> isinstance(InMemorySessionStore(), SessionCatalog)
        True
    """

    async def list_sessions(self) -> list[SessionInfo]:
        """Every session stored, sorted by id."""
        ...

    async def delete(self, session_id: str) -> bool:
        """Forget the session; ``False`` if there was none."""
        ...


@final
@dataclass(frozen=True, slots=True)
class CheckpointInfo:
    """A paused run waiting for decisions, as `CheckpointCatalog.list_checkpoints` tells it.

    Example:
        >>> from fncore import PendingRequest
        >>> ask = PendingRequest("call_1", "delete_file", {"path": "a.txt"}, "Delete a.txt?")
        >>> info = CheckpointInfo("cp1", "agent", "run1", "ada", 1.0, 2.0, (ask,), {})
        >>> [(r.call_id, r.tool, r.allowed) for r in info.requests]
        [('call_1', 'delete_file', ('approve', 'edit', 'reject', 'respond'))]
    """

    id: str
    """The checkpoint's id: pass it to ``Agent.resume`` with the decisions."""
    agent: str
    """The name of the agent that paused (only an agent built the same way resumes it)."""
    run_id: str
    """The paused run's id."""
    session_id: str | None
    """The session the run continues, if any."""
    created: float
    """When the run paused (seconds since the epoch)."""
    expires: float
    """When it can no longer be resumed."""
    requests: tuple[PendingRequest, ...]
    """What it waits for, in call order: each call's id, tool, arguments, the description
    shown to the person deciding, and the decisions allowed."""
    metadata: Mapping[str, object]
    """The run's request metadata (a tenant or user, say)."""


@runtime_checkable
class CheckpointCatalog(CheckpointStore, Protocol):
    """A `CheckpointStore` that can also list the checkpoints waiting for decisions.

    Every store fncore makes is one; an approvals inbox needs one. A checkpoint is listed
    while it waits: from the pause until a resume claims it (and again if that resume
    fails before taking its decisions and gives the claim up, or dies and its claim
    lapses), and never once expired.

    Example:
        >>> from fncore import InMemorySessionStore
        >>> isinstance(InMemorySessionStore(), CheckpointCatalog)
        True
    """

    async def list_checkpoints(
        self,
        *,
        limit: int | None = None,
        agent: str | None = None,
        metadata: Mapping[str, object] | None = None,
        now: float | None = None,
    ) -> list[CheckpointInfo]:
        """The checkpoints waiting for decisions, oldest first (then by id).

        Args:
            limit: List at most this many (the oldest).
            agent: Only the checkpoints of the agent of this name.
            metadata: Only the checkpoints whose run metadata holds each of these items.
            now: The time to judge claims and expiry by (default: the clock's).

        Raises:
            ValueError: if ``limit`` is negative.
        """
        ...
