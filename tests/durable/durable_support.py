"""Helpers of the real-engine durable tests: ``fncore`` subprocesses, markers, the tool log.

Every durable run here happens in a subprocess: a SIGKILL needs one, and DBOS keeps one
global instance per process. Processes synchronise on files (a tool's ``reached-<name>``
marker), on their stderr lines and on the database, never on the clock: the only timeouts
are hang guards, generous enough that a busy machine never reaches them.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from fake_provider import Reply
from openai_wire import call, completion

HERE = Path(__file__).parent
"""This folder, which holds `durable_agents` (put on the subprocesses' ``PYTHONPATH``)."""

HANG_GUARD = 180.0
"""Seconds after which a wait fails the test instead of hanging it (never reached when the
code works, however busy the machine)."""

PROMPT = "Do the three steps."
"""The prompt of the ``steps`` agent's runs."""

PASSWORD = "s3cret-Durable-pw"
"""The password of the user ``fncore`` on the ``password_postgres`` fixture's server."""

RUN_LINE = re.compile(r"^run (\S+)$")
"""The line ``fncore run --durable`` prints on stderr when the run starts."""

SERVING = re.compile(r"^worker (\S+) serving queue ")
"""The line ``fncore worker`` prints on stderr once it serves the queue."""


def agent_env(
    folder: Path,
    *,
    model: str | None = None,
    sessions: str | None = None,
    durable: str | None = None,
    hold: str | None = None,
    gate: str | None = None,
    gauge: str | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of an ``fncore`` subprocess using `durable_agents` (see there).

    ``durable`` is ``[durable] url`` (default: SQLite in ``FNCORE_HOME``); ``sessions`` the
    session store (default: ``sessions.db`` in ``folder``).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FNCORE_", "DURABLE_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    env["DURABLE_DIR"] = str(folder)
    env["FNCORE_SESSIONS__URL"] = sessions or f"sqlite:///{folder / 'sessions.db'}"
    chosen = {
        "DURABLE_MODEL": model,
        "DURABLE_HOLD": hold,
        "DURABLE_GATE": gate,
        "DURABLE_GAUGE": gauge,
    }
    env.update({k: v for k, v in chosen.items() if v is not None})
    if durable is not None:
        env["FNCORE_DURABLE__URL"] = durable
    env.update(extra or {})
    return env


def fncore_command() -> list[str]:
    """The installed ``fncore`` script, or ``python -m fncore.cli``."""
    script = Path(sys.executable).parent / "fncore"
    return [str(script)] if script.exists() else [sys.executable, "-m", "fncore.cli"]


def fncore(home: Path, env: Mapping[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``fncore ARGS`` to its end with ``FNCORE_HOME=home``, in ``home``."""
    return subprocess.run(
        [*fncore_command(), *args],
        capture_output=True,
        text=True,
        env={**env, "FNCORE_HOME": str(home)},
        cwd=home,
        timeout=HANG_GUARD,
        check=False,
    )


class Running:
    """An ``fncore`` subprocess whose stderr lines are collected as they come."""

    def __init__(self, home: Path, env: Mapping[str, str], *args: str) -> None:
        self.process = subprocess.Popen(
            [*fncore_command(), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**env, "FNCORE_HOME": str(home)},
            cwd=home,
        )
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    @property
    def pid(self) -> int:
        """The process id."""
        return self.process.pid

    def stderr_line(self, pattern: re.Pattern[str]) -> re.Match[str]:
        """The first stderr line matching ``pattern``, waiting for it.

        Raises:
            AssertionError: if the process ends without printing it.
        """
        deadline = time.monotonic() + HANG_GUARD
        with self._changed:
            while True:
                for line in self.lines:
                    if found := pattern.match(line):
                        return found
                if not self._reader.is_alive() or time.monotonic() > deadline:
                    msg = f"no stderr line {pattern.pattern!r}:\n" + "\n".join(self.lines)
                    raise AssertionError(msg)
                self._changed.wait(0.1)

    def kill(self) -> None:
        """SIGKILL the process and reap it."""
        self.process.send_signal(signal.SIGKILL)
        self.finish()

    def stop(self) -> tuple[int, str]:
        """SIGTERM the process (a worker drains, then exits); its status and stdout."""
        self.process.send_signal(signal.SIGTERM)
        return self.finish()

    def finish(self) -> tuple[int, str]:
        """Wait for the process to end; its status and stdout."""
        assert self.process.stdout is not None  # stderr is the reader thread's alone
        with self.process.stdout:
            out = self.process.stdout.read()
        self.process.wait(timeout=HANG_GUARD)
        self._reader.join(timeout=HANG_GUARD)
        if self.process.stderr is not None:
            self.process.stderr.close()
        return self.process.returncode, out

    def stderr(self) -> str:
        """The stderr lines so far, joined."""
        with self._changed:
            return "\n".join(self.lines)


def wait_until(done: Callable[[], bool], what: str, alive: Running | None = None) -> None:
    """Poll ``done`` until it is true (a hang guard only bounds it).

    Raises:
        AssertionError: if ``alive`` ended first (with its stderr), or the guard ran out.
    """
    deadline = time.monotonic() + HANG_GUARD
    while not done():
        if alive is not None and alive.process.poll() is not None:
            msg = f"the process ended ({alive.process.returncode}) before {what}:\n"
            raise AssertionError(msg + alive.stderr())
        if time.monotonic() > deadline:
            msg = f"gave up waiting for {what}"
            raise AssertionError(msg)
        time.sleep(0.02)


def reached(folder: Path, name: str, alive: Running) -> int:
    """Wait for the marker of a tool holding at ``name``; the pid of the process holding."""
    marker = folder / f"reached-{name}"
    wait_until(lambda: marker.exists() and marker.read_text() != "", f"reached-{name}", alive)
    return int(marker.read_text())


def tool_log(folder: Path) -> list[str]:
    """The tool log's lines (``start t1``, ``end t1``, ...), in order."""
    path = folder / "tools.log"
    return path.read_text().splitlines() if path.exists() else []


def asks_for(tool: str, call_id: str) -> Reply:
    """The fake provider's answer that calls ``tool`` once."""
    arguments = json.dumps({"note": f"{tool} is next"})
    return completion(None, calls=(call(call_id, tool, arguments),), finish="tool_calls")


def one_line_error(done: subprocess.CompletedProcess[str], *absent: str) -> str:
    """The single stderr line of a command that failed with status 1, checked.

    ``absent`` are texts (a password) the line must not show.
    """
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("fncore: error: "), lines
    for text in absent:
        assert text not in done.stderr
    return lines[0]


def step_names(shown: str) -> list[str]:
    """The step names ``fncore runs show`` lists, in order."""
    names: list[str] = []
    for line in shown.splitlines():
        parts = line.split()
        if line.startswith("  ") and len(parts) >= 3 and parts[0].isdigit():
            names.append(parts[1])
    return names


def field(shown: str, name: str) -> str:
    """The value of the line ``name: value`` of ``fncore runs show``."""
    for line in shown.splitlines():
        if line.startswith(f"{name}: "):
            return line.removeprefix(f"{name}: ")
    msg = f"no {name!r} line in:\n{shown}"
    raise AssertionError(msg)


def dump(value: Any) -> str:
    """``value`` as JSON, for assertion messages."""
    return json.dumps(value, indent=1, default=str)


SUBMIT = """
import json, sys
from dbos import DBOSClient
from fncore.durable._config import APP_NAME, WORKFLOW, app_version
from fncore.durable._sqlite import client_engine
from fncore.durable._workflow import Start
import durable_agents

agent = durable_agents.queue()
config = agent._runner.stack.config
url, queue = sys.argv[1:3]
engine = client_engine(url)  # an old SQLite needs fncore's unixepoch, as DurableClient's
client = DBOSClient(
    system_database_url=url,
    system_database_engine=engine,
    application_name=APP_NAME,
    retry_connection_errors=False,
)
options = {
    "queue_name": queue,
    "workflow_name": WORKFLOW,
    "app_version": app_version({agent.name: config}),
}
ids = [
    client.enqueue(options, agent.name, config, None, Start(prompt, None)).workflow_id
    for prompt in json.load(sys.stdin)
]
client.destroy()
if engine is not None:
    engine.dispose()
print(json.dumps(ids))
"""
"""Enqueues runs of `durable_agents.queue` as `DurableRuntime.enqueue` does, over DBOS's
client: a launched process would be a worker too, and take runs."""


def submit(url: str, queue: str, env: Mapping[str, str], prompts: list[str]) -> list[str]:
    """Put a run of the ``queue`` agent per prompt on the queue; their run ids, in order."""
    done = subprocess.run(
        [sys.executable, "-c", SUBMIT, url, queue],
        input=json.dumps(prompts),
        capture_output=True,
        text=True,
        env=dict(env),
        timeout=HANG_GUARD,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    ids: list[str] = json.loads(done.stdout)
    return ids
