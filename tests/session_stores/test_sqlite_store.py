"""The SQLite store: its schema, and files it must refuse without changing them."""

from __future__ import annotations

import dataclasses
import gc
import socket
import sqlite3
import warnings
from pathlib import Path

import pytest
from returns.result import Failure, Success

from fncore import (
    Agent,
    Message,
    Outcome,
    Registry,
    SessionError,
    SessionUpdate,
    SqliteSessionStore,
    StateKey,
    SystemPromptContext,
    register_state_type,
)
from fncore.errors import (
    NotASessionStore,
    NotSerializable,
    SessionSchemaTooNew,
    SessionStoreCorrupt,
    SessionStoreUnavailable,
)
from fncore.session_stores import SCHEMA_VERSION
from fncore.session_stores._sqlite import APPLICATION_ID
from fncore.testing import TestModel

SOCKET: StateKey[socket.socket] = StateKey("socket", default=socket.socket)


def pragma(path: Path, name: str) -> object:
    with sqlite3.connect(path) as connection:
        value = connection.execute(f"PRAGMA {name}").fetchone()[0]
    connection.close()
    return value


async def test_a_new_file_records_fncore_and_the_schema_version(tmp_path: Path) -> None:
    """The file (and its folders) are made on first use, marked as fncore's, in WAL mode."""
    path = tmp_path / "deep" / "er" / "sessions.db"
    store = SqliteSessionStore(path, synchronous="normal")
    assert not path.exists()
    await store.open()
    await store.aclose()
    assert pragma(path, "application_id") == APPLICATION_ID
    assert pragma(path, "user_version") == SCHEMA_VERSION
    assert pragma(path, "journal_mode") == "wal"
    assert store.url == f"sqlite:///{path}"
    assert repr(store) == f"SqliteSessionStore('{store.url}')"


async def test_an_empty_file_at_schema_zero_is_migrated(tmp_path: Path) -> None:
    """A file that is fncore's at an older schema version is brought up to date."""
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as connection:
        connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    connection.close()
    store = SqliteSessionStore(path)
    await store.commit(SessionUpdate("s", 0, 0, (Message.user("hi"),)))
    await store.aclose()
    assert pragma(path, "user_version") == SCHEMA_VERSION


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def another_apps_database(path: Path) -> None:
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        connection.execute("INSERT INTO customers (name) VALUES ('Ada')")
    connection.close()


def another_application_id(path: Path) -> None:
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA application_id = 42")
    connection.close()


def a_text_file(path: Path) -> None:
    path.write_text("These are my notes, not a database.\n" * 200)


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (another_apps_database, "a SQLite database of another application"),
        (another_application_id, "a SQLite database of another application"),
        (a_text_file, "is not a SQLite database"),
    ],
)
async def test_a_foreign_file_is_refused_and_left_unchanged(
    tmp_path: Path, make: object, says: str
) -> None:
    """Another application's file, or no database at all: `NotASessionStore`, not a write."""
    path = tmp_path / "other.db"
    make(path)  # type: ignore[operator]
    before = path.read_bytes()
    store = SqliteSessionStore(path)
    with pytest.raises(NotASessionStore, match=says):
        await store.load("s")
    with pytest.raises(NotASessionStore, match=r"point sessions\.url at another file"):
        await store.commit(SessionUpdate("s", 0, 0, (Message.user("hi"),)))
    await store.aclose()
    assert path.read_bytes() == before
    assert names(tmp_path) == ["other.db"]


async def test_a_run_on_a_foreign_file_fails_with_a_session_error(tmp_path: Path) -> None:
    """An agent reports the store's error as a `SessionError` value, having run nothing."""
    path = tmp_path / "notes.db"
    a_text_file(path)
    model = TestModel()
    store = SqliteSessionStore(path)
    outcome = await Agent(model, registry=Registry(), sessions=store).run("hi", session_id="s")
    await store.aclose()
    assert isinstance(outcome, Failure)
    error = outcome.failure()
    assert isinstance(error, SessionError)
    assert "NotASessionStore" in error.message
    assert model.requests == []


async def test_a_file_from_a_newer_fncore_is_refused(tmp_path: Path) -> None:
    """A higher schema version: `SessionSchemaTooNew`, and the file is not touched."""
    path = tmp_path / "sessions.db"
    store = SqliteSessionStore(path)
    await store.commit(SessionUpdate("s", 0, 0, (Message.user("hi"),)))
    await store.aclose()
    with sqlite3.connect(path) as connection:
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    connection.close()
    before = path.read_bytes()
    newer = SqliteSessionStore(path)
    with pytest.raises(SessionSchemaTooNew, match="upgrade fncore") as raised:
        await newer.load("s")
    await newer.aclose()
    assert (raised.value.found, raised.value.known) == (SCHEMA_VERSION + 1, SCHEMA_VERSION)
    assert path.read_bytes() == before


