"""Session stores chosen by URL: ``memory://``, ``sqlite:///path``, ``postgresql://...``.

fncore's are `InMemorySessionStore`, `SqliteSessionStore` and `PostgresSessionStore`; the
protocols they meet (`SessionStore`, `CheckpointStore`, `SessionCatalog`,
`CheckpointCatalog`) are defined here too, and exported by `fncore`.

`open_session_store` makes the store a URL names; the container makes the one
``[sessions] url`` names (by default a SQLite file in fncore's data directory).
"""

from fncore.session_stores._errors import (
    NotASessionStore,
    NotSerializable,
    SessionSchemaTooNew,
    SessionStoreCorrupt,
    SessionStoreError,
    SessionStoreUnavailable,
)
from fncore.session_stores._memory import InMemorySessionStore
from fncore.session_stores._open import open_session_store
from fncore.session_stores._postgres import PostgresSessionStore
from fncore.session_stores._sql import SCHEMA_VERSION
from fncore.session_stores._sqlite import SqliteSessionStore

__all__ = [
    "SCHEMA_VERSION",
    "InMemorySessionStore",
    "NotASessionStore",
    "NotSerializable",
    "PostgresSessionStore",
    "SessionSchemaTooNew",
    "SessionStoreCorrupt",
    "SessionStoreError",
    "SessionStoreUnavailable",
    "SqliteSessionStore",
    "open_session_store",
]
