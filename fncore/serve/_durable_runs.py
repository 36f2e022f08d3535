"""Durable runs over HTTP: runs queued on DBOS, which survive a crash of the server.

Routes (`fncore.serve._runs` routes them, beside the runs log)::

    POST /api/runs        queue a run: ``{"prompt": ..., "session": ..., "metadata": ...}``;
                          202 with its id (501 when the app has no `DurableRuntime`)
    GET  /api/runs/{id}   for an id the runs log does not hold: the durable run's status,
                          steps and outcome (404 if there is none)

The app's lifespan launches the runtime on the server's event loop, so the server is a
worker of the queue too. A run gets the caller's metadata (``{"tenant": NAME}`` with keys,
on top of the body's), and a tenant sees only the runs whose metadata names it: another's
is a 404, word for word the answer for an id that does not exist.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from fncore.runtime import Agent
from fncore.serve._auth import client_name, run_metadata, session_key, tenant_of
from fncore.serve._wire import RequestError, error_body, validated

if TYPE_CHECKING:
    from fncore.durable import DurableRunInfo, DurableRuntime

__all__ = ["DurableRuns", "SubmitRequest"]

ReadBody: TypeAlias = Callable[[Request], Awaitable[bytes]]
"""Reads a request's body within the app's size limit."""

QUEUED = "ENQUEUED"
"""The status of a run just queued (DBOS's)."""


class SubmitRequest(BaseModel):
    """The body of ``POST /api/runs``."""

    model_config = ConfigDict(extra="forbid")

    prompt: str = Field(min_length=1)
    """What the run is asked."""
    session: str | None = Field(default=None, min_length=1)
    """The stored session the run continues and commits to (the caller's, with keys)."""
    metadata: dict[str, JsonValue] = {}
    """The run's metadata (``ctx.run.metadata``); the tenant comes from the key, not here."""


def _refused(error: RequestError) -> JSONResponse:
    body = error_body(error.message, error.kind, param=error.param, code=error.code)
    return JSONResponse(body, status_code=error.status)


def _metadata(given: Mapping[str, JsonValue], request: Request) -> dict[str, object]:
    """The run's metadata: the body's, then the caller's (its tenant).

    Raises:
        RequestError: for a ``tenant`` in the body: only a key names a tenant.
    """
    if "tenant" in given:
        msg = "metadata.tenant: the tenant comes from the API key, not from the body"
        raise RequestError(msg, param="metadata.tenant")
    return {**given, **run_metadata(request)}


def _outcome(info: DurableRunInfo) -> dict[str, object]:
    """How the run ended (or that it has not), in the runs log's ``outcome`` shape."""
    if info.status == QUEUED:
        return {"kind": "queued"}
    if info.status == "PENDING":
        return {"kind": "running"}
    if info.status == "CANCELLED":
        return {"kind": "cancelled"}
    if info.error is not None or info.status != "SUCCESS":
        return {"kind": "error", "message": info.error}
    if info.stop_reason == "paused":
        return {"kind": "paused"}
    return {"kind": "answer"}


def _seconds(epoch_ms: int | None) -> float | None:
    """Milliseconds since the epoch as seconds, as the runs log's ``started`` is."""
    return None if epoch_ms is None else epoch_ms / 1000


def _run_doc(request: Request, info: DurableRunInfo) -> dict[str, object]:
    """A durable run as ``GET /api/runs/{id}`` shows it (``output``: an answer's only)."""
    outcome = _outcome(info)
    return {
        "id": info.id,
        "durable": True,
        "status": info.status,
        "agent": info.agent,
        "session": client_name(request, info.session_id),
        "tenant": tenant_of(request),
        "created": _seconds(info.created_at),
        "updated": _seconds(info.updated_at),
        "outcome": outcome,
        "output": info.output if outcome["kind"] == "answer" else None,
        "error": info.error,
        "stop_reason": info.stop_reason,
        "steps": [dataclasses.asdict(step) for step in info.steps],
    }


class DurableRuns:
    """The durable runs of one app: submitted over HTTP, run by its `DurableRuntime`.

    Args:
        agent: The agent the runs run.
        runtime: The runtime that queues and runs them; ``None``: the app has none, and
            ``POST /api/runs`` answers 501.
        read_body: Reads a request's body within the app's size limit.
    """

    __slots__ = ("_agent", "_launched", "_read_body", "_runtime")

    def __init__(
        self, agent: Agent[Any], runtime: DurableRuntime | None, read_body: ReadBody
    ) -> None:
        self._agent = agent
        self._runtime = runtime
        self._read_body = read_body
        self._launched = False

    @property
    def enabled(self) -> bool:
        """Whether the app has a runtime (``POST /api/runs`` is not a 501)."""
        return self._runtime is not None

    @contextlib.asynccontextmanager
    async def launched(self) -> AsyncIterator[None]:
        """The runtime launched (on the running loop) until the block ends; a no-op without."""
        if self._runtime is None:
            yield
            return
        async with self._runtime:
            self._launched = True
            try:
                yield
            finally:
                self._launched = False

    def _launched_runtime(self) -> DurableRuntime | JSONResponse:
        """The runtime, launched; or the answer when runs cannot be submitted here."""
        if self._runtime is None:
            msg = (
                "this server does not run durable runs: serve it with `fncore serve --durable` "
                "([serve] durable = true), or give create_app a DurableRuntime"
            )
            return JSONResponse(error_body(msg, "not_implemented", code="not_implemented"), 501)
        if not self._launched:
            msg = "the durable runtime is not launched: it starts with the app's lifespan"
            body = error_body(msg, "server_error", code="durable_not_launched")
            return JSONResponse(body, status_code=503)
        return self._runtime

    async def submit(self, request: Request) -> Response:
        """``POST /api/runs``: queue a durable run; 202 with its id."""
        runtime = self._launched_runtime()
        if isinstance(runtime, JSONResponse):
            return runtime
        try:
            body = validated(SubmitRequest, await self._read_body(request))
            session_id = (
                None if body.session is None else session_key(request, body.session, "session")
            )
            metadata = _metadata(body.metadata, request)
        except RequestError as error:
            return _refused(error)
        run_id = await runtime.enqueue(
            self._agent, body.prompt, session_id=session_id, metadata=metadata
        )
        return JSONResponse(
            {"id": run_id, "durable": True, "status": QUEUED},
            status_code=202,
            headers={"location": f"/api/runs/{run_id}"},
        )

    async def answer(self, request: Request, run_id: str) -> Response | None:
        """``GET /api/runs/{id}`` of a durable run; ``None`` if there is none of the caller's."""
        if self._runtime is None or not self._launched:
            return None
        from fncore.durable import UnknownRun

        info = await self._runtime.show(run_id)
        if isinstance(info, UnknownRun):
            return None
        mine = run_metadata(request)
        if any(info.metadata.get(key) != value for key, value in mine.items()):
            return None
        return JSONResponse(_run_doc(request, info))
