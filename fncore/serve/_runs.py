"""The runs log: the last runs the server made, in memory, for the console's Runs view.

Routes::

    GET  /api/runs        the recorded runs, newest first: id, endpoint, session, tenant,
                          start time, duration, outcome and usage
    GET  /api/runs/{id}   one run, with its spans (404 once it has left the log); an id the
                          log does not hold is looked up among the durable runs
    POST /api/runs        queue a durable run (`fncore.serve._durable_runs`)

With keys, each tenant sees only its own runs (another's is a 404, as a run that left the
log is), and their sessions by its own names (`fncore.serve._auth.client_name`).

An endpoint records each run it makes with one ``with`` block around it::

    with runs.record("chat.completions", session_id, tenant) as run:
        outcome = await agent.run(prompt, session_id=session_id)
        run.finish(outcome)

A block left without `Recording.finish` records the run as cancelled (the client went
away), failed (an exception) or, left normally, ``unknown``. The log keeps the last ``limit`` runs.

Where OpenTelemetry's SDK (the ``otel`` extra) is installed and the ``trace`` middleware
records to an SDK tracer provider (the global one, or one given to `RunsLog`), each run
also keeps its spans, for a waterfall: a span processor is *added* to that provider, next
to the application's own exporters, and keeps the spans started inside a recorded run.
"""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from contextvars import ContextVar
from types import TracebackType
from typing import Any

from opentelemetry import trace as otel_trace
from opentelemetry.trace import TracerProvider
from returns.result import Failure
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from fncore.core import RunOutcome
from fncore.serve._auth import client_name, tenant_of
from fncore.serve._durable_runs import DurableRuns
from fncore.serve._wire import error_body

__all__ = ["RUNS_KEPT", "Recording", "RunsLog", "runs_routes"]

RUNS_KEPT = 200
"""How many runs a `RunsLog` keeps by default."""


class _Run:
    """One recorded run: what ``/api/runs`` shows of it."""

    __slots__ = (
        "_t0",
        "duration_ms",
        "endpoint",
        "id",
        "outcome",
        "session",
        "spans",
        "started_ns",
        "tenant",
        "usage",
    )

    def __init__(self, endpoint: str, session: str | None, tenant: str | None) -> None:
        self.id = f"run-{uuid.uuid4().hex[:16]}"
        self.endpoint = endpoint
        self.session = session
        self.tenant = tenant
        self.started_ns = time.time_ns()
        self._t0 = time.perf_counter()
        self.duration_ms: float | None = None
        self.outcome: dict[str, object] = {"kind": "running"}
        self.usage: dict[str, int] | None = None
        self.spans: list[dict[str, object]] = []

    def end(self, outcome: dict[str, object]) -> None:
        if self.duration_ms is None:
            self.duration_ms = (time.perf_counter() - self._t0) * 1000
            self.outcome = outcome

    def summary(self) -> dict[str, object]:
        return {
            "id": self.id,
            "endpoint": self.endpoint,
            "session": self.session,
            "tenant": self.tenant,
            "started": self.started_ns / 1e9,
            "duration_ms": self.duration_ms,
            "outcome": self.outcome,
            "usage": self.usage,
            "span_count": len(self.spans),
        }


def _start(span: dict[str, object]) -> float:
    start = span["start_ms"]
    assert isinstance(start, float)
    return start


def _outcome_doc(outcome: RunOutcome[Any]) -> dict[str, object]:
    if isinstance(outcome, Failure):
        error = outcome.failure()
        return {"kind": "error", "error": type(error).__name__, "message": str(error)}
    paused = outcome.unwrap().paused
    if paused is not None:
        calls = [r.tool for r in paused.requests]
        return {"kind": "paused", "checkpoint_id": paused.checkpoint_id, "calls": calls}
    return {"kind": "answer"}


class Recording:
    """The ``with`` block around one run: `RunsLog.record` returns it."""

    __slots__ = ("_current", "_previous", "run")

    def __init__(self, run: _Run, current: ContextVar[_Run | None]) -> None:
        self.run = run
        self._current = current
        self._previous: _Run | None = None

    def __enter__(self) -> Recording:
        self._previous = self._current.get()
        self._current.set(self.run)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # Set back rather than reset: a streamed run's block may close in another context.
        self._current.set(self._previous)
        if exc is None:
            self.run.end({"kind": "unknown"})
        elif isinstance(exc, Exception):
            self.run.end({"kind": "error", "error": type(exc).__name__, "message": str(exc)})
        else:  # the client went away (cancellation, generator closed)
            self.run.end({"kind": "cancelled"})

    def finish(self, outcome: RunOutcome[Any]) -> None:
        """Record how the run ended: its answer, pause or error, and its usage."""
        if not isinstance(outcome, Failure):
            usage = outcome.unwrap().usage
            self.run.usage = {
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "total_tokens": usage.total_tokens,
            }
        self.run.end(_outcome_doc(outcome))


