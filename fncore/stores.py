"""The former home of the shared stores, which `fncore.shared_stores` holds now.

Imports from ``fncore.stores`` keep working for one release; write
``from fncore.shared_stores import ...`` instead. The constants here are copies: to change
one (``LEASE`` in a test, say), change it in `fncore.shared_stores`.
"""

from fncore.shared_stores import (
    DEFAULT_MAX_ENTRIES,
    LEASE,
    MAX_CONNECTIONS,
    MemoryStore,
    RedisStore,
    SharedStore,
    open_store,
)

__all__ = [
    "DEFAULT_MAX_ENTRIES",
    "LEASE",
    "MAX_CONNECTIONS",
    "MemoryStore",
    "RedisStore",
    "SharedStore",
    "open_store",
]
