"""What a durable run refuses: another stack, a session that moved on, an unreachable database.

And a pause inside a durable run: the workflow ends with the checkpoint saved, and the
resume (a new run, named by the checkpoint and the decisions) runs the tool once.
"""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from dbos import DBOS
from engine_support import SimulatedCrash, Work, durable_settings
from pydantic import SecretStr
from returns.result import Failure

from fncore import Approve, InMemorySessionStore, Message
from fncore.durable import (
    DurableClient,
    DurableError,
    DurableRunInfo,
    DurableRuntime,
    DurableUnavailable,
    DurableUnavailableError,
    StackChanged,
    UnknownAgent,
)
from fncore.durable._workflow import Start, fncore_run
from fncore.errors import SessionConflict
from fncore.middleware import approve
from fncore.settings import DurableSettings


def spare() -> str:
    """Another tool: a changed stack."""
    return "spare"


async def test_a_run_of_another_stack_is_reported_and_left_pending(tmp_path: Path) -> None:
    """Recovering with another tool set: `blocked` names the run; it stays PENDING."""
    settings = durable_settings(tmp_path)
    work = Work(rounds=1, width=1, crash_at="c0_0")
    agent = work.agent()
    bystander = Work(rounds=1, width=1, crash_at="c0_0").agent(name="bystander")
    async with DurableRuntime([agent, bystander], settings) as durable:
        with pytest.raises(SimulatedCrash):
            await durable.run(agent, "go", run_id="old-stack")
        with pytest.raises(SimulatedCrash):
            await durable.run(bystander, "go", run_id="not-served")
        started_with = agent._runner.stack.config
    changed = Work(rounds=1, width=1).agent(tools=[spare])
    async with DurableRuntime([changed], settings) as durable:
        blocked = durable.blocked
        shown = await durable.show("old-stack")
    assert [type(b) for b in blocked] == [StackChanged]  # not the agent it does not serve
    report = blocked[0]
    assert (report.run_id, report.agent) == ("old-stack", "worker")
    assert (report.started_with, report.current) == (started_with, changed._runner.stack.config)
    assert "fncore runs cancel old-stack" in str(report)
    assert "\n" not in str(report)
    assert isinstance(shown, DurableRunInfo)
    assert shown.status == "PENDING"
    assert len(work.tool_calls) == 1  # nothing ran it again


async def test_a_run_started_among_other_agents_is_reported_with_the_versions(
    tmp_path: Path,
) -> None:
    """Same agent stack, other agents served: the application versions differ, so say so."""
    settings = durable_settings(tmp_path)
    agent = Work(rounds=1, width=1, crash_at="c0_0").agent()
    async with DurableRuntime([agent], settings) as durable:
        with pytest.raises(SimulatedCrash):
            await durable.run(agent, "go", run_id="alone")
        before = durable.app_version
    async with DurableRuntime([agent, Work().agent(name="newcomer")], settings) as durable:
        (report,) = durable.blocked
        now = durable.app_version
    assert (report.run_id, report.started_with, report.current) == ("alone", before, now)


async def test_fncore_run_refuses_an_agent_it_does_not_serve_or_another_stack(
    tmp_path: Path,
) -> None:
    """A run submitted for another agent, or another config hash, ends with that error."""
    agent = Work().agent()
    async with DurableRuntime([agent], durable_settings(tmp_path)):
        ghost = await DBOS.start_workflow_async(fncore_run, "ghost", "x", None, Start("go", None))
        other = await DBOS.start_workflow_async(fncore_run, "worker", "x", None, Start("go", None))
        unknown, changed = await ghost.get_result(), await other.get_result()
    assert isinstance(unknown.failure(), UnknownAgent)
    assert unknown.failure().agent == "ghost"
    assert isinstance(changed.failure(), StackChanged)
    assert (changed.failure().started_with, changed.failure().current) == (
        "x",
        agent._runner.stack.config,
    )


