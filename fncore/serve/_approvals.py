"""The approvals API: the runs paused for a person, and their decisions.

Routes::

    GET  /api/approvals                the checkpoints waiting for decisions, newest first
                                       (``?limit=``, default 50, at most 500), each with its
                                       pending calls and their tools' JSON schemas
    POST /api/approvals/{checkpoint}   decide them (approve, reject, edit, respond; per call
                                       or one for all) and resume the run: its answer and
                                       usage, or its next pause

A decision is taken once: a POST for a checkpoint that is no longer waiting (decided,
being resumed, done) answers 409, one that expired or never was 404; of two POSTs at once,
one resumes and the other gets 409. Within one process that is exact; across processes,
the store's claim lets only one resume run the calls (a POST that lost the race between
its check and its resume gets 409, or the winner's outcome, as `Agent.resume` does; no
call runs twice). A decision the checkpoint cannot take (an unknown call id, an edit whose
arguments the tool's schema refuses, a decision the call does not allow) answers 400
naming the field, and the checkpoint stays waiting.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import pydantic
from pydantic import BaseModel, ConfigDict
from pydantic_core import to_json, to_jsonable_python
from returns.result import Failure
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from fncore.core import (
    AgentError,
    Checkpoint,
    CheckpointBusy,
    CheckpointExpired,
    CheckpointNotFound,
    Decision,
    DecisionConflict,
    DecisionError,
    PendingRequest,
    RunResult,
    SessionConflict,
)
from fncore.errors import LimitExceeded, ModelError
from fncore.runtime import Agent, CheckpointCatalog, CheckpointInfo, CheckpointStore
from fncore.serve._auth import client_name, tenant_of
from fncore.serve._runs import RunsLog
from fncore.serve._wire import (
    DecisionBody,
    EditDecision,
    RequestError,
    decision_of,
    error_body,
    usage_body,
)

__all__ = ["approval_routes"]

_MISSING = object()

DEFAULT_LIMIT = 50
"""How many checkpoints ``GET /api/approvals`` lists without ``?limit=``."""

MAX_LIMIT = 500
"""The most it lists, whatever ``?limit=`` asks."""

_STATUS_OF_ERROR: tuple[tuple[type[AgentError], int, str], ...] = (
    (CheckpointNotFound, 404, "checkpoint_not_found"),
    (CheckpointExpired, 404, "checkpoint_expired"),
    (CheckpointBusy, 409, "checkpoint_busy"),
    (DecisionConflict, 409, "checkpoint_decided"),
    (SessionConflict, 409, "session_conflict"),
    (DecisionError, 400, "invalid_decision"),
    (LimitExceeded, 429, "rate_limit_exceeded"),
    (ModelError, 502, "upstream_error"),
)
"""How a resume that failed answers, by error type, first match; any other is a 500."""


class DecideRequest(BaseModel):
    """The body of ``POST /api/approvals/{checkpoint}``: one decision for all, or one per call."""

    model_config = ConfigDict(extra="forbid")

    decision: DecisionBody | None = None
    decisions: dict[str, DecisionBody] | None = None


def _parse(body: bytes) -> DecideRequest:
    """The validated body; exactly one of ``decision`` and ``decisions``.

    Raises:
        RequestError: naming the first field that is wrong.
    """
    try:
        request = DecideRequest.model_validate_json(body)
    except pydantic.ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        if first["type"] == "json_invalid":
            raise RequestError(f"the body is not valid JSON: {first['msg']}") from None
        where = ".".join(str(part) for part in first["loc"])
        raise RequestError(f"{where}: {first['msg']}", param=where or None) from None
    if (request.decision is None) == (request.decisions is None):
        msg = (
            "decision: give either 'decision' (one for every pending call) or 'decisions' "
            "(one per call id), not both or neither"
        )
        raise RequestError(msg, param="decision")
    return request


def _error(status: int, message: str, code: str, param: str | None = None) -> JSONResponse:
    body = error_body(message, "invalid_request_error", param=param, code=code)
    return JSONResponse(body, status_code=status)


def _refused(error: RequestError) -> JSONResponse:
    body = error_body(error.message, error.kind, param=error.param, code=error.code)
    return JSONResponse(body, status_code=error.status)


def _failed(error: AgentError, param: str | None) -> JSONResponse:
    """The answer to a resume that failed with ``error``."""
    for kind, status, name in _STATUS_OF_ERROR:
        if isinstance(error, kind):
            if status >= 429:  # the resumed run failed: as /v1/chat/completions answers it
                body = error_body(str(error), name, code=type(error).__name__)
            else:
                param = param if status == 400 else None
                body = error_body(str(error), "invalid_request_error", param=param, code=name)
            return JSONResponse(body, status_code=status)
    body = error_body(str(error), "server_error", code=type(error).__name__)
    return JSONResponse(body, status_code=500)


def _unreachable(exc: Exception) -> JSONResponse:
    msg = f"the session store could not be read: {type(exc).__name__}: {exc}"
    return JSONResponse(error_body(msg, "server_error", code="store_error"), status_code=503)


def _plain(value: object) -> object:
    """A value with no JSON form: a read-only mapping as a dict, anything else its repr."""
    return dict(value) if isinstance(value, Mapping) else repr(value)


def _json(value: object) -> object:
    """``value`` as JSON values (stores hand arguments back as read-only mappings)."""
    return to_jsonable_python(value, fallback=_plain)


def _no_metadata(request: Request) -> Mapping[str, object]:
    return {}


class _Approvals:
    """The approvals endpoints of one app's agent."""

    __slots__ = ("agent", "metadata", "resuming", "runs")

    def __init__(
        self,
        agent: Agent[Any],
        metadata: Callable[[Request], Mapping[str, object]],
        runs: RunsLog,
    ) -> None:
        self.agent = agent
        self.metadata = metadata
        self.runs = runs
        self.resuming: set[str] = set()
        """The checkpoints a POST of this process is deciding now."""

    def _pending(self, request: PendingRequest) -> dict[str, object]:
        tool = self.agent.tools.get(request.tool) if request.tool is not None else None
        return {
            "call_id": request.call_id,
            "tool": request.tool,
            "arguments": _json(request.arguments),
            "description": request.description,
            "allowed": list(request.allowed),
            "parameters": None if tool is None else tool.spec.parameters,
        }

    def _checkpoint_doc(
        self, request: Request, checkpoint: Checkpoint | CheckpointInfo
    ) -> dict[str, object]:
        return {
            "id": checkpoint.id,
            "object": "approval",
            "agent": checkpoint.agent,
            "run_id": checkpoint.run_id,
            "session_id": client_name(request, checkpoint.session_id),
            "created": checkpoint.created,
            "expires": checkpoint.expires,
            "metadata": _json(checkpoint.metadata),
            "pending": [self._pending(r) for r in checkpoint.requests],
        }

    def _store(self) -> CheckpointStore | JSONResponse:
        store = self.agent.sessions
        if isinstance(store, CheckpointStore):
            return store
        msg = f"the agent's session store ({type(store).__name__}) keeps no checkpoints"
        return JSONResponse(error_body(msg, "not_implemented", code="not_implemented"), 501)

    async def list(self, request: Request) -> Response:
        """``GET /api/approvals``: the waiting checkpoints, newest first."""
        store = self.agent.sessions
        if not isinstance(store, CheckpointCatalog):
            msg = (
                f"the agent's session store ({type(store).__name__}) cannot list checkpoints: "
                "give it list_checkpoints() (see CheckpointCatalog)"
            )
            return JSONResponse(error_body(msg, "not_implemented", code="not_implemented"), 501)
        raw = request.query_params.get("limit", str(DEFAULT_LIMIT))
        if not raw.isdigit() or not 1 <= int(raw) <= MAX_LIMIT:
            msg = f"limit: a whole number from 1 to {MAX_LIMIT}, not {raw!r}"
            return _error(400, msg, "invalid_limit", "limit")
        try:
            waiting = await store.list_checkpoints(
                agent=self.agent.name, metadata=self.metadata(request)
            )
        except Exception as exc:  # any failure of the store: say which, not a traceback
            return _unreachable(exc)
        newest = sorted(waiting, key=lambda c: (c.created, c.id), reverse=True)[: int(raw)]
        return JSONResponse(
            {"object": "list", "data": [self._checkpoint_doc(request, c) for c in newest]}
        )

    async def decide(self, request: Request) -> Response:
        """``POST /api/approvals/{checkpoint}``: take the decisions and resume the run."""
        checkpoint_id: str = request.path_params["checkpoint_id"]
        try:
            body = _parse(await request.body())
        except RequestError as error:
            return _refused(error)
        store = self._store()
        if isinstance(store, JSONResponse):
            return store
        if checkpoint_id in self.resuming:
            return _error(409, f"checkpoint {checkpoint_id!r} is being decided", "checkpoint_busy")
        self.resuming.add(checkpoint_id)
        try:
            return await self._decide(request, store, checkpoint_id, body)
        finally:
            self.resuming.discard(checkpoint_id)

    async def _decide(
        self, request: Request, store: CheckpointStore, cid: str, body: DecideRequest
    ) -> Response:
        wanted = self.metadata(request)
        try:
            checkpoint = await store.load_checkpoint(cid)
        except Exception as exc:  # any failure of the store: say which, not a traceback
            return _unreachable(exc)
        if (
            checkpoint is None
            or checkpoint.agent != self.agent.name
            or any(checkpoint.metadata.get(k, _MISSING) != v for k, v in wanted.items())
        ):
            return _error(404, f"no checkpoint {cid!r} waits here", "checkpoint_not_found")
        now = time.time()
        if checkpoint.expires < now:
            return _error(404, f"checkpoint {cid!r} expired", "checkpoint_expired")
        if checkpoint.stage != "paused":
            return _error(409, f"checkpoint {cid!r} was already decided", "checkpoint_decided")
        if checkpoint.claim and checkpoint.claim_until >= now:
            return _error(409, f"checkpoint {cid!r} is being decided", "checkpoint_busy")
        decisions = self._decisions(checkpoint, body)
        if isinstance(decisions, JSONResponse):
            return decisions
        metadata = {**checkpoint.metadata, **wanted}
        tenant = tenant_of(request)
        with self.runs.record("approvals", checkpoint.session_id, tenant) as record:
            outcome = await self.agent.resume(cid, decisions, metadata=metadata)
            record.finish(outcome)
        if isinstance(outcome, Failure):
            error = outcome.failure()
            call_id = getattr(error, "call_id", None)
            return _failed(error, _param(body, call_id))
        return await self._outcome(request, store, checkpoint, outcome.unwrap())

    def _decisions(
        self, checkpoint: Checkpoint, body: DecideRequest
    ) -> Mapping[str, Decision] | Decision | JSONResponse:
        """The decisions, with each edit checked against its tool's schema; or a 400."""
        requests = {r.call_id: r for r in checkpoint.requests}
        if body.decision is not None:
            bodies = dict.fromkeys(requests, body.decision)
        else:
            bodies = body.decisions or {}
            for call_id in bodies:
                if call_id not in requests:
                    msg = (
                        f"decisions.{call_id}: checkpoint {checkpoint.id!r} does not wait for "
                        f"call {call_id!r} (it waits for: {', '.join(map(repr, requests))})"
                    )
                    return _error(400, msg, "unknown_call", f"decisions.{call_id}")
        for call_id, decided in bodies.items():
            if not isinstance(decided, EditDecision):
                continue
            name = requests[call_id].tool
            tool = None if name is None else self.agent.tools.get(name)
            if tool is None:
                continue
            try:
                tool.args_model.model_validate_json(to_json(decided.arguments))
            except pydantic.ValidationError as exc:
                first = exc.errors(include_url=False)[0]
                field = ".".join(str(part) for part in first["loc"])
                where = ".".join(p for p in (_param(body, call_id) or "", "arguments", field) if p)
                msg = f"{where}: {first['msg']} (tool {name!r}); the checkpoint still waits"
                return _error(400, msg, "invalid_arguments", where)
        if body.decision is not None:
            return decision_of(body.decision)
        return {call_id: decision_of(d) for call_id, d in bodies.items()}

    async def _outcome(
        self,
        request: Request,
        store: CheckpointStore,
        checkpoint: Checkpoint,
        result: RunResult[Any],
    ) -> Response:
        """``200``: the resumed run's answer and usage, or its next pause."""
        answer: dict[str, object] = {
            "object": "approval.outcome",
            "checkpoint_id": checkpoint.id,
            "session_id": client_name(request, checkpoint.session_id),
            "status": result.stop_reason,
            "usage": usage_body(result.usage),
        }
        if result.paused is None:
            output = result.output
            answer["output"] = output if isinstance(output, str) else to_jsonable_python(output)
            return JSONResponse(answer)
        answer["output"] = None
        paused = result.paused
        try:
            follow = await store.load_checkpoint(paused.checkpoint_id)
        except Exception:  # the run paused again all the same: say what it waits for
            follow = None
        answer["checkpoint"] = (
            {"id": paused.checkpoint_id, "pending": [self._pending(r) for r in paused.requests]}
            if follow is None
            else self._checkpoint_doc(request, follow)
        )
        return JSONResponse(answer)


def _param(body: DecideRequest, call_id: str | None) -> str | None:
    """The field of ``body`` that holds the decision for ``call_id``."""
    if body.decision is not None:
        return "decision"
    return None if call_id is None else f"decisions.{call_id}"


def approval_routes(
    agent: Agent[Any],
    metadata: Callable[[Request], Mapping[str, object]] = _no_metadata,
    runs: RunsLog | None = None,
) -> list[Route]:
    """The routes of the approvals API for ``agent``.

    Args:
        agent: The agent whose paused runs are decided.
        metadata: The caller's run metadata, from its request (a tenant, say): only the
            checkpoints whose run metadata holds each of its items are listed and can be
            decided, and the resumed run gets them on top of the paused run's.
        runs: The log that records each resumed run (default: a log of its own).
    """
    endpoints = _Approvals(agent, metadata, RunsLog() if runs is None else runs)
    return [
        Route("/api/approvals", endpoints.list, methods=["GET"]),
        Route("/api/approvals/{checkpoint_id}", endpoints.decide, methods=["POST"]),
    ]
