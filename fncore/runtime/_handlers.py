"""Each position's handler, built the same way from the table of positions.

A handler is called with its position's context fields, in order, as arguments. Without
middleware it is the position's innermost end itself, so an empty position builds no
context and costs nothing; with middleware, it builds the context and enters the onion,
whose innermost layer unpacks the context again for the end.

What the loop ran with under ``run`` middleware (which may change the input, the session
and the run) is recorded in the reply state as one `Ran` value, and taken out when the
``run`` onion returns: a ``run`` middleware may terminate after the loop, and the agent
still commits, and accounts for, what the loop did.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, final

from returns.result import Result

from fncore.core import Message, Outcome, RunInfo, RunResult, Session, State, StateKey, Usage
from fncore.core._fold import Layer, Step, fold_onion
from fncore.core._outcomes import Halt
from fncore.core._positions import PositionInfo
from fncore.core._value import spread

NamedLayer = tuple[str, Layer[Any, Any]]
"""One middleware of an onion position, its dependencies bound, with its name."""
NamedStep = tuple[str, Step[Any, Any]]
"""One step of a chain position, its dependencies bound, with its name."""
End = Callable[..., Awaitable[Outcome[Any]]]
"""A position's innermost end: it takes the position's context fields as arguments."""


def handler(info: PositionInfo, layers: Sequence[NamedLayer], end: End) -> End:
    """The handler of onion position ``info``: ``end`` wrapped in ``layers`` (outermost first)."""
    if not layers:
        return end
    unpacking, packing = spread(info.context)
    onion = fold_onion(info.name, layers, unpacking(end), info.value, info.accepts)
    return packing(onion)


@final
@dataclass(frozen=True, slots=True)
class Ran:
    """What the loop ran with under ``run`` middleware, and what it returned (internal)."""

    session: Session | None
    """The session, as the middleware left it."""
    input: tuple[Message, ...]
    """The input messages, as the middleware left them."""
    run: RunInfo
    """The run, as the middleware left it (another session's state, if they moved it)."""
    outcome: Result[RunResult, Halt]
    """The loop's outcome, holding the usage of middleware's own calls so far."""
    counted: Usage
    """That usage: what ``outcome`` holds of the reply's middleware calls."""


_RAN: StateKey[Ran | None] = StateKey("fncore.run.ran", default=lambda: None)
"""Where the reply state holds `Ran` between the innermost ``run`` end and the agent."""


def record(state: State, ran: Ran) -> None:
    """Record in the reply ``state`` what the loop ran with."""
    state.set(_RAN, ran)


def take_record(state: State) -> Ran | None:
    """What the loop ran with, if it ran, taken out of the reply ``state``.

    Taken out, not left as ``None``: a paused run's checkpoint saves the reply state.
    """
    return state._values.pop(_RAN.name, None)  # type: ignore[return-value]
