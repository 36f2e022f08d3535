"""Durable runs over HTTP: ``POST /api/runs`` queues them, ``GET /api/runs/{id}`` shows them.

``GET /api/runs/{id}`` shows a durable run's status, steps and outcome, beside the runs log
the console reads. Real uvicorn servers (`served.running`), a real DBOS on SQLite in a
temporary folder (and once on PostgreSQL), and a real ``fncore serve --durable``. A run is
awaited by polling its ``GET``, with a deadline that only guards against a hang.
"""

from __future__ import annotations

import signal
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
from openai import OpenAI
from processes import SAFETY_SECONDS, serving
from served import add, running
from starlette.applications import Starlette
from starlette.routing import Mount
from test_keys import recording

from fncore import Agent, Registry
from fncore.durable import DurableRuntime
from fncore.middleware import approve
from fncore.serve import ServeSettings, create_app
from fncore.settings import DurableSettings
from fncore.testing import ScriptedModel, TestModel

KEYS = {"acme": "sk-acme-1", "globex": "sk-globex-1"}
ACME = {"authorization": "Bearer sk-acme-1"}
GLOBEX = {"authorization": "Bearer sk-globex-1"}


def durable_app(
    agent: Agent, url: str, settings: ServeSettings | None = None
) -> tuple[Starlette, DurableRuntime]:
    """An app of ``agent`` taking durable runs on the DBOS database at ``url``."""
    runtime = DurableRuntime([agent], DurableSettings(url=url, polling_interval=0.05))
    return create_app(agent, settings, durable=runtime), runtime


def sqlite(folder: Path) -> str:
    return f"sqlite:///{folder / 'durable.sqlite'}"


def root(base_url: str) -> str:
    """The server's root URL, from its OpenAI base URL (``.../v1``)."""
    return base_url.removesuffix("/v1")


def submit(url: str, body: object, headers: Mapping[str, str] | None = None) -> httpx2.Response:
    return httpx2.post(f"{url}/api/runs", json=body, headers=dict(headers or {}))


def finished(url: str, run_id: str, headers: Mapping[str, str] | None = None) -> dict[str, object]:
    """The run ``run_id`` once it has ended: ``GET /api/runs/{id}`` until it says so."""
    deadline = time.monotonic() + SAFETY_SECONDS
    while True:
        answer = httpx2.get(f"{url}/api/runs/{run_id}", headers=dict(headers or {}))
        assert answer.status_code == 200, answer.text
        run: dict[str, object] = answer.json()
        if run["status"] not in ("ENQUEUED", "PENDING"):
            return run
        if time.monotonic() > deadline:
            pytest.fail(f"run {run_id} did not end: {run}")
        time.sleep(0.02)


def step_kinds(run: Mapping[str, object]) -> list[str]:
    """The kinds of the run's steps (``tool`` for ``tool:add:call_0``), in order."""
    steps = run["steps"]
    assert isinstance(steps, list)
    return [str(step["name"]).split(":")[0] for step in steps]


def test_a_posted_run_is_queued_then_run_here_and_shown_with_its_steps(tmp_path: Path) -> None:
    """202 with the id; the server, a worker too, runs it; its steps and outcome show."""
    agent = Agent(TestModel(), registry=Registry(), tools=[add])
    app, _ = durable_app(agent, sqlite(tmp_path))
    with running(app) as base_url:
        url = root(base_url)
        answer = submit(url, {"prompt": "add 2 and 3", "session": "ada"})
        assert answer.status_code == 202, answer.text
        run_id = answer.json()["id"]
        assert answer.json() == {"id": run_id, "durable": True, "status": "ENQUEUED"}
        assert answer.headers["location"] == f"/api/runs/{run_id}"
        run = finished(url, run_id)
        session = httpx2.get(f"{url}/api/sessions/ada").json()
    assert run["status"] == "SUCCESS"
    assert run["outcome"] == {"kind": "answer"}
    assert run["output"] == "add: 5"
    assert run["error"] is None
    assert (run["session"], run["tenant"], run["durable"]) == ("ada", None, True)
    kinds = step_kinds(run)
    assert kinds[0] == "session.load"
    assert kinds[-1] == "session.commit"
    assert kinds.count("model_call") == 2
    assert kinds.count("tool") == 1
    steps = run["steps"]
    assert isinstance(steps, list)
    assert all(step["ok"] for step in steps)
    assert [m["role"] for m in session["messages"]] == ["user", "assistant", "tool", "assistant"]


