"""Durable runs as fncore shows them: `DurableRunInfo` and its `StepRecord` s.

The same listing serves a launched `DurableRuntime` (through ``DBOS``) and a
`DurableClient` (through ``DBOSClient``, which launches nothing): both have the
``list_workflows_async``, ``list_workflow_steps_async`` and ``cancel_workflow_async`` this
module calls, so one `RunsView` over either does the mapping once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, final

from dbos import StepInfo, WorkflowStatus
from returns.result import Failure, Success

from fncore.core import RunResult
from fncore.durable._config import WORKFLOW
from fncore.durable._errors import UnknownRun, guarded

__all__ = ["DurableRunInfo", "StepRecord"]

STATUSES = (
    "PENDING",
    "ENQUEUED",
    "DELAYED",
    "SUCCESS",
    "ERROR",
    "CANCELLED",
    "MAX_RECOVERY_ATTEMPTS_EXCEEDED",
)
"""What a run's ``status`` can be (DBOS's workflow statuses)."""


@final
@dataclass(frozen=True, slots=True)
class StepRecord:
    """One recorded step of a durable run."""

    id: int
    """Its number in the run, from 1, in the order the steps started."""
    name: str
    """``session.load``, ``model_call:1``, ``tool:<name>:<call id>``, ``session.commit``..."""
    ok: bool
    """Whether it completed without raising (a step under way, or cut short by a crash,
    has not: it runs again when the run is recovered)."""
    error: str | None
    """What it raised, if it did."""
    started_ms: int | None
    """When it started (Unix epoch, milliseconds)."""
    ended_ms: int | None
    """When it ended (Unix epoch, milliseconds); ``None`` if it did not."""


@final
@dataclass(frozen=True, slots=True)
class DurableRunInfo:
    """What the database knows of one durable run."""

    id: str
    """The run id (DBOS's workflow id, and the run's ``ctx.run.run_id``)."""
    status: str
    """``PENDING``, ``ENQUEUED``, ``SUCCESS``, ``ERROR``, ``CANCELLED``, ..."""
    agent: str | None
    """The agent's name (``None`` if the input could not be read)."""
    session_id: str | None
    """The session it continues, if any."""
    executor_id: str | None
    """The worker that runs (or ran) it last."""
    app_version: str | None
    """The application version it started with (``fncore-`` and the stack's hash)."""
    created_at: int | None
    """When it was submitted (Unix epoch, milliseconds)."""
    updated_at: int | None
    """When its status last changed (Unix epoch, milliseconds)."""
    steps: tuple[StepRecord, ...]
    """Its recorded steps (`DurableRuntime.show`; empty in a listing)."""
    output: str | None
    """The answer's text, once it succeeded."""
    error: str | None
    """What it failed with (one line), if it did."""
    stop_reason: str | None
    """How the reply ended (``completed``, ``paused``, ...), once it did."""
    metadata: Mapping[str, object] = field(default_factory=dict)
    """The metadata it was started with (``ctx.run.metadata``: its tenant, say)."""


class Source(Protocol):
    """What `RunsView` reads runs through: ``DBOS`` (launched) or a ``DBOSClient``."""

    def list_workflows_async(self, **kwargs: Any) -> Awaitable[list[WorkflowStatus]]: ...

    def list_workflow_steps_async(self, workflow_id: str) -> Awaitable[list[StepInfo]]: ...

    def cancel_workflow_async(self, workflow_id: str) -> Awaitable[None]: ...


def _one_line(value: object) -> str:
    text = " ".join(str(value).split())
    return text or type(value).__name__


def _input(status: WorkflowStatus) -> tuple[str | None, str | None, Mapping[str, object]]:
    """The agent name, session id and metadata in a run's input (``fncore.run``'s arguments)."""
    args: Sequence[object] = (status.input or {"args": ()}).get("args", ())
    agent, session_id = (args[0], args[2]) if len(args) > 2 else (None, None)
    metadata = getattr(args[3], "metadata", None) if len(args) > 3 else None  # Start, Resume
    return (
        agent if isinstance(agent, str) else None,
        session_id if isinstance(session_id, str) else None,
        metadata if isinstance(metadata, dict) else {},
    )


