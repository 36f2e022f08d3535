"""The runs log: each run an endpoint makes, with its outcome, usage and spans."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import httpx2
import openai
import pytest
from openai import OpenAI
from opentelemetry import trace as otel_trace
from otel_support import Otel
from served import add
from starlette.applications import Starlette

from fncore import Agent, ModelRequest, Registry
from fncore.middleware import approve, trace
from fncore.serve import RunsLog, ServeSettings, create_app
from fncore.testing import FunctionModel, ScriptedModel, TestModel

Serve = Callable[[Starlette], OpenAI]
USER: list[openai.types.chat.ChatCompletionMessageParam] = [
    {"role": "user", "content": "add 2 and 3"}
]


def api(client: OpenAI, path: str) -> httpx2.Response:
    """``GET path`` on the server ``client`` talks to."""
    root = str(client.base_url).removesuffix("v1/")
    return httpx2.get(root + path.lstrip("/"))


def traced_agent(otel: Otel, registry: Registry | None = None) -> Agent:
    """An agent with ``add`` whose ``trace`` records to ``otel``'s provider."""
    traced = otel.registry()
    if registry is not None:
        traced.include(registry)
    return Agent(TestModel(), registry=traced, tools=[add])


def test_runs_are_listed_newest_first_with_outcome_usage_and_spans(serve: Serve) -> None:
    """Answered runs, streamed or not: their usage, and spans in a tree under the run."""
    otel = Otel()
    client = serve(
        create_app(traced_agent(otel), runs=RunsLog(tracer_provider=otel.tracer_provider))
    )
    client.chat.completions.create(model="fncore", messages=USER)
    list(client.chat.completions.create(model="fncore", messages=USER, stream=True))
    client.chat.completions.create(
        model="fncore", messages=USER, extra_headers={"fncore-session": "s1"}
    )
    runs = api(client, "/api/runs").json()["data"]
    assert [r["session"] for r in runs] == ["s1", None, None]
    for run in runs:
        assert run["endpoint"] == "chat.completions"
        assert run["outcome"] == {"kind": "answer"}
        usage = run["usage"]
        assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"] > 0
        assert run["duration_ms"] > 0
        detail = api(client, f"/api/runs/{run['id']}").json()
        spans = detail["spans"]
        assert [s["name"] for s in spans] == [
            "invoke_agent agent",
            "chat test",
            "execute_tool add",
            "chat test",
        ]
        root = spans[0]
        assert root["parent_id"] is None
        assert {s["parent_id"] for s in spans[1:]} == {root["span_id"]}
        assert all(0 <= s["start_ms"] <= s["end_ms"] for s in spans)
        assert spans[2]["attributes"]["gen_ai.tool.name"] == "add"
        assert spans[1]["attributes"]["gen_ai.response.finish_reasons"] == ["tool_calls"]
        assert detail["span_count"] == 4
    # The processor is added next to the application's exporter, which still gets every span.
    assert len(otel.named("invoke_agent agent")) == 3


def test_paused_and_failed_runs_are_recorded_with_their_outcome(serve: Serve) -> None:
    """A pause names its checkpoint and calls; an error names its type."""
    otel = Otel()
    paused = serve(create_app(traced_agent(otel, approve(["add"]))))
    with pytest.raises(openai.ConflictError) as caught:
        paused.chat.completions.create(model="fncore", messages=USER)
    (run,) = api(paused, "/api/runs").json()["data"]
    checkpoint = caught.value.body["checkpoint_id"]  # type: ignore[index]
    assert run["outcome"] == {"kind": "paused", "checkpoint_id": checkpoint, "calls": ["add"]}
    failing = serve(create_app(Agent(ScriptedModel([]), registry=Registry())))
    with pytest.raises(openai.InternalServerError):
        failing.chat.completions.create(model="fncore", messages=USER)
    (run,) = api(failing, "/api/runs").json()["data"]
    assert run["outcome"]["kind"] == "error"
    assert run["outcome"]["error"] == "ModelError"
    assert "has no reply left" in run["outcome"]["message"]
    assert run["usage"] is None
    assert run["span_count"] == 0


