"""`create_app`: an agent behind OpenAI's chat-completions API, as a Starlette app.

Routes::

    POST /v1/chat/completions   the request's messages are the run's input; the answer
                                comes back whole, or streamed as SSE chunks. With an
                                ``fncore-session: NAME`` header, the stored session NAME
                                (the caller's, with keys) continues from the request's
                                last user message instead
    GET  /v1/models             the one model: the agent, under ServeSettings.model_name
    GET  /healthz               {"status": "ok"} while the process serves

and the inspection routes of `fncore.serve._inspect` (``/api/sessions``, ``/api/stack``,
``/api/tools``, ``/readyz``), ``POST /ag-ui`` of `fncore.serve._agui`, the approvals API of
`fncore.serve._approvals` (``/api/approvals``), the runs log of `fncore.serve._runs`
(``/api/runs``) with the durable runs of `fncore.serve._durable_runs` (``POST /api/runs``)
and the web console of `fncore.serve._console` (``/``).

With `ServeSettings.keys`, every route but ``/healthz``, ``/readyz`` and the console's
static files needs ``Authorization: Bearer KEY`` (`fncore.serve._auth`), each run gets
the key's tenant as metadata, and each tenant sees only its own sessions and runs. With
`ServeSettings.cors_origins`, browsers on those origins may call the app. A request's
sampling fields override the agent's model settings.

Every error answers in OpenAI's shape, ``{"error": {"message", "type", "param", "code"}}``:
400 for a malformed request (the field named) or one that brings its own tools, 401 for a
missing or unknown key, 404 for an unknown model or path, 413 for a body over
``max_body_bytes``, 409 for a run paused for approval (with its checkpoint id and pending
calls) or one whose session another run committed to first (nothing saved; send it again),
429/502/500 for a run that failed on a limit, on the model, or otherwise. Nothing answers
with a traceback.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from pydantic_core import to_json
from returns.result import Failure
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from fncore.core import AgentError, Message, ModelSettings, RunOutcome, TextDelta
from fncore.errors import LimitExceeded, ModelError, SessionConflict
from fncore.runtime import Agent
from fncore.serve._agui import agui_routes
from fncore.serve._approvals import approval_routes
from fncore.serve._auth import auth_middleware, run_metadata, session_key, tenant_of
from fncore.serve._console import console_routes
from fncore.serve._durable_runs import DurableRuns
from fncore.serve._inspect import inspection_routes
from fncore.serve._runs import RunsLog, runs_routes
from fncore.serve._settings import ServeSettings
from fncore.serve._wire import (
    ChatRequest,
    RequestError,
    chunk,
    completion,
    error_body,
    new_id,
    parse_request,
    paused_body,
)

if TYPE_CHECKING:
    from fncore.durable import DurableRuntime

__all__ = ["create_app"]

_STATUS_OF_ERROR: tuple[tuple[type[AgentError], int, str], ...] = (
    (LimitExceeded, 429, "rate_limit_exceeded"),
    (ModelError, 502, "upstream_error"),
    (SessionConflict, 409, "session_conflict"),
)
"""How a failed run answers, by error type, first match; any other error is a 500."""


SESSION_HEADER = "fncore-session"
"""The request header naming a stored session to continue."""

_NO_RETRY = {"x-should-retry": "false"}
"""Tells OpenAI's SDKs not to retry (they honour this header before the status)."""


class _Run(NamedTuple):
    """What one request runs: its input, stored session id, metadata, sampling and tenant."""

    prompt: str | tuple[Message, ...]
    session_id: str | None
    metadata: dict[str, object]
    sampling: ModelSettings
    tenant: str | None


_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
"""Compact JSON, made once (``json.dumps`` with these options makes an encoder a call)."""


def _dumps(body: Mapping[str, object]) -> str:
    return _JSON.encode(body)


def _text(output: object) -> str:
    """The answer's text: the output itself, or a structured output as JSON."""
    return output if isinstance(output, str) else to_json(output).decode()


def _failed(error: AgentError) -> tuple[int, dict[str, object]]:
    """The status and body a run that failed with ``error`` answers with."""
    for kind, status, name in _STATUS_OF_ERROR:
        if isinstance(error, kind):
            return status, error_body(str(error), name, code=type(error).__name__)
    return 500, error_body(str(error), "server_error", code=type(error).__name__)


