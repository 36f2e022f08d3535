"""What can go wrong with durable runs, as values (and the one exception, for launching).

    AgentError
    └── DurableError            base of the durable runs' errors
        ├── DurableUnavailable  the database cannot be reached, or refused the login
        ├── UnknownRun          no durable run has this id
        ├── UnknownAgent        the run's agent is not one this process serves
        └── StackChanged        the run started with another stack of its agent: not
                                recovered here (recover it with that stack, or cancel it)
    DurableUnavailableError     raised where no value can be returned (launching, listing);
                                carries the `DurableUnavailable`

Every message is one line, and never shows a password.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TypeVar

from sqlalchemy.exc import SQLAlchemyError

from fncore._session_url import hide_password, redact_password
from fncore.core import AgentError

T = TypeVar("T")

__all__ = [
    "DurableError",
    "DurableUnavailable",
    "DurableUnavailableError",
    "StackChanged",
    "UnknownAgent",
    "UnknownRun",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class DurableError(AgentError):
    """Base of the errors of durable runs (``fncore.durable``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DurableUnavailable(DurableError):
    """The durable runs' database cannot be reached, or refused the credentials."""

    url: str = ""
    """The database URL, its password redacted."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UnknownRun(DurableError):
    """No durable run has this id (in this database, under this application)."""

    run_id: str = ""
    """The id asked for."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UnknownAgent(DurableError):
    """A durable run names an agent this process does not serve."""

    agent: str = ""
    """The agent's name."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StackChanged(DurableError):
    """A run started with another stack of its agent; this process must not recover it.

    The run is left as it was (pending or enqueued): recover it with the stack it started
    with, or cancel it.
    """

    run_id: str = ""
    """The run."""
    agent: str = ""
    """Its agent's name."""
    started_with: str = ""
    """The application version (or config hash) the run started with."""
    current: str = ""
    """This process's application version (or the agent's config hash now)."""


class DurableUnavailableError(Exception):
    """The durable runs' database cannot be used; ``str`` is one line, with no password."""

    def __init__(self, error: DurableUnavailable) -> None:
        super().__init__(str(error))
        self.error = error
        """The error value."""


def _no_tables(exc: BaseException) -> bool:
    """Whether ``exc`` says DBOS's tables are missing: a database no worker has used yet."""
    orig = getattr(exc, "orig", None)
    text = str(orig)
    return type(orig).__name__ == "UndefinedTable" or text.startswith("no such table")


def unavailable(url: str, exc: BaseException, *, fresh: bool = False) -> DurableUnavailable:
    """The `DurableUnavailable` for ``exc``, raised by the driver about ``url``.

    Its message is one line (the driver's first), with the URL's password hidden.

    Example:
        >>> err = unavailable("postgresql://app:pw@db:1/app", OSError("refused pw"))
        >>> "pw" in str(err), err.url
        (False, 'postgresql://app:[redacted]@db:1/app')
    """
    shown = redact_password(url)
    if fresh and _no_tables(exc):
        return DurableUnavailable(
            message=(
                f"no durable runs yet: {shown!r} has no DBOS tables (a worker or a durable run "
                "makes them)"
            ),
            url=shown,
        )
    text = hide_password(str(exc), url)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    detail = lines[0] if lines else type(exc).__name__
    if len(detail) > 300:
        detail = detail[:297] + "..."
    return DurableUnavailable(
        message=f"durable runs' database {shown!r} is unavailable: {detail}", url=shown
    )


async def guarded(url: str, pending: Awaitable[T], *, fresh: bool = False) -> T:
    """Await ``pending``; a database error (about ``url``) raises `DurableUnavailableError`.

    ``fresh``: DBOS's tables may not exist yet (a client, which makes none); their absence
    then says there are no durable runs yet.

    Other exceptions (an input that does not pickle, say) propagate unchanged.
    """
    try:
        return await pending
    except (SQLAlchemyError, OSError) as exc:
        raise DurableUnavailableError(unavailable(url, exc, fresh=fresh)) from None


def stack_changed(run_id: str, agent: str, started_with: str, current: str) -> StackChanged:
    """The `StackChanged` of run ``run_id``, whose message says what to do."""
    return StackChanged(
        message=(
            f"run {run_id} of agent {agent!r} started with a different stack ({started_with}, "
            f"now {current}: its tools or middleware, or the agents served, changed); recover "
            f"it with the stack it started with, or cancel it: fncore runs cancel {run_id}"
        ),
        run_id=run_id,
        agent=agent,
        started_with=started_with,
        current=current,
    )
