"""``fncore run`` pausing for approval, and ``fncore resume`` finishing it in a new process."""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest
from support import run_fncore

from fncore import Edit
from fncore.cli._commands import example_agent

PROMPT = "What is 2 + 3?"
ANSWER = "add: 5; multiply: 6; word_count: 5"
EXAMPLE = Path(__file__).parents[2] / "examples" / "approval.toml"
WAITS = '[tool_call] multiply({"a":2,"b":3}) -> paused: waiting for approval (call_0_1)'
"""The trace line of the call that waits: a pause, not an error."""


@pytest.fixture
def config() -> str:
    """The example configuration: ``approve`` before every ``multiply``."""
    return str(EXAMPLE)


def paused(done: subprocess.CompletedProcess[str]) -> str:
    """The checkpoint id a paused run printed last, checked to have exited with status 3."""
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert 'waiting: Run multiply with {"a": 2, "b": 3}? (call call_0_1; approve, edit, ' in (
        done.stderr
    )
    assert WAITS in done.stderr.splitlines()
    assert "Pause(" not in done.stderr
    checkpoint = done.stdout.splitlines()[-1]
    assert re.fullmatch(r"[0-9a-f]{32}", checkpoint), done.stdout
    return checkpoint


def test_a_paused_run_exits_3_and_resumes_in_a_new_process(tmp_path: Path, config: str) -> None:
    checkpoint = paused(run_fncore(tmp_path, "run", "--config", config, "--session", "s", PROMPT))
    listed = run_fncore(tmp_path, "sessions", "list")
    assert listed.stdout == ""  # the turn is not committed while it waits
    done = run_fncore(tmp_path, "resume", checkpoint, "--approve", "--config", config)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ANSWER + "\n"
    again = run_fncore(tmp_path, "resume", checkpoint, "--approve", "--config", config)
    assert again.stdout == done.stdout  # the same outcome, the decision applied once
    listed = run_fncore(tmp_path, "sessions", "list")
    assert listed.stdout == "s  4 messages  version 1\n"


def test_a_rejected_call_tells_the_model(tmp_path: Path, config: str) -> None:
    checkpoint = paused(run_fncore(tmp_path, "run", "--config", config, "--stream", PROMPT))
    done = run_fncore(
        tmp_path, "resume", checkpoint, "--reject", "--message", "not now", "--config", config
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "add: 5; multiply: not now; word_count: 5\n"
    other = run_fncore(tmp_path, "resume", checkpoint, "--approve", "--config", config)
    assert other.returncode == 1
    assert other.stderr.startswith("fncore: error: checkpoint ")
    assert "already resumed with other decisions" in other.stderr


@pytest.mark.parametrize(
    ("argv", "code", "says"),
    [
        (["resume", "0" * 32, "--approve"], 1, "no checkpoint '" + "0" * 32 + "'"),
        (["resume", "abc"], 2, "one of the arguments --approve --reject is required"),
        (["resume", "abc", "--approve", "--message", "x"], 2, "--message goes with --reject"),
    ],
)
def test_resume_errors_are_one_line(
    tmp_path: Path, config: str, argv: list[str], code: int, says: str
) -> None:
    done = run_fncore(tmp_path, *argv, "--config", config)
    assert done.returncode == code, done.stderr
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert says in done.stderr


def test_at_a_terminal_the_run_asks(tmp_path: Path, config: str) -> None:
    """With a terminal on stdin and stdout, the run asks, and finishes in one process."""
    controller, terminal = os.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FNCORE_")}
    env["FNCORE_HOME"] = str(tmp_path)
    command = [sys.executable, "-m", "fncore.cli", "run", "--config", config, PROMPT]
    process = subprocess.Popen(
        command, stdin=terminal, stdout=terminal, stderr=subprocess.PIPE, env=env
    )
    os.close(terminal)
    os.write(controller, b"e\n")  # edit ...
    os.write(controller, b'{"a": 4, "b": 5}\n')  # ... with these arguments
    seen = b""
    while True:
        ready, _, _ = select.select([controller], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(controller, 4096)
        except OSError:  # the process ended and closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    assert process.wait(timeout=60) == 0
    os.close(controller)
    assert process.stderr is not None
    asked = process.stderr.read().decode()  # readline may prompt on stderr
    process.stderr.close()
    text = seen.decode().replace("\r\n", "\n")
    assert 'Run multiply with {"a": 2, "b": 3}? [a]pprove/[r]eject/[e]dit: ' in text + asked
    assert "New arguments (JSON object): " in text + asked
    assert text.endswith(
        'multiply: [A human edited this call before it ran: it ran with arguments {"a": 4, '
        '"b": 5}, not the ones you gave. Do not repeat the original call.]\n20; '
        "word_count: 5\n"
    )


async def test_the_trace_shows_a_pause_then_the_edited_arguments(config: str) -> None:
    """The waiting call reads as a pause; resumed with an edit, it shows what it ran with."""
    lines: list[str] = []
    container, agent = example_agent(config, {}, trace=lines.append)
    async with container:
        paused = (await agent.run(PROMPT)).unwrap().paused
        assert paused is not None
        assert WAITS in lines
        lines.clear()
        done = await agent.resume(paused.checkpoint_id, Edit({"a": 4, "b": "5"}))
    assert done.unwrap().output.endswith("20; word_count: 5")
    (call,) = [line for line in lines if line.startswith("[tool_call]")]
    assert call.startswith('[tool_call] multiply({"a":4,"b":5}) edited -> [A human edited')
