"""Tenants' sessions and runs, kept apart on one real server with two tenants' keys.

With keys, a tenant's session ``NAME`` is stored as ``TENANT/NAME``; every endpoint shows
a tenant only its own sessions and runs, under its own names, and another tenant's is a 404
as a missing one is. Without keys, names are stored as they are.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from served import add, running
from test_keys import ACME, GLOBEX, KEYS, call

from fncore import Agent, InMemorySessionStore, ModelRequest, Registry
from fncore.middleware import approve
from fncore.serve import ServeSettings, create_app
from fncore.testing import FunctionModel, TestModel


def echo(request: ModelRequest) -> str:
    """The conversation's user messages so far, joined: what the model was shown."""
    return " | ".join(m.text for m in request.messages if m.role == "user")


@dataclass
class Server:
    """A served agent's root URL and its one session store."""

    url: str
    store: InMemorySessionStore

    def chat(self, key: str | None, text: str, session: str | None = None) -> tuple[int, Any]:
        """``POST /v1/chat/completions`` with ``key``, continuing ``session`` if named."""
        headers = {} if session is None else {"fncore-session": session}
        body = {"model": "fncore", "messages": [{"role": "user", "content": text}]}
        status, raw = self.send("POST", "/v1/chat/completions", key, body, headers)
        return status, json.loads(raw)

    def answer(self, key: str | None, text: str, session: str) -> str:
        """The answer of one turn of ``session``."""
        status, body = self.chat(key, text, session)
        assert status == 200, body
        answer: str = body["choices"][0]["message"]["content"]
        return answer

    def agui(self, key: str | None, thread: str, text: str) -> tuple[int, list[Any]]:
        """``POST /ag-ui``: the status, and the events' JSON."""
        messages = [{"id": "m1", "role": "user", "content": text}]
        body = {"threadId": thread, "runId": "r1", "messages": messages}
        status, raw = self.send("POST", "/ag-ui", key, body)
        lines = raw.decode().splitlines()
        if status != 200:
            return status, [json.loads(raw)]
        return status, [json.loads(x[len("data: ") :]) for x in lines if x.startswith("data: ")]

    def get(self, path: str, key: str | None) -> tuple[int, Any]:
        """``GET path`` with ``key``: the status and the JSON body."""
        status, raw = self.send("GET", path, key)
        return status, json.loads(raw)

    def delete(self, path: str, key: str | None) -> int:
        """``DELETE path`` with ``key``: the status."""
        status, _ = self.send("DELETE", path, key)
        return status

    def send(
        self,
        method: str,
        path: str,
        key: str | None,
        body: object = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, bytes]:
        """One request to the app with ``key`` and ``headers``: the status and body."""
        status, _, raw = call(self.url, path, key=key, body=body, method=method, extra=headers)
        return status, raw

    def stored(self) -> list[str]:
        """The ids in the store, as the server's operator (``fncore sessions list``) sees them."""
        return sorted(info.id for info in asyncio.run(self.store.list_sessions()))


def serve(agent_of: Any, keys: dict[str, str] | None) -> Iterator[Server]:
    """Serve the agent ``agent_of(store)`` makes, with ``keys`` (or none)."""
    store = InMemorySessionStore()
    settings = ServeSettings(keys=keys) if keys else ServeSettings()
    with running(create_app(agent_of(store), settings)) as base_url:
        yield Server(base_url.removesuffix("/v1"), store)


def echo_agent(store: InMemorySessionStore) -> Agent[Any]:
    """An agent whose answer is the conversation's user messages: a session shows in it."""
    return Agent(FunctionModel(echo), registry=Registry(), sessions=store)


@pytest.fixture
def server() -> Iterator[Server]:
    """The echoing agent, with two tenants' keys."""
    yield from serve(echo_agent, KEYS)


@pytest.fixture
def open_server() -> Iterator[Server]:
    """The echoing agent, without keys."""
    yield from serve(echo_agent, None)


@pytest.fixture
def asking() -> Iterator[Server]:
    """An agent asking before every ``add``, with two tenants' keys."""

    def agent(store: InMemorySessionStore) -> Agent[Any]:
        return Agent(TestModel(), registry=approve(["add"]), tools=[add], sessions=store)

    yield from serve(agent, KEYS)


def test_one_session_name_is_two_conversations_one_per_tenant(server: Server) -> None:
    """Both tenants talk in ``ada``: each continues its own conversation, not the other's."""
    assert server.answer(ACME, "acme one", "ada") == "acme one"
    assert server.answer(GLOBEX, "globex one", "ada") == "globex one"
    assert server.answer(ACME, "acme two", "ada") == "acme one | acme two"
    assert server.answer(GLOBEX, "globex two", "ada") == "globex one | globex two"
    for key, said in ((ACME, "acme one"), (GLOBEX, "globex one")):
        status, session = server.get("/api/sessions/ada", key)
        assert status == 200
        assert (session["id"], session["version"]) == ("ada", 2)
        assert session["messages"][0]["parts"][0]["text"] == said
    assert server.stored() == ["acme/ada", "globex/ada"]


def test_an_ag_ui_thread_is_the_callers_session(server: Server) -> None:
    """``threadId`` maps to the caller's namespace, as ``fncore-session`` does."""
    server.answer(ACME, "by chat", "ada")
    status, events = server.agui(GLOBEX, "ada", "by ag-ui")
    assert status == 200
    finished = events[-1]
    assert (finished["type"], finished["threadId"]) == ("RUN_FINISHED", "ada")
    assert finished["result"] == "by ag-ui"  # not acme's "by chat" before it
    _, events = server.agui(ACME, "ada", "again")
    assert events[-1]["result"] == "by chat | again"


