"""``fncore serve``: the agent over HTTP with uvicorn, talked to with the ``openai`` SDK."""

from __future__ import annotations

import json
import queue
import signal
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import openai
import pytest
from openai import OpenAI
from processes import SAFETY_SECONDS, Served, serving
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


@pytest.fixture
def app(tmp_path: Path) -> Path:
    """A directory holding ``app.py``, whose ``agent`` has one tool, ``add``."""
    (tmp_path / "app.py").write_text(APP)
    return tmp_path


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


KEY = "sk-tenant-acme-5e1f"


def test_with_keys_any_address_is_served_and_the_key_is_required(app: Path) -> None:
    """Keys from the environment allow 0.0.0.0; requests need one; none shows on stderr.

    The other ``[serve]`` settings reach the app too: here its model's name, and how many
    runs it keeps.
    """
    keys = {
        "FNCORE_SERVE__KEYS__ACME": KEY,
        "FNCORE_SERVE__MODEL_NAME": "bot",
        "FNCORE_SERVE__RUNS_KEPT": "1",
    }
    with serving(
        app, "--agent", "app:agent", "--host", "0.0.0.0", "--port", "0", environ=keys
    ) as server:
        assert server.url.startswith("http://0.0.0.0:")
        url = server.url.replace("0.0.0.0", "127.0.0.1")
        assert json.loads(health(url)) == {"status": "ok"}
        messages = [{"role": "user", "content": "add 2 and 3"}]
        for wrong in ("sk-tenant-acme-5e1", f"{KEY}0"):
            with (
                OpenAI(base_url=f"{url}/v1", api_key=wrong, max_retries=0) as client,
                pytest.raises(openai.AuthenticationError),
            ):
                client.chat.completions.create(model="bot", messages=messages)  # type: ignore[arg-type]
        with OpenAI(base_url=f"{url}/v1", api_key=KEY) as client:
            for _ in range(2):
                reply = client.chat.completions.create(model="bot", messages=messages)  # type: ignore[arg-type]
                assert reply.choices[0].message.content == "add: 5"
        bearer = {"authorization": f"Bearer {KEY}"}
        asked = urllib.request.Request(f"{url}/api/runs", headers=bearer)
        with urllib.request.urlopen(asked) as answer:
            assert len(json.load(answer)["data"]) == 1
        status, printed = server.stop(signal.SIGTERM)
    assert (status, printed) == (0, "")
    assert KEY[:-1] not in printed + server.url


def test_keys_in_the_serve_table_are_checked_without_showing_them(app: Path) -> None:
    """Two tenants with one key is one line naming the tenant, not the key."""
    config = app / "fncore.toml"
    config.write_text(f'[serve.keys]\nacme = "{KEY}"\nglobex = "{KEY}"\n')
    done = run_fncore(app, "serve", "--agent", "app:agent", "--config", str(config), cwd=app)
    assert (done.returncode, done.stderr.count("\n")) == (1, 1)
    assert "keys['globex'] is another tenant's key" in done.stderr
    assert KEY not in done.stderr


GATED = """
import asyncio
import os

from fncore import Agent, Registry
from fncore.testing import FunctionModel


async def reply(request):
    # In flight until the test writes a line to its gate: the line is the answer.
    reader, writer = await asyncio.open_connection("127.0.0.1", int(os.environ["GATE_PORT"]))
    line = await reader.readline()
    writer.close()
    return line.decode().strip()


agent = Agent(FunctionModel(reply), registry=Registry())
"""


def refuses_connections(url: str) -> bool:
    """Whether nothing accepts connections at ``url`` any more."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    try:
        socket.create_connection((host, int(port))).close()
    except ConnectionRefusedError:
        return True
    return False


class Gated:
    """``fncore serve`` of an agent whose model waits at a gate: a request in flight."""

    def __init__(self, server: Served, gate: socket.socket) -> None:
        self.server = server
        self.answers: queue.Queue[tuple[int, str] | BaseException] = queue.Queue()
        self.asking = threading.Thread(target=self._ask, daemon=True)
        self.asking.start()
        self.opened, _ = gate.accept()  # the model is waiting: the request is in flight

    def _ask(self) -> None:
        with OpenAI(base_url=f"{self.server.url}/v1", api_key="x", max_retries=0) as client:
            try:
                reply = client.chat.completions.with_raw_response.create(
                    model="fncore", messages=[{"role": "user", "content": "hi"}]
                )
            except openai.APIError as error:
                self.answers.put(error)
                return
            self.answers.put((reply.status_code, reply.parse().choices[0].message.content or ""))

    def answer(self) -> tuple[int, str] | BaseException:
        """What the request in flight got: its status and answer, or the SDK's error."""
        answer = self.answers.get(timeout=SAFETY_SECONDS)
        self.asking.join()
        return answer


@contextmanager
def gated(app: Path, drain_seconds: float) -> Iterator[Gated]:
    """``fncore serve`` with ``[serve] drain_seconds``, and one request in flight."""
    (app / "gated.py").write_text(GATED)
    (app / "fncore.toml").write_text(f"[serve]\ndrain_seconds = {drain_seconds}\n")
    with socket.socket() as gate:
        gate.bind(("127.0.0.1", 0))
        gate.listen()
        gate.settimeout(SAFETY_SECONDS)
        environ = {"GATE_PORT": str(gate.getsockname()[1])}
        args = ("--agent", "gated:agent", "--port", "0", "--config", "fncore.toml")
        with serving(app, *args, environ=environ) as server:
            flight = Gated(server, gate)
            with flight.opened:
                yield flight


def test_sigterm_stops_accepting_and_lets_the_request_in_flight_finish(app: Path) -> None:
    """After SIGTERM no connection is accepted, yet the request in flight gets its 200; exit 0."""
    with gated(app, drain_seconds=600) as flight:
        server = flight.server
        server.process.send_signal(signal.SIGTERM)
        while not refuses_connections(server.url):
            time.sleep(0.01)
        assert server.process.poll() is None  # still draining
        flight.opened.sendall(b"finished after SIGTERM\n")
        assert flight.answer() == (200, "finished after SIGTERM")
        assert server.end() == (0, "")


def test_a_request_still_running_after_drain_seconds_is_cancelled(app: Path) -> None:
    """``[serve] drain_seconds`` bounds the drain: a run still waiting then is cancelled.

    uvicorn cancels it and answers 500; the command still ends with 0.
    """
    with gated(app, drain_seconds=0.001) as flight:
        status, printed = flight.server.stop(signal.SIGTERM)  # the gate never opens
        assert status == 0
        assert "timeout graceful shutdown exceeded" in printed
        assert "Traceback" not in printed
        assert isinstance(flight.answer(), openai.InternalServerError)  # uvicorn's 500
