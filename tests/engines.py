"""Real servers for the tests: redis-server and PostgreSQL on free 127.0.0.1 ports.

Nothing is skipped when a server is missing: `.ci/run` installs it, and a test run without
it fails, saying how to install it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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


POSTGRES_ROOT = Path("/usr/lib/postgresql")
"""Where Debian's ``postgresql`` package puts each version's binaries (``<version>/bin``)."""


def postgres_bin() -> Path:
    """The ``bin`` folder of the newest PostgreSQL installed (not on ``PATH`` on Debian)."""
    found = sorted(
        (p.parent for p in POSTGRES_ROOT.glob("*/bin/initdb")),
        key=lambda folder: [int(n) for n in folder.parent.name.split(".") if n.isdigit()],
    )
    if not found:
        msg = "PostgreSQL is not installed: apt-get install postgresql (.ci/run installs it)"
        raise RuntimeError(msg)
    return found[-1]


def _as_postgres(command: list[str]) -> list[str]:
    """``command`` run as the ``postgres`` user when we are root (initdb refuses root)."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def _quiet(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        msg = f"{' '.join(command)} failed ({done.returncode}): {done.stderr or done.stdout}"
        raise RuntimeError(msg)


@contextmanager
def postgres_server(durable: bool = False, password: str | None = None) -> Iterator[str]:
    """A fresh PostgreSQL cluster in a temporary folder; yields its URL, stops it afterwards.

    The superuser is ``fncore`` (trust authentication, 127.0.0.1 only; with ``password``,
    scram authentication with that password, which the URL yielded leaves out). Without
    ``durable`` the server skips fsync: data is thrown away anyway, and tests run faster.
    """
    binaries = postgres_bin()
    port = free_port()
    folder = Path(tempfile.mkdtemp(prefix="fncore-pg-"))
    auth = ["-A", "trust"]
    if password is not None:
        (folder / "password").write_text(password + "\n")
        auth = ["-A", "scram-sha-256", f"--pwfile={folder / 'password'}"]
    if os.geteuid() == 0:
        for path in (folder, *folder.iterdir()):
            shutil.chown(path, "postgres", "postgres")
    data = folder / "data"
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1"
    if not durable:
        options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    pg_ctl = str(binaries / "pg_ctl")
    try:
        initdb = [str(binaries / "initdb"), "-D", str(data), *auth, "-U", "fncore"]
        _quiet(_as_postgres([*initdb, "-E", "UTF8", "--locale=C", "--no-sync"]))
        log = str(folder / "server.log")
        _quiet(_as_postgres([pg_ctl, "-D", str(data), "-o", options, "-l", log, "-w", "start"]))
        try:
            yield f"postgresql://fncore@127.0.0.1:{port}/postgres"
        finally:
            _quiet(_as_postgres([pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"]))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def postgres_database(server_url: str) -> Iterator[str]:
    """A new, empty database on the server at ``server_url``; yields its URL, drops it after."""
    import psycopg

    name = f"test_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(server_url, autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name} STRATEGY FILE_COPY")  # type: ignore[arg-type]
    try:
        yield server_url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(server_url, autocommit=True) as connection:
            connection.execute(f"DROP DATABASE {name} WITH (FORCE)")  # type: ignore[arg-type]
