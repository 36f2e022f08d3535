"""A process killed while it commits to SQLite leaves every session at a committed version."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from crash_writer import PER_TURN, text

from fncore import SqliteSessionStore

WRITER = Path(__file__).with_name("crash_writer.py")
SESSIONS = 3


def run_until_killed(path: Path, commits: int) -> dict[str, int]:
    """Start the writer, SIGKILL it after ``commits`` reported commits; the last per session."""
    writer = subprocess.Popen(
        [sys.executable, str(WRITER), str(path), str(SESSIONS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    reported: dict[str, int] = {}
    assert writer.stdout is not None
    try:
        for _ in range(commits):
            line = writer.stdout.readline()
            assert line, writer.stderr.read() if writer.stderr else "the writer stopped"
            session_id, version = line.split()
            reported[session_id] = int(version)
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.communicate()
    assert writer.returncode == -signal.SIGKILL
    return reported


def integrity(path: Path) -> str:
    with sqlite3.connect(path) as connection:
        (result,) = connection.execute("PRAGMA integrity_check").fetchone()
    connection.close()
    return str(result)


async def test_a_writer_killed_mid_commit_loses_nothing_committed(tmp_path: Path) -> None:
    """Kill -9 a process committing in a loop, three times over; each time nothing is lost.

    The file is intact, and every session reads back whole (each of its commits' messages,
    the state of its last) at a version no older than the last one the writer reported.
    """
    path = tmp_path / "sessions.db"
    last: dict[str, int] = {}
    for commits in (25, 40, 55):
        last.update(run_until_killed(path, commits))
        assert integrity(path) == "ok"
        store = SqliteSessionStore(path)
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
        await store.aclose()