def test_an_unknown_or_forgotten_run_is_a_404(serve: Serve, agent: Agent) -> None:
    """The log keeps the last ``limit`` runs; an older one is gone."""
    client = serve(create_app(agent, runs=RunsLog(limit=1)))
    client.chat.completions.create(model="fncore", messages=USER)
    (first,) = api(client, "/api/runs").json()["data"]
    client.chat.completions.create(model="fncore", messages=USER)
    (second,) = api(client, "/api/runs").json()["data"]
    assert second["id"] != first["id"]
    missing = api(client, f"/api/runs/{first['id']}")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"
    assert "keeps the last 1" in missing.json()["error"]["message"]


def test_the_apps_own_log_keeps_runs_kept_runs(serve: Serve, agent: Agent) -> None:
    """Without a log of one's own, ``ServeSettings.runs_kept`` bounds the app's."""
    client = serve(create_app(agent, ServeSettings(runs_kept=2)))
    for _ in range(3):
        client.chat.completions.create(model="fncore", messages=USER)
    assert len(api(client, "/api/runs").json()["data"]) == 2


async def test_only_spans_started_inside_a_recorded_run_are_kept() -> None:
    """A run outside any ``record`` block leaves the log alone; two blocks never mix."""
    otel = Otel()
    agent = traced_agent(otel)
    runs = RunsLog(tracer_provider=otel.tracer_provider)
    RunsLog(tracer_provider=otel.tracer_provider)  # a second log on the same provider
    await agent.run("outside")

    async def recorded(session: str) -> None:
        with runs.record("test", session) as run:
            await asyncio.sleep(0)
            run.finish(await agent.run(session))

    await asyncio.gather(recorded("a"), recorded("b"))
    for summary in runs.recent():
        detail = runs.get(str(summary["id"]))
        assert detail is not None
        spans = detail["spans"]
        assert isinstance(spans, list)
        assert len(spans) == 4
        assert len({s["parent_id"] for s in spans[1:]}) == 1
    assert len(otel.named("invoke_agent agent")) == 3


async def test_the_global_sdk_provider_is_used_once_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no provider given, spans come from the global one when it is the SDK's."""
    otel = Otel()
    monkeypatch.setattr(otel_trace, "_TRACER_PROVIDER", otel.tracer_provider)
    registry = Registry()
    registry.include(trace())
    agent = Agent(TestModel(), registry=registry, tools=[add])
    runs = RunsLog()
    for _ in range(2):  # attached once, however many runs
        with runs.record("test", None) as run:
            run.finish(await agent.run("traced"))
    assert [r["span_count"] for r in runs.recent()] == [4, 4]


def test_a_block_left_early_records_why() -> None:
    """An exception is an error, a cancellation (or closed stream) is cancelled."""
    runs = RunsLog()
    with pytest.raises(KeyError), runs.record("test", "error"):
        raise KeyError("gone")
    with pytest.raises(asyncio.CancelledError), runs.record("test", "cancelled"):
        raise asyncio.CancelledError
    with runs.record("test", "unknown"):
        pass
    outcomes = {r["session"]: r["outcome"] for r in runs.recent()}
    assert outcomes == {
        "error": {"kind": "error", "error": "KeyError", "message": "'gone'"},
        "cancelled": {"kind": "cancelled"},
        "unknown": {"kind": "unknown"},
    }


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1, not 0"):
        RunsLog(limit=0)


def test_a_stream_the_client_leaves_is_recorded_as_cancelled(serve: Serve) -> None:
    """The client goes away mid-run: the run is cancelled, and the log says so."""
    started = threading.Event()

    async def never(request: ModelRequest) -> str:
        started.set()
        await asyncio.Event().wait()  # until cancelled
        return "never"

    client = serve(create_app(Agent(FunctionModel(never), registry=Registry())))
    url = f"{client.base_url}chat/completions"
    body = {"model": "fncore", "messages": USER, "stream": True}
    with httpx2.stream("POST", url, json=body) as response:
        next(response.iter_lines())
        assert started.wait(30)
    for _ in range(3000):  # the server notices the closed connection, then cancels
        (run,) = api(client, "/api/runs").json()["data"]
        if run["outcome"]["kind"] != "running":
            break
        time.sleep(0.01)
    assert run["outcome"] == {"kind": "cancelled"}
    assert run["duration_ms"] is not None
