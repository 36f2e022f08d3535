"""The SQLite session store: one file, the embedded default.

Python's own ``sqlite3`` runs each load and each whole commit in a worker thread
(``asyncio.to_thread``), one at a time per store on one connection; the event loop never
waits on the disk. Several processes may share the file: SQLite's locks order their
commits (a writer waits up to ``busy_timeout`` seconds for another), and the
compare-and-set on the session's version decides which of two overlapping runs wins.

The file is in WAL mode. ``synchronous=full`` (the default) waits for the disk at every
commit, so a committed turn survives a power loss; ``normal`` is faster and still never
loses or corrupts anything when a process dies, only the last commits when the machine
does. The file carries fncore's ``application_id`` and its schema version in
``user_version``: a SQLite file another application made is refused, not written to.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar, final
from urllib.parse import quote

from fncore.session_stores._errors import (
    NotASessionStore,
    SessionStoreCorrupt,
    SessionStoreError,
    SessionStoreUnavailable,
    written_by_newer,
)
from fncore.session_stores._sql import (
    DEFAULT_CACHE,
    READ,
    SCHEMA_VERSION,
    SqlSessionStore,
    Step,
    Steps,
)

_T = TypeVar("_T")

APPLICATION_ID = 0x666E6373
"""SQLite's ``application_id`` of a session store file (``fncs`` in ASCII)."""

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (  # 0 -> 1
        """CREATE TABLE fncore_sessions (
            id TEXT PRIMARY KEY NOT NULL,
            version INTEGER NOT NULL,
            length INTEGER NOT NULL,
            token TEXT NOT NULL,
            state TEXT NOT NULL
        ) WITHOUT ROWID""",
        """CREATE TABLE fncore_messages (
            session_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            version INTEGER NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (session_id, seq)
        ) WITHOUT ROWID""",
        "CREATE INDEX fncore_messages_by_version ON fncore_messages (session_id, version)",
    ),
    (  # 1 -> 2
        """CREATE TABLE fncore_checkpoints (
            id TEXT PRIMARY KEY NOT NULL,
            stage TEXT NOT NULL,
            claim TEXT NOT NULL,
            claim_until REAL NOT NULL,
            expires REAL NOT NULL,
            body TEXT NOT NULL
        )""",
        "CREATE INDEX fncore_checkpoints_by_expiry ON fncore_checkpoints (expires)",
    ),
)
"""Step ``i`` brings the schema from version ``i`` to ``i + 1``; each runs in a transaction."""

_UNAVAILABLE = (
    "SQLITE_CANTOPEN",
    "SQLITE_PERM",
    "SQLITE_READONLY",
    "SQLITE_BUSY",
    "SQLITE_LOCKED",
    "SQLITE_IOERR",
    "SQLITE_FULL",
    "SQLITE_AUTH",
)


def _run_step(connection: sqlite3.Connection, step: Step) -> Any:
    if step.fetch == "many":
        connection.executemany(step.sql, step.params)
        return None
    cursor = connection.execute(step.sql, step.params)
    return cursor.rowcount if step.fetch == "rowcount" else cursor.fetchall()


def _in_transaction(connection: sqlite3.Connection, run: Callable[[], _T]) -> _T:
    """``run()`` inside ``BEGIN IMMEDIATE`` ... ``COMMIT``; rolled back if anything raises."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        result = run()
        connection.execute("COMMIT")
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise
    return result


def _drive(connection: sqlite3.Connection, steps: Steps[_T]) -> _T:
    try:
        step = next(steps)
        while True:
            step = steps.send(_run_step(connection, step))
    except StopIteration as done:
        result: _T = done.value
        return result


@final
class SqliteSessionStore(SqlSessionStore):
    """A `SessionStore` in a SQLite file (``sqlite:///path``), made on first use.

    Args:
        path: The database file; it and its directory are created when missing.
        synchronous: ``full`` (a commit waits for the disk) or ``normal`` (see the module).
        busy_timeout: Seconds a commit waits while another process writes.
        cache_size: How many sessions it keeps decoded in memory.

    Example:
        >>> import asyncio, tempfile
        >>> from fncore import Message, SessionUpdate
        >>> store = SqliteSessionStore(tempfile.mkdtemp() + "/sessions.db")
        >>> update = SessionUpdate("s", 0, 0, (Message.user("hi"),))
        >>> asyncio.run(store.commit(update)).version
        1
        >>> asyncio.run(store.load("s")).messages[0].text
        'hi'
        >>> asyncio.run(store.commit(update)) is None  # made against version 0: a conflict
        True
        >>> asyncio.run(store.aclose())
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: Literal["full", "normal"] = "full",
        busy_timeout: float = 30.0,
        cache_size: int = DEFAULT_CACHE,
    ) -> None:
        self._sqlite = _Sqlite(Path(path), synchronous, busy_timeout)
        super().__init__(self._sqlite, cache_size=cache_size)

    @property
    def path(self) -> Path:
        """The database file."""
        return self._sqlite.path

    @property
    def url(self) -> str:
        """``sqlite:///`` and the path."""
        return f"sqlite:///{quote(self._sqlite.path.as_posix())}"

    def __repr__(self) -> str:
        return f"SqliteSessionStore({self.url!r})"

    async def open(self) -> None:
        """Open the file now: check it, and create or migrate its schema.

        Every other method does this on first use; call it to fail early.

        Raises:
            SessionStoreUnavailable: if the file cannot be opened or created.
            NotASessionStore: if it is not a SQLite file, or another application's.
            SessionSchemaTooNew: if a newer fncore wrote it.
            SessionStoreCorrupt: if it is damaged.
        """
        await asyncio.to_thread(self._sqlite.run, lambda connection: None)

    async def aclose(self) -> None:
        """Close the file (the store opens it again if used afterwards)."""
        self._cache.clear()
        await asyncio.to_thread(self._sqlite.close)


