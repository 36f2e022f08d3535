"""``/ag-ui`` and the approvals API with two tenants' keys, on one real server.

Each takes the key's tenant as run metadata, keeps a tenant to its own checkpoints, and
records its runs in the runs log.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from ag_ui.core import Event, RunFinishedEvent
from otel_support import Otel
from pydantic import TypeAdapter
from served import add, running
from test_keys import ACME, GLOBEX, KEYS, call, recording

from fncore import Agent, InMemorySessionStore
from fncore.middleware import approve
from fncore.serve import RunsLog, ServeSettings, create_app
from fncore.testing import TestModel

EVENT: TypeAdapter[Event] = TypeAdapter(Event)


@dataclass
class Server:
    """The served agent's root URL, its session store, and the metadata each run saw."""

    url: str
    store: InMemorySessionStore
    seen: list[object]

    def agui(self, key: str | None, thread: str, **extra: Any) -> tuple[int, list[Any]]:
        """POST a run to ``/ag-ui`` with ``key``: the status and the events it streamed."""
        messages = [{"id": "m1", "role": "user", "content": "add 2 and 3"}]
        body = {"threadId": thread, "runId": "r1", "messages": messages, **extra}
        status, _, raw = call(self.url, "/ag-ui", key=key, body=body, method="POST")
        lines = raw.decode().splitlines() if status == 200 else []
        events = [EVENT.validate_json(x[len("data: ") :]) for x in lines if x.startswith("data: ")]
        return status, events

    def pause(self, key: str, thread: str) -> str:
        """A run over ``/ag-ui`` that pauses before ``add``: its checkpoint id."""
        status, events = self.agui(key, thread)
        assert status == 200
        finished = events[-1]
        assert isinstance(finished, RunFinishedEvent)
        assert finished.outcome is not None
        (interrupt,) = finished.outcome.interrupts  # type: ignore[union-attr]
        checkpoint: str = interrupt.metadata["checkpoint_id"]
        return checkpoint

    def get(self, path: str, key: str | None) -> tuple[int, Any]:
        """``GET path`` with ``key``: the status and the JSON body."""
        status, _, raw = call(self.url, path, key=key)
        return status, json.loads(raw)

    def decide(self, checkpoint: str, key: str | None) -> tuple[int, Any]:
        """Approve every pending call of ``checkpoint`` with ``key``."""
        body = {"decision": {"kind": "approve"}}
        path = f"/api/approvals/{checkpoint}"
        status, _, raw = call(self.url, path, key=key, body=body, method="POST")
        return status, json.loads(raw)


@pytest.fixture
def server() -> Iterator[Server]:
    """An agent asking before every ``add``, traced, served with two tenants' keys."""
    otel = Otel()
    registry, seen = recording()
    registry.include(otel.registry())
    registry.include(approve(["add"]))
    store = InMemorySessionStore()
    agent = Agent(TestModel(), registry=registry, tools=[add], sessions=store)
    runs = RunsLog(tracer_provider=otel.tracer_provider)
    app = create_app(agent, ServeSettings(keys=KEYS), runs=runs)
    with running(app) as base_url:
        yield Server(base_url.removesuffix("/v1"), store, seen)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/ag-ui"),
        ("GET", "/api/approvals"),
        ("POST", "/api/approvals/anything"),
        ("GET", "/api/runs"),
        ("GET", "/api/runs/run-0"),
    ],
)
def test_ag_ui_approvals_and_runs_need_a_key(server: Server, method: str, path: str) -> None:
    """Without a key, or with a wrong one: OpenAI's 401, and nothing runs."""
    body = {"threadId": "t", "runId": "r", "messages": []} if method == "POST" else None
    for key in (None, "sk-guessed"):
        status, _, raw = call(server.url, path, key=key, body=body, method=method)
        assert status == 401
        assert json.loads(raw)["error"]["code"] == "invalid_api_key"
    assert server.seen == []