def run_info(status: WorkflowStatus, steps: tuple[StepRecord, ...] = ()) -> DurableRunInfo:
    """A `DurableRunInfo` from DBOS's status of the workflow (and its steps)."""
    agent, session_id, metadata = _input(status)
    output = error = stop_reason = None
    outcome = status.output
    if isinstance(outcome, Success):
        done = outcome.unwrap()
        if isinstance(done, RunResult):
            output, stop_reason = str(done.output), done.stop_reason
    elif isinstance(outcome, Failure):
        error = _one_line(outcome.failure())
    if status.error is not None:  # the workflow raised
        error = _one_line(status.error)
    return DurableRunInfo(
        id=status.workflow_id,
        status=str(status.status),
        agent=agent,
        session_id=session_id,
        executor_id=status.executor_id,
        app_version=status.app_version,
        created_at=status.created_at,
        updated_at=status.updated_at,
        steps=steps,
        output=output,
        error=error,
        stop_reason=stop_reason,
        metadata=metadata,
    )


def step_record(step: StepInfo) -> StepRecord:
    """A `StepRecord` from DBOS's step info."""
    error = step["error"]
    ended = step["completed_at_epoch_ms"]
    return StepRecord(
        id=step["function_id"],
        name=step["function_name"],
        ok=error is None and ended is not None,
        error=None if error is None else _one_line(error),
        started_ms=step["started_at_epoch_ms"],
        ended_ms=ended,
    )


@final
class RunsView:
    """Lists, shows and cancels durable runs through a `Source`; database errors raise.

    Raises (every method): `DurableUnavailableError` if the database cannot be used.
    """

    __slots__ = ("_fresh", "_source", "_url")

    def __init__(self, source: Callable[[], Source], url: str, *, fresh: bool = False) -> None:
        self._source = source
        self._url = url
        self._fresh = fresh
        """Whether DBOS's tables may be missing (a client, which migrates nothing)."""

    async def _call(self, call: Callable[[Source], Awaitable[Any]]) -> Any:
        return await guarded(self._url, call(self._source()), fresh=self._fresh)

    async def statuses(self, **filters: Any) -> list[WorkflowStatus]:
        """DBOS's statuses of fncore's runs that pass ``filters`` (``list_workflows``')."""
        found: list[WorkflowStatus] = await self._call(
            lambda source: source.list_workflows_async(name=WORKFLOW, **filters)
        )
        return found

    async def runs(
        self, *, status: str | None = None, limit: int = 50
    ) -> tuple[DurableRunInfo, ...]:
        """The durable runs of fncore, the newest first (``status``: only those in it)."""
        if status is not None and status.upper() not in STATUSES:
            msg = f"unknown run status {status!r} (one of: {', '.join(STATUSES)})"
            raise ValueError(msg)
        found = await self.statuses(
            status=None if status is None else status.upper(), limit=limit, sort_desc=True
        )
        return tuple(run_info(s) for s in found)

    async def status(self, run_id: str) -> WorkflowStatus | None:
        """DBOS's status of run ``run_id``, or ``None`` if there is no such run of fncore's."""
        found = await self.statuses(workflow_ids=[run_id])
        return found[0] if found else None

    async def show(self, run_id: str) -> DurableRunInfo | UnknownRun:
        """Run ``run_id`` with its steps, or `UnknownRun`."""
        status = await self.status(run_id)
        if status is None:
            return unknown_run(run_id)
        steps: list[StepInfo] = await self._call(
            lambda source: source.list_workflow_steps_async(run_id)
        )
        return run_info(status, tuple(step_record(s) for s in steps))

    async def cancel(self, run_id: str) -> UnknownRun | None:
        """Cancel run ``run_id`` (a finished run stays as it ended), or `UnknownRun`."""
        if await self.status(run_id) is None:
            return unknown_run(run_id)
        await self._call(lambda source: source.cancel_workflow_async(run_id))
        return None


def unknown_run(run_id: str) -> UnknownRun:
    """The `UnknownRun` for ``run_id``."""
    return UnknownRun(
        message=f"no durable run {run_id!r} (fncore runs list shows the runs)", run_id=run_id
    )