class _Sqlite:
    """The connection, opened on first use, used by one thread at a time."""

    def __init__(
        self, path: Path, synchronous: Literal["full", "normal"], busy_timeout: float
    ) -> None:
        self.path = path
        self._synchronous = synchronous
        self._busy_timeout = busy_timeout
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None

    async def read(self, session_id: str, since: int) -> list[tuple[Any, ...]]:
        """The rows of `READ`."""
        return await asyncio.to_thread(
            self.run, lambda c: c.execute(READ, (session_id, session_id, since)).fetchall()
        )

    async def transaction(self, steps: Steps[_T]) -> _T:
        """Run ``steps`` in one ``BEGIN IMMEDIATE`` transaction."""
        return await asyncio.to_thread(
            self.run, lambda c: _in_transaction(c, lambda: _drive(c, steps))
        )

    def run(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        """``work(connection)`` under the lock, SQLite's errors turned into fncore's."""
        with self._lock:
            try:
                return work(self._connect())
            except sqlite3.Error as exc:
                mapped = self._error(exc)
                if mapped is None:
                    raise
                raise mapped from exc

    def close(self) -> None:
        """Close the connection, if open."""
        with self._lock:
            if self._finalizer is not None:
                self._finalizer()
            self._connection = self._finalizer = None

    def _connect(self) -> sqlite3.Connection:
        if self._connection is not None:
            return self._connection
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            msg = (
                f"cannot create the directory of session store {str(self.path)!r}: "
                f"{exc.strerror or exc}; fix sessions.url or the directory's permissions"
            )
            raise SessionStoreUnavailable(msg) from None
        connection = sqlite3.connect(
            self.path,
            timeout=self._busy_timeout,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            self._prepare(connection)
        except BaseException:
            connection.close()
            raise
        self._connection = connection
        # Closed when the store is collected or at exit, if nobody called aclose().
        self._finalizer = weakref.finalize(self, connection.close)
        return connection

    def _prepare(self, connection: sqlite3.Connection) -> None:
        """Check the file is a session store (or empty), then migrate it; never write first."""
        version = self._check(connection)
        if version < SCHEMA_VERSION:
            _in_transaction(connection, lambda: self._migrate(connection))
        self._use_wal(connection)
        connection.execute(f"PRAGMA synchronous = {self._synchronous.upper()}")

    def _use_wal(self, connection: sqlite3.Connection) -> None:
        """Switch the file to WAL, waiting out other connections as a write would.

        The switch needs the file to itself, and SQLite answers SQLITE_BUSY at once (its
        busy handler is not called) while another connection is opening or migrating it.
        """
        deadline = time.monotonic() + self._busy_timeout
        while True:
            try:
                connection.execute("PRAGMA journal_mode = WAL")
            except sqlite3.OperationalError as exc:
                if exc.sqlite_errorname != "SQLITE_BUSY" or time.monotonic() >= deadline:
                    raise
                time.sleep(0.01)
            else:
                return

    def _check(self, connection: sqlite3.Connection) -> int:
        """The file's schema version, after checking it is fncore's (or empty)."""
        (application,) = connection.execute("PRAGMA application_id").fetchone()
        (version,) = connection.execute("PRAGMA user_version").fetchone()
        where = repr(str(self.path))
        if application != APPLICATION_ID:
            (tables,) = connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
            if application != 0 or tables:
                msg = (
                    f"{where} is a SQLite database of another application, not a session "
                    "store; nothing was changed: point sessions.url at another file"
                )
                raise NotASessionStore(msg)
        if version > SCHEMA_VERSION:
            raise written_by_newer(f"the schema of session store {where}", version, SCHEMA_VERSION)
        return int(version)

    def _migrate(self, connection: sqlite3.Connection) -> None:
        version = self._check(connection)  # again, now that no other process can write
        for step in MIGRATIONS[version:SCHEMA_VERSION]:
            for statement in step:
                connection.execute(statement)
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")

    def _error(self, exc: sqlite3.Error) -> SessionStoreError | None:
        name = getattr(exc, "sqlite_errorname", "")
        where = repr(str(self.path))
        if name.startswith("SQLITE_NOTADB"):
            msg = (
                f"{where} is not a SQLite database (another kind of file, or a damaged "
                "one); nothing was changed: point sessions.url at another file"
            )
            return NotASessionStore(msg)
        if name.startswith("SQLITE_CORRUPT"):
            msg = (
                f"session store {where} is damaged ({exc}): restore it from a backup "
                "(sqlite3's .recover command may save what is left)"
            )
            return SessionStoreCorrupt(msg)
        if name == "SQLITE_ERROR" and str(exc).startswith(("no such table", "no such column")):
            msg = (
                f"the tables of session store {where} were changed by something other than "
                f"fncore ({exc}): restore the file from a backup"
            )
            return SessionStoreCorrupt(msg)
        if name.startswith(_UNAVAILABLE):
            msg = f"cannot use session store {where}: {exc} ({name}); check the file and folder"
            return SessionStoreUnavailable(msg)
        return None
