"""A scripted HTTP server on 127.0.0.1 that speaks a provider's wire format.

Tests queue replies (JSON bodies, SSE event streams, error statuses, bodies and streams
cut off mid-way) and then point the real ``openai`` or ``anthropic`` SDK client at ``url``.
Every request the server receives is recorded with its path, headers and JSON body, so a
test can assert what the adapter sent.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer."""

    status: int = 200
    body: Any = None
    """A JSON body (any JSON-able value), or ``bytes`` sent as they are."""
    events: list[tuple[str | None, Any]] | None = None
    """An SSE stream: ``(event name or None, data)``; dict data is sent as JSON."""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"
    """The ``content-type`` of a non-streamed body."""
    cut_after: int | None = None
    """For a stream: drop the connection after this many events, mid-stream. For a body:
    drop it after this many bytes, though ``content-length`` announced them all."""


@dataclass
class Recorded:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


def sse(*events: tuple[str | None, Any], cut_after: int | None = None) -> Reply:
    """A streamed reply of ``events``."""
    return Reply(events=list(events), cut_after=cut_after)


class _QuietServer(ThreadingHTTPServer):
    """Ignores clients that hang up early (tests that stop reading a stream do)."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class FakeProvider:
    """The server. Use as a context manager, or ``start()``/``stop()``."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode(errors="replace")
                with server._lock:
                    server.requests.append(
                        Recorded(self.command, self.path, dict(self.headers.items()), body)
                    )
                    reply = server.replies.popleft() if server.replies else None
                if reply is None:
                    reply = Reply(500, {"error": {"message": "no scripted reply left"}})
                if reply.events is not None:
                    self._stream(reply)
                else:
                    self._json(reply)

            do_GET = do_POST = _handle

            def _json(self, reply: Reply) -> None:
                data = (
                    reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                )
                self.send_response(reply.status)
                self.send_header("content-type", reply.content_type)
                self.send_header("content-length", str(len(data)))
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                if reply.cut_after is None:
                    self.wfile.write(data)
                    return
                self.wfile.write(data[: reply.cut_after])
                self._hang_up()

            def _hang_up(self) -> None:
                """Close the connection now, whatever the answer still owes."""
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)

            def _stream(self, reply: Reply) -> None:
                self.send_response(reply.status)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.send_header("cache-control", "no-cache")
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                assert reply.events is not None
                for i, (name, data) in enumerate(reply.events):
                    if reply.cut_after is not None and i >= reply.cut_after:
                        self._hang_up()
                        return
                    text = data if isinstance(data, str) else json.dumps(data)
                    frame = (f"event: {name}\n" if name else "") + f"data: {text}\n\n"
                    chunk = frame.encode()
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def reply(self, *replies: Reply) -> None:
        """Queue replies, answered in order, one per request."""
        self.replies.extend(replies)

    def start(self) -> FakeProvider:
        """Start serving in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def free_port() -> int:
    """A port on 127.0.0.1 nothing listens on (for connection-refused tests)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
