"""``fncore run`` and ``fncore serve`` export their spans over OTLP when the environment asks.

A real OTLP/HTTP receiver on 127.0.0.1 decodes what arrives (``ExportTraceServiceRequest``
protobufs, with ``opentelemetry-proto``); the CLI runs in a subprocess, as a user runs it,
so its global tracer provider and its exit (which flushes the batch) are its own.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from opentelemetry import trace as otel_trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from processes import LISTENING
from support import run_fncore
from test_cli import ANSWER, PROMPT, _fncore_command
from test_cli_serve import APP, free_port

from fncore.cli._otlp import export_from_environment

TRACED = '[[middleware]]\nuse = "trace"\n'
"""A configuration whose agent has the ``trace`` built-in (on the global providers)."""
RUN_SPANS = ["chat test", "chat test", "execute_tool add", "execute_tool multiply"]
RUN_SPANS += ["execute_tool word_count", "invoke_agent agent"]
"""The spans of the example agent's run on `PROMPT`, sorted by name."""
TRACED_APP = "from fncore.middleware import trace\n" + APP.replace(
    "agent = Agent(", "registry = Registry()\nregistry.include(trace())\nagent = Agent("
).replace("registry=Registry()", "registry=registry")
"""``test_cli_serve``'s app with the ``trace`` built-in on its agent."""


class Receiver:
    """An OTLP/HTTP trace receiver: the spans it was sent, by name, and the paths posted to."""

    def __init__(self) -> None:
        self.spans: list[str] = []
        self.paths: list[str] = []
        self.services: set[str] = set()
        received = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest.FromString(body)
                received.paths.append(self.path)
                for resource_spans in request.resource_spans:
                    for attribute in resource_spans.resource.attributes:
                        if attribute.key == "service.name":
                            received.services.add(attribute.value.string_value)
                    for scope_spans in resource_spans.scope_spans:
                        received.spans += [span.name for span in scope_spans.spans]
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: object) -> None:
                """Quiet."""

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A running `Receiver`, shut down after the test."""
    found = Receiver()
    thread = threading.Thread(target=found.server.serve_forever, daemon=True)
    thread.start()
    yield found
    found.server.shutdown()
    found.server.server_close()
    thread.join()


@pytest.fixture
def traced(tmp_path: Path) -> Path:
    """A configuration file that puts ``trace`` on the agent."""
    config = tmp_path / "fncore.toml"
    config.write_text(TRACED)
    return config


def test_run_exports_its_spans_to_the_endpoint(
    tmp_path: Path, traced: Path, receiver: Receiver
) -> None:
    """With OTEL_EXPORTER_OTLP_ENDPOINT, every span of the run reaches the receiver."""
    environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_SERVICE_NAME": "calc"}
    done = run_fncore(tmp_path, "--config", str(traced), "run", PROMPT, environ=environ)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ANSWER + "\n"
    assert sorted(receiver.spans) == RUN_SPANS
    assert set(receiver.paths) == {"/v1/traces"}
    assert receiver.services == {"calc"}


def test_serve_exports_its_runs_spans_by_the_time_it_stops(
    tmp_path: Path, receiver: Receiver
) -> None:
    """A served run's spans reach the receiver, the last batch flushed as SIGTERM stops it."""
    (tmp_path / "app.py").write_text(TRACED_APP)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FNCORE_", "OTEL_"))}
    env |= {"FNCORE_HOME": str(tmp_path)}
    env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = f"{receiver.url}/spans"
    command = [*_fncore_command(), "serve", "--agent", "app:agent", "--port", str(free_port())]
    process = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stderr is not None
        found = LISTENING.match(process.stderr.readline())
        assert found is not None
        body = {"model": "fncore", "messages": [{"role": "user", "content": "add 2 and 3"}]}
        request = urllib.request.Request(
            f"{found[1]}/v1/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request) as response:
            assert json.load(response)["choices"][0]["message"]["content"] == "add: 5"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=120) == 0
        assert process.stderr.read() == ""
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        if process.stderr is not None:
            process.stderr.close()
    assert sorted(receiver.spans) == [
        "chat test",
        "chat test",
        "execute_tool add",
        "invoke_agent agent",
    ]
    assert set(receiver.paths) == {"/spans"}


def test_without_the_variable_nothing_is_set_up() -> None:
    """No endpoint in the environment: the global tracer provider is left as it was."""
    before = otel_trace.get_tracer_provider()
    export_from_environment({"OTEL_SERVICE_NAME": "calc"})
    export_from_environment(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "true"}
    )
    assert otel_trace.get_tracer_provider() is before


HIDDEN = """
import sys
sys.modules["opentelemetry.exporter.otlp.proto.http.trace_exporter"] = None
from fncore.cli import main
raise SystemExit(main(["run", sys.argv[1]]))
"""


def _without_exporter(tmp_path: Path, environ: dict[str, str]) -> tuple[int, str, str]:
    """``fncore run PROMPT`` with the exporter package unimportable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FNCORE_", "OTEL_"))}
    env |= {"FNCORE_HOME": str(tmp_path), **environ}
    done = subprocess.run(
        [sys.executable, "-c", HIDDEN, PROMPT],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


def test_a_missing_exporter_is_one_clear_line_when_asked_for(tmp_path: Path) -> None:
    """Endpoint set, exporter missing: one error line naming the extra; nothing else runs."""
    status, out, err = _without_exporter(tmp_path, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"})
    assert status == 1
    assert out == ""
    assert err == (
        "fncore: error: OTEL_EXPORTER_OTLP_ENDPOINT is set: exporting spans over OTLP needs "
        "pip install 'fncore-agents[otlp]'\n"
    )


def test_a_missing_exporter_goes_unnoticed_when_not_asked_for(tmp_path: Path) -> None:
    """No endpoint, exporter missing: the run answers as ever."""
    status, out, err = _without_exporter(tmp_path, {})
    assert (status, out) == (0, ANSWER + "\n"), err


def test_an_unsupported_protocol_is_refused_in_one_line(tmp_path: Path) -> None:
    """OTLP over gRPC is asked for: one line saying only http/protobuf is exported."""
    environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    done = run_fncore(tmp_path, "run", PROMPT, environ=environ)
    assert done.returncode == 1
    assert done.stderr.startswith("fncore: error: OTEL_EXPORTER_OTLP_ENDPOINT is set with")
    assert "'http/protobuf' only" in done.stderr
    assert len(done.stderr.splitlines()) == 1


CHOSEN = """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from fncore.cli._otlp import export_from_environment
chosen = TracerProvider()
trace.set_tracer_provider(chosen)
environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
export_from_environment(environ)
print(trace.get_tracer_provider() is chosen)
"""


def test_a_provider_set_already_is_left_alone() -> None:
    """A global provider set before (as opentelemetry-instrument sets one) is kept, unchecked."""
    done = subprocess.run(
        [sys.executable, "-c", CHOSEN], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "True\n", "")
