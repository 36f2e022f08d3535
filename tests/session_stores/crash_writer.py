"""Commits turns to a session store until killed (run by test_crash.py).

Usage: ``python crash_writer.py URL SESSIONS``, with the store's URL. Each turn appends
`PER_TURN` messages to one of ``SESSIONS`` sessions (in turn), numbered so that a reader can
check every one is there, and sets the state to the turn's number. After each commit it
prints ``<session> <version>``.
"""

from __future__ import annotations

import asyncio
import sys

from fncore import Message, SessionUpdate, open_session_store

PER_TURN = 40
"""Messages per commit: enough that a kill often lands inside a transaction."""
FILLER = "x" * 500


def text(session_id: str, version: int, index: int) -> str:
    """The text of message ``index`` of the commit that made ``version``."""
    return f"{session_id}/{version}/{index}/{FILLER}"


async def main(url: str, sessions: int) -> None:
    store = open_session_store(url)
    turn = 0
    while True:
        session_id = f"s{turn % sessions}"
        turn += 1
        loaded = await store.load(session_id)
        version = 0 if loaded is None else loaded.version
        messages = tuple(Message.user(text(session_id, version + 1, i)) for i in range(PER_TURN))
        keep = 0 if loaded is None else len(loaded.messages)
        update = SessionUpdate(session_id, version, keep, messages, {"turn": version + 1})
        saved = await store.commit(update)
        if saved is None:
            sys.exit(f"conflict on {session_id} at {version}: nobody else writes")
        print(session_id, saved.version, flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