def test_the_runs_log_still_answers_beside_the_durable_runs(tmp_path: Path) -> None:
    """``GET /api/runs`` stays the console's log; ``GET /api/runs/{id}`` finds either kind."""
    agent = Agent(TestModel(), registry=Registry(), tools=[add])
    app, _ = durable_app(agent, sqlite(tmp_path))
    with running(app) as base_url, OpenAI(base_url=base_url, api_key="x") as client:
        url = root(base_url)
        client.chat.completions.create(
            model="fncore", messages=[{"role": "user", "content": "add 2 and 3"}]
        )
        durable_id = submit(url, {"prompt": "add 2 and 3"}).json()["id"]
        assert finished(url, durable_id)["outcome"] == {"kind": "answer"}
        (logged,) = httpx2.get(f"{url}/api/runs").json()["data"]
        one = httpx2.get(f"{url}/api/runs/{logged['id']}").json()
    assert logged["endpoint"] == "chat.completions"
    assert one["id"] == logged["id"]
    assert "spans" in one
    assert "durable" not in one


def test_a_paused_run_waits_in_the_approvals_api_and_a_failed_one_says_why(
    tmp_path: Path,
) -> None:
    """A pause ends the durable run (``paused``); it is decided as any other. Errors show."""
    agent = Agent(TestModel(), registry=approve(["add"]), tools=[add])
    app, _ = durable_app(agent, sqlite(tmp_path))
    with running(app) as base_url:
        url = root(base_url)
        paused = finished(
            url, submit(url, {"prompt": "add 2 and 3", "session": "ada"}).json()["id"]
        )
        (waiting,) = httpx2.get(f"{url}/api/approvals").json()["data"]
        decided = httpx2.post(
            f"{url}/api/approvals/{waiting['id']}", json={"decision": {"kind": "approve"}}
        )
    assert (paused["status"], paused["outcome"], paused["output"]) == (
        "SUCCESS",
        {"kind": "paused"},
        None,
    )
    assert (waiting["run_id"], waiting["session_id"]) == (paused["id"], "ada")
    assert decided.json()["output"] == "add: 5"

    failing = Agent(ScriptedModel([]), registry=Registry())
    app, _ = durable_app(failing, sqlite(tmp_path / "failing"))
    with running(app) as base_url:
        url = root(base_url)
        failed = finished(url, submit(url, {"prompt": "hi"}).json()["id"])
    assert failed["outcome"] == {"kind": "error", "message": failed["error"]}
    assert "has no reply left" in str(failed["error"])


def test_an_unknown_run_is_a_404_naming_both_places(tmp_path: Path) -> None:
    agent = Agent(TestModel(), registry=Registry())
    app, _ = durable_app(agent, sqlite(tmp_path))
    with running(app) as base_url:
        missing = httpx2.get(f"{root(base_url)}/api/runs/no-such-run")
    assert missing.status_code == 404
    error = missing.json()["error"]
    assert error["code"] == "not_found"
    assert error["message"] == (
        "no run 'no-such-run' in the log (it keeps the last 200), nor among the durable runs"
    )


def test_a_tenant_sees_only_its_own_durable_runs_and_sessions(tmp_path: Path) -> None:
    """The key's tenant is the run's metadata; another tenant's run is a 404 like a missing one."""
    registry, seen = recording()
    agent = Agent(TestModel(), registry=registry, tools=[add])
    app, _ = durable_app(agent, sqlite(tmp_path), ServeSettings(keys=KEYS))
    with running(app) as base_url:
        url = root(base_url)
        body = {"prompt": "add 2 and 3", "session": "ada", "metadata": {"ticket": "T-1"}}
        run_id = submit(url, body, ACME).json()["id"]
        run = finished(url, run_id, ACME)
        theirs = httpx2.get(f"{url}/api/runs/{run_id}", headers=GLOBEX)
        missing = httpx2.get(f"{url}/api/runs/{run_id}x", headers=GLOBEX)
        acme_sessions = httpx2.get(f"{url}/api/sessions", headers=ACME).json()["data"]
        globex_sessions = httpx2.get(f"{url}/api/sessions", headers=GLOBEX).json()["data"]
        anonymous = httpx2.post(f"{url}/api/runs", json={"prompt": "hi"})
    assert (run["session"], run["tenant"], run["output"]) == ("ada", "acme", "add: 5")
    assert seen == [{"ticket": "T-1", "tenant": "acme"}]
    assert theirs.status_code == missing.status_code == 404
    assert theirs.json() == {
        "error": {
            **missing.json()["error"],
            "message": missing.json()["error"]["message"].replace(f"{run_id}x", run_id),
        }
    }
    assert [s["id"] for s in acme_sessions] == ["ada"]
    assert globex_sessions == []
    assert anonymous.status_code == 401


