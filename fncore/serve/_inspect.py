"""The inspection endpoints: the agent's sessions, its stack and tools, and its readiness.

Routes::

    GET    /api/sessions        every stored session (the caller's, with keys): id, version,
                                message count
    GET    /api/sessions/{id}   one session: its messages and state (404 if absent)
    DELETE /api/sessions/{id}   forget it (204; 404 if absent)
    GET    /api/stack           what ``fncore stack`` shows, as JSON (`Agent.describe`)
    GET    /api/tools           each tool: name, description, JSON schema, source
    GET    /readyz              200 when the session store answers and the MCP servers are up

A store that is not a `SessionCatalog` cannot list or delete: those answer 501. With keys,
a tenant sees only its own sessions, by its own names (`fncore.serve._auth.session_key`):
another tenant's session is a 404, as a missing one is.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from fncore.core import RegistrationError
from fncore.runtime import Agent, SessionCatalog
from fncore.serve._auth import client_name, session_key
from fncore.serve._wire import RequestError, error_body
from fncore.session_stores._json import message_doc, value_doc

__all__ = ["READY_PROBE", "inspection_routes"]

READY_PROBE = "fncore-readyz-probe"
"""The session id ``/readyz`` loads: a cheap read that needs the store to answer."""


def _state_doc(key: str, value: object) -> object:
    """A state value in its stored JSON form; its ``repr`` if it has none (memory only)."""
    try:
        return value_doc(value, f"session state {key!r}")
    except TypeError:
        return {"$": "repr", "repr": repr(value)}


def _not_found(session_id: str) -> JSONResponse:
    body = error_body(f"no session {session_id!r}", "invalid_request_error", code="not_found")
    return JSONResponse(body, status_code=404)


def _stored_id(request: Request) -> str | JSONResponse:
    """The stored id of the session the path names (in the caller's namespace); or a 400."""
    try:
        return session_key(request, request.path_params["session_id"], "session_id")
    except RequestError as error:
        body = error_body(error.message, error.kind, param=error.param, code=error.code)
        return JSONResponse(body, status_code=error.status)


class _Inspection:
    """The inspection endpoints of one app's agent."""

    __slots__ = ("agent",)

    def __init__(self, agent: Agent[Any]) -> None:
        self.agent = agent

    def _catalog(self) -> SessionCatalog | JSONResponse:
        store = self.agent.sessions
        if isinstance(store, SessionCatalog):
            return store
        msg = (
            f"the agent's session store ({type(store).__name__}) cannot list or delete "
            "sessions: give it list_sessions() and delete() (see SessionCatalog)"
        )
        return JSONResponse(error_body(msg, "not_implemented", code="not_implemented"), 501)

    async def sessions(self, request: Request) -> Response:
        """``GET /api/sessions``."""
        catalog = self._catalog()
        if isinstance(catalog, JSONResponse):
            return catalog
        named = [(client_name(request, i.id), i) for i in await catalog.list_sessions()]
        data = [
            {"id": name, "version": i.version, "message_count": i.message_count}
            for name, i in named
            if name is not None
        ]
        return JSONResponse({"object": "list", "data": data})

    async def session(self, request: Request) -> Response:
        """``GET /api/sessions/{id}``: its messages (fncore's JSON form) and state."""
        session_id: str = request.path_params["session_id"]
        stored = _stored_id(request)
        if isinstance(stored, JSONResponse):
            return stored
        session = await self.agent.sessions.load(stored)
        if session is None:
            return _not_found(session_id)
        return JSONResponse(
            {
                "id": session_id,
                "version": session.version,
                "messages": [message_doc(m) for m in session.messages],
                "state": {k: _state_doc(k, v) for k, v in session.state.items()},
            }
        )

    async def delete(self, request: Request) -> Response:
        """``DELETE /api/sessions/{id}``."""
        catalog = self._catalog()
        if isinstance(catalog, JSONResponse):
            return catalog
        session_id: str = request.path_params["session_id"]
        stored = _stored_id(request)
        if isinstance(stored, JSONResponse):
            return stored
        if not await catalog.delete(stored):
            return _not_found(session_id)
        return Response(status_code=204)

    async def stack(self, request: Request) -> Response:
        """``GET /api/stack``: `Agent.describe`, the data ``fncore stack`` prints."""
        described = self.agent.describe()
        return JSONResponse(
            {
                "positions": {p: list(names) for p, names in described.positions.items()},
                "tool_filters": {n: list(t) for n, t in described.tool_filters.items()},
                "hooks": {e: list(names) for e, names in described.hooks.items()},
                "tools": list(described.tools),
                "text": str(described),
            }
        )

    async def tools(self, request: Request) -> Response:
        """``GET /api/tools``: each tool as the model sees it, and where it comes from."""
        tools = self.agent.tools
        data = [
            {
                "name": name,
                "description": tools[name].spec.description,
                "parameters": tools[name].spec.parameters,
                "source": tools[name].source,
            }
            for name in self.agent.describe().tools
        ]
        return JSONResponse({"object": "list", "data": data})

    async def ready(self, request: Request) -> Response:
        """``GET /readyz``: 503 naming what is not ready (the store, the MCP servers)."""
        problems: dict[str, str] = {}
        try:
            await self.agent.sessions.load(READY_PROBE)
        except Exception as exc:  # any failure means the store is not ready
            problems["sessions"] = f"{type(exc).__name__}: {exc}"
        try:
            await self.agent.connect()
        except RegistrationError as exc:  # MCPServerError among them
            problems["mcp"] = str(exc)
        if problems:
            return JSONResponse({"status": "not ready", "problems": problems}, 503)
        return JSONResponse({"status": "ready"})


def inspection_routes(agent: Agent[Any]) -> list[Route]:
    """The routes of the inspection endpoints for ``agent``."""
    endpoints = _Inspection(agent)
    return [
        Route("/api/sessions", endpoints.sessions, methods=["GET"]),
        Route("/api/sessions/{session_id:path}", endpoints.session, methods=["GET"]),
        Route("/api/sessions/{session_id:path}", endpoints.delete, methods=["DELETE"]),
        Route("/api/stack", endpoints.stack, methods=["GET"]),
        Route("/api/tools", endpoints.tools, methods=["GET"]),
        Route("/readyz", endpoints.ready, methods=["GET"]),
    ]
