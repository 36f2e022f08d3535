"""Store files written by earlier fncore (schema versions 1 and 2) load as they were written.

Each file in ``stored/`` was made by fncore at a past commit (``stored/make_stored.py``,
`stored_values.FILES`). Today's SQLite store opens a copy of it (a schema-1 file is
migrated); the same rows, copied into PostgreSQL at the file's schema version, load through
the PostgreSQL store, whose records are the same.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import stored_values as v

from fncore import PostgresSessionStore, Session, SqliteSessionStore
from fncore.session_stores import _postgres

STORED = Path(__file__).parent / "stored"
TABLES = ("fncore_sessions", "fncore_messages", "fncore_checkpoints")


def rows(path: Path) -> tuple[int, dict[str, list[tuple[Any, ...]]]]:
    """The file's schema version and the rows of each of its tables."""
    with sqlite3.connect(path) as connection:
        (version,) = connection.execute("PRAGMA user_version").fetchone()
        names = {n for (n,) in connection.execute("SELECT name FROM sqlite_master")}
        found = {t: connection.execute(f"SELECT * FROM {t}").fetchall() for t in names & {*TABLES}}
    connection.close()
    return int(version), found


def into_postgres(path: Path, url: str) -> None:
    """The file's tables and rows, at its schema version, in the empty database ``url``."""
    version, tables = rows(path)
    with psycopg.connect(url, autocommit=True) as connection, connection.transaction():
        for step in _postgres.MIGRATIONS[:version]:
            for statement in step:
                connection.execute(statement)
        connection.execute("UPDATE fncore_schema SET version = %s", (version,))
        for table, found in tables.items():
            marks = ", ".join(["%s"] * len(found[0]))
            with connection.cursor() as cursor:
                cursor.executemany(f"INSERT INTO {table} VALUES ({marks})", found)


@pytest.fixture(params=sorted(v.FILES))
def name(request: pytest.FixtureRequest) -> str:
    """A stored file."""
    return str(request.param)


@pytest.fixture(params=["sqlite", "postgres"])
async def stored(name: str, request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    """A store of each kind holding what the file ``name`` holds, opened (so migrated)."""
    if request.param == "sqlite":
        copy = tmp_path / name
        shutil.copyfile(STORED / name, copy)
        store: Any = SqliteSessionStore(str(copy))
    else:
        url = request.getfixturevalue("postgres_url")
        into_postgres(STORED / name, url)
        store = PostgresSessionStore(url)
    await store.open()
    yield store
    await store.aclose()


async def test_sessions_stored_by_earlier_releases_load(stored: Any) -> None:
    """Every message part, prompt-cache flag and kind of state value reads back as written."""
    assert await stored.load("ada") == Session("ada", v.ADA, v.ADA_STATE, 1)
    assert await stored.load("bob") == Session("bob", v.BOB, v.BOB_STATE, 2)
    listed = [(i.id, i.version, i.message_count) for i in await stored.list_sessions()]
    assert listed == [("ada", 1, 6), ("bob", 2, 4)]


async def test_checkpoints_stored_by_earlier_releases_load(name: str, stored: Any) -> None:
    """A schema-2 file's checkpoints read back whole, claims included (schema 1 had none)."""
    expected = {} if name == "schema-1.db" else v.checkpoints(name.endswith("registered.db"))
    for cid, checkpoint in expected.items():
        assert await stored.load_checkpoint(cid) == checkpoint
    assert await stored.load_checkpoint("cp-next") is None
