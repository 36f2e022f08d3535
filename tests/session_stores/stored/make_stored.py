"""Write one of the store files next to this script, with fncore as it was at a past commit.

Run it with that commit's fncore first on the path, from a checkout of the commit::

    git worktree add --detach /tmp/old 209ef30
    PYTHONPATH=/tmp/old:tests/session_stores python tests/session_stores/stored/make_stored.py \
        schema-1.db

(An old checkout reads its version from the installed distribution's metadata: when the
installed one has another name, add a directory holding ``fncore-0.1.0.dist-info/METADATA``
with ``Name: fncore`` to ``PYTHONPATH``.) `stored_values.FILES` names each file's commit;
the file gets the sessions (and, from schema version 2, the checkpoints) described there.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from pathlib import Path

import stored_values as v

from fncore import SessionUpdate, SqliteSessionStore


async def write(path: Path) -> None:
    """Fill a new store file at ``path`` as the running fncore writes it."""
    store = SqliteSessionStore(str(path))
    await store.open()
    await store.commit(SessionUpdate("ada", 0, 0, v.ADA, v.ADA_STATE))
    await store.commit(SessionUpdate("bob", 0, 0, v.BOB_FIRST, {"turns": 1}))
    await store.commit(SessionUpdate("bob", 1, 2, v.BOB[2:], v.BOB_STATE))
    if path.name != "schema-1.db":
        for checkpoint in v.checkpoints(path.name == "schema-2-registered.db").values():
            await store.save_checkpoint(checkpoint)
    await store.aclose()
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA journal_mode = DELETE")  # one file, no -wal beside it
        connection.execute("VACUUM")
    connection.close()


if __name__ == "__main__":
    target = Path(__file__).parent / sys.argv[1]
    target.unlink(missing_ok=True)
    asyncio.run(write(target))
    print(target, target.stat().st_size)
