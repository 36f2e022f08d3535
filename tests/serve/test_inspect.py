"""Sessions by header, the inspection API and readiness, through a real uvicorn."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator

import httpx2 as httpx
import pytest
from engines import postgres_server
from mcp_support import http_demo
from openai import OpenAI
from served import add, running
from starlette.applications import Starlette

from fncore import (
    Agent,
    InMemorySessionStore,
    MCPServer,
    Message,
    ModelRequest,
    PostgresSessionStore,
    Registry,
    Session,
    SessionUpdate,
)
from fncore.middleware import limit_calls
from fncore.serve import create_app
from fncore.testing import FunctionModel, ScriptedModel, TestModel, tool_calls

Serve = Callable[[Starlette], OpenAI]


@pytest.fixture
def http() -> Iterator[Callable[[Starlette], httpx.Client]]:
    """Start an app on a real server; an httpx client at its root."""
    with contextlib.ExitStack() as stack:

        def start(app: Starlette) -> httpx.Client:
            base_url = stack.enter_context(running(app)).removesuffix("/v1")
            return stack.enter_context(httpx.Client(base_url=base_url))

        yield start


def said(request: ModelRequest) -> str:
    """The model's answer: every user message it was sent, in order."""
    return " | ".join(m.text for m in request.messages if m.role == "user")


def test_a_session_header_continues_the_stored_session(serve: Serve) -> None:
    """The second request sees the first turn; earlier request messages are not re-sent."""
    store = InMemorySessionStore()
    model = FunctionModel(said)
    client = serve(create_app(Agent(model, registry=Registry(), sessions=store)))
    first = client.chat.completions.create(
        model="fncore",
        messages=[{"role": "user", "content": "my name is Ada"}],
        extra_headers={"fncore-session": "ada"},
    )
    assert first.choices[0].message.content == "my name is Ada"
    second = client.chat.completions.create(
        model="fncore",
        messages=[
            {"role": "user", "content": "ignored: the session holds the history"},
            {"role": "assistant", "content": "ignored too"},
            {"role": "user", "content": "who am I?"},
        ],
        extra_headers={"fncore-session": "ada"},
    )
    assert second.choices[0].message.content == "my name is Ada | who am I?"
    session = asyncio.run(store.load("ada"))
    assert session is not None
    assert session.version == 2
    assert [(m.role, m.text) for m in session.messages] == [
        ("user", "my name is Ada"),
        ("assistant", "my name is Ada"),
        ("user", "who am I?"),
        ("assistant", "my name is Ada | who am I?"),
    ]
    alone = client.chat.completions.create(
        model="fncore", messages=[{"role": "user", "content": "no session"}]
    )
    assert alone.choices[0].message.content == "no session"
    assert asyncio.run(store.list_sessions())[0].version == 2


def test_a_streamed_request_continues_the_session_too(serve: Serve) -> None:
    """The header works on streamed requests; a request with no user message is a 400."""
    store = InMemorySessionStore()
    client = serve(create_app(Agent(FunctionModel(said), registry=Registry(), sessions=store)))
    headers = {"fncore-session": "s"}
    for text in ("one", "two"):
        stream = client.chat.completions.create(
            model="fncore",
            messages=[{"role": "user", "content": text}],
            stream=True,
            extra_headers=headers,
        )
        answer = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert answer == "one | two"
    session = asyncio.run(store.load("s"))
    assert session is not None
    assert session.version == 2
    http = httpx.Client(base_url=str(client.base_url))
    with http:
        refused = http.post(
            "chat/completions",
            headers=headers,
            json={"model": "fncore", "messages": [{"role": "system", "content": "x"}]},
        )
    assert refused.status_code == 400
    assert refused.json()["error"]["param"] == "messages"


def _stored(store: InMemorySessionStore, session_id: str, *texts: str) -> None:
    messages = tuple(Message.user(t) for t in texts)
    update = SessionUpdate(session_id, 0, 0, messages, {"seen": len(texts)})
    assert asyncio.run(store.commit(update)) is not None


class Opaque:
    """A value with no JSON form."""

    def __repr__(self) -> str:
        return "Opaque()"


def test_sessions_are_listed_shown_and_deleted(http: Callable[[Starlette], httpx.Client]) -> None:
    """List, show (messages and state), delete (204), then 404."""
    store = InMemorySessionStore()
    _stored(store, "ada", "hi", "again")
    _stored(store, "bob", "hello")
    opaque = SessionUpdate("obj", 0, 0, (), {"lock": Opaque()})  # storable in memory only
    assert asyncio.run(store.commit(opaque)) is not None
    client = http(create_app(Agent(TestModel(), registry=Registry(), sessions=store)))
    listed = client.get("/api/sessions")
    assert listed.status_code == 200
    assert listed.json()["data"] == [
        {"id": "ada", "version": 1, "message_count": 2},
        {"id": "bob", "version": 1, "message_count": 1},
        {"id": "obj", "version": 1, "message_count": 0},
    ]
    shown = client.get("/api/sessions/ada").json()
    assert shown["id"] == "ada"
    assert shown["version"] == 1
    assert shown["messages"] == [
        {"role": "user", "parts": [{"type": "text", "text": "hi"}]},
        {"role": "user", "parts": [{"type": "text", "text": "again"}]},
    ]
    assert shown["state"] == {"seen": 2}
    state = client.get("/api/sessions/obj").json()["state"]
    assert state == {"lock": {"$": "repr", "repr": "Opaque()"}}
    assert client.delete("/api/sessions/ada").status_code == 204
    gone = client.get("/api/sessions/ada")
    assert gone.status_code == 404
    assert gone.json()["error"]["code"] == "not_found"
    assert client.delete("/api/sessions/ada").status_code == 404
    assert [s["id"] for s in client.get("/api/sessions").json()["data"]] == ["bob", "obj"]


