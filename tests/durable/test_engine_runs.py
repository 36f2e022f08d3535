"""DurableRuntime on a real DBOS (SQLite): runs, their steps, the queue, listing, the client."""

from __future__ import annotations

from pathlib import Path

import pytest
from engine_support import Work, durable_settings
from pydantic import SecretStr
from returns.result import Success

from fncore import InMemorySessionStore
from fncore.durable import (
    DurableClient,
    DurableRunInfo,
    DurableRuntime,
    DurableUnavailableError,
    UnknownRun,
)
from fncore.settings import DurableSettings


async def test_a_durable_run_answers_as_agent_run_and_lists_its_steps_by_name(
    tmp_path: Path,
) -> None:
    """Each model call and tool call is a step, named; the session loads and commits once."""
    work = Work(rounds=1, width=2)
    sessions = InMemorySessionStore()
    agent = work.agent(sessions=sessions)
    plain = await Work(rounds=1, width=2).agent().run("go")
    async with DurableRuntime([agent], durable_settings(tmp_path)) as durable:
        result = await durable.run(agent, "go", session_id="s1", run_id="run-1")
        shown = await durable.show("run-1")
    assert result.unwrap().messages == plain.unwrap().messages
    assert result.unwrap().output == plain.unwrap().output
    assert isinstance(shown, DurableRunInfo)
    assert [s.name for s in shown.steps] == [
        "session.load",
        "model_call:1",
        "tool:work:c0_0",
        "tool:work:c0_1",
        "model_call:2",
        "session.commit",
    ]
    assert [s.id for s in shown.steps] == [1, 2, 3, 4, 5, 6]
    assert all(s.ok and s.error is None for s in shown.steps)
    assert (shown.status, shown.agent, shown.session_id) == ("SUCCESS", "worker", "s1")
    assert (shown.output, shown.stop_reason, shown.error) == (
        result.unwrap().output,
        "completed",
        None,
    )
    assert shown.executor_id == "test-worker"
    session = await sessions.load("s1")
    assert session.messages[-1].text == result.unwrap().output


async def test_a_started_run_gives_its_id_first_and_its_result_later(tmp_path: Path) -> None:
    """`start` returns the run under its id; the same id again gives the same run."""
    work = Work(rounds=1, width=1)
    agent = work.agent()
    async with DurableRuntime([agent], durable_settings(tmp_path)) as durable:
        run = await durable.start(agent, "go", run_id="fixed")
        assert run.id == "fixed"
        first = await run.result()
        again = await (await durable.start(agent, "go", run_id="fixed")).result()
    assert isinstance(first, Success)
    assert again.unwrap().messages == first.unwrap().messages
    assert work.model_calls == [0, 1]  # the second start ran nothing


async def test_an_enqueued_run_is_taken_from_the_queue_and_listed(tmp_path: Path) -> None:
    """`enqueue` gives an id; the worker runs it; `runs` and a `DurableClient` list it."""
    work = Work(rounds=1, width=1)
    agent = work.agent()
    settings = durable_settings(tmp_path, worker_concurrency=2, global_concurrency=4)
    async with DurableRuntime([agent], settings) as durable:
        run_id = await durable.enqueue(agent, "go", metadata={"who": "me"})
        await durable.wait_idle()
        listed = await durable.runs()
        succeeded = await durable.runs(status="success", limit=1)
    assert [r.id for r in listed] == [run_id]
    assert [r.status for r in succeeded] == ["SUCCESS"]
    assert listed[0].steps == ()
    async with DurableClient(settings) as client:
        shown = await client.show(run_id)
        assert [r.id for r in await client.runs()] == [run_id]
        assert await client.cancel("nope") == await client.show("nope")
    assert isinstance(shown, DurableRunInfo)
    assert (shown.status, shown.agent) == ("SUCCESS", "worker")
    assert [s.name for s in shown.steps] == ["model_call:1", "tool:work:c0_0", "model_call:2"]


async def test_an_unknown_run_id_is_an_unknown_run_value(tmp_path: Path) -> None:
    """`show` and `cancel` of an id no run has give `UnknownRun`, one line naming it."""
    agent = Work().agent()
    async with DurableRuntime([agent], durable_settings(tmp_path)) as durable:
        shown = await durable.show("no-such-run")
        cancelled = await durable.cancel("no-such-run")
    assert isinstance(shown, UnknownRun)
    assert shown == cancelled
    assert shown.run_id == "no-such-run"
    assert "'no-such-run'" in str(shown)
    assert "\n" not in str(shown)


async def test_a_cancelled_run_is_listed_as_cancelled(tmp_path: Path) -> None:
    """`cancel` of an enqueued run leaves it cancelled, and its result says so."""
    work = Work(rounds=1, width=1)
    agent = work.agent()
    settings = durable_settings(tmp_path, global_concurrency=1)
    async with DurableRuntime([agent], settings) as durable:
        await durable.cancel(await durable.enqueue(agent, "go", run_id="to-cancel"))
        shown = await durable.show("to-cancel")
    assert isinstance(shown, DurableRunInfo)
    assert shown.status == "CANCELLED"


async def test_an_unknown_status_is_refused(tmp_path: Path) -> None:
    """`runs(status=...)` names the statuses there are."""
    agent = Work().agent()
    async with DurableRuntime([agent], durable_settings(tmp_path)) as durable:
        with pytest.raises(ValueError, match=r"unknown run status 'done'.*SUCCESS"):
            await durable.runs(status="done")


async def test_the_client_of_a_database_not_made_yet_says_so(tmp_path: Path) -> None:
    """No file yet: one line saying that no durable run was made, not a driver error."""
    with pytest.raises(DurableUnavailableError, match="no durable runs yet"):
        async with DurableClient(durable_settings(tmp_path)):
            pass


async def test_a_durable_run_on_postgresql_is_listed_by_a_client(postgres_url: str) -> None:
    """The same on PostgreSQL: DBOS's schema is made at launch; a client reads the run."""
    work = Work(rounds=1, width=2)
    agent = work.agent()
    settings = DurableSettings(url=SecretStr(postgres_url), executor_id="pg-worker")
    async with DurableRuntime([agent], settings) as durable:
        result = await durable.run(agent, "go", run_id="on-pg")
    async with DurableClient(settings) as client:
        shown = await client.show("on-pg")
    assert isinstance(shown, DurableRunInfo)
    assert (shown.status, shown.output) == ("SUCCESS", result.unwrap().output)
    assert [s.name for s in shown.steps][1:3] == ["tool:work:c0_0", "tool:work:c0_1"]