async def test_a_recovered_run_whose_session_moved_on_is_a_session_conflict(
    tmp_path: Path,
) -> None:
    """Another turn committed meanwhile: the recovered run does not overwrite it."""
    sessions = InMemorySessionStore()
    work = Work(rounds=1, width=1, crash_at="c0_0")
    agent = work.agent(sessions=sessions)
    async with DurableRuntime([agent], durable_settings(tmp_path)) as durable:
        with pytest.raises(SimulatedCrash):
            await durable.run(agent, "go", session_id="s1", run_id="late")
        other = await Work(rounds=0).agent(sessions=sessions).run("meanwhile", session_id="s1")
        handle = await DBOS.resume_workflow_async("late")
        recovered = await handle.get_result()
        shown = await durable.show("late")
    assert isinstance(shown, DurableRunInfo)
    assert shown.status == "SUCCESS"
    assert shown.error == str(recovered.failure())
    assert other.unwrap().output
    assert isinstance(recovered, Failure)
    assert isinstance(recovered.failure(), SessionConflict)
    session = await sessions.load("s1")
    assert [m.text for m in session.messages if m.role == "user"] == ["meanwhile"]


async def test_a_pause_ends_the_run_and_its_resume_runs_the_tool_once(tmp_path: Path) -> None:
    """The checkpoint is saved in a step; resuming twice with one decision runs one rest."""
    sessions = InMemorySessionStore()
    work = Work(rounds=1, width=1)
    agent = work.agent(approve(["work"]), sessions=sessions)
    async with DurableRuntime([agent], durable_settings(tmp_path)) as durable:
        paused = (await durable.run(agent, "go", session_id="s1", run_id="asks")).unwrap()
        assert paused.stop_reason == "paused"
        assert paused.paused is not None
        checkpoint = paused.paused.checkpoint_id
        asked = await durable.show("asks")
        first, second = await asyncio.gather(
            durable.resume(agent, checkpoint, Approve()),
            durable.resume(agent, checkpoint, Approve()),
        )
        resumed = await durable.runs()
    assert isinstance(asked, DurableRunInfo)
    assert (asked.status, asked.stop_reason) == ("SUCCESS", "paused")
    assert "checkpoint.save" in [s.name for s in asked.steps]
    assert "session.commit" not in [s.name for s in asked.steps]
    assert work.tool_calls == ["c0_0"]
    assert first.unwrap().messages == second.unwrap().messages
    assert first.unwrap().stop_reason == "completed"
    ids = {r.id for r in resumed} - {"asks"}
    assert len(ids) == 1
    assert next(iter(ids)).startswith(f"resume:{checkpoint}:")
    session = await sessions.load("s1")
    assert session.messages[-1].text == first.unwrap().output


async def test_an_unreachable_database_is_one_line_without_the_password() -> None:
    """Port 1 refuses at once: `DurableUnavailableError`, no password in str or repr."""
    url = SecretStr("postgresql://fncore:hunter2-secret@127.0.0.1:1/fncore")
    settings = DurableSettings(url=url, executor_id="w")
    agent = Work().agent()
    with pytest.raises(DurableUnavailableError) as raised:
        async with DurableRuntime([agent], settings):
            pass
    error = raised.value.error
    assert isinstance(error, DurableUnavailable)
    for text in (str(raised.value), repr(raised.value), str(error), repr(error), repr(settings)):
        assert "hunter2-secret" not in text
        assert "\n" not in text
    assert error.url == "postgresql://fncore:[redacted]@127.0.0.1:1/fncore"
    with pytest.raises(DurableUnavailableError) as client_raised:
        async with DurableClient(settings):
            pass
    assert "hunter2-secret" not in str(client_raised.value)
    async with DurableRuntime([agent], durable_settings_in_memory_home()) as durable:
        assert durable.blocked == ()  # the process can launch again after a failed launch


def durable_settings_in_memory_home() -> DurableSettings:
    """The defaults: SQLite in the (per-test) data directory."""
    return DurableSettings(executor_id="after")


async def test_a_runtime_is_one_per_process_and_runs_only_its_own_agents(tmp_path: Path) -> None:
    """A second runtime, an agent not given, two agents of one name: each refused clearly."""
    agent, stranger = Work().agent(), Work().agent(name="stranger")
    with pytest.raises(ValueError, match="two agents are named 'worker'"):
        DurableRuntime([agent, Work().agent()])
    runtime = DurableRuntime([agent], durable_settings(tmp_path))
    with pytest.raises(RuntimeError, match="enter the DurableRuntime first"):
        await runtime.runs()
    async with runtime as durable:
        with pytest.raises(RuntimeError, match="already running in this process"):
            async with DurableRuntime([stranger], durable_settings(tmp_path)):
                pass
        with pytest.raises(ValueError, match="'stranger' is not one"):
            await durable.run(stranger, "go")
        assert (await durable.run(agent, [Message.user("go")])).unwrap().output


