"""A store written at schema version 1 (sessions, no checkpoints) is migrated when opened.

The version-1 database is made by the version-1 statements (``MIGRATIONS[0]``) and filled
as version 1 wrote its rows; the sessions in it must come through the migration intact.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
import uuid
from typing import Any

import psycopg
from codec_strategies import a_checkpoint

from fncore import (
    Message,
    PostgresSessionStore,
    Session,
    SessionUpdate,
    SqliteSessionStore,
    ToolCallPart,
    ToolResultPart,
    open_session_store,
)
from fncore.session_stores import SCHEMA_VERSION, _postgres, _sqlite
from fncore.session_stores._codec import encode_message, encode_state
from fncore.session_stores._sql import INSERT_MESSAGE, INSERT_SESSION

SESSIONS = {
    "ada": (
        (
            Message.user("add 1 and 2"),
            Message("assistant", (ToolCallPart("c1", "add", '{"a":1,"b":2}'),)),
            Message("tool", (ToolResultPart("c1", "add", "3"),)),
            Message.assistant("3"),
        ),
        {"seen": ("add",), "blob": b"\x00\xff"},
    ),
    "bob": ((Message.user("hi"), Message.assistant("hello")), {}),
}
"""What the version-1 database holds: each session's messages and state."""


def version_one_rows() -> list[tuple[str, tuple[Any, ...], list[tuple[Any, ...]]]]:
    """Each session's row and message rows, as version 1 wrote them (at session version 1)."""
    rows = []
    for sid, (messages, state) in SESSIONS.items():
        session = (sid, len(messages), uuid.uuid4().hex, encode_state(state))
        bodies = [(sid, seq, 1, encode_message(m)) for seq, m in enumerate(messages)]
        rows.append((sid, session, bodies))
    return rows


def sqlite_at_version_one(path: str) -> None:
    with sqlite3.connect(path) as connection:
        for statement in _sqlite.MIGRATIONS[0]:
            connection.execute(statement)
        for _, session, bodies in version_one_rows():
            connection.execute(INSERT_SESSION, session)
            connection.executemany(INSERT_MESSAGE, bodies)
        connection.execute(f"PRAGMA application_id = {_sqlite.APPLICATION_ID}")
        connection.execute("PRAGMA user_version = 1")
    connection.close()


def postgres_at_version_one(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as connection, connection.transaction():
        for statement in _postgres.MIGRATIONS[0]:
            connection.execute(statement)  # type: ignore[arg-type]
        connection.execute("UPDATE fncore_schema SET version = 1")
        for _, session, bodies in version_one_rows():
            connection.execute(_postgres._pg(INSERT_SESSION), session)  # type: ignore[arg-type]
            with connection.cursor() as cursor:
                cursor.executemany(_postgres._pg(INSERT_MESSAGE), bodies)  # type: ignore[arg-type]


def schema_version(url: str) -> int:
    if url.startswith("sqlite:"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as connection:
            (version,) = connection.execute("PRAGMA user_version").fetchone()
        connection.close()
        return int(version)
    with psycopg.connect(url) as connection:
        row = connection.execute("SELECT version FROM fncore_schema").fetchone()
    assert row is not None
    return int(row[0])


async def test_a_version_one_store_is_migrated_with_its_sessions(durable_url: str) -> None:
    """Opened by this fncore, a version-1 store gets checkpoints; its sessions are intact.

    Several stores (processes) open it at once: the migration runs once, and each then
    reads the sessions, saves a checkpoint, and commits the next turn.
    """
    if durable_url.startswith("sqlite:"):
        sqlite_at_version_one(durable_url.removeprefix("sqlite:///"))
    else:
        postgres_at_version_one(durable_url)
    assert schema_version(durable_url) == 1
    stores: list[Any] = [open_session_store(durable_url) for _ in range(3)]
    assert isinstance(stores[0], SqliteSessionStore | PostgresSessionStore)
    await asyncio.gather(*(s.open() for s in stores))
    assert schema_version(durable_url) == SCHEMA_VERSION == 2
    for sid, (messages, state) in SESSIONS.items():
        for store in stores:
            assert await store.load(sid) == Session(sid, messages, state, 1)
    now = time.time()
    checkpoint = a_checkpoint(session_id="ada", session_version=1, created=now, expires=now + 60)
    await stores[0].save_checkpoint(checkpoint)
    assert await stores[1].load_checkpoint(checkpoint.id) == checkpoint
    update = SessionUpdate("ada", 1, 4, (Message.user("again"),), {"seen": ()})
    saved = await stores[1].commit(update)
    assert saved is not None
    assert await stores[2].load("ada") == saved
    assert saved.messages == (*SESSIONS["ada"][0], Message.user("again"))
    await asyncio.gather(*(s.aclose() for s in stores))
