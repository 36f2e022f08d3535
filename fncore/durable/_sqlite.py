"""DBOS on SQLite older than 3.42: its ``unixepoch('subsec')``, which such SQLite lacks.

On Python 3.12 and later, DBOS stamps its rows with ``unixepoch('subsec') * 1000``, in its
tables' defaults and in its queries. SQLite learnt the ``subsec`` modifier in 3.42; an older
one (Debian 12 ships 3.40) answers ``NULL``, and DBOS fails to launch ("NOT NULL constraint
failed: application_versions.version_timestamp"). fncore's connections to such a SQLite get
a ``unixepoch`` that knows it; with a newer SQLite nothing changes.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

__all__ = ["client_engine", "engine_kwargs"]

_OLD = sqlite3.sqlite_version_info < (3, 42)
_SUBSEC = frozenset({"subsec", "subsecond"})


def unixepoch(*args: object) -> float | int | None:
    """SQLite's ``unixepoch``, with the ``subsec`` modifier of SQLite 3.42.

    Example:
        >>> unixepoch("2026-11-26 12:00:00.250", "subsec")
        1795694400.25
        >>> unixepoch("2026-11-26 12:00:00.250")
        1795694400
    """
    rest = tuple(a for a in args if a not in _SUBSEC)
    marks = ", ".join("?" * len(rest))
    if len(rest) == len(args):  # no subsec: the built-in, as it is
        sql = f"SELECT unixepoch({marks})"
    else:  # seconds from julianday's fraction, to the millisecond (as SQLite 3.42's)
        when = marks or "'now'"
        sql = f"SELECT round((julianday({when}) - 2440587.5) * 86400.0, 3)"
    plain = sqlite3.connect(":memory:")
    try:
        value: float | int | None = plain.execute(sql, rest).fetchone()[0]
    finally:
        plain.close()
    return value


class _Connection(sqlite3.Connection):
    """A connection whose ``unixepoch`` knows ``subsec``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.create_function("unixepoch", -1, unixepoch)


def _sqlite(url: str) -> bool:
    return _OLD and url.startswith("sqlite")


def engine_kwargs(url: str) -> dict[str, Any]:
    """DBOS's ``db_engine_kwargs`` for the system database at ``url`` (empty: as DBOS's)."""
    return {"connect_args": {"factory": _Connection}} if _sqlite(url) else {}


def client_engine(url: str) -> sa.Engine | None:
    """An engine for a `DBOSClient` of ``url``, set up as DBOS's own (``None``: DBOS's)."""
    if not _sqlite(url):
        return None
    engine = sa.create_engine(url, connect_args={"factory": _Connection})

    @event.listens_for(engine, "connect")
    def immediate(dbapi_conn: Any, connection_record: Any) -> None:
        dbapi_conn.isolation_level = "IMMEDIATE"  # as DBOS's: writers wait for each other
        dbapi_conn.execute("PRAGMA busy_timeout=30000")
        dbapi_conn.execute("PRAGMA foreign_keys=ON")

    return engine
