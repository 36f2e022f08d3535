"""A real uvicorn server on a free 127.0.0.1 port, and the tool the served agents run."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn
from starlette.applications import Starlette


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@contextlib.contextmanager
def running(app: Starlette) -> Iterator[str]:
    """Serve ``app`` with uvicorn in a thread until the block ends; its base URL (``/v1``).

    The socket is bound here, on a free port, before the server starts, so no other
    process can take the port in between; the server's ``started`` flag says it serves.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                pytest.fail("uvicorn stopped before it started serving")
            time.sleep(0.001)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        thread.join()
        sock.close()
