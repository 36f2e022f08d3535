"""A durable run that pauses for approval, approved from other processes: the tool runs once.

The pause ends the run's workflow (SUCCESS, stop reason ``paused``) with its checkpoint
saved; ``fncore resume --durable`` starts the rest as a new durable run. Two processes
approving at once still run the tool once, and call the model once more between them.
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
    tool_log,
)
from fake_provider import FakeProvider
from openai_wire import completion

ANSWER = "t2 ran, as approved"


def test_a_paused_durable_run_approved_twice_at_once_runs_its_tool_once(
    tmp_path: Path, fake_provider: FakeProvider
) -> None:
    """Process A pauses before t2; B and C approve at once: t2 runs once, both answer."""
    fake_provider.reply(asks_for("t2", "c2"), completion(ANSWER))
    env = agent_env(
        tmp_path, model=fake_provider.url, durable=f"sqlite:///{tmp_path / 'durable.sqlite'}"
    )
    agent = ("--agent", "durable_agents:careful")
    homes = [tmp_path / name for name in ("a", "b", "c")]
    for home in homes:
        home.mkdir()
    paused = fncore(homes[0], env, "run", "--durable", *agent, "--session", "s", PROMPT)
    assert paused.returncode == 3, paused.stderr
    checkpoint = paused.stdout.splitlines()[-1]
    run_id = RUN_LINE.match(paused.stderr.splitlines()[0])
    assert run_id is not None, paused.stderr
    shown = fncore(homes[0], env, "runs", "show", run_id.group(1)).stdout
    assert field(shown, "status") == "SUCCESS"
    assert field(shown, "stop reason") == "paused"
    assert tool_log(tmp_path) == []
    resumes = [
        Running(home, env, "resume", checkpoint, "--approve", "--durable", *agent)
        for home in homes[1:]
    ]
    outcomes = [resume.finish() for resume in resumes]
    assert outcomes == [(0, ANSWER + "\n")] * 2, [r.stderr() for r in resumes]
    assert tool_log(tmp_path) == ["start t2", "end t2"]
    assert len(fake_provider.requests) == 2
    listed = fncore(homes[0], env, "sessions", "list")
    assert listed.stdout == "s  4 messages  version 1\n", listed.stderr
