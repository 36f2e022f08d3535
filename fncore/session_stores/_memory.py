"""`InMemorySessionStore`: sessions and checkpoints in a dict, for tests and demos."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import final

from fncore.core import ChangeResult, Checkpoint, CheckpointChange, Session, SessionUpdate
from fncore.session_stores._listing import clock, listed
from fncore.session_stores._protocols import CheckpointInfo, SessionInfo


@final
class InMemorySessionStore:
    """A `SessionStore` in a dict: for tests, demos and single-process apps.

    A commit is atomic (it never waits), so concurrent runs on one session conflict
    instead of losing a turn. State is kept as the run left it and copied afresh into each
    run that loads it, so a run that changes a value in place and then fails leaves the
    session unchanged.

    Example:
        >>> import asyncio
        >>> from fncore import Message, SessionUpdate
        >>> store = InMemorySessionStore()
        >>> update = SessionUpdate("s", 0, 0, (Message.user("hi"),))
        >>> asyncio.run(store.commit(update)).version
        1
        >>> asyncio.run(store.load("s")).messages[0].text
        'hi'
        >>> asyncio.run(store.commit(update)) is None  # made against version 0: a conflict
        True
    """

    __slots__ = ("_checkpoints", "_sessions")

    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}
        self._checkpoints: dict[str, Checkpoint] = {}

    async def load(self, session_id: str) -> Session | None:
        """Return the session, or ``None``."""
        return self._sessions.get(session_id)

    async def commit(self, update: SessionUpdate) -> Session | None:
        """Apply ``update`` unless the session moved on; ``None`` on a conflict."""
        after = update.apply(self._sessions.get(update.session_id))
        if after is None:
            return None
        if after.state and type(after.state) is not MappingProxyType:
            after = Session(
                after.id, after.messages, MappingProxyType(dict(after.state)), after.version
            )
        self._sessions[update.session_id] = after
        return after

    async def delete(self, session_id: str) -> bool:
        """Forget the session; ``False`` if there was none."""
        return self._sessions.pop(session_id, None) is not None

    async def save_checkpoint(self, checkpoint: Checkpoint) -> None:
        """Keep a new checkpoint (a deep copy of its state); forget the expired ones."""
        for key in [k for k, c in self._checkpoints.items() if c.expires < checkpoint.created]:
            del self._checkpoints[key]
        self._checkpoints[checkpoint.id] = _kept(checkpoint)

    async def load_checkpoint(self, checkpoint_id: str) -> Checkpoint | None:
        """The checkpoint, with a fresh copy of its state, or ``None``."""
        found = self._checkpoints.get(checkpoint_id)
        return None if found is None else _kept(found)

    async def claim_checkpoint(
        self, checkpoint_id: str, claim: str, until: float, now: float
    ) -> Checkpoint | None:
        """Claim the checkpoint unless it is done or claimed; it as stored now."""
        found = self._checkpoints.get(checkpoint_id)
        if found is None:
            return None
        if found.stage != "done" and (not found.claim or found.claim_until < now):
            found = self._checkpoints[checkpoint_id] = replace(
                found, claim=claim, claim_until=until
            )
        return _kept(found)

    async def change_checkpoint(self, change: CheckpointChange) -> ChangeResult:
        """Apply ``change`` if its claim holds (and its session commit applies)."""
        target = change.checkpoint
        found = self._checkpoints.get(target.id)
        if found is None or found.claim != change.claim:
            return ChangeResult.LOST
        update = change.session
        if update is not None:
            after = update.apply(self._sessions.get(update.session_id))
            if after is None:
                return ChangeResult.CONFLICT
            await self.commit(update)
        self._checkpoints[target.id] = _kept(target)
        if change.follow is not None:
            self._checkpoints[change.follow.id] = _kept(change.follow)
        return ChangeResult.OK

    async def list_checkpoints(
        self,
        *,
        limit: int | None = None,
        agent: str | None = None,
        metadata: Mapping[str, object] | None = None,
        now: float | None = None,
    ) -> list[CheckpointInfo]:
        """The checkpoints waiting for decisions, oldest first (see `CheckpointCatalog`)."""
        found = listed(
            self._checkpoints.values(),
            clock(now, limit),
            limit=limit,
            agent=agent,
            metadata=metadata,
        )
        return [
            replace(i, metadata=MappingProxyType(copy.deepcopy(dict(i.metadata)))) for i in found
        ]

    async def list_sessions(self) -> list[SessionInfo]:
        """Every session stored, sorted by id."""
        return [
            SessionInfo(s.id, s.version, len(s.messages)) for _, s in sorted(self._sessions.items())
        ]


def _kept(checkpoint: Checkpoint) -> Checkpoint:
    """``checkpoint`` with its own copy of its (mutable) state values."""
    return replace(
        checkpoint,
        state=MappingProxyType(copy.deepcopy(dict(checkpoint.state))),
        session_state=MappingProxyType(copy.deepcopy(dict(checkpoint.session_state))),
        metadata=MappingProxyType(copy.deepcopy(dict(checkpoint.metadata))),
    )
