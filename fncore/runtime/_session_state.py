"""A run's copy of its session's state: what `State` the run starts with (internal)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from fncore.core import Session, SessionError, State
from fncore.core._fold import short_repr


def session_state(session: Session | None, store: object = None) -> State | SessionError:
    """A fresh `State` holding a deep copy of ``session``'s state (empty without one).

    Args:
        session: The session the run continues, if any.
        store: The session store ``session`` came from; ``None`` when a run middleware gave it.

    Returns:
        The state, or a `SessionError` if it is not a mapping or a value cannot be copied.
    """
    if session is None:
        return State()
    stored: object = session.state
    if type(stored) is not MappingProxyType and not isinstance(stored, Mapping):
        return SessionError(
            message=(
                f"{_source(store)} returned session {session.id!r} with a state that is "
                f"{short_repr(stored)} ({type(stored).__name__}); a session's state must be a "
                "mapping of names to values; nothing ran"
            ),
            session_id=session.id,
        )
    if not stored:
        return State()
    memo: dict[int, Any] = {}  # one memo: values shared between keys stay shared
    copied: dict[str, object] = {}
    for key, value in stored.items():
        try:
            copied[key] = copy.deepcopy(value, memo)
        except Exception as exc:
            return SessionError(
                message=(
                    f"session {session.id!r} (from {_source(store)}) holds state {key!r} that "
                    f"cannot be copied into the run ({type(exc).__name__}: {exc}); keep values "
                    "that copy.deepcopy can copy (plain data, dataclasses) in session state; "
                    "nothing ran"
                ),
                session_id=session.id,
            )
    return State(copied)


def _source(store: object) -> str:
    """Where a session came from, for an error's message."""
    return "a run middleware" if store is None else f"session store {type(store).__name__}"