@pytest.mark.parametrize(
    ("body", "param", "code"),
    [
        ({}, "prompt", None),
        ({"prompt": ""}, "prompt", None),
        ({"prompt": "hi", "model": "x"}, "model", None),
        ({"prompt": "hi", "metadata": {"tenant": "globex"}}, "metadata.tenant", None),
        ({"prompt": "hi", "session": "globex/ada"}, "session", "invalid_session_name"),
        ("not an object", None, None),
    ],
)
def test_a_bad_body_is_a_400_naming_the_field(
    tmp_path: Path, body: object, param: str | None, code: str | None
) -> None:
    """Nothing is queued; the field at fault is named (a tenant comes from keys only)."""
    agent = Agent(TestModel(), registry=Registry())
    app, _ = durable_app(agent, sqlite(tmp_path), ServeSettings(keys=KEYS))
    with running(app) as base_url:
        answer = submit(root(base_url), body, ACME)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert (error["type"], error["param"], error["code"]) == ("invalid_request_error", param, code)


def test_a_body_over_the_limit_is_a_413(tmp_path: Path) -> None:
    agent = Agent(TestModel(), registry=Registry())
    app, _ = durable_app(agent, sqlite(tmp_path), ServeSettings(max_body_bytes=100))
    with running(app) as base_url:
        answer = submit(root(base_url), {"prompt": "x" * 200})
    assert answer.status_code == 413
    assert answer.json()["error"]["code"] == "request_too_large"


def test_without_a_runtime_posting_a_run_is_a_501() -> None:
    """Durable serving is opt-in: the route answers, saying how to turn it on."""
    app = create_app(Agent(TestModel(), registry=Registry()))
    with running(app) as base_url:
        url = root(base_url)
        answer = submit(url, {"prompt": "hi"})
        missing = httpx2.get(f"{url}/api/runs/no-such-run")
    assert answer.status_code == 501
    assert answer.json()["error"]["code"] == "not_implemented"
    assert "fncore serve --durable" in answer.json()["error"]["message"]
    assert (
        missing.json()["error"]["message"]
        == "no run 'no-such-run' in the log (it keeps the last 200)"
    )


def test_durable_runs_over_http_on_postgresql(postgres_url: str) -> None:
    """The same run, its steps recorded in PostgreSQL."""
    agent = Agent(TestModel(), registry=Registry(), tools=[add])
    app, _ = durable_app(agent, postgres_url)
    with running(app) as base_url:
        url = root(base_url)
        run_id = submit(url, {"prompt": "add 2 and 3"}).json()["id"]
        run = finished(url, run_id)
    assert (run["status"], run["output"], run["session"]) == ("SUCCESS", "add: 5", None)
    assert step_kinds(run).count("tool") == 1


def test_a_mounted_app_takes_runs_once_its_lifespan_runs(tmp_path: Path) -> None:
    """Mounted, the app has no lifespan: 503 until the host's lifespan runs the app's."""
    agent = Agent(TestModel(), registry=Registry(), tools=[add])
    app, _ = durable_app(agent, sqlite(tmp_path))
    with running(Starlette(routes=[Mount("/agent", app=app)])) as base_url:
        refused = submit(f"{root(base_url)}/agent", {"prompt": "add 2 and 3"})
    assert refused.status_code == 503
    assert refused.json()["error"]["code"] == "durable_not_launched"

    @asynccontextmanager
    async def lifespan(host: Starlette) -> AsyncIterator[None]:
        async with app.router.lifespan_context(app):
            yield

    site = Starlette(routes=[Mount("/agent", app=app)], lifespan=lifespan)
    with running(site) as base_url:
        url = f"{root(base_url)}/agent"
        run_id = submit(url, {"prompt": "add 2 and 3"}).json()["id"]
        assert finished(url, run_id)["output"] == "add: 5"


APP = '''
from fncore import Agent, Registry
from fncore.middleware import approve
from fncore.testing import ScriptedModel, TestModel


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


agent = Agent(TestModel(), registry=Registry(), tools=[add])
'''


@pytest.mark.parametrize("how", ["flag", "config"])
def test_fncore_serve_durable_takes_runs_into_the_data_directory(tmp_path: Path, how: str) -> None:
    """``--durable`` (or ``[serve] durable = true``): the runs go to durable.sqlite there."""
    (tmp_path / "app.py").write_text(APP)
    args = ["--agent", "app:agent"]
    if how == "flag":
        args.append("--durable")
    else:
        (tmp_path / "fncore.toml").write_text("[serve]\ndurable = true\n")
        args += ["--config", str(tmp_path / "fncore.toml")]
    with serving(tmp_path, *args, "--port", "0") as server:
        run_id = submit(server.url, {"prompt": "add 2 and 3"}).json()["id"]
        run = finished(server.url, run_id)
        status, _ = server.stop(signal.SIGTERM)
        assert status == 0
    assert (run["status"], run["output"]) == ("SUCCESS", "add: 5")
    assert (tmp_path / "durable.sqlite").is_file()