async def test_a_database_that_fails_mid_way_is_unavailable_not_an_exception(
    tmp_path: Path,
) -> None:
    """A table gone under the runtime: listing raises one line, a run is a failure value."""
    settings = durable_settings(tmp_path)
    agent = Work(rounds=0).agent()
    async with DurableRuntime([agent], settings) as durable:
        with closing(sqlite3.connect(tmp_path / "durable.sqlite")) as db, db:
            db.execute("DROP TABLE workflow_status")
        with pytest.raises(DurableUnavailableError, match="is unavailable"):
            await durable.runs()
        failed = await durable.run(agent, "go")
    assert isinstance(failed.failure(), DurableUnavailable)


async def test_a_run_cancelled_while_it_runs_ends_as_cancelled(tmp_path: Path) -> None:
    """`cancel` of a running run: its `result` is a `DurableError` saying so."""
    work = Work(rounds=1, width=1, gate=asyncio.Event())
    agent = work.agent()
    async with DurableRuntime([agent], durable_settings(tmp_path)) as durable:
        run = await durable.start(agent, "go", run_id="doomed")
        await work.entered.wait()
        await durable.cancel("doomed")
        work.gate.set()
        result = await run.result()
        shown = await durable.show("doomed")
    assert isinstance(result.failure(), DurableError)
    assert "doomed was cancelled" in str(result.failure())
    assert isinstance(shown, DurableRunInfo)
    assert shown.status == "CANCELLED"


async def test_leaving_the_runtime_lets_a_run_in_flight_finish(tmp_path: Path) -> None:
    """On exit (SIGTERM's drain), a run under way ends before DBOS is torn down."""
    settings = durable_settings(tmp_path, drain_timeout=30)
    work = Work(rounds=1, width=1, gate=asyncio.Event())
    agent = work.agent()
    async with DurableRuntime([agent], settings) as durable:
        await durable.start(agent, "go", run_id="in-flight")
        await work.entered.wait()
        asyncio.get_running_loop().call_soon(work.gate.set)  # once the drain has begun
    async with DurableClient(settings) as client:
        shown = await client.show("in-flight")
    assert isinstance(shown, DurableRunInfo)
    assert shown.status == "SUCCESS"
    assert work.model_calls == [0, 1]


async def test_the_client_must_be_entered_first(tmp_path: Path) -> None:
    """Its methods before ``async with`` say what to do."""
    with pytest.raises(RuntimeError, match="enter the DurableClient first"):
        await DurableClient(durable_settings(tmp_path)).runs()


async def test_a_resumed_run_stopped_mid_way_is_recovered_without_repeating_the_approved_call(
    tmp_path: Path,
) -> None:
    """The resume is a durable run too: recovered, it replays the approved call's record."""
    sessions = InMemorySessionStore()
    work = Work(rounds=2, width=1, crash_at="c1_0")
    agent = work.agent(approve(["work"], when=lambda ctx: ctx.call.id == "c0_0"), sessions=sessions)
    async with DurableRuntime([agent], durable_settings(tmp_path)) as durable:
        paused = (await durable.run(agent, "go", session_id="s1")).unwrap()
        assert paused.paused is not None
        with pytest.raises(SimulatedCrash):
            await durable.resume(agent, paused.paused.checkpoint_id, Approve())
        (stopped,) = await durable.runs(status="PENDING")
        handle = await DBOS.resume_workflow_async(stopped.id)
        recovered = await handle.get_result()
    assert stopped.id.startswith(f"resume:{paused.paused.checkpoint_id}:")
    assert recovered.unwrap().stop_reason == "completed"
    assert work.tool_calls == ["c0_0", "c1_0", "c1_0"]
    session = await sessions.load("s1")
    assert [m.role for m in session.messages].count("user") == 1
    assert session.messages[-1].text == recovered.unwrap().output


async def test_a_postgresql_database_no_worker_used_yet_says_there_are_no_runs(
    postgres_url: str,
) -> None:
    """As the SQLite file that does not exist yet: no durable runs, and who makes them."""
    client = DurableClient(DurableSettings(url=SecretStr(postgres_url)))
    with pytest.raises(DurableUnavailableError) as raised:
        async with client:
            await client.runs()
    message = str(raised.value.error)
    assert message.startswith("no durable runs yet: "), message
    assert "a worker or a durable run makes them" in message
    assert "\n" not in message
