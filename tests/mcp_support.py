"""MCP servers for the tests: real processes, over stdio and streamable HTTP."""

from __future__ import annotations

import http.server
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SERVERS = Path(__file__).parent / "mcp_servers"
DEMO = str(SERVERS / "demo.py")
"""The test suite's own MCP server, written with the SDK (see its docstring)."""
EXITS = str(SERVERS / "exits.py")
GARBAGE = str(SERVERS / "garbage.py")
TIME_SERVER = str(Path(sys.executable).parent / "mcp-server-time")
"""The official reference server ``mcp-server-time``, installed from PyPI."""
TOKEN = "s3cret-token-value"
"""The bearer token the HTTP demo server wants."""


def demo_command() -> list[str]:
    """The command that serves the demo server over stdio."""
    return [sys.executable, DEMO]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def http_demo(token: str | None = TOKEN) -> Iterator[str]:
    """The demo server over streamable HTTP in its own process; yields its URL."""
    port = free_port()
    args = [sys.executable, DEMO, "http", str(port), *([token] if token else [])]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    err = process.stderr.read().decode() if process.stderr else ""
                    msg = f"the HTTP demo server did not start:\n{err}"
                    raise AssertionError(msg) from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.communicate(timeout=10)


@contextmanager
def html_server() -> Iterator[str]:
    """An HTTP server that answers every request with an HTML page: not an MCP server."""

    class Page(http.server.BaseHTTPRequestHandler):
        def _page(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.end_headers()
            self.wfile.write(b"<html><body>Welcome</body></html>")

        do_GET = do_POST = do_DELETE = _page

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()
