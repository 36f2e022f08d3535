"""Fixtures of the durable tests: a PostgreSQL that checks passwords, the concurrency gauge."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from durable_support import PASSWORD
from engines import postgres_server


@pytest.fixture(scope="session")
def password_postgres() -> Iterator[str]:
    """A PostgreSQL that asks for a password (scram); its URL without one (user ``fncore``).

    The password is `PASSWORD`.
    """
    with postgres_server(password=PASSWORD) as url:
        yield url


@pytest.fixture
def gauge(postgres_url: str) -> str:
    """``postgres_url`` with the gauge's table ``gauge (seq, job, pid, kind)`` made in it."""
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(
            "CREATE TABLE gauge (seq bigserial PRIMARY KEY, job text, pid int, kind text)"
        )
    return postgres_url
