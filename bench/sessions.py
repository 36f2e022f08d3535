"""Measure what a session store costs per turn as the session grows: 1, 100 and 1,000 turns.

A turn is what a run with a session does to its store: load the session, then commit two
new messages (a user message and an answer, 500 characters together) and the session
state. Each session is made with its history first (1, 100 or 1,000 turns of those two
messages); every round starts by cutting it back to that length, so each round times the
turns that follow that many. Each figure is the minimum over rounds of the mean per turn
(noise only ever adds time).

Stores:

* ``sqlite``: `SqliteSessionStore`, ``synchronous=full`` (the default: every commit waits
  for the disk);
* ``sqlite_normal``: the same file with ``synchronous=normal``;
* ``postgres``: `PostgresSessionStore` on a PostgreSQL the benchmark starts in a temporary
  folder, with the server's default durability (``--postgres URL`` uses yours instead: a
  database the benchmark may create tables in);
* ``memory``: `InMemorySessionStore`, the floor.

Workloads, for each store and size:

* ``turn``: one store, as one process serving a conversation;
* ``alternating``: two stores on one database take turns, as two processes sharing a
  conversation: each load reads back the other's commit (not for ``memory``);
* ``first_load``: a store that never saw the session loads it, as a process that just
  started does: it reads and decodes the whole history, so it grows with it (not for
  ``memory``).

``<store>_turn_growth`` is the 1,000-turn figure over the 1-turn one: about 1 when the cost
of a turn does not depend on how long the conversation is. ``thread_hop_us`` is what one
``asyncio.to_thread`` round trip costs on this machine: the SQLite store makes two per turn
(a load and a commit), so they set its floor.

Usage::

    python bench/sessions.py                  # full run, human-readable table
    python bench/sessions.py --json           # the same, then one JSON object as the last line
    python bench/sessions.py --quick          # a fast smoke run (figures are rough)
    python bench/sessions.py --postgres URL   # use that PostgreSQL
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fncore import (
    InMemorySessionStore,
    Message,
    PostgresSessionStore,
    SessionStore,
    SessionUpdate,
    SqliteSessionStore,
)

if TYPE_CHECKING:  # mypy reads bench/ as a package (see bench/__init__.py)
    from bench import _measure
else:  # run as a script, whose folder is on sys.path
    import _measure

SIZES = (1, 100, 1000)
"""Turns of history before the timed turns."""
STORES = ("sqlite", "sqlite_normal", "postgres", "memory")
USER = "Please summarise the last report in three sentences. " * 2
ANSWER = "The report says the quarter went well, costs fell and sales rose. " * 6


def turn_messages(n: int) -> tuple[Message, Message]:
    """The two messages of turn ``n``."""
    return Message.user(f"{n}: {USER}"), Message.assistant(f"{n}: {ANSWER}")


def history(turns: int) -> tuple[Message, ...]:
    """``turns`` turns of messages."""
    return tuple(m for n in range(turns) for m in turn_messages(n))


async def turn(store: SessionStore, sid: str) -> None:
    """Load the session, commit one turn to it."""
    session = await store.load(sid)
    assert session is not None
    n = session.version
    update = SessionUpdate(
        sid, n, len(session.messages), turn_messages(n), {"turns": n, "topic": "reports"}
    )
    if await store.commit(update) is None:
        msg = f"conflict on {sid} at version {n}: nothing else writes"
        raise RuntimeError(msg)


async def cut_back(store: SessionStore, sid: str, turns: int) -> None:
    """Shorten the session to its first ``turns`` turns (what a round starts from)."""
    session = await store.load(sid)
    version = 0 if session is None else session.version
    messages = () if session is not None else history(turns)
    update = SessionUpdate(sid, version, 2 * turns, messages, {"turns": turns})
    if await store.commit(update) is None:
        msg = f"conflict on {sid}"
        raise RuntimeError(msg)


def turns_on(stores: list[Any], sid: str) -> Callable[[], Awaitable[None]]:
    """A step that runs one turn, on each of ``stores`` in turn."""
    count = iter(range(2**62))

    async def step() -> None:
        await turn(stores[next(count) % len(stores)], sid)

    return step


async def mean_us(step: Callable[[], Awaitable[None]], runs: int) -> float:
    """Mean microseconds of ``runs`` calls of ``step``, one after the other."""
    started = time.perf_counter()
    for _ in range(runs):
        await step()
    return (time.perf_counter() - started) / runs * 1e6


class Bench:
    """The stores under test, made once; one session per size."""

    def __init__(self, folder: Path, postgres_url: str) -> None:
        path = folder / "sessions.db"
        self.stores: dict[str, list[Any]] = {
            "sqlite": [SqliteSessionStore(path), SqliteSessionStore(path)],
            "sqlite_normal": [
                SqliteSessionStore(path, synchronous="normal"),
                SqliteSessionStore(path, synchronous="normal"),
            ],
            "postgres": [PostgresSessionStore(postgres_url), PostgresSessionStore(postgres_url)],
            "memory": [InMemorySessionStore()],
        }
        self.path = path
        self.postgres_url = postgres_url

    def sid(self, name: str, size: int) -> str:
        """The session of ``size`` turns that ``name`` uses."""
        return f"{name}-{size}"

    async def prepare(self) -> None:
        """Make every session with its history."""
        for name, (store, *_) in self.stores.items():
            for size in SIZES:
                await cut_back(store, self.sid(name, size), size)

    async def first_load(self, name: str, size: int, runs: int) -> float:
        """Mean µs of a load by a store that never saw the session (opened beforehand)."""
        total = 0.0
        for _ in range(runs):
            fresh: Any = (
                PostgresSessionStore(self.postgres_url)
                if name == "postgres"
                else SqliteSessionStore(self.path)
            )
            await fresh.open()
            started = time.perf_counter()
            await fresh.load(self.sid(name, size))
            total += time.perf_counter() - started
            await fresh.aclose()
        return total / runs * 1e6

    async def measure(self, rounds: int, runs: int) -> dict[str, Any]:
        """Every figure, in microseconds."""
        await self.prepare()
        best: dict[str, float] = {}

        def keep(key: str, value: float) -> None:
            best[key] = min(best.get(key, float("inf")), value)

        async def hop() -> None:
            await asyncio.to_thread(int)

        for _ in range(rounds):
            keep("thread_hop_us", await mean_us(hop, runs))
            for name, stores in self.stores.items():
                for size in SIZES:
                    sid = self.sid(name, size)
                    first = stores[0]
                    await cut_back(first, sid, size)
                    await first.load(sid)
                    gc.collect()
                    keep(f"{name}_turn_us_{size}", await mean_us(turns_on([first], sid), runs))
                    if len(stores) < 2:
                        continue
                    await cut_back(first, sid, size)
                    gc.collect()
                    alternating = await mean_us(turns_on(stores, sid), runs)
                    keep(f"{name}_alternating_us_{size}", alternating)
                    loads = max(runs // 5, 2)
                    keep(f"{name}_first_load_us_{size}", await self.first_load(name, size, loads))
        figures: dict[str, Any] = dict(sorted(best.items()))
        for name in STORES:
            figures[f"{name}_turn_growth"] = (
                best[f"{name}_turn_us_1000"] / best[f"{name}_turn_us_1"]
            )
        return {**figures, "rounds": rounds, "runs": runs}

    async def aclose(self) -> None:
        """Close every store."""
        for stores in self.stores.values():
            for store in stores:
                close = getattr(store, "aclose", None)
                if close is not None:
                    await close()


@contextlib.contextmanager
def postgres(url: str | None) -> Iterator[str]:
    """``url``, or a PostgreSQL started for the benchmark (tests/engines.py) and stopped after."""
    if url is not None:
        yield url
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    engines: Any = importlib.import_module("engines")
    with engines.postgres_server(durable=True) as server:
        yield server


LABELS = {
    "sqlite": "sqlite (synchronous=full)",
    "sqlite_normal": "sqlite (synchronous=normal)",
    "postgres": "postgresql",
    "memory": "memory",
}


def report(figures: dict[str, Any]) -> str:
    """The figures as a human-readable table."""
    rounds, runs = figures["rounds"], figures["runs"]
    head = "".join(f"{f'{n} turns':>13}" for n in SIZES)
    lines = [
        f"session store cost per turn ({rounds} rounds of {runs} turns; minimum of round means)",
    ]
    for kind, title in (
        ("turn", "one store: load + commit of a turn"),
        ("alternating", "two stores taking turns (each reads the other's commit)"),
        ("first_load", "first load by a new store (reads the whole history)"),
    ):
        lines += ["", title, f"{'':<44}{head}   1000 / 1"]
        for name in STORES:
            key = f"{name}_{kind}_us_1"
            if key not in figures:
                continue
            values = [figures[f"{name}_{kind}_us_{n}"] for n in SIZES]
            cells = "".join(f"{v:>10.0f} µs" for v in values)
            lines.append(f"  {LABELS[name]:<42}{cells}   {values[-1] / values[0]:8.2f}")
    lines += ["", f"one asyncio.to_thread round trip: {figures['thread_hop_us']:.0f} µs"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its figures."""
    parser = _measure.arguments(__doc__, rounds=(5, 2), runs=(40, 10))
    parser.add_argument("--postgres", default=None, help="a PostgreSQL URL to use")
    args = parser.parse_args(argv)
    rounds, runs = _measure.chosen(parser, args, rounds=(5, 2), runs=(40, 10))
    if runs < 2:
        parser.error("--runs must be at least 2")

    async def run(url: str) -> dict[str, Any]:
        with tempfile.TemporaryDirectory() as folder:
            bench = Bench(Path(folder), url)
            try:
                return await bench.measure(rounds, runs)
            finally:
                await bench.aclose()

    with postgres(args.postgres) as url:
        figures = asyncio.run(run(url))
    print(report(figures))
    if args.json:
        print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