class LoadOnly:
    """A session store that cannot list or delete: only `SessionStore`'s two methods."""

    def __init__(self) -> None:
        self.inner = InMemorySessionStore()

    async def load(self, session_id: str) -> Session | None:
        return await self.inner.load(session_id)

    async def commit(self, update: SessionUpdate) -> Session | None:
        return await self.inner.commit(update)


def test_a_store_that_cannot_list_answers_501(http: Callable[[Starlette], httpx.Client]) -> None:
    """Listing and deleting need a `SessionCatalog`; showing needs only ``load``."""
    client = http(create_app(Agent(TestModel(), registry=Registry(), sessions=LoadOnly())))
    for answer in (client.get("/api/sessions"), client.delete("/api/sessions/x")):
        assert answer.status_code == 501
        assert answer.json()["error"]["type"] == "not_implemented"
        assert "SessionCatalog" in answer.json()["error"]["message"]
    assert client.get("/api/sessions/x").status_code == 404


def test_the_stack_is_what_fncore_stack_shows(http: Callable[[Starlette], httpx.Client]) -> None:
    """Each position's middleware, outermost first, from `Agent.describe`."""
    agent = Agent(TestModel(), registry=limit_calls(), tools=[add])
    stack = http(create_app(agent)).get("/api/stack").json()
    described = agent.describe()
    assert stack["positions"]["model_call"] == ["limit_calls"]
    assert stack["positions"]["tool_call"] == []
    assert stack["positions"] == {p: list(n) for p, n in described.positions.items()}
    assert stack["tools"] == ["add"]
    assert stack["text"] == str(described)


def test_tools_are_listed_with_schema_and_source(
    http: Callable[[Starlette], httpx.Client],
) -> None:
    """Name, description, JSON schema and source of each tool."""
    client = http(create_app(Agent(TestModel(), registry=Registry(), tools=[add])))
    assert client.get("/api/tools").json()["data"] == [
        {
            "name": "add",
            "description": "Add two integers.",
            "parameters": {
                "type": "object",
                "properties": {
                    "a": {"title": "A", "type": "integer"},
                    "b": {"title": "B", "type": "integer"},
                },
                "required": ["a", "b"],
                "additionalProperties": False,
            },
            "source": "function",
        }
    ]


def test_ready_until_the_session_stores_server_stops(
    http: Callable[[Starlette], httpx.Client],
) -> None:
    """A live PostgreSQL store is ready; once its server stops, ``/readyz`` answers 503."""
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(postgres_server())
        store = PostgresSessionStore(url, timeout=1.0)
        client = http(create_app(Agent(TestModel(), registry=Registry(), sessions=store)))
        ready = client.get("/readyz")
        assert (ready.status_code, ready.json()) == (200, {"status": "ready"})
        assert client.get("/healthz").status_code == 200
        stack.close()  # the PostgreSQL server stops
        down = client.get("/readyz")
        assert down.status_code == 503
        body = down.json()
        assert body["status"] == "not ready"
        assert list(body["problems"]) == ["sessions"]
        assert client.get("/healthz").status_code == 200


def test_ready_until_an_mcp_server_stops(http: Callable[[Starlette], httpx.Client]) -> None:
    """An agent's MCP server counts: once it is gone, ``/readyz`` answers 503 naming it."""
    with http_demo(token=None) as url:
        server = MCPServer("web", url=url, tools_ttl=0, timeout=10)
        model = ScriptedModel([tool_calls(("crash", {})), "it crashed"])
        app = create_app(Agent(model, registry=Registry(), mcp_servers=[server]))
        client = http(app)
        assert client.get("/readyz").json() == {"status": "ready"}
        tools = client.get("/api/tools").json()["data"]
        assert {t["source"] for t in tools} == {"mcp server web"}
        # The served agent calls the server's `crash` tool: its process exits.
        reply = client.post(
            "/v1/chat/completions",
            json={"model": "fncore", "messages": [{"role": "user", "content": "crash"}]},
        )
        assert reply.json()["choices"][0]["message"]["content"] == "it crashed"
        down = client.get("/readyz")
        assert down.status_code == 503
        problems = down.json()["problems"]
        assert list(problems) == ["mcp"]
        assert "'web'" in problems["mcp"]
