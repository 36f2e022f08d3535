"""bench/_measure.py's timing: what each round's garbage collections walk."""

from __future__ import annotations

import json
import subprocess
import sys

from bench_runs import BENCH

ROUNDS = """
import asyncio, gc, json, sys
sys.path.insert(0, sys.argv[1])
import _measure

held = [[n] for n in range(10_000)]  # what the benchmark holds, made before any round
seen = []

async def run(prompt: str) -> None:
    seen.append(gc.get_freeze_count())

async def nothing() -> None:
    return None

asyncio.run(_measure.minimum_of_rounds([_measure.Workload("w", run)], 2, 3, nothing))
print(json.dumps({"held": len(held), "seen": seen}))
"""


def test_each_round_starts_with_what_the_process_holds_out_of_the_collectors_sight() -> None:
    """A round's collections walk what its runs make, not what was there before it.

    The warm-up runs (a first run and ten more) see nothing frozen; each timed run (two
    rounds of three) sees at least what the process held before the rounds frozen.
    """
    done = subprocess.run(
        [sys.executable, "-c", ROUNDS, str(BENCH)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    found = json.loads(done.stdout)
    warm, timed = found["seen"][:11], found["seen"][11:]
    assert warm == [0] * 11
    assert len(timed) == 6
    assert all(frozen >= found["held"] for frozen in timed)
