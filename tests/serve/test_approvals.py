"""The approvals API, against a real uvicorn: list what waits, decide it, once."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from served import add, running
from starlette.applications import Starlette
from starlette.routing import Mount

from fncore import (
    Agent,
    ChangeResult,
    Checkpoint,
    CheckpointChange,
    CheckpointInfo,
    InMemorySessionStore,
    Message,
    ModelRequest,
    Registry,
    Session,
    SessionStore,
    SessionUpdate,
    open_session_store,
)
from fncore.events import RunEnd
from fncore.middleware import approve
from fncore.serve import create_app
from fncore.serve._approvals import approval_routes
from fncore.testing import FunctionModel, tool_calls

ran: list[tuple[int, int]] = []


def counted_add(a: int, b: int) -> int:
    """Add two integers."""
    ran.append((a, b))
    return add(a, b)


def adder(request: ModelRequest) -> Message | str:
    """Adds 2 and 3 (and 4 and 5 when asked for two sums), then reports the results."""
    last = request.messages[-1]
    if last.role == "user":
        calls = [("counted_add", {"a": 2, "b": 3})]
        if "two" in last.text:
            calls.append(("counted_add", {"a": 4, "b": 5}))
        return tool_calls(*calls)
    return " ".join(result.content for result in last.tool_results)


def build(store: SessionStore, *, mode: str = "batch") -> Agent:
    """An agent that asks before every ``counted_add``."""
    registry = Registry()
    registry.include(approve(["counted_add"], mode=mode))  # type: ignore[arg-type]
    return Agent(FunctionModel(adder), registry=registry, tools=[counted_add], sessions=store)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> SessionStore:
    """A checkpoint store of each kind (PostgreSQL: a new database); `serving` closes it."""
    ran.clear()
    if request.param == "memory":
        return InMemorySessionStore()
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    if request.param == "postgres":
        url = request.getfixturevalue("postgres_url")
    made: SessionStore = open_session_store(url)
    return made


def serving(agent: Agent) -> Starlette:
    """``create_app(agent)``, closing the agent's store as the server stops (in its loop)."""

    @contextlib.asynccontextmanager
    async def closing(app: Starlette) -> AsyncIterator[None]:
        yield
        close = getattr(agent.sessions, "aclose", None)
        if close is not None:
            await close()

    return Starlette(routes=[Mount("", create_app(agent))], lifespan=closing)


@pytest.fixture
def http(store: SessionStore) -> Iterator[tuple[httpx2.Client, Agent]]:
    """A served agent on ``store``, and a client for it."""
    agent = build(store)
    with running(serving(agent)) as base_url:
        root = base_url.removesuffix("/v1")
        with httpx2.Client(base_url=root, timeout=30) as client:
            yield client, agent


def pause(client: httpx2.Client, text: str = "add", session: str | None = None) -> Any:
    """Start a run over the OpenAI API; the 409's error body (its checkpoint, its calls)."""
    headers = {} if session is None else {"fncore-session": session}
    body = {"model": "fncore", "messages": [{"role": "user", "content": text}]}
    reply = client.post("/v1/chat/completions", json=body, headers=headers)
    assert reply.status_code == 409
    return reply.json()["error"]


def test_pending_checkpoints_are_listed_newest_first_with_their_tools_schemas(
    http: tuple[httpx2.Client, Agent],
) -> None:
    client, _ = http
    first = pause(client, session="ada")["checkpoint_id"]
    second = pause(client, "two sums")["checkpoint_id"]
    listed = client.get("/api/approvals").json()
    assert listed["object"] == "list"
    assert [c["id"] for c in listed["data"]] == [second, first]
    older = listed["data"][1]
    assert older["session_id"] == "ada"
    assert older["agent"] == "agent"
    assert older["created"] <= older["expires"]
    [call] = older["pending"]
    assert call == {
        "call_id": "call_0",
        "tool": "counted_add",
        "arguments": {"a": 2, "b": 3},
        "description": 'Run counted_add with {"a": 2, "b": 3}?',
        "allowed": ["approve", "edit", "reject", "respond"],
        "parameters": call["parameters"],
    }
    assert call["parameters"]["properties"].keys() == {"a", "b"}
    assert [p["call_id"] for p in listed["data"][0]["pending"]] == ["call_0", "call_1"]
    assert [c["id"] for c in client.get("/api/approvals?limit=1").json()["data"]] == [second]
    for bad in ("0", "501", "x", "-1"):
        refused = client.get(f"/api/approvals?limit={bad}")
        assert refused.status_code == 400
        assert refused.json()["error"]["param"] == "limit"