def _refused(error: RequestError) -> JSONResponse:
    body = error_body(error.message, error.kind, param=error.param, code=error.code)
    return JSONResponse(body, status_code=error.status)


class _ChatCompletions:
    """The endpoints of one app: the agent, its settings, and a method per route."""

    __slots__ = ("agent", "runs", "settings")

    def __init__(self, agent: Agent[Any], settings: ServeSettings, runs: RunsLog) -> None:
        self.agent = agent
        self.settings = settings
        self.runs = runs

    async def _body(self, request: Request) -> bytes:
        """The request's body, refused (413) as soon as it passes ``max_body_bytes``."""
        limit = self.settings.max_body_bytes
        too_large = RequestError(
            f"the request body is larger than this server accepts ({limit} bytes)",
            status=413,
            code="request_too_large",
        )
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise too_large
        parts: list[bytes] = []
        size = 0
        async for part in request.stream():
            size += len(part)
            if size > limit:
                raise too_large
            parts.append(part)
        return b"".join(parts)

    async def _request(self, request: Request) -> ChatRequest:
        chat = parse_request(await self._body(request), self.settings.max_messages)
        if chat.model != self.settings.model_name:
            msg = (
                f"model {chat.model!r} does not exist here; this server serves "
                f"{self.settings.model_name!r} (see GET /v1/models)"
            )
            raise RequestError(msg, status=404, param="model", code="model_not_found")
        return chat

    async def chat(self, request: Request) -> Response:
        """``POST /v1/chat/completions``."""
        try:
            chat = await self._request(request)
            session_name = request.headers.get(SESSION_HEADER) or None
            session_id = (
                None if session_name is None else session_key(request, session_name, SESSION_HEADER)
            )
            # A stored session holds the history: only the last user message is new.
            prompt: str | tuple[Message, ...] = (
                chat.prompt() if session_id is None else chat.last_user_text()
            )
        except RequestError as error:
            return _refused(error)
        run = _Run(
            prompt,
            session_id,
            run_metadata(request),
            chat.sampling(self.agent.model_settings),
            tenant_of(request),
        )
        if chat.stream:
            return EventSourceResponse(self._chunks(chat, run))
        with self.runs.record("chat.completions", run.session_id, run.tenant) as record:
            outcome = await self.agent.run(
                run.prompt,
                session_id=run.session_id,
                metadata=run.metadata,
                model_settings=run.sampling,
            )
            record.finish(outcome)
        status, body = self._answer(outcome)
        # A run's answer is final: OpenAI's SDKs would otherwise retry a 409 or a 5xx,
        # running the agent (and its tools) again.
        headers = None if status == 200 else _NO_RETRY
        return JSONResponse(body, status_code=status, headers=headers)

    def _answer(self, outcome: RunOutcome[Any]) -> tuple[int, dict[str, object]]:
        if isinstance(outcome, Failure):
            return _failed(outcome.failure())
        result = outcome.unwrap()
        if result.paused is not None:
            return 409, paused_body(result.paused.checkpoint_id, result.paused.requests)
        return 200, completion(self.settings.model_name, _text(result.output), result.usage)

    async def _chunks(self, chat: ChatRequest, run: _Run) -> AsyncIterator[dict[str, str] | bytes]:
        """The SSE events of a streamed answer: the text deltas as they come, then the end.

        A run that fails or pauses ends the stream with an ``error`` event instead (the
        status is already sent): the body a non-streaming request would have answered. A
        client that disconnects cancels the run (sse-starlette cancels this generator),
        which leaves its session as it was.
        """
        model = self.settings.model_name
        completion_id, created = new_id(), int(time.time())
        yield {"data": _dumps(chunk(completion_id, created, model, {"role": "assistant"}))}
        with self.runs.record("chat.completions", run.session_id, run.tenant) as record:
            stream = self.agent.stream(
                run.prompt,
                session_id=run.session_id,
                metadata=run.metadata,
                model_settings=run.sampling,
            )
            async for event in stream:
                if type(event) is TextDelta:
                    delta = {"content": event.text}
                    yield {"data": _dumps(chunk(completion_id, created, model, delta))}
            outcome = await stream.result()
            record.finish(outcome)
        status, body = self._answer(outcome)
        if status != 200:
            yield {"data": _dumps(body)}
            return
        end = [_dumps(chunk(completion_id, created, model, {}, finish_reason="stop"))]
        options = chat.stream_options
        if options is not None and options.include_usage:
            usage = outcome.unwrap().usage
            end.append(_dumps(chunk(completion_id, created, model, None, usage=usage)))
        # The stream's end in one write: fewer sends, the same bytes.
        yield b"".join(ServerSentEvent(data).encode() for data in (*end, "[DONE]"))

    async def models(self, request: Request) -> Response:
        """``GET /v1/models``: the one model this server serves."""
        model = {"id": self.settings.model_name, "object": "model", "created": 0}
        return JSONResponse({"object": "list", "data": [{**model, "owned_by": "fncore"}]})

    async def health(self, request: Request) -> Response:
        """``GET /healthz``: the process is alive."""
        return JSONResponse({"status": "ok"})


