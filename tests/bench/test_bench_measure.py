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


def test_a_round_collects_what_its_runs_keep_not_what_the_process_held_before() -> None:
    """A round's collections walk what its runs make, and are set off by it alone.

    The process holds 600,000 lists before the rounds; each round's runs keep 105,000 more
    (three runs of 35,000), less than a quarter of what was held. The warm-up runs (a first
    run and ten more) see nothing frozen; each timed run (two rounds of three) sees what
    was held frozen, and each round sets off a full collection of what its runs kept: the
    collector counts from what is not frozen, not from the whole process.
    """
    done = run_code(ROUNDS)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    warm, timed = found["seen"][:11], found["seen"][11:]
    assert [frozen for frozen, _, _ in warm] == [0] * 11
    assert len(timed) == 6
    assert all(frozen >= found["held"] for frozen, _, _ in timed)
    for first in (0, 3):  # each round: its first run's count before, its last run's after
        assert timed[first + 2][2] > timed[first][1]
