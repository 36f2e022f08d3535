"""Shared test configuration."""

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from engines import flush, postgres_database, postgres_server, redis_server
from fake_provider import FakeProvider
from hypothesis import HealthCheck, settings

# No test may depend on how fast the machine is (the suite must pass beside CPU-burning
# processes): hypothesis gets no per-example deadline and no "too slow" health check.
settings.register_profile("fncore", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("fncore")

# Checked by mypy in CI (tests/typing/check_expected_errors.py), not run by pytest:
# expected_errors.py registers wrongly typed middleware on purpose.
# tests/mcp_servers holds MCP server programs the tests start; importing one would run it.
collect_ignore = ["typing", "mcp_servers"]


@pytest.fixture(autouse=True)
def data_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh user data directory for each test.

    ``load_container``'s default session store (a SQLite file there) starts empty, and
    nothing is written to the real one.
    """
    folder = tmp_path_factory.mktemp("data-home")
    monkeypatch.setenv("XDG_DATA_HOME", str(folder))
    monkeypatch.delenv("FNCORE_HOME", raising=False)
    return folder / "fncore"


@pytest.fixture
def fake_provider() -> Iterator[FakeProvider]:
    """A scripted provider server on 127.0.0.1, stopped after the test."""
    with FakeProvider() as server:
        yield server


@pytest.fixture
def silent_server() -> Iterator[str]:
    """The root URL of a server that accepts connections and never answers (timeouts)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield f"http://127.0.0.1:{server.getsockname()[1]}"


@pytest.fixture(scope="session")
def redis_server_url() -> Iterator[str]:
    """A real redis-server on a free 127.0.0.1 port, for the whole test session."""
    with redis_server() as url:
        yield url


@pytest.fixture
def redis_url(redis_server_url: str) -> str:
    """The URL of the session's redis-server, emptied for this test."""
    flush(redis_server_url)
    return redis_server_url


@pytest.fixture(scope="session")
def postgres_server_url() -> Iterator[str]:
    """A real PostgreSQL on a free 127.0.0.1 port, for the whole test session."""
    with postgres_server() as url:
        yield url


@pytest.fixture
def postgres_url(postgres_server_url: str) -> Iterator[str]:
    """The URL of a new, empty database on the session's PostgreSQL, dropped after the test."""
    with postgres_database(postgres_server_url) as url:
        yield url


@pytest.fixture(params=["memory", "postgres"])
def sessions_url(request: pytest.FixtureRequest) -> str:
    """Where the agents of a multi-process test keep their sessions.

    ``memory``: each process its own; ``postgres``: one new database that every process shares.
    """
    if request.param == "memory":
        return "memory://"
    url: str = request.getfixturevalue("postgres_url")
    return url
