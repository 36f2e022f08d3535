"""Typed state in two scopes (the reply and the session), so middleware keep none on themselves."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Generic, TypeVar, final

__all__ = ["State", "StateKey"]

_T = TypeVar("_T")


@final
class StateKey(Generic[_T]):
    """A typed key into a `State`; create one per piece of state, at module level.

    Example:
        >>> CALLS = StateKey("calls", default=lambda: 0)
        >>> state = State()
        >>> state.set(CALLS, state.get(CALLS) + 1)
        >>> state.get(CALLS)
        1
    """

    __slots__ = ("default", "name", "shared")

    def __init__(self, name: str, *, default: Callable[[], _T], shared: bool = False) -> None:
        self.name = name
        self.default = default
        self.shared = shared
        """Whether a sub-agent run as a tool (``Agent.as_tool``) reads and writes this
        value in the reply state of the run that called it, not in its own: how limit
        and budget counters are drawn on by a whole tree of agents."""

    def __repr__(self) -> str:
        return f"StateKey({self.name!r})"


@final
class State:
    """Typed values shared by the middleware of one run, and by no other run.

    A run has two: ``ctx.run.state`` for the reply (fresh for every run, dropped when it
    ends) and ``ctx.run.session_state`` for the session (loaded with the session, committed
    with it only when the run succeeds, so a failed run never corrupts stored state).
    """

    __slots__ = ("_shared", "_values")

    def __init__(
        self, values: Mapping[str, object] | None = None, *, parent: State | None = None
    ) -> None:
        self._values: dict[str, object] = dict(values) if values else {}
        self._shared: dict[str, object] = self._values if parent is None else parent._shared
        """Where ``shared`` keys live: here, or in the outermost ``parent``'s values (a
        sub-agent's reply state draws on its caller's)."""

    def get(self, key: StateKey[_T]) -> _T:
        """Return the value under ``key``, creating it from the key's default if absent."""
        values = self._shared if key.shared else self._values
        try:
            return values[key.name]  # type: ignore[return-value]
        except KeyError:
            value = key.default()
            values[key.name] = value
            return value

    def peek(self, key: StateKey[_T]) -> _T | None:
        """Return the value under ``key``, or ``None`` if it has none; nothing is created.

        Example:
            >>> seen = StateKey("seen", default=list)
            >>> state = State()
            >>> state.peek(seen) is None, state.get(seen), state.peek(seen)
            (True, [], [])
        """
        return (self._shared if key.shared else self._values).get(key.name)  # type: ignore[return-value]

    def set(self, key: StateKey[_T], value: _T) -> None:
        """Store ``value`` under ``key``."""
        (self._shared if key.shared else self._values)[key.name] = value

    def snapshot(self) -> dict[str, object]:
        """A shallow copy of every value, keyed by name (shared ones only where they live)."""
        return dict(self._values)
