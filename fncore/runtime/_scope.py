"""The current run, visible through a context variable to every piece of code in it."""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from types import MappingProxyType

from fncore.core import RunInfo

_CURRENT: ContextVar[RunInfo | None] = ContextVar("fncore_current_run", default=None)
_EMPTY: Mapping[str, object] = MappingProxyType({})


def current_run() -> RunInfo | None:
    """The run the calling code is part of, or ``None`` outside any run.

    Tools and helpers that are not handed a context use it to reach the run's metadata and
    state. Concurrent runs each see their own.
    """
    return _CURRENT.get()


def current_metadata() -> Mapping[str, object]:
    """The request metadata of the current run (``{}`` outside any run).

    Example:
        >>> current_metadata()
        mappingproxy({})
    """
    run = _CURRENT.get()
    return _EMPTY if run is None else run.metadata
