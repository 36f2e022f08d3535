"""A process killed while it commits leaves every session at a committed version, whole."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from crash_writer import PER_TURN, text
from processes import kill_after

from fncore import open_session_store

WRITER = Path(__file__).with_name("crash_writer.py")
SESSIONS = 3


def run_until_killed(url: str, commits: int) -> dict[str, int]:
    """Start the writer, SIGKILL it after ``commits`` reported commits; the last per session."""
    lines = kill_after(commits, str(WRITER), url, str(SESSIONS))
    return {session_id: int(version) for session_id, version in map(str.split, lines)}


def integrity(path: str) -> str:
    with sqlite3.connect(path) as connection:
        (result,) = connection.execute("PRAGMA integrity_check").fetchone()
    connection.close()
    return str(result)


async def test_a_writer_killed_mid_commit_loses_nothing_committed(durable_url: str) -> None:
    """Kill -9 a process committing in a loop, three times over; each time nothing is lost.

    Every session reads back whole (each of its commits' messages, the state of its last) at
    a version no older than the last one the writer reported; a SQLite file is intact.
    """
    last: dict[str, int] = {}
    for commits in (25, 40, 55):
        last.update(run_until_killed(durable_url, commits))
        if durable_url.startswith("sqlite:///"):
            assert integrity(durable_url.removeprefix("sqlite:///")) == "ok"
        store = open_session_store(durable_url)
        for session_id, reported in last.items():
            session = await store.load(session_id)
            assert session is not None
            # the writer may have committed more than was read of its output, never less
            assert session.version >= reported
            assert dict(session.state) == {"turn": session.version}
            expected = [
                text(session_id, version, i)
                for version in range(1, session.version + 1)
                for i in range(PER_TURN)
            ]
            assert [m.text for m in session.messages] == expected
            last[session_id] = session.version
        await store.aclose()  # type: ignore[attr-defined]