def test_an_approved_session_run_finishes_commits_once_and_cannot_be_decided_again(
    http: tuple[httpx2.Client, Agent],
) -> None:
    client, _ = http
    checkpoint = pause(client, session="ada")["checkpoint_id"]
    assert client.get("/api/sessions/ada").status_code == 404  # committed at the end only
    done = client.post(f"/api/approvals/{checkpoint}", json={"decision": {"kind": "approve"}})
    assert done.status_code == 200
    answer = done.json()
    assert answer["object"] == "approval.outcome"
    assert (answer["status"], answer["output"]) == ("completed", "5")
    assert (answer["checkpoint_id"], answer["session_id"]) == (checkpoint, "ada")
    assert answer["usage"]["total_tokens"] > 0
    assert ran == [(2, 3)]
    again = client.post(f"/api/approvals/{checkpoint}", json={"decision": {"kind": "approve"}})
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "checkpoint_decided"
    session = client.get("/api/sessions/ada").json()
    assert session["version"] == 1
    assert [m["role"] for m in session["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert ran == [(2, 3)]
    assert client.get("/api/approvals").json()["data"] == []


def test_decisions_per_call_reject_edit_and_respond(http: tuple[httpx2.Client, Agent]) -> None:
    client, _ = http
    checkpoint = pause(client, "two sums")["checkpoint_id"]
    decisions = {
        "call_0": {"kind": "edit", "arguments": {"a": 10, "b": 1}},
        "call_1": {"kind": "respond", "message": "it is 9"},
    }
    done = client.post(f"/api/approvals/{checkpoint}", json={"decisions": decisions})
    assert done.status_code == 200
    assert done.json()["output"].endswith("11 it is 9")
    assert ran == [(10, 1)]
    checkpoint = pause(client)["checkpoint_id"]
    rejected = client.post(
        f"/api/approvals/{checkpoint}", json={"decision": {"kind": "reject", "message": "no"}}
    )
    assert rejected.json()["output"] == "no"
    assert ran == [(10, 1)]


def test_a_refused_edit_names_the_field_and_the_checkpoint_still_waits(
    http: tuple[httpx2.Client, Agent],
) -> None:
    client, _ = http
    checkpoint = pause(client)["checkpoint_id"]
    edit = {"decisions": {"call_0": {"kind": "edit", "arguments": {"a": "ten", "b": 1}}}}
    refused = client.post(f"/api/approvals/{checkpoint}", json=edit)
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert (error["param"], error["code"]) == ("decisions.call_0.arguments.a", "invalid_arguments")
    assert [c["id"] for c in client.get("/api/approvals").json()["data"]] == [checkpoint]
    assert ran == []
    fixed = {"decisions": {"call_0": {"kind": "edit", "arguments": {"a": 10, "b": 1}}}}
    assert client.post(f"/api/approvals/{checkpoint}", json=fixed).json()["output"].endswith("11")


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (b"{", None),
        (b"{}", "decision"),
        (b'{"decision": {"kind": "approve"}, "decisions": {}}', "decision"),
        (b'{"decision": {"kind": "maybe"}}', "decision"),
        (b'{"decision": {"kind": "respond"}}', "decision.respond.message"),
        (b'{"decisions": {"call_9": {"kind": "approve"}}}', "decisions.call_9"),
        (b'{"decisions": {}}', "decisions.call_0"),
        (b'{"decision": {"kind": "approve", "extra": 1}}', "decision.approve.extra"),
    ],
)
def test_malformed_decisions_get_a_400_naming_the_field(
    http: tuple[httpx2.Client, Agent], body: bytes, param: str | None
) -> None:
    client, _ = http
    checkpoint = pause(client)["checkpoint_id"]
    refused = client.post(f"/api/approvals/{checkpoint}", content=body)
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert (error["type"], error["param"]) == ("invalid_request_error", param)
    assert [c["id"] for c in client.get("/api/approvals").json()["data"]] == [checkpoint]


def test_an_unknown_checkpoint_is_404(http: tuple[httpx2.Client, Agent]) -> None:
    client, _ = http
    missing = client.post("/api/approvals/nope", json={"decision": {"kind": "approve"}})
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "checkpoint_not_found"


