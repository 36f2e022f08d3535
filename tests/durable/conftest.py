"""Fixtures of the durable tests: a PostgreSQL that checks passwords, the concurrency gauge."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from durable_support import PASSWORD
from engines import _as_postgres, _quiet, postgres_bin
from fake_provider import free_port


@pytest.fixture(scope="session")
def password_postgres() -> Iterator[str]:
    """A PostgreSQL that asks for a password (scram); its URL without one (user ``fncore``).

    The password is `PASSWORD`.
    """
    binaries = postgres_bin()
    port = free_port()
    folder = Path(tempfile.mkdtemp(prefix="fncore-pgpw-"))
    secret = folder / "password"
    secret.write_text(PASSWORD + "\n")
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
        shutil.chown(secret, "postgres", "postgres")
    data = folder / "data"
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
    pg_ctl = str(binaries / "pg_ctl")
    try:
        initdb = [str(binaries / "initdb"), "-D", str(data), "-U", "fncore", "--no-sync"]
        auth = ["-A", "scram-sha-256", f"--pwfile={secret}", "-E", "UTF8", "--locale=C"]
        _quiet(_as_postgres([*initdb, *auth]))
        log = str(folder / "server.log")
        _quiet(_as_postgres([pg_ctl, "-D", str(data), "-o", options, "-l", log, "-w", "start"]))
        try:
            yield f"postgresql://fncore@127.0.0.1:{port}/postgres"
        finally:
            _quiet(_as_postgres([pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"]))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def gauge(postgres_url: str) -> str:
    """``postgres_url`` with the gauge's table ``gauge (seq, job, pid, kind)`` made in it."""
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(
            "CREATE TABLE gauge (seq bigserial PRIMARY KEY, job text, pid int, kind text)"
        )
    return postgres_url
