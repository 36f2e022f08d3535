"""A run paused in one process is resumed in others, on PostgreSQL: each decision runs once.

Every worker is a real OS process building the same agent (`approve` on a tool that writes
a line to a file, so the test counts its runs) on its own `PostgresSessionStore`. The test
holds a worker inside the tool, or inside the model round after it, by creating a file
(``tool.hold``, ``model.hold``) that the worker waits on while it exists.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from processes import PRELUDE, kill_after, run_processes

from fncore import Approve, Message, PostgresSessionStore, Session, SessionUpdate

WORKER = (
    PRELUDE
    + '''
from pathlib import Path

from fncore import Agent, Approve, PostgresSessionStore, Registry, Reject
from fncore.middleware import approve
from fncore.testing import FunctionModel, TestModel

url, folder, command, *rest = sys.argv[1:]
files = Path(folder)


async def hold(where):
    # While the test holds this place (its file exists), wait here; a watched worker says so.
    if (files / f"{where}.hold").exists():
        if rest[-1] == "watched":
            print(f"in the {where}", flush=True)
        while (files / f"{where}.hold").exists():
            await asyncio.sleep(0.01)


async def note(line: str) -> str:
    """Write a line down."""
    with (files / "tool.log").open("a") as log:
        log.write(line + "\\n")
    await hold("tool")
    return f"noted {line}"


async def answer(request):
    # TestModel's answer; in the round after the tool's result, once the test lets it.
    if request.messages[-1].role == "tool":
        await hold("model")
    return TestModel().respond(request)


def agent_on(store, lease):
    registry = Registry()
    registry.include(approve(["note"]))
    model = FunctionModel(answer)
    return Agent(model, registry=registry, tools=[note], sessions=store, resume_lease=lease)


def described(outcome):
    error = outcome.swap().value_or(None)
    if error is not None:
        return {"error": type(error).__name__}
    result = outcome.unwrap()
    return {"output": result.output, "messages": [repr(m) for m in result.messages]}


async def pause(session_id, prompt):
    store = PostgresSessionStore(url)
    outcome = await agent_on(store, 60.0).run(prompt, session_id=session_id)
    await store.aclose()
    return outcome.unwrap().paused.checkpoint_id


async def resume(checkpoint_id, decisions, lease, how):
    # Each decision in turn; a busy checkpoint is tried again until it is free. ``how``:
    # alone, watched (killed by the test), or together (with the others started at once).
    store = PostgresSessionStore(url)
    agent = agent_on(store, float(lease))
    await store.open()
    if how == "together":
        await wait_for_start()
    busy, outcomes = 0, []
    for kind in decisions.split(","):
        decision = Approve() if kind == "approve" else Reject("not now")
        deadline = time.monotonic() + 60
        while True:
            outcome = described(await agent.resume(checkpoint_id, decision))
            if outcome.get("error") != "CheckpointBusy" or time.monotonic() > deadline:
                break
            busy += 1
            with (files / "busy.log").open("a") as log:
                log.write("busy\\n")
            await asyncio.sleep(0.05)
        outcomes.append(outcome)
    await store.aclose()
    return {"busy": busy, "outcomes": outcomes}


async def main():
    if command == "pause":
        done = await pause(*rest[:2])
    else:
        done = await resume(*rest[:4])
    print(json.dumps(done))


asyncio.run(main())
'''
)

PROMPT = "Write this down."
ANSWER = "note: noted Write this down."
"""What the model answers once the tool ran."""


async def paused_in_a_process(url: str, folder: Path, session_id: str) -> str:
    """Run the agent on ``session_id`` in a new process, where it pauses; the checkpoint id."""
    (checkpoint_id,) = await run_processes(
        WORKER, url, str(folder), "pause", session_id, PROMPT, count=1
    )
    return str(checkpoint_id)


def resume_args(
    url: str, folder: Path, checkpoint_id: str, decisions: str, lease: str, how: str
) -> list[str]:
    """The worker's arguments to resume (``how``: alone, watched or together)."""
    return [url, str(folder), "resume", checkpoint_id, decisions, lease, how]