def test_a_disallowed_decision_is_400() -> None:
    """A decision the pending call does not allow is refused by ``Agent.resume``: a 400."""
    registry = Registry()
    registry.include(approve(["counted_add"], decisions=("approve", "reject")))
    agent = Agent(FunctionModel(adder), registry=registry, tools=[counted_add])
    with (
        running(serving(agent)) as base_url,
        httpx2.Client(base_url=base_url.removesuffix("/v1")) as client,
    ):
        checkpoint = pause(client)["checkpoint_id"]
        body = {"decision": {"kind": "respond", "message": "5"}}
        refused = client.post(f"/api/approvals/{checkpoint}", json=body)
        assert refused.status_code == 400
        assert (refused.json()["error"]["param"], refused.json()["error"]["code"]) == (
            "decision",
            "invalid_decision",
        )


def test_a_run_that_pauses_again_answers_with_its_next_checkpoint(store: SessionStore) -> None:
    agent = build(store, mode="per_call")
    with (
        running(serving(agent)) as base_url,
        httpx2.Client(base_url=base_url.removesuffix("/v1")) as client,
    ):
        first = pause(client, "two sums")["checkpoint_id"]
        approve_all = {"decision": {"kind": "approve"}}
        again = client.post(f"/api/approvals/{first}", json=approve_all).json()
        assert (again["status"], again["output"]) == ("paused", None)
        follow = again["checkpoint"]
        assert follow["id"] != first
        assert [p["call_id"] for p in follow["pending"]] == ["call_1"]
        listed = client.get("/api/approvals").json()["data"]
        assert listed == [follow]
        done = client.post(f"/api/approvals/{follow['id']}", json=approve_all).json()
        assert (done["status"], done["output"]) == ("completed", "5 9")
        assert ran == [(2, 3), (4, 5)]


def test_two_concurrent_decisions_give_exactly_one_success(store: SessionStore) -> None:
    """The tool blocks until both POSTs are in: one resumes, the other gets a 409."""
    entered, release = threading.Event(), threading.Event()

    async def slow_add(a: int, b: int) -> int:
        """Add two integers, slowly."""
        entered.set()
        await asyncio.to_thread(release.wait)
        return a + b

    def slow(request: ModelRequest) -> Message | str:
        last = request.messages[-1]
        if last.role == "user":
            return tool_calls(("slow_add", {"a": 2, "b": 3}))
        return last.tool_results[0].content

    registry = Registry()
    registry.include(approve(["slow_add"]))
    agent = Agent(FunctionModel(slow), registry=registry, tools=[slow_add], sessions=store)
    with (
        running(serving(agent)) as base_url,
        httpx2.Client(base_url=base_url.removesuffix("/v1"), timeout=30) as client,
    ):
        checkpoint = pause(client, session="ada")["checkpoint_id"]
        url, body = f"/api/approvals/{checkpoint}", {"decision": {"kind": "approve"}}
        answers: list[httpx2.Response] = []
        first = threading.Thread(target=lambda: answers.append(client.post(url, json=body)))
        first.start()
        entered.wait()
        second = client.post(url, json=body)
        release.set()
        first.join()
        assert second.status_code == 409
        assert second.json()["error"]["code"] == "checkpoint_busy"
        assert [a.status_code for a in answers] == [200]
        assert answers[0].json()["output"] == "5"
        session = client.get("/api/sessions/ada").json()
        assert session["version"] == 1


def test_the_callers_metadata_restricts_the_list_and_the_decisions() -> None:
    """With a metadata function (the tenant), a caller sees and decides only its own runs."""
    seen: list[dict[str, object]] = []
    registry = Registry()
    registry.include(approve(["counted_add"]))

    @registry.hook("run_end")
    async def metadata_of(event: RunEnd) -> None:
        seen.append(dict(event.run.metadata))

    agent = Agent(FunctionModel(adder), registry=registry, tools=[counted_add])

    async def paused(tenant: str) -> str:
        result = (await agent.run("add", metadata={"tenant": tenant, "user": "u"})).unwrap()
        assert result.paused is not None
        return result.paused.checkpoint_id

    ours, theirs = asyncio.run(paused("t1")), asyncio.run(paused("t2"))
    seen.clear()
    app = Starlette(
        routes=approval_routes(agent, metadata=lambda request: {"tenant": request.headers["t"]})
    )
    with (
        running(app) as base_url,
        httpx2.Client(base_url=base_url.removesuffix("/v1"), headers={"t": "t1"}) as client,
    ):
        assert [c["id"] for c in client.get("/api/approvals").json()["data"]] == [ours]
        body = {"decision": {"kind": "approve"}}
        assert client.post(f"/api/approvals/{theirs}", json=body).status_code == 404
        assert client.post(f"/api/approvals/{ours}", json=body).status_code == 200
    assert seen == [{"tenant": "t1", "user": "u"}]