async def test_a_damaged_file_is_corrupt(tmp_path: Path) -> None:
    """A file whose pages were overwritten: `SessionStoreCorrupt` saying to restore it."""
    path = tmp_path / "sessions.db"
    store = SqliteSessionStore(path)
    for n in range(40):
        messages = tuple(Message.user(f"message {n} " * 50) for _ in range(5))
        await store.commit(SessionUpdate(f"s{n}", 0, 0, messages))
    await store.aclose()  # the last connection to close folds the WAL into the file
    data = bytearray(path.read_bytes())
    page = 4096
    assert len(data) > 8 * page
    data[2 * page :] = b"\xa5" * (len(data) - 2 * page)
    path.write_bytes(bytes(data))
    damaged = SqliteSessionStore(path)
    with pytest.raises(SessionStoreCorrupt, match="restore it from a backup"):
        await damaged.load("s7")
    await damaged.aclose()


async def test_a_path_that_cannot_be_made_is_unavailable(tmp_path: Path) -> None:
    """A folder that cannot be created, or a path that is a folder: `SessionStoreUnavailable`."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(SessionStoreUnavailable, match="cannot create the directory"):
        await SqliteSessionStore(blocker / "sessions.db").open()
    folder = tmp_path / "folder.db"
    folder.mkdir()
    store = SqliteSessionStore(folder)
    with pytest.raises(SessionStoreUnavailable, match="SQLITE_CANTOPEN"):
        await store.load("s")
    await store.aclose()


async def test_unserialisable_state_fails_the_run_at_save_time(tmp_path: Path) -> None:
    """State that cannot be stored fails the run with a clear `SessionError`; nothing saved."""
    registry = Registry()

    @registry.on("system_prompt")
    async def keep_a_socket(ctx: SystemPromptContext, prompt: str) -> Outcome[str]:
        sock = ctx.run.session_state.get(SOCKET)
        sock.close()
        return Success(prompt)

    store = SqliteSessionStore(tmp_path / "sessions.db")
    agent = Agent(TestModel(), registry=registry, sessions=store)
    outcome = await agent.run("hi", session_id="s")
    assert isinstance(outcome, Failure)
    error = outcome.failure()
    assert isinstance(error, SessionError)
    assert "NotSerializable: session state 'socket' holds a socket.socket" in error.message
    assert "the session is unchanged" in error.message
    assert await store.load("s") is None
    await store.aclose()


async def test_a_store_left_open_closes_its_file_when_collected(tmp_path: Path) -> None:
    """A store nobody closed releases its connection when collected, without a warning."""
    store = SqliteSessionStore(tmp_path / "sessions.db")
    await store.open()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        del store
        gc.collect()


async def test_missing_message_rows_are_corrupt_and_commit_nothing(tmp_path: Path) -> None:
    """Rows deleted behind fncore's back: loads and commits say so; nothing is written."""
    path = tmp_path / "sessions.db"
    store = SqliteSessionStore(path)
    await store.commit(SessionUpdate("s", 0, 0, tuple(Message.user(str(i)) for i in range(4))))
    await store.aclose()
    with sqlite3.connect(path) as connection:
        connection.execute("DELETE FROM fncore_messages WHERE seq = 1")
    connection.close()
    reader = SqliteSessionStore(path)
    with pytest.raises(SessionStoreCorrupt, match="holds 4 messages, and the store has 3"):
        await reader.load("s")
    with pytest.raises(SessionStoreCorrupt, match="misses message 1"):
        await reader.commit(SessionUpdate("s", 1, 3, (Message.user("x"),)))
    await reader.aclose()
    assert pragma(path, "integrity_check") == "ok"
    with sqlite3.connect(path) as connection:
        (version,) = connection.execute("SELECT version FROM fncore_sessions").fetchone()
    connection.close()
    assert version == 1  # the refused commit wrote nothing


async def test_tables_dropped_behind_fncores_back_are_corrupt(tmp_path: Path) -> None:
    """A file whose tables were changed by something else: `SessionStoreCorrupt`."""
    path = tmp_path / "sessions.db"
    store = SqliteSessionStore(path)
    await store.open()
    with sqlite3.connect(path) as connection:
        connection.execute("DROP TABLE fncore_messages")
    connection.close()
    with pytest.raises(SessionStoreCorrupt, match="changed by something other than fncore"):
        await store.load("s")
    await store.aclose()


@register_state_type
@dataclasses.dataclass(frozen=True)
class Positive:
    """A dataclass that checks its field, and so cannot be rebuilt from a bad value."""

    value: int

    def __post_init__(self) -> None:
        if self.value <= 0:
            msg = "value must be positive"
            raise ValueError(msg)


async def test_state_that_cannot_be_read_back_is_refused_at_save_time(tmp_path: Path) -> None:
    """A value whose class rejects it when rebuilt would break every later load: refused."""
    broken = Positive(1)
    object.__setattr__(broken, "value", -1)
    store = SqliteSessionStore(tmp_path / "sessions.db")
    with pytest.raises(NotSerializable, match="cannot be read back as it was written"):
        await store.commit(SessionUpdate("s", 0, 0, (), {"p": broken}))
    assert await store.load("s") is None
    await store.aclose()
