"""Sessions as values: a conversation's history, its session-scoped state, and its version."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import final

from fncore.core._errors import InvalidHistory
from fncore.core._messages import Message, ToolCallPart
from fncore.core._pairing import open_calls
from fncore.core._value import maker, value

__all__ = ["Session", "SessionUpdate"]

_NO_STATE: Mapping[str, object] = MappingProxyType({})


@final
@value
@dataclass(frozen=True, slots=True)
class Session:
    """A conversation as a `SessionStore` keeps it between runs.

    Example:
        >>> s = Session("ada", (Message.user("My name is Ada."),))
        >>> s.version, len(s.messages)
        (0, 1)
    """

    id: str
    """The session's id, as passed to ``run(..., session_id=...)``."""
    messages: tuple[Message, ...] = ()
    """The conversation so far."""
    state: Mapping[str, object] = field(default_factory=lambda: _NO_STATE)
    """The session-scoped state (``ctx.run.session_state``) as the last run committed it."""
    version: int = 0
    """How many runs have committed to it: ``0`` for a session never saved. A run commits
    only if the session is still at the version it loaded."""
    _pending: tuple[ToolCallPart, ...] | InvalidHistory | None = field(
        default=None, init=False, repr=False, compare=False
    )


def pending_calls(session: Session) -> tuple[ToolCallPart, ...] | InvalidHistory:
    """The calls ``session`` leaves unanswered, or why its history is invalid.

    The scan runs once per `Session` object and is remembered on it, so a session whose
    history was already checked costs nothing to check again, however long it is.
    """
    known = session._pending
    if known is None:
        known = open_calls(session.messages)
        object.__setattr__(session, "_pending", known)
    return known


def remember_pending(session: Session, pending: tuple[ToolCallPart, ...]) -> None:
    """Record that ``session``'s history leaves ``pending`` unanswered (already checked)."""
    if session._pending is None:
        object.__setattr__(session, "_pending", pending)


_session = maker(Session)


@final
@value
@dataclass(frozen=True, slots=True)
class SessionUpdate:
    """One run's change to a session, which a store applies whole or not at all.

    Example:
        >>> update = SessionUpdate("ada", 0, 0, (Message.user("hi"), Message.assistant("hello")))
        >>> after = update.apply(None)
        >>> after.version, [m.text for m in after.messages]
        (1, ['hi', 'hello'])
        >>> update.apply(after) is None  # the session moved on: a conflict
        True
    """

    session_id: str
    """The session to change."""
    version: int
    """The version the run loaded. The update applies only if the stored session is still at
    it; ``0`` means the session must not exist yet."""
    keep: int
    """How many of the stored messages stay, in front of ``append``."""
    append: tuple[Message, ...]
    """The messages the run adds."""
    state: Mapping[str, object] = field(default_factory=lambda: _NO_STATE)
    """The session-scoped state to store, replacing the old."""

    def apply(self, current: Session | None) -> Session | None:
        """The session after this update, or ``None`` if ``current`` is not at `version`.

        Stores may use it to build what they keep: the result is version ``version + 1``.
        """
        version = self.version
        if current is None:
            return None if version else _session(self.session_id, self.append, self.state, 1)
        if current.version != version:
            return None
        kept = current.messages
        keep = self.keep
        if keep != len(kept):  # else the whole history, as it is: not sliced
            kept = kept[:keep]
        return _session(
            self.session_id, kept + self.append if kept else self.append, self.state, version + 1
        )