async def resumed_in_a_process(
    url: str, folder: Path, checkpoint_id: str, decisions: str = "approve", lease: str = "60"
) -> dict[str, Any]:
    """Resume in a new process, once per decision (retrying while busy); what it reported."""
    args = resume_args(url, folder, checkpoint_id, decisions, lease, "alone")
    (reported,) = await run_processes(WORKER, *args, count=1)
    return reported  # type: ignore[no-any-return]


def tool_runs(folder: Path) -> list[str]:
    log = folder / "tool.log"
    return log.read_text().splitlines() if log.exists() else []


async def stored(url: str, session_id: str, checkpoint_id: str) -> tuple[Session | None, Any]:
    """The session and the checkpoint, as a new store (another process) reads them."""
    store = PostgresSessionStore(url)
    session = await store.load(session_id)
    checkpoint = await store.load_checkpoint(checkpoint_id)
    await store.aclose()
    return session, checkpoint


async def committed(url: str, checkpoint_id: str, before: Session | None = None) -> Session:
    """The session once the resumed reply ended (checkpoint done): ``before``, then the turn.

    The turn is the prompt, the call, its result and the answer, each once.
    """
    session, checkpoint = await stored(url, "ada", checkpoint_id)
    assert checkpoint.stage == "done"
    assert session is not None
    assert session.version == (0 if before is None else before.version) + 1
    kept = () if before is None else before.messages
    assert session.messages[: len(kept)] == kept
    turn = session.messages[len(kept) :]
    assert [m.role for m in turn] == ["user", "assistant", "tool", "assistant"]
    assert turn[0].text == PROMPT
    assert [c.name for c in turn[1].tool_calls] == ["note"]
    assert [r.content for r in turn[2].tool_results] == ["noted Write this down."]
    assert turn[3].text == ANSWER
    return session


async def test_a_run_paused_in_one_process_is_resumed_in_another(
    postgres_url: str, tmp_path: Path
) -> None:
    """Process A pauses; process B approves: the tool runs once, the session gets the turn.

    A third process resuming with the same decision gets the same outcome, and runs
    nothing.
    """
    checkpoint_id = await paused_in_a_process(postgres_url, tmp_path, "ada")
    session, checkpoint = await stored(postgres_url, "ada", checkpoint_id)
    assert session is None  # a paused run commits nothing
    assert checkpoint.stage == "paused"
    assert tool_runs(tmp_path) == []

    first = await resumed_in_a_process(postgres_url, tmp_path, checkpoint_id)
    ((outcome,), busy) = first["outcomes"], first["busy"]
    assert (outcome["output"], busy) == (ANSWER, 0)
    assert tool_runs(tmp_path) == [PROMPT]
    session = await committed(postgres_url, checkpoint_id)

    again = await resumed_in_a_process(postgres_url, tmp_path, checkpoint_id)
    assert again == first
    assert tool_runs(tmp_path) == [PROMPT]
    assert (await stored(postgres_url, "ada", checkpoint_id))[0] == session


async def wait_until(condition: Any, what: str) -> None:
    """Poll ``condition()`` until it holds (a minute at most)."""
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, f"still waiting for {what}"
        await asyncio.sleep(0.02)


