"""Real servers for the tests: a redis-server on a free 127.0.0.1 port, started and stopped.

Nothing is skipped when a server is missing: `.ci/run` installs it, and a test run without
it fails, saying how to install it.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

from fake_provider import free_port


def _find(binary: str, package: str) -> str:
    found = shutil.which(binary) or (
        f"/usr/bin/{binary}" if shutil.which(f"/usr/bin/{binary}") else None
    )
    if found is None:
        msg = f"{binary} is not installed: apt-get install {package} (.ci/run installs it)"
        raise RuntimeError(msg)
    return found


def _ready(port: int, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
                conn.sendall(b"PING\r\n")
                if conn.recv(16).startswith(b"+PONG"):
                    return
        except OSError:
            time.sleep(0.05)
    msg = f"redis-server on port {port} did not answer within {seconds}s"
    raise RuntimeError(msg)


@contextmanager
def redis_server() -> Iterator[str]:
    """A fresh redis-server, in memory only; yields its URL and stops it afterwards."""
    binary = _find("redis-server", "redis-server")
    port = free_port()
    with tempfile.TemporaryDirectory() as folder:
        process = subprocess.Popen(
            [
                binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                folder,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            _ready(port)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            process.terminate()
            process.wait(timeout=10)


def flush(url: str) -> None:
    """Empty every database of the server at ``url``."""
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(b"FLUSHALL\r\n")
        if not conn.recv(16).startswith(b"+OK"):
            msg = "FLUSHALL failed"
            raise RuntimeError(msg)
