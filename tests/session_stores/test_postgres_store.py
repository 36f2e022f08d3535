"""The PostgreSQL store on a real server: its schema, and what it must refuse."""

from __future__ import annotations

import asyncio

import psycopg
import pytest
from engines import postgres_server
from fake_provider import free_port
from returns.result import Failure

from fncore import (
    Agent,
    ConfigError,
    Message,
    PostgresSessionStore,
    Registry,
    SessionError,
    SessionUpdate,
    load_container,
    open_session_store,
)
from fncore.errors import NotASessionStore, SessionSchemaTooNew, SessionStoreUnavailable
from fncore.session_stores import SCHEMA_VERSION
from fncore.testing import TestModel


def execute(url: str, sql: str) -> list[tuple[object, ...]]:
    with psycopg.connect(url, autocommit=True) as connection:
        cursor = connection.execute(sql)  # type: ignore[arg-type]
        return cursor.fetchall() if cursor.description else []


async def test_the_schema_is_created_with_its_version(postgres_url: str) -> None:
    """First use creates the fncore_* tables and records the schema version."""
    store = PostgresSessionStore(postgres_url)
    await store.open()
    await store.open()  # opening again does nothing
    await store.aclose()
    assert execute(postgres_url, "SELECT version FROM fncore_schema") == [(SCHEMA_VERSION,)]
    tables = execute(postgres_url, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    assert sorted(t for (t,) in tables) == [
        "fncore_checkpoints",
        "fncore_messages",
        "fncore_schema",
        "fncore_sessions",
    ]


async def test_processes_starting_together_migrate_once(postgres_url: str) -> None:
    """Stores opening a fresh database at once all succeed: the migration runs once."""
    stores = [PostgresSessionStore(postgres_url) for _ in range(4)]
    await asyncio.gather(*(s.open() for s in stores))
    for i, store in enumerate(stores):
        await store.commit(SessionUpdate(f"s{i}", 0, 0, (Message.user(str(i)),)))
    await asyncio.gather(*(s.aclose() for s in stores))
    assert execute(postgres_url, "SELECT version FROM fncore_schema") == [(SCHEMA_VERSION,)]
    assert execute(postgres_url, "SELECT count(*) FROM fncore_sessions") == [(4,)]


async def test_more_concurrent_runs_than_connections_all_commit(postgres_url: str) -> None:
    """Concurrent commits beyond the pool's size wait for a connection; none is lost."""
    store = PostgresSessionStore(postgres_url, max_connections=2)
    saved = await asyncio.gather(
        *(store.commit(SessionUpdate(f"s{i}", 0, 0, (Message.user(str(i)),))) for i in range(20))
    )
    assert all(s is not None and s.version == 1 for s in saved)
    await store.aclose()


async def test_an_unreachable_server_is_unavailable_and_hides_the_password() -> None:
    """Nothing listens there: `SessionStoreUnavailable`, the password redacted."""
    url = f"postgresql://app:hunter2@127.0.0.1:{free_port()}/app"
    store = PostgresSessionStore(url)
    assert store.url == url.replace("hunter2", "[redacted]")
    assert "hunter2" not in repr(store)
    with pytest.raises(SessionStoreUnavailable) as raised:
        await store.load("s")
    message = str(raised.value)
    assert "hunter2" not in message
    assert "check that PostgreSQL runs there" in message
    assert "[redacted]" in message
    agent = Agent(TestModel(), registry=Registry(), sessions=store)
    outcome = await agent.run("hi", session_id="s")
    assert isinstance(outcome, Failure)
    error = outcome.failure()
    assert isinstance(error, SessionError)
    assert "SessionStoreUnavailable" in error.message
    await store.aclose()


def test_a_malformed_postgres_url_is_a_config_error() -> None:
    """A URL libpq cannot parse is a `ConfigError` when the store is made."""
    with pytest.raises(ConfigError, match="session store URL 'postgresql://h/db\\?nonsense=1'"):
        open_session_store("postgresql://h/db?nonsense=1")
    container = load_container(overrides={"sessions": {"url": "postgresql://h/db?x=1"}}, environ={})
    with pytest.raises(ConfigError, match="invalid URI query parameter"):
        container.sessions()


async def test_tables_fncore_did_not_make_are_refused(postgres_url: str) -> None:
    """A database with an fncore_sessions table but no fncore_schema: refused, untouched."""
    execute(postgres_url, "CREATE TABLE fncore_sessions (name text)")
    execute(postgres_url, "INSERT INTO fncore_sessions VALUES ('theirs')")
    store = PostgresSessionStore(postgres_url)
    with pytest.raises(NotASessionStore, match="fncore did not make it"):
        await store.load("s")
    await store.aclose()
    assert execute(postgres_url, "SELECT name FROM fncore_sessions") == [("theirs",)]


async def test_a_database_from_a_newer_fncore_is_refused(postgres_url: str) -> None:
    """A higher schema version: `SessionSchemaTooNew`; the data stays."""
    store = PostgresSessionStore(postgres_url)
    await store.commit(SessionUpdate("s", 0, 0, (Message.user("hi"),)))
    await store.aclose()
    execute(postgres_url, f"UPDATE fncore_schema SET version = {SCHEMA_VERSION + 1}")
    newer = PostgresSessionStore(postgres_url)
    with pytest.raises(SessionSchemaTooNew, match="upgrade fncore"):
        await newer.commit(SessionUpdate("s", 1, 1, (Message.user("lost?"),)))
    await newer.aclose()
    assert execute(postgres_url, "SELECT version, length FROM fncore_sessions") == [(1, 1)]


async def test_a_container_closes_the_store_it_made(postgres_url: str) -> None:
    """``[sessions] url`` picks the store; ``shutdown()`` closes its pool."""
    async with load_container(overrides={"sessions": {"url": postgres_url}}, environ={}) as c:
        agent = c.agent()
        assert isinstance(agent.sessions, PostgresSessionStore)
        await agent.run("hello", session_id="s")
    count = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
    assert execute(postgres_url, count) == [(1,)]  # only this query's own connection
    again = PostgresSessionStore(postgres_url)
    loaded = await again.load("s")
    await again.aclose()
    assert loaded is not None
    assert loaded.version == 1


async def test_a_server_that_stops_makes_the_store_unavailable() -> None:
    """The server goes away while the store is open: `SessionStoreUnavailable`."""
    with postgres_server() as url:
        store = PostgresSessionStore(url, timeout=2)
        await store.commit(SessionUpdate("s", 0, 0, (Message.user("hi"),)))
    # the server is stopped now
    with pytest.raises(SessionStoreUnavailable, match="check that PostgreSQL runs there"):
        await store.load("s")
    with pytest.raises(SessionStoreUnavailable):
        await store.commit(SessionUpdate("s", 1, 1, (Message.user("lost"),)))
    await store.aclose()
