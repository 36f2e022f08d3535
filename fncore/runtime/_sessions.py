"""Sessions: a conversation's history and state kept between runs."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, final

from fncore.core import Message


@final
@dataclass(frozen=True, slots=True)
class Session:
    """What a session keeps between runs."""

    messages: tuple[Message, ...] = ()
    """The conversation so far; every tool call in it has its result."""
    state: Mapping[str, object] = field(default_factory=dict)
    """The run state as the last successful run left it."""


class SessionStore(Protocol):
    """Where sessions live. A run saves its session only when it succeeds."""

    async def load(self, session_id: str) -> Session | None:
        """Return the session, or ``None`` if there is none yet."""
        ...

    async def save(self, session_id: str, session: Session) -> None:
        """Replace the session with ``session``."""
        ...


@final
class InMemorySessionStore:
    """A `SessionStore` in a dict: for tests, demos and single-process apps.

    Like a store that serializes, it keeps and hands out deep copies of the state, so a
    run that mutates a state value in place and then fails leaves the session unchanged.

    Example:
        >>> import asyncio
        >>> store = InMemorySessionStore()
        >>> asyncio.run(store.save("s", Session((Message.user("hi"),))))
        >>> asyncio.run(store.load("s")).messages[0].text
        'hi'
    """

    __slots__ = ("_sessions",)

    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}

    async def load(self, session_id: str) -> Session | None:
        """Return the session, or ``None``."""
        session = self._sessions.get(session_id)
        if session is None or not session.state:
            return session
        return Session(session.messages, copy.deepcopy(dict(session.state)))

    async def save(self, session_id: str, session: Session) -> None:
        """Replace the session."""
        if session.state:
            session = Session(session.messages, copy.deepcopy(dict(session.state)))
        self._sessions[session_id] = session
