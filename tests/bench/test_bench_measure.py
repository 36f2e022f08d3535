"""bench/_measure.py's timing: what each round's garbage collections walk."""

from __future__ import annotations

import json

from bench_runs import run_code

ROUNDS = """
import asyncio, gc, json, sys
sys.path.insert(0, sys.argv[1])
import _measure

held = [[n] for n in range(600_000)]  # what the benchmark holds, made before any round
kept = []  # what the runs of a round keep, emptied between rounds
seen = []

async def run(prompt: str) -> None:
    full = gc.get_stats()[2]["collections"]
    kept.extend([n] for n in range(35_000))
    seen.append((gc.get_freeze_count(), full, gc.get_stats()[2]["collections"]))

async def between() -> None:
    kept.clear()

asyncio.run(_measure.minimum_of_rounds([_measure.Workload("w", run)], 2, 3, between))
print(json.dumps({"held": len(held), "seen": seen}))
"""


def test_each_timed_round_starts_with_what_the_process_held_frozen() -> None:
    """A timed round's collections cannot walk what the process held before it.

    The process holds 600,000 lists before the rounds; each round's runs keep 105,000 more.
    The warm-up runs (a first run and ten more) see nothing of it frozen; each timed run (two
    rounds of three) sees at least what was held frozen. (When the collector then runs a
    full collection is CPython's own heuristic, which differs between versions, so it is
    not asserted here.)
    """
    done = run_code(ROUNDS)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    warm, timed = found["seen"][:11], found["seen"][11:]
    at_start = warm[0][0]  # what the interpreter itself may hold frozen (none on 3.11)
    assert at_start < found["held"]
    assert [frozen for frozen, _, _ in warm] == [at_start] * 11
    assert len(timed) == 6
    assert all(frozen >= found["held"] + at_start for frozen, _, _ in timed)