def test_an_ag_ui_run_gets_its_tenant_and_is_logged_with_its_spans(server: Server) -> None:
    """The streamed run sees ``{"tenant": ...}``; ``/api/runs`` shows it paused, with usage."""
    checkpoint = server.pause(GLOBEX, "globex-thread")
    assert server.seen == [{"tenant": "globex"}]
    status, runs = server.get("/api/runs", GLOBEX)
    assert status == 200
    (run,) = runs["data"]
    assert (run["endpoint"], run["session"], run["tenant"]) == ("ag-ui", "globex-thread", "globex")
    assert run["outcome"] == {"kind": "paused", "checkpoint_id": checkpoint, "calls": ["add"]}
    assert run["usage"]["total_tokens"] > 0
    _, detail = server.get(f"/api/runs/{run['id']}", GLOBEX)
    assert [s["name"] for s in detail["spans"]][:2] == ["invoke_agent agent", "chat test"]


def test_each_tenant_lists_and_decides_only_its_own_checkpoints(server: Server) -> None:
    """Another tenant's checkpoint is not listed and is a 404 to decide; it still waits."""
    acmes = server.pause(ACME, "acme-thread")
    globexs = server.pause(GLOBEX, "globex-thread")
    for key, own in ((ACME, acmes), (GLOBEX, globexs)):
        status, listed = server.get("/api/approvals", key)
        assert status == 200
        assert [(c["id"], c["metadata"]) for c in listed["data"]] == [
            (own, {"tenant": "acme" if key == ACME else "globex"})
        ]
    status, refused = server.decide(acmes, GLOBEX)
    assert status == 404
    assert refused["error"]["code"] == "checkpoint_not_found"
    _, still = server.get("/api/approvals", ACME)
    assert [c["id"] for c in still["data"]] == [acmes]
    assert server.seen == [{"tenant": "acme"}, {"tenant": "globex"}]  # nothing resumed


def test_an_approvals_resume_gets_its_tenant_and_is_logged(server: Server) -> None:
    """The resumed run sees the tenant, commits the session, and is in ``/api/runs``."""
    checkpoint = server.pause(ACME, "acme-thread")
    status, outcome = server.decide(checkpoint, ACME)
    assert status == 200
    assert (outcome["status"], outcome["output"]) == ("completed", "add: 5")
    assert server.seen == [{"tenant": "acme"}, {"tenant": "acme"}]
    status, runs = server.get("/api/runs", ACME)
    resumed, paused = runs["data"]
    assert (resumed["endpoint"], paused["endpoint"]) == ("approvals", "ag-ui")
    assert resumed["session"] == paused["session"] == "acme-thread"
    assert resumed["outcome"] == {"kind": "answer"}
    assert resumed["usage"]["total_tokens"] == outcome["usage"]["total_tokens"] > 0
    _, detail = server.get(f"/api/runs/{resumed['id']}", ACME)
    assert "execute_tool add" in [s["name"] for s in detail["spans"]]
    _, session = server.get("/api/sessions/acme-thread", ACME)
    assert session["version"] == 1


def test_an_ag_ui_resume_of_another_tenants_checkpoint_runs_nothing(server: Server) -> None:
    """``resume`` entries on ``/ag-ui`` are decisions too: only the checkpoint's tenant's."""
    checkpoint = server.pause(ACME, "acme-thread")
    resume = [
        {
            "interruptId": f"{checkpoint}:call_0_0",
            "status": "resolved",
            "payload": {"kind": "approve"},
        }
    ]
    status, events = server.agui(GLOBEX, "acme-thread", resume=resume)
    assert status == 200
    assert events[-1].type.value == "RUN_ERROR"
    assert server.seen == [{"tenant": "acme"}]
    _, still = server.get("/api/approvals", ACME)
    assert [c["id"] for c in still["data"]] == [checkpoint]
    status, events = server.agui(ACME, "acme-thread", resume=resume)
    assert events[-1].type.value == "RUN_FINISHED"
    assert server.seen == [{"tenant": "acme"}, {"tenant": "acme"}]