class RunsLog:
    """The last runs of a served agent, bounded and in memory, with their spans.

    Args:
        limit: How many runs it keeps; the oldest leaves first.
        tracer_provider: An SDK tracer provider whose spans to keep (the one given to
            ``trace(tracer_provider=...)``). The global tracer provider, once set to an
            SDK one, is used as well.

    Raises:
        ValueError: for a ``limit`` below 1.

    Example:
        >>> runs = RunsLog(limit=2)
        >>> for session in ("a", "b", "c"):
        ...     with runs.record("chat.completions", session):
        ...         pass
        >>> [run["session"] for run in runs.recent()]
        ['c', 'b']
    """

    def __init__(self, limit: int = RUNS_KEPT, tracer_provider: TracerProvider | None = None):
        if limit < 1:
            msg = f"limit must be at least 1, not {limit!r}"
            raise ValueError(msg)
        self.limit = limit
        self._runs: OrderedDict[str, _Run] = OrderedDict()
        # The run being recorded in this context, for this log's span processor only.
        self._current: ContextVar[_Run | None] = ContextVar("fncore_runs_log", default=None)
        self._attached: list[object] = []
        self._capture: Any = None
        self._spans: Any = None
        try:
            from fncore.serve import _runs_spans
        except ImportError:  # pragma: no cover - the otel extra is not installed
            return
        self._spans = _runs_spans
        self._capture = _runs_spans.SpanCapture(self._current, self._add_span)
        if tracer_provider is not None:
            self._attach(tracer_provider)

    def _attach(self, provider: TracerProvider) -> None:
        if self._capture is None or any(p is provider for p in self._attached):
            return
        if self._spans.is_sdk_provider(provider):
            self._capture.attach(provider)
            self._attached.append(provider)

    def _add_span(self, run: _Run, span: Any) -> None:
        run.spans.append(self._spans.span_doc(span, run.started_ns))

    def record(self, endpoint: str, session: str | None, tenant: str | None = None) -> Recording:
        """A ``with`` block recording one run made at ``endpoint`` for ``session``.

        Args:
            endpoint: Where the run was asked for (``"chat.completions"``, say).
            session: The run's stored session id, if it has one.
            tenant: The tenant whose key asked for it (``None`` without keys).
        """
        self._attach(otel_trace.get_tracer_provider())
        run = _Run(endpoint, session, tenant)
        self._runs[run.id] = run
        while len(self._runs) > self.limit:
            self._runs.popitem(last=False)
        return Recording(run, self._current)

    def recent(self, tenant: str | None = None) -> list[dict[str, object]]:
        """The runs kept, newest first, without their spans: ``tenant``'s only, if given."""
        runs = reversed(self._runs.values())
        return [run.summary() for run in runs if tenant is None or run.tenant == tenant]

    def get(self, run_id: str, tenant: str | None = None) -> dict[str, object] | None:
        """One run with its spans (in the order they started); ``None`` if not kept.

        Given a ``tenant``, another tenant's run is ``None`` as well.
        """
        run = self._runs.get(run_id)
        if run is None or (tenant is not None and run.tenant != tenant):
            return None
        return {**run.summary(), "spans": sorted(run.spans, key=_start)}


def runs_routes(runs: RunsLog, durable: DurableRuns | None = None) -> list[Route]:
    """The routes of ``GET /api/runs`` and ``GET /api/runs/{id}``.

    With ``durable``, ``POST /api/runs`` too, and ``GET /api/runs/{id}`` of an id the log
    does not hold answers from the durable runs.
    """
    where = "" if durable is None or not durable.enabled else ", nor among the durable runs"

    def named(request: Request, run: dict[str, object]) -> dict[str, object]:
        """``run`` with its session under the caller's name for it."""
        session = run["session"]
        return {
            **run,
            "session": client_name(request, session if isinstance(session, str) else None),
        }

    async def recent(request: Request) -> Response:
        data = [named(request, run) for run in runs.recent(tenant_of(request))]
        return JSONResponse({"object": "list", "data": data})

    async def one(request: Request) -> Response:
        run_id: str = request.path_params["run_id"]
        run = runs.get(run_id, tenant_of(request))
        if run is None and durable is not None:
            answer = await durable.answer(request, run_id)
            if answer is not None:
                return answer
        if run is None:
            msg = f"no run {run_id!r} in the log (it keeps the last {runs.limit}){where}"
            body = error_body(msg, "invalid_request_error", code="not_found")
            return JSONResponse(body, status_code=404)
        return JSONResponse(named(request, run))

    routes = [
        Route("/api/runs", recent, methods=["GET"]),
        Route("/api/runs/{run_id}", one, methods=["GET"]),
    ]
    if durable is not None:
        routes.append(Route("/api/runs", durable.submit, methods=["POST"]))
    return routes
