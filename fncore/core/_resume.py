"""How the loop of a resumed reply starts (internal): where, and what to do once its calls ran."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, final

from fncore.core._pause import ResumePoint

__all__ = [
    "Resume",
]

if TYPE_CHECKING:
    from fncore.core._errors import AgentError
    from fncore.core._state import State


class ResumedRun(Protocol):
    """What `AfterTools` reads of the resumed run: its state scopes (a `RunInfo` is one).

    A protocol rather than `RunInfo` itself, so this module stays below the contexts that
    carry a `Resume`.
    """

    @property
    def state(self) -> State:
        """The reply-scoped state."""
        ...

    @property
    def session_state(self) -> State:
        """The session-scoped state."""
        ...


AfterTools = Callable[[ResumePoint, ResumedRun], Awaitable["AgentError | None"]]
"""Called once the waiting calls of a resumed round have results (internal)."""


@final
@dataclass(frozen=True, slots=True)
class Resume:
    """How the loop of a resumed reply starts (internal)."""

    point: ResumePoint
    after_tools: AfterTools | None = None
