"""The session store a URL names."""

from __future__ import annotations

from fncore._session_url import parse_session_url
from fncore.session_stores._memory import InMemorySessionStore
from fncore.session_stores._postgres import PostgresSessionStore
from fncore.session_stores._protocols import SessionStore
from fncore.session_stores._sqlite import SqliteSessionStore
from fncore.settings import ConfigError


def open_session_store(url: str) -> SessionStore:
    """The session store ``url`` names; nothing is opened until it is first used.

    ``memory://`` is an `InMemorySessionStore`, ``sqlite:///path`` a `SqliteSessionStore`,
    ``postgresql://...`` a `PostgresSessionStore`. Close the SQL stores with ``aclose()``
    (a container closes the one it made in ``shutdown()``).

    Raises:
        ConfigError: if the URL is malformed or names no kind of store, saying what to write.

    Example:
        >>> type(open_session_store("memory://")).__name__
        'InMemorySessionStore'
        >>> open_session_store("sqlite:///sessions.db?synchronous=normal")
        SqliteSessionStore('sqlite:///sessions.db')
    """
    try:
        parsed = parse_session_url(url)
    except ValueError as exc:
        msg = f"session store URL: {exc}"
        raise ConfigError(msg) from None
    if parsed.kind == "sqlite" and parsed.path is not None:
        return SqliteSessionStore(parsed.path, synchronous=parsed.synchronous)
    if parsed.kind == "postgresql":
        return PostgresSessionStore(url)
    return InMemorySessionStore()
