"""The durable commands' bad input: one line each, exit status 1, no traceback, no password.

And what an operator does about a run that cannot be recovered: a stack that changed
refuses it (the run stays PENDING, intact), the stack it started with finishes it, and
``fncore runs cancel`` ends it for good.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from durable_support import (
    PASSWORD,
    PROMPT,
    RUN_LINE,
    Running,
    agent_env,
    asks_for,
    field,
    fncore,
    one_line_error,
    reached,
    tool_log,
)
from fake_provider import FakeProvider, free_port
from openai_wire import completion

UNUSED = "http://127.0.0.1:1"
"""A model URL for commands that call no model."""


def _killed_in_t2(tmp_path: Path, env: dict[str, str]) -> str:
    """A ``steps`` run killed while t2 holds; its id."""
    run = Running(
        tmp_path,
        {**env, "DURABLE_HOLD": "t2"},
        *("run", "--durable", "--agent", "durable_agents:steps", PROMPT),
    )
    run_id = run.stderr_line(RUN_LINE).group(1)
    reached(tmp_path, "t2", run)
    run.kill()
    return run_id


@pytest.mark.parametrize(
    "command",
    [
        ("runs", "list"),
        ("runs", "show", "some-run"),
        ("worker", "--once", "--agent", "durable_agents:steps"),
        ("run", "--durable", "--agent", "durable_agents:steps", PROMPT),
    ],
    ids=["list", "show", "worker", "run"],
)
def test_an_unreachable_database_is_one_line_without_its_password(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    """Nothing listens at ``[durable] url``: one line naming the problem, no password."""
    url = f"postgresql://fncore:{PASSWORD}@127.0.0.1:{free_port()}/fncore"
    env = agent_env(tmp_path, model="http://127.0.0.1:1", durable=url)
    line = one_line_error(fncore(tmp_path, env, *command), PASSWORD)
    assert "durable runs' database 'postgresql://fncore:[redacted]@127.0.0.1:" in line
    assert "is unavailable: " in line


def test_a_wrong_password_is_one_line_that_never_shows_it(
    tmp_path: Path, password_postgres: str
) -> None:
    """A wrong password fails in one line that shows neither it nor the right one."""
    wrong = "not-the-Password-42"
    url = password_postgres.replace("fncore@", f"fncore:{wrong}@")
    env = agent_env(tmp_path, durable=url)
    line = one_line_error(fncore(tmp_path, env, "runs", "list"), wrong, PASSWORD)
    assert "password" in line
    url = password_postgres.replace("fncore@", f"fncore:{PASSWORD}@")
    right = agent_env(tmp_path, model=UNUSED, durable=url)
    idle = fncore(tmp_path, right, "worker", "--once", "--agent", "durable_agents:steps")
    assert (idle.returncode, idle.stderr) == (0, "")
    done = fncore(tmp_path, right, "runs", "list")
    assert (done.returncode, done.stderr) == (0, "no durable runs\n")


@pytest.mark.parametrize("action", ["show", "cancel"])
def test_an_unknown_run_id_is_one_line(tmp_path: Path, action: str) -> None:
    """``runs show`` and ``runs cancel`` of an id no run has: one line naming it."""
    env = agent_env(tmp_path, model=UNUSED)
    idle = fncore(tmp_path, env, "worker", "--once", "--agent", "durable_agents:steps")
    assert (idle.returncode, idle.stderr) == (0, "")  # made the database; nothing to do
    line = one_line_error(fncore(tmp_path, env, "runs", action, "no-such-run"))
    assert line == "fncore: error: no durable run 'no-such-run' (fncore runs list shows the runs)"


def test_runs_list_says_when_there_are_none(tmp_path: Path) -> None:
    """``runs list``: before any durable run, one line; then an empty listing.

    An unknown ``--status`` is one line listing the known ones.
    """
    env = agent_env(tmp_path, model=UNUSED)
    line = one_line_error(fncore(tmp_path, env, "runs", "list"))
    assert line.startswith("fncore: error: no durable runs yet: ")
    fncore(tmp_path, env, "worker", "--once", "--agent", "durable_agents:steps")
    done = fncore(tmp_path, env, "runs", "list")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "no durable runs\n")
    line = one_line_error(fncore(tmp_path, env, "runs", "list", "--status", "done"))
    assert line.startswith("fncore: error: unknown run status 'done' (one of: PENDING, ")


def test_a_run_of_a_changed_stack_is_refused_then_finished_by_its_own(
    tmp_path: Path, fake_provider: FakeProvider
) -> None:
    """Another stack refuses the run in one line (exit 1, still PENDING); its own finishes it."""
    fake_provider.reply(
        asks_for("t1", "c1"), asks_for("t2", "c2"), asks_for("t3", "c3"), completion("done")
    )
    env = agent_env(tmp_path, model=fake_provider.url)
    run_id = _killed_in_t2(tmp_path, env)
    refused = fncore(tmp_path, env, "worker", "--once", "--agent", "durable_agents:changed")
    line = one_line_error(refused)
    assert run_id in line
    assert "different stack" in line
    assert f"fncore runs cancel {run_id}" in line
    assert field(fncore(tmp_path, env, "runs", "show", run_id).stdout, "status") == "PENDING"
    assert tool_log(tmp_path) == ["start t1", "end t1", "start t2"]
    done = fncore(tmp_path, env, "worker", "--once", "--agent", "durable_agents:steps")
    assert done.returncode == 0, done.stderr
    assert field(fncore(tmp_path, env, "runs", "show", run_id).stdout, "status") == "SUCCESS"
    assert tool_log(tmp_path) == [
        *("start t1", "end t1", "start t2"),
        *("start t2", "end t2", "start t3", "end t3"),
    ]


def test_a_cancelled_run_is_not_recovered(tmp_path: Path, fake_provider: FakeProvider) -> None:
    """``runs cancel`` ends a pending run: CANCELLED, and no worker goes on with it."""
    fake_provider.reply(asks_for("t1", "c1"), asks_for("t2", "c2"))
    env = agent_env(tmp_path, model=fake_provider.url)
    run_id = _killed_in_t2(tmp_path, env)
    cancelled = fncore(tmp_path, env, "runs", "cancel", run_id)
    assert cancelled.returncode == 0, cancelled.stderr
    assert cancelled.stdout == f"cancelled {run_id}\n"
    done = fncore(tmp_path, env, "worker", "--once", "--agent", "durable_agents:steps")
    assert done.returncode == 0, done.stderr
    assert field(fncore(tmp_path, env, "runs", "show", run_id).stdout, "status") == "CANCELLED"
    assert tool_log(tmp_path) == ["start t1", "end t1", "start t2"]
    assert len(fake_provider.requests) == 2


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (("run", "--durable", "--stream", PROMPT), "--durable runs are not streamed"),
        (("runs",), "a runs action is required"),
        (("runs", "list", "--limit", "0"), "a limit is a whole number of at least 1"),
    ],
)
def test_bad_command_lines_are_one_line_with_status_2(
    tmp_path: Path, command: tuple[str, ...], message: str
) -> None:
    """Usage mistakes of the durable commands: status 2, one line saying what to change."""
    done = fncore(tmp_path, agent_env(tmp_path), *command)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1
    assert message in done.stderr