def test_each_tenant_lists_only_its_own_sessions_by_its_own_names(server: Server) -> None:
    """``GET /api/sessions``: the caller's sessions, unprefixed; none stored without keys."""
    server.answer(ACME, "hi", "ada")
    server.answer(ACME, "hi", "bob")
    server.answer(GLOBEX, "hi", "carol")
    for key, names in ((ACME, ["ada", "bob"]), (GLOBEX, ["carol"])):
        status, listed = server.get("/api/sessions", key)
        assert status == 200
        assert sorted(s["id"] for s in listed["data"]) == names


def test_another_tenants_session_is_missing_to_read_and_delete(server: Server) -> None:
    """GET and DELETE of globex's session by acme answer exactly as a missing one; it stays."""
    server.answer(GLOBEX, "secret", "carol")
    for name in ("carol", "nobody"):
        assert server.get(f"/api/sessions/{name}", ACME) == (
            404,
            {
                "error": {
                    "message": f"no session {name!r}",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "not_found",
                }
            },
        )
        assert server.delete(f"/api/sessions/{name}", ACME) == 404
    status, session = server.get("/api/sessions/carol", GLOBEX)
    assert (status, session["messages"][0]["parts"][0]["text"]) == (200, "secret")
    assert server.delete("/api/sessions/carol", GLOBEX) == 204
    assert server.get("/api/sessions/carol", GLOBEX)[0] == 404


@pytest.mark.parametrize("where", ["fncore-session", "threadId", "session_id"])
def test_a_session_name_with_the_separator_is_refused(server: Server, where: str) -> None:
    """No name reaches into another namespace: ``globex/carol`` is a 400 naming the field."""
    server.answer(GLOBEX, "secret", "carol")
    if where == "fncore-session":
        status, body = server.chat(ACME, "hi", "globex/carol")
    elif where == "threadId":
        status, (body,) = server.agui(ACME, "globex/carol", "hi")
    else:
        status, body = server.get("/api/sessions/globex/carol", ACME)
        assert server.delete("/api/sessions/globex/carol", ACME) == 400
    assert status == 400
    assert body["error"]["param"] == where
    assert body["error"]["code"] == "invalid_session_name"
    assert "'/'" in body["error"]["message"]
    assert server.stored() == ["globex/carol"]
    assert server.get("/api/sessions/carol", GLOBEX)[1]["version"] == 1


def test_each_tenant_sees_only_its_own_runs(server: Server) -> None:
    """``/api/runs`` lists the caller's runs, sessions by its names; another's run is a 404."""
    server.answer(ACME, "hi", "ada")
    server.chat(GLOBEX, "hi")
    server.agui(GLOBEX, "carol", "hi")
    _, acmes = server.get("/api/runs", ACME)
    _, globexs = server.get("/api/runs", GLOBEX)
    assert [(r["endpoint"], r["session"], r["tenant"]) for r in acmes["data"]] == [
        ("chat.completions", "ada", "acme")
    ]
    assert [(r["endpoint"], r["session"], r["tenant"]) for r in globexs["data"]] == [
        ("ag-ui", "carol", "globex"),
        ("chat.completions", None, "globex"),
    ]
    for run in globexs["data"]:
        status, refused = server.get(f"/api/runs/{run['id']}", ACME)
        assert (status, refused["error"]["code"]) == (404, "not_found")
        status, detail = server.get(f"/api/runs/{run['id']}", GLOBEX)
        assert (status, detail["session"]) == (200, run["session"])


def test_approvals_show_the_callers_session_names(asking: Server) -> None:
    """A checkpoint of acme's ``ada`` lists as ``ada``; deciding it commits acme's ``ada``."""
    status, events = asking.agui(ACME, "ada", "add 2 and 3")
    assert (status, events[-1]["type"]) == (200, "RUN_FINISHED")
    status, listed = asking.get("/api/approvals", ACME)
    (checkpoint,) = listed["data"]
    assert checkpoint["session_id"] == "ada"
    body = {"decision": {"kind": "approve"}}
    path = f"/api/approvals/{checkpoint['id']}"
    status, raw = asking.send("POST", path, ACME, body)
    assert (status, json.loads(raw)["session_id"]) == (200, "ada")
    assert asking.stored() == ["acme/ada"]
    _, runs = asking.get("/api/runs", ACME)
    assert [(r["endpoint"], r["session"]) for r in runs["data"]] == [
        ("approvals", "ada"),
        ("ag-ui", "ada"),
    ]
    assert asking.get("/api/sessions/ada", GLOBEX)[0] == 404


def test_without_keys_names_are_stored_as_they_are(open_server: Server) -> None:
    """No namespace without keys: any name, separator included, is the stored id."""
    assert open_server.answer(None, "hi", "team/ada") == "hi"
    status, events = open_server.agui(None, "team/ada", "again")
    assert (status, events[-1]["result"]) == (200, "hi | again")
    assert open_server.stored() == ["team/ada"]
    _, listed = open_server.get("/api/sessions", None)
    assert [s["id"] for s in listed["data"]] == ["team/ada"]
    _, runs = open_server.get("/api/runs", None)
    assert [(r["session"], r["tenant"]) for r in runs["data"]] == [
        ("team/ada", None),
        ("team/ada", None),
    ]
