"""A run's session: loaded before it runs, and its turn committed when it ends (the commit point).

Before the commit, a failure or a cancellation leaves the session as it was. The commit
itself runs to its end even if the run is cancelled meanwhile (`finish`); a cancellation then
propagates only if nothing was committed, so a ``CancelledError`` always means "not
committed".
"""

from __future__ import annotations

import asyncio
from types import CoroutineType
from typing import Any, final

from fncore.core import (
    AgentError,
    InvalidHistory,
    Message,
    RunInfo,
    RunResult,
    Session,
    SessionConflict,
    SessionError,
)
from fncore.core._fold import short_repr
from fncore.core._session import remember_pending
from fncore.core._turn import session_update
from fncore.runtime._finish import absorb, finish_waiting
from fncore.session_stores._protocols import SessionStore

RUN_KEY = "fncore.run"
"""The session state's key naming the durable run that committed it last."""


def store_name(store: object) -> str:
    """How error messages name a session store: its class."""
    return type(store).__name__


@final
class SessionIO:
    """An agent's session store, as its runs load and commit sessions (internal)."""

    __slots__ = ("commits", "store")

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        """Where the sessions live."""
        # A store written to the protocol before commit(update) fails each run with a session.
        self.commits = callable(getattr(store, "commit", None))
        """Whether the store has ``commit`` (checked once, before anything runs)."""

    async def load(self, session_id: str, plain: bool = False) -> Session | SessionError:
        """The session to continue (a new one if the store has none), or why not.

        ``plain``: as a durable run records it, its state a plain ``dict`` (so it pickles).
        """
        store = self.store
        if not self.commits:  # checked before anything runs
            return _no_commit(store, session_id, "nothing ran")
        try:
            loaded = await store.load(session_id)
        except Exception as exc:
            return SessionError(
                message=(
                    f"the session store could not load session {session_id!r}: "
                    f"{type(exc).__name__}: {exc}; nothing ran"
                ),
                session_id=session_id,
            )
        if loaded is None:
            return Session(session_id, (), {}) if plain else Session(session_id)
        found: object = loaded
        if type(found) is not Session or type(found.messages) is not tuple:
            return SessionError(
                message=(
                    f"session store {store_name(store)} returned {short_repr(loaded)} from "
                    f"load({session_id!r}); it must return a Session (with a tuple of "
                    "messages) or None"
                ),
                session_id=session_id,
            )
        if plain:
            return Session(loaded.id, loaded.messages, dict(loaded.state), loaded.version)
        return loaded

    async def commit(
        self,
        session: Session,
        new_input: tuple[Message, ...],
        done: RunResult,
        run: RunInfo,
        checked: bool = False,
    ) -> AgentError | None:
        """Commit the turn: the commit point of a run with a session.

        Args:
            session: The session the run loaded.
            new_input: The run's input.
            done: The run's result.
            run: The run (its session state is committed).
            checked: Whether the agent loop ran with ``session`` and ``new_input`` (see
                `fncore.core._turn.session_update`).

        Returns:
            ``None`` once committed; otherwise the error (nothing was saved).
        """
        state = run.session_state.snapshot()
        durable = run._steps is not None
        if durable:  # the session says which run committed it, in case that run is replayed
            state[RUN_KEY] = run.run_id
        planned = session_update(session, new_input, done, state, checked)
        if type(planned) is InvalidHistory:
            return planned
        update, found = planned  # type: ignore[misc]
        store = self.store
        if not self.commits:
            return _no_commit(store, session.id, "the session is unchanged")
        raised: Exception | None
        try:
            pending: Any = store.commit(update)
        except Exception as exc:  # raised at once, not awaited: as if raised by the commit
            saved, raised, cancels = None, exc, 0
        else:
            if type(pending) is not CoroutineType:  # another awaitable, or none: awaited here
                pending = _awaited(pending)
            try:  # `finish`'s first step, here: a store that does not wait is done at once
                waiting = pending.send(None)
            except StopIteration as stop:
                saved, raised, cancels = stop.value, None, 0
            except Exception as exc:
                saved, raised, cancels = None, exc, 0
            else:
                saved, raised, cancels = await finish_waiting(pending, waiting)
        if raised is None and type(saved) is Session:  # committed
            if len(saved.messages) == update.keep + len(update.append):
                remember_pending(saved, found)
            if cancels:
                absorb(cancels)
            return None
        error = _commit_error(store, session, saved, raised)
        if durable and type(error) is SessionConflict and await self._committed(session.id, run):
            error = None  # a replayed run's commit that landed before the crash
        if cancels:
            raise asyncio.CancelledError
        return error

    async def _committed(self, session_id: str, run: RunInfo) -> bool:
        """Whether session ``session_id`` holds the turn of durable run ``run`` already."""
        current = await self.load(session_id)
        return type(current) is Session and current.state.get(RUN_KEY) == run.run_id


def _no_commit(store: object, session_id: str, outcome: str) -> SessionError:
    """The error of a store without ``commit`` (written to the protocol before it)."""
    return SessionError(
        message=(
            f"session store {store_name(store)} has no commit(update) method; a store "
            "implements SessionStore: async load(session_id) and async commit(update) (one "
            f"written for the older save(session) must change); {outcome}"
        ),
        session_id=session_id,
    )


async def _awaited(pending: Any) -> Session | None:
    """``await pending``: what a store's ``commit`` returned that is not a coroutine.

    So the commit's first step gets what went wrong (no awaitable at all, say) as its
    exception.
    """
    saved: Session | None = await pending
    return saved


def _commit_error(
    store: SessionStore, session: Session, saved: object, raised: Exception | None
) -> SessionError | None:
    """Why a commit did not apply (``None`` if it did): it raised, conflicted or misbehaved."""
    if raised is not None:
        return SessionError(
            message=(
                f"the session store could not commit session {session.id!r}: "
                f"{type(raised).__name__}: {raised}; the session is unchanged"
            ),
            session_id=session.id,
        )
    if saved is None:
        return SessionConflict(
            message=(
                f"session {session.id!r} changed since this run loaded it at version "
                f"{session.version}; nothing was saved: run the turn again"
            ),
            session_id=session.id,
            version=session.version,
        )
    if type(saved) is not Session:
        return SessionError(
            message=(
                f"session store {store_name(store)} returned {short_repr(saved)} from "
                "commit(); it must return the new Session, or None on a conflict"
            ),
            session_id=session.id,
        )
    return None
