"""What a session store is: where conversations, and paused runs, live between runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, final, runtime_checkable

from fncore.core import ChangeResult, Checkpoint, CheckpointChange, Session, SessionUpdate


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
