"""Typed per-run state, so middleware keep no state on themselves."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Generic, TypeVar, final

_T = TypeVar("_T")


@final
class StateKey(Generic[_T]):
    """A typed key into `RunState`; create one per piece of state, at module level.

    Example:
        >>> CALLS = StateKey("calls", default=lambda: 0)
        >>> state = RunState()
        >>> state.set(CALLS, state.get(CALLS) + 1)
        >>> state.get(CALLS)
        1
    """

    __slots__ = ("default", "name")

    def __init__(self, name: str, *, default: Callable[[], _T]) -> None:
        self.name = name
        self.default = default

    def __repr__(self) -> str:
        return f"StateKey({self.name!r})"


@final
class RunState:
    """State of one run, shared by every middleware of that run and by no other run.

    It starts from the session's saved state (if the run has a session) and is saved back
    only when the run succeeds, so a failed run never corrupts stored state.
    """

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, object] | None = None) -> None:
        self._values: dict[str, object] = dict(values) if values else {}

    def get(self, key: StateKey[_T]) -> _T:
        """Return the value under ``key``, creating it from the key's default if absent."""
        try:
            return self._values[key.name]  # type: ignore[return-value]
        except KeyError:
            value = key.default()
            self._values[key.name] = value
            return value

    def set(self, key: StateKey[_T], value: _T) -> None:
        """Store ``value`` under ``key``."""
        self._values[key.name] = value

    def snapshot(self) -> dict[str, object]:
        """A shallow copy of every value, keyed by name."""
        return dict(self._values)