async def _http_error(request: Request, exc: HTTPException) -> Response:
    """Starlette's own errors (unknown path, wrong method) in OpenAI's shape."""
    body = error_body(exc.detail, "invalid_request_error")
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)


def _cors(origins: tuple[str, ...]) -> list[Middleware]:
    """Starlette's CORS middleware for ``origins``, outside the keys (a preflight has none)."""
    if not origins:
        return []
    return [
        Middleware(
            CORSMiddleware,
            allow_origins=origins,
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["authorization", "content-type", SESSION_HEADER],
        )
    ]


def create_app(
    agent: Agent[Any],
    settings: ServeSettings | None = None,
    *,
    runs: RunsLog | None = None,
    durable: DurableRuntime | None = None,
) -> Starlette:
    """An ASGI app that serves ``agent`` through OpenAI's chat-completions API.

    The agent's tools run on the server: a client sees the final answer and the whole
    run's ``usage``. An ``fncore-session: NAME`` header continues the stored session NAME
    from the request's last user message. The app also answers ``GET /readyz`` (the
    session store and MCP servers are reachable), ``GET /api/sessions`` (and ``GET`` or
    ``DELETE /api/sessions/{id}``), ``GET /api/stack``, ``GET /api/tools``, and
    ``POST /ag-ui`` (the AG-UI protocol: ``threadId`` is the session).

    Run the app with any ASGI server (``uvicorn``), or mount it in your own Starlette or
    FastAPI app. Its lifespan connects the agent (its MCP servers start) and closes it at
    shutdown; mounted apps get no lifespan, and the agent connects at its first run instead.

    Args:
        agent: The agent to serve.
        settings: The served model's name, the request limits, the API keys by tenant
            and the CORS origins (default: ``ServeSettings()``: no keys, no CORS).
        runs: The log of recent runs behind ``/api/runs`` and the console (default: a
            `RunsLog` of the last ``settings.runs_kept`` runs, spans from the global tracer
            provider).
        durable: The runtime of durable runs (``POST /api/runs``), serving ``agent``: the
            app's lifespan launches it and shuts it down, and the server is a worker of its
            queue (default: none; ``POST /api/runs`` answers 501).

    Returns:
        The Starlette app.

    Example:
        >>> from fncore import Agent, Registry
        >>> from fncore.testing import TestModel
        >>> app = create_app(Agent(TestModel(), registry=Registry()))
        >>> sorted({route.path for route in app.routes if route.path.startswith("/v1")})
        ['/v1/chat/completions', '/v1/models']
    """
    settings = settings or ServeSettings()
    runs_log = RunsLog(settings.runs_kept) if runs is None else runs
    endpoints = _ChatCompletions(agent, settings, runs_log)
    durable_runs = DurableRuns(agent, durable, endpoints._body)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with agent, durable_runs.launched():
            yield

    return Starlette(
        routes=[
            Route("/v1/chat/completions", endpoints.chat, methods=["POST"]),
            Route("/v1/models", endpoints.models, methods=["GET"]),
            Route("/healthz", endpoints.health, methods=["GET"]),
            *inspection_routes(agent),
            *agui_routes(agent, endpoints._body, settings.max_messages, run_metadata, runs_log),
            *approval_routes(agent, run_metadata, runs_log),
            *runs_routes(runs_log, durable_runs),
            *console_routes(),
        ],
        middleware=[*_cors(settings.cors_origins), *auth_middleware(settings.key_tenants())],
        exception_handlers={HTTPException: _http_error},  # type: ignore[dict-item]
        lifespan=lifespan,
    )
