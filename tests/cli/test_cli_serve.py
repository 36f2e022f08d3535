"""``fncore serve``: the agent over HTTP with uvicorn, talked to with the ``openai`` SDK."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from openai import OpenAI
from support import run_fncore

from fncore.cli._serve import is_loopback

APP = '''
from fncore import Agent, Registry
from fncore.testing import TestModel


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


agent = Agent(TestModel(), registry=Registry(), tools=[add])
'''

LISTENING = re.compile(r"^serving on (http://[^\s,]+)")
SAFETY_SECONDS = 120
"""How long a line of the server may take before the test gives up (a hang guard, as
`run_fncore`'s; nothing waits for it)."""


@pytest.fixture
def app(tmp_path: Path) -> Path:
    """A directory holding ``app.py``, whose ``agent`` has one tool, ``add``."""
    (tmp_path / "app.py").write_text(APP)
    return tmp_path


class Served:
    """A running ``fncore serve``: its process, its URL, and its stderr lines (``None``: EOF)."""

    def __init__(self, process: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
        self.process = process
        self._lines = lines
        line = self._next()
        found = LISTENING.match(line or "")
        assert found is not None, line
        self.url = found[1]

    def _next(self) -> str | None:
        return self._lines.get(timeout=SAFETY_SECONDS)

    def stop(self, signum: int) -> tuple[int, str]:
        """Send ``signum``; the exit status and what the server printed after listening."""
        self.process.send_signal(signum)
        status = self.process.wait(timeout=SAFETY_SECONDS)
        rest = []
        while (line := self._next()) is not None:
            rest.append(line)
        return status, "".join(rest)


@contextmanager
def serving(cwd: Path, *args: str) -> Iterator[Served]:
    """``fncore serve ARGS`` running in ``cwd``, once it listens (its first stderr line).

    The server is killed at the end if the test did not stop it.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("FNCORE_")}
    env["FNCORE_HOME"] = str(cwd)
    script = Path(sys.executable).parent / "fncore"
    process = subprocess.Popen(
        [str(script), "serve", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    stderr = process.stderr
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        for line in stderr:
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        yield Served(process, lines)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        reader.join(timeout=SAFETY_SECONDS)
        stderr.close()


def health(url: str) -> bytes:
    """The body ``GET /healthz`` answers at ``url``."""
    with urllib.request.urlopen(f"{url}/healthz") as response:
        body: bytes = response.read()
        return body


def free_port() -> int:
    """A port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_serve_answers_the_openai_sdk_and_stops_cleanly_on_sigterm(app: Path) -> None:
    """The agent answers through the SDK; SIGTERM ends the command with 0, no traceback."""
    port = free_port()
    with serving(app, "--agent", "app:agent", "--port", str(port)) as server:
        url = server.url
        assert url == f"http://127.0.0.1:{port}"
        assert json.loads(health(url)) == {"status": "ok"}
        with OpenAI(base_url=f"{url}/v1", api_key="x") as client:
            reply = client.chat.completions.create(
                model="fncore", messages=[{"role": "user", "content": "add 2 and 3"}]
            )
        assert reply.choices[0].message.content == "add: 5"
        assert server.stop(signal.SIGTERM) == (0, "")


def test_ctrl_c_is_an_interrupt_without_a_traceback(app: Path) -> None:
    """SIGINT shuts the server down and exits 130 with one line, as every command does."""
    with serving(app, "--agent", "app:agent", "--port", "0") as server:
        assert server.stop(signal.SIGINT) == (130, "fncore: error: interrupted\n")


def test_the_config_names_the_port_and_the_flag_wins(app: Path) -> None:
    """``[serve] port`` is honoured; ``--port`` wins over it."""
    port = free_port()
    config = app / "fncore.toml"
    config.write_text(f'[agent]\nref = "app:agent"\n\n[serve]\nport = {port}\n')
    with serving(app, "--config", str(config)) as server:
        assert server.url == f"http://127.0.0.1:{port}"
        assert json.loads(health(server.url)) == {"status": "ok"}
        assert server.stop(signal.SIGTERM) == (0, "")
    config.write_text('[serve]\nport = 1\nhost = "localhost"\n')
    with serving(app, "--config", str(config), "--port", "0") as server:
        assert not server.url.endswith(":1")
        assert json.loads(health(server.url)) == {"status": "ok"}
        assert server.stop(signal.SIGTERM) == (0, "")


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "::", "example.com"])
def test_a_host_beyond_this_machine_is_refused(app: Path, host: str) -> None:
    """Without API keys only loopback is served: one line, exit 1, nothing listening."""
    done = run_fncore(app, "serve", "--agent", "app:agent", "--host", host, cwd=app)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"fncore: error: will not serve on {host!r}: ")
    assert "needs API keys" in done.stderr


@pytest.mark.parametrize("port", ["70000", "-1", "http"])
def test_a_bad_port_is_one_line(app: Path, port: str) -> None:
    """A port that is not 0..65535 is a bad command line."""
    done = run_fncore(app, "serve", "--port", port, cwd=app)
    assert done.returncode == 2
    assert done.stderr == (
        "fncore: error: argument --port: a port is a number from 0 to 65535 (0: any free "
        f"one), not {port!r} (see 'fncore --help')\n"
    )


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ('host = "0.0.0.0"', "will not serve on '0.0.0.0': serving beyond this machine"),
        ("port = 70000", "'serve.port'"),
    ],
)
def test_a_bad_serve_table_is_one_line(app: Path, table: str, said: str) -> None:
    """``[serve]`` beyond this machine, or out of range, is refused as the flags are."""
    config = app / "fncore.toml"
    config.write_text(f"[serve]\n{table}\n")
    done = run_fncore(app, "serve", "--config", str(config), cwd=app)
    assert (done.returncode, done.stderr.count("\n")) == (1, 1)
    assert said in done.stderr


def test_a_port_in_use_is_one_line_and_exit_1(app: Path) -> None:
    """When uvicorn cannot listen, its reason and the command's error are one line each."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_fncore(app, "serve", "--agent", "app:agent", "--port", str(port), cwd=app)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"fncore: error: could not serve on 127.0.0.1 port {port}"
    )


def test_without_the_serve_extra_the_error_says_what_to_install(app: Path) -> None:
    """Without uvicorn importable: one line naming the extra to install."""
    hidden = app / "hidden"
    (hidden / "uvicorn").mkdir(parents=True)
    (hidden / "uvicorn" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'uvicorn'\", name='uvicorn')\n"
    )
    done = run_fncore(app, "serve", environ={"PYTHONPATH": str(hidden)}, cwd=app)
    assert done.returncode == 1
    assert done.stderr == (
        "fncore: error: fncore serve needs the serve extra: pip install 'fncore-agents[serve]'\n"
    )


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("LOCALHOST", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.0.0.1", False),
        ("localhost.example.com", False),
    ],
)
def test_loopback_is_this_machine_only(host: str, loopback: bool) -> None:
    """127.0.0.0/8, ::1 and localhost are loopback; every other address is not."""
    assert is_loopback(host) is loopback
