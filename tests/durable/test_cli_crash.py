"""A durable run SIGKILLed inside its second of three tool calls, finished by a worker.

``fncore run --durable`` runs the ``steps`` agent (`durable_agents`): the fake provider asks
for ``t1``, then ``t2``, then ``t3``, one per round, then answers. The process is killed while
``t2`` holds; ``fncore worker --once`` finishes the run. On SQLite the worker has the dead
process's identity (the one kept in ``FNCORE_HOME``); on PostgreSQL another worker, in
another data directory, takes it over (``--take-over``).
"""

from __future__ import annotations

from pathlib import Path

from durable_support import (
    PROMPT,
    RUN_LINE,
    Running,
    agent_env,
    asks_for,
    field,
    fncore,
    reached,
    step_names,
    tool_log,
)
from fake_provider import FakeProvider
from openai_wire import completion

ANSWER = "t1, t2 and t3 are done"

BEFORE_KILL = ["start t1", "end t1", "start t2"]
"""The tool log when the process dies: t1 ran, t2 started."""

AFTER_RECOVERY = [*BEFORE_KILL, "start t2", "end t2", "start t3", "end t3"]
"""The tool log at the end: t1 not again, t2 once more (it was interrupted), t3 once."""


def _script(fake: FakeProvider) -> None:
    fake.reply(asks_for("t1", "c1"), asks_for("t2", "c2"), asks_for("t3", "c3"), completion(ANSWER))


def _crash(home: Path, env: dict[str, str], fake: FakeProvider) -> str:
    """Start the run, kill it while t2 holds; its id, checked to be left PENDING."""
    run = Running(
        home,
        {**env, "DURABLE_HOLD": "t2"},
        "run",
        "--durable",
        "--agent",
        "durable_agents:steps",
        "--session",
        "s1",
        PROMPT,
    )
    run_id = run.stderr_line(RUN_LINE).group(1)
    reached(Path(env["DURABLE_DIR"]), "t2", run)
    run.kill()
    assert tool_log(Path(env["DURABLE_DIR"])) == BEFORE_KILL
    assert len(fake.requests) == 2  # rounds 1 and 2 were answered
    shown = fncore(home, env, "runs", "show", run_id)
    assert shown.returncode == 0, shown.stderr
    assert field(shown.stdout, "status") == "PENDING"
    return run_id


def _tool_results(fake: FakeProvider, n: int) -> list[str]:
    """The tool-call ids whose results the ``n``-th request sent the model."""
    messages = fake.requests[n].body["messages"]
    return [m["tool_call_id"] for m in messages if m["role"] == "tool"]


def _check_recovered(home: Path, env: dict[str, str], fake: FakeProvider, run_id: str) -> str:
    """Check the finished run: tools, model calls, steps, outcome, session; its `runs show`."""
    folder = Path(env["DURABLE_DIR"])
    assert tool_log(folder) == AFTER_RECOVERY
    # Rounds 1 and 2 were not sent again: 2 requests before the kill, 2 after it, each
    # of those with the whole history, the recorded results of t1 and t2 included.
    assert len(fake.requests) == 4
    assert _tool_results(fake, 2) == ["c1", "c2"]
    assert _tool_results(fake, 3) == ["c1", "c2", "c3"]
    for request in fake.requests:
        users = [m for m in request.body["messages"] if m["role"] == "user"]
        assert [m["content"] for m in users] == [PROMPT]
    shown = fncore(home, env, "runs", "show", run_id)
    assert shown.returncode == 0, shown.stderr
    assert field(shown.stdout, "status") == "SUCCESS"
    assert field(shown.stdout, "output") == ANSWER
    names = step_names(shown.stdout)
    assert [n for n in names if n.startswith("tool:")] == ["tool:t1:c1", "tool:t2:c2", "tool:t3:c3"]
    assert sum(n.startswith("model_call:") for n in names) == 4
    assert names[0] == "session.load"
    assert names[-1] == "session.commit"
    # The session holds the turn once: the prompt, 3 calls and their results, the answer.
    listed = fncore(home, env, "sessions", "list")
    assert listed.stdout == "s1  8 messages  version 1\n", listed.stderr
    conversation = fncore(home, env, "sessions", "show", "s1").stdout
    assert conversation.count(PROMPT) == 1
    assert conversation.count(ANSWER) == 1
    return shown.stdout


def test_a_run_killed_in_its_second_tool_is_finished_by_a_worker_on_sqlite(
    tmp_path: Path, fake_provider: FakeProvider
) -> None:
    """SQLite: the worker with the dead process's identity replays t1, reruns t2, runs t3."""
    _script(fake_provider)
    env = agent_env(tmp_path, model=fake_provider.url)
    run_id = _crash(tmp_path, env, fake_provider)
    done = fncore(tmp_path, env, "worker", "--once", "--agent", "durable_agents:steps")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    _check_recovered(tmp_path, env, fake_provider, run_id)
    listed = fncore(tmp_path, env, "runs", "list", "--status", "success")
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[:4] for line in listed.stdout.splitlines()] == [
        [run_id, "SUCCESS", "steps", "s1"]
    ]


def test_a_run_killed_in_its_second_tool_is_taken_over_by_another_worker_on_postgres(
    tmp_path: Path, fake_provider: FakeProvider, postgres_url: str
) -> None:
    """PostgreSQL: a worker elsewhere, with another identity, takes the dead one's run over."""
    _script(fake_provider)
    env = agent_env(tmp_path, model=fake_provider.url, durable=postgres_url, sessions=postgres_url)
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    run_id = _crash(first, env, fake_provider)
    dead = field(fncore(first, env, "runs", "show", run_id).stdout, "executor")
    done = fncore(
        second,
        env,
        "worker",
        "--once",
        "--agent",
        "durable_agents:steps",
        "--executor-id",
        "second",
        "--take-over",
        dead,
    )
    assert done.returncode == 0, done.stderr
    shown = _check_recovered(second, env, fake_provider, run_id)
    assert dead != "second"
    assert field(shown, "executor") == "second"
