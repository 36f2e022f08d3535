"""``fncore worker`` stopped by SIGTERM: it takes no more runs, and finishes the one in flight."""

from __future__ import annotations

import re
import signal
from pathlib import Path

from durable_support import SERVING, Running, agent_env, field, fncore, reached, submit


def test_sigterm_drains_the_run_in_flight_then_exits_0(tmp_path: Path) -> None:
    """A run whose tool is under way when SIGTERM comes still succeeds before the exit."""
    url = f"sqlite:///{tmp_path / 'durable.sqlite'}"
    env = agent_env(tmp_path, durable=url, gate="job-1")
    worker = Running(tmp_path, env, "worker", "--agent", "durable_agents:queue")
    name = worker.stderr_line(SERVING).group(1)
    [run_id] = submit(url, "fncore-runs", env, ["job-1"])
    reached(tmp_path, "job-1", worker)
    worker.process.send_signal(signal.SIGTERM)
    worker.stderr_line(re.compile(f"^worker {re.escape(name)} draining$"))
    (tmp_path / "go-job-1").touch()  # the tool goes on only now, while the worker drains
    status, out = worker.finish()
    assert (status, out) == (0, ""), worker.stderr()
    shown = fncore(tmp_path, env, "runs", "show", run_id).stdout
    assert field(shown, "status") == "SUCCESS"
    assert field(shown, "output") == "finished job-1"
    assert field(shown, "executor") == name