class Unreachable:
    """A checkpoint store whose database is down: every read raises."""

    async def load(self, session_id: str) -> Session | None:
        raise OSError("connection refused")

    async def commit(self, update: SessionUpdate) -> Session | None:
        raise OSError("connection refused")

    async def save_checkpoint(self, checkpoint: Checkpoint) -> None:
        raise OSError("connection refused")

    async def load_checkpoint(self, checkpoint_id: str) -> Checkpoint | None:
        raise OSError("connection refused")

    async def claim_checkpoint(
        self, checkpoint_id: str, claim: str, until: float, now: float
    ) -> Checkpoint | None:
        raise OSError("connection refused")

    async def change_checkpoint(self, change: CheckpointChange) -> ChangeResult:
        raise OSError("connection refused")

    async def list_checkpoints(self, **options: object) -> list[CheckpointInfo]:
        raise OSError("connection refused")


class NoCheckpoints:
    """A session store of one's own that keeps no checkpoints."""

    async def load(self, session_id: str) -> Session | None:
        return None

    async def commit(self, update: SessionUpdate) -> Session | None:
        return None


def test_a_store_that_is_down_or_keeps_no_checkpoints_answers_in_openais_shape() -> None:
    """503 naming the store's failure; 501 for a store that cannot list or keep checkpoints."""
    body = {"decision": {"kind": "approve"}}
    for store, status, code in ((Unreachable(), 503, "store_error"), (NoCheckpoints(), 501, None)):
        agent = Agent(FunctionModel(adder), registry=Registry(), sessions=store)
        with (
            running(serving(agent)) as base_url,
            httpx2.Client(base_url=base_url.removesuffix("/v1")) as client,
        ):
            for answer in (
                client.get("/api/approvals"),
                client.post("/api/approvals/x", json=body),
            ):
                assert answer.status_code == status
                error = answer.json()["error"]
                assert error["code"] == (code or "not_implemented")
                if code is not None:
                    assert "OSError: connection refused" in error["message"]


class Forgetful:
    """A memory store that, once told ``readable``, cannot read any other checkpoint."""

    def __init__(self) -> None:
        self.inner = InMemorySessionStore()
        self.readable: str | None = None

    async def load(self, session_id: str) -> Session | None:
        return await self.inner.load(session_id)

    async def commit(self, update: SessionUpdate) -> Session | None:
        return await self.inner.commit(update)

    async def save_checkpoint(self, checkpoint: Checkpoint) -> None:
        await self.inner.save_checkpoint(checkpoint)

    async def load_checkpoint(self, checkpoint_id: str) -> Checkpoint | None:
        if self.readable not in (None, checkpoint_id):
            raise OSError("connection refused")
        return await self.inner.load_checkpoint(checkpoint_id)

    async def claim_checkpoint(
        self, checkpoint_id: str, claim: str, until: float, now: float
    ) -> Checkpoint | None:
        return await self.inner.claim_checkpoint(checkpoint_id, claim, until, now)

    async def change_checkpoint(self, change: CheckpointChange) -> ChangeResult:
        return await self.inner.change_checkpoint(change)


def test_a_new_pause_whose_checkpoint_cannot_be_read_back_still_names_it() -> None:
    """The run paused again all the same: the answer has its checkpoint id and calls."""
    store = Forgetful()
    agent = build(store, mode="per_call")
    with (
        running(serving(agent)) as base_url,
        httpx2.Client(base_url=base_url.removesuffix("/v1")) as client,
    ):
        first = pause(client, "two sums")["checkpoint_id"]
        store.readable = first
        again = client.post(f"/api/approvals/{first}", json={"decision": {"kind": "approve"}})
        assert again.status_code == 200
        follow = again.json()["checkpoint"]
        assert follow["id"] != first
        assert [p["call_id"] for p in follow["pending"]] == ["call_1"]