async def test_two_processes_resuming_at_once_run_the_tool_once(
    postgres_url: str, tmp_path: Path
) -> None:
    """Processes C and D resume one checkpoint at once with the same decision.

    One claims it and is held inside the tool; the other gets `CheckpointBusy` meanwhile.
    Let go, the first ends the reply, and the other's retry gets the same outcome: the tool
    ran once, and the session holds the turn once.
    """
    checkpoint_id = await paused_in_a_process(postgres_url, tmp_path, "ada")
    (tmp_path / "tool.hold").touch()
    args = resume_args(postgres_url, tmp_path, checkpoint_id, "approve", "60", "together")
    both = asyncio.ensure_future(run_processes(WORKER, *args, count=2))
    busy = tmp_path / "busy.log"
    await wait_until(lambda: tool_runs(tmp_path) and busy.exists(), "the tool and a busy try")
    (tmp_path / "tool.hold").unlink()
    c, d = await both
    assert sorted(bool(r["busy"]) for r in (c, d)) == [False, True]
    assert c["outcomes"] == d["outcomes"]
    assert c["outcomes"][0]["output"] == ANSWER
    assert tool_runs(tmp_path) == [PROMPT]
    await committed(postgres_url, checkpoint_id)


async def a_session_with_a_turn(url: str, session_id: str) -> Session:
    store = PostgresSessionStore(url)
    before = (Message.user("Hello."), Message.assistant("Hi."))
    session = await store.commit(SessionUpdate(session_id, 0, 0, before))
    await store.aclose()
    assert session is not None
    return session


async def killed_resuming(place: str, url: str, folder: Path) -> tuple[Session, str, Any]:
    """Pause a run on a session with a turn; SIGKILL its resumer (lease 1 s) held in ``place``.

    Checks the tool ran once and the session is as before the reply; returns that session,
    the checkpoint's id, and the checkpoint as stored after the kill.
    """
    before = await a_session_with_a_turn(url, "ada")
    checkpoint_id = await paused_in_a_process(url, folder, "ada")
    (folder / f"{place}.hold").touch()
    args = resume_args(url, folder, checkpoint_id, "approve", "1.0", "watched")
    assert kill_after(1, "-c", WORKER, *args) == [f"in the {place}"]
    (folder / f"{place}.hold").unlink()
    session, checkpoint = await stored(url, "ada", checkpoint_id)
    assert session == before
    assert tool_runs(folder) == [PROMPT]
    return before, checkpoint_id, checkpoint


async def test_a_resumer_killed_in_the_tool_leaves_the_checkpoint_resumable(
    postgres_url: str, tmp_path: Path
) -> None:
    """A resumer SIGKILLed inside the approved tool leaves session and checkpoint as they were.

    Once the dead process's claim has lapsed (its lease is 1 s), another process resumes
    the checkpoint. The tool call the kill cut short runs again then (its result was never
    recorded): a tool that a crash may cut short must bear running twice.
    """
    before, checkpoint_id, checkpoint = await killed_resuming("tool", postgres_url, tmp_path)
    assert checkpoint.stage == "paused"
    assert checkpoint.claim != ""  # the dead process's, until its lease runs out

    resumed = await resumed_in_a_process(postgres_url, tmp_path, checkpoint_id, lease="1.0")
    assert resumed["outcomes"][0]["output"] == ANSWER
    assert tool_runs(tmp_path) == [PROMPT, PROMPT]
    await committed(postgres_url, checkpoint_id, before)


async def test_a_resumer_killed_after_the_tool_ran_does_not_run_it_again(
    postgres_url: str, tmp_path: Path
) -> None:
    """A resumer SIGKILLed after the tool ran left its result recorded: no second run.

    The checkpoint is ``decided`` (the decision and the tool's result are stored before the
    next model round), so the next resume runs the model round only. Another decision than
    the recorded one is refused (`DecisionConflict`); the same one finishes the reply.
    """
    before, checkpoint_id, checkpoint = await killed_resuming("model", postgres_url, tmp_path)
    assert checkpoint.stage == "decided"
    assert dict(checkpoint.decisions) == {checkpoint.requests[0].call_id: Approve()}

    resumed = await resumed_in_a_process(
        postgres_url, tmp_path, checkpoint_id, "reject,approve", lease="1.0"
    )
    rejected, approved = resumed["outcomes"]
    assert rejected == {"error": "DecisionConflict"}
    assert approved["output"] == ANSWER
    assert tool_runs(tmp_path) == [PROMPT]
    await committed(postgres_url, checkpoint_id, before)
