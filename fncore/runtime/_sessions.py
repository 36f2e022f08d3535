"""Session stores: where conversations live between runs."""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Protocol, final, runtime_checkable

from fncore.core import Session, SessionUpdate


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

    __slots__ = ("_sessions",)

    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}

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

    async def list_sessions(self) -> list[SessionInfo]:
        """Every session stored, sorted by id."""
        return [
            SessionInfo(s.id, s.version, len(s.messages)) for _, s in sorted(self._sessions.items())
        ]


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
        >>> isinstance(InMemorySessionStore(), SessionCatalog)
        True
    """

    async def list_sessions(self) -> list[SessionInfo]:
        """Every session stored, sorted by id."""
        ...

    async def delete(self, session_id: str) -> bool:
        """Forget the session; ``False`` if there was none."""
        ...
