"""What both sides of ``durable.py`` share: the workload, and the loop that times it.

A side is one framework on one database, in a process of its own (DBOS keeps one instance
per process, on one database): ``_durable_fncore.py`` in fncore's venv,
``_durable_pydantic_ai.py`` in Pydantic AI's. Nothing here imports either framework.

The workload: one user message; the model (in-process, zero latency) asks for the tool
``add`` `CALLS` times, one call a round, each after the result of the one before, then
answers `ANSWER`. A durable run of it records 4 model calls and 3 tool calls: 7 steps.

The protocol, one JSON object a line: the side prints ``{"ready": true, ...}`` (what it
checked: each variant's answer and the steps its durable run recorded), then answers each
``round N`` line on its stdin with each variant's mean microseconds over N runs (wall
time, and the CPU time of the whole process, DBOS's threads included), the
variants timed one after the other (in the reverse order every other round); it exits at
``quit`` or at the end of its input. Its protocol lines go to the stdout it started with;
anything else printed to stdout goes to stderr.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import IO, Any

CALLS = 3
"""Tool calls per run, one per round."""
ANSWER = "Added three times."
"""The model's final text."""
PROMPT = "Add 0 + 1, then 1 + 1, then 2 + 1."
"""The user message of every run."""

Run = Callable[[str], Awaitable[str]]
"""One run of a variant on a prompt, to its final text."""


def arguments(done: int) -> dict[str, int]:
    """The arguments of the model's tool call after ``done`` results."""
    return {"a": done, "b": 1}


def protocol_out() -> IO[str]:
    """The process's stdout for the protocol; stdout itself goes to stderr from now on."""
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


async def _mean_us(run: Run, count: int) -> tuple[float, float]:
    """Mean wall and CPU microseconds per run (the process's CPU: every thread of it)."""
    gc.collect()
    started, cpu = time.perf_counter(), time.process_time()
    for n in range(count):
        await run(f"{PROMPT} (#{n})")
    wall = (time.perf_counter() - started) / count * 1e6
    return wall, (time.process_time() - cpu) / count * 1e6


async def serve(variants: Mapping[str, Run], info: Mapping[str, Any], out: IO[str]) -> None:
    """Check each variant's answer, say ``ready`` with ``info``, then time rounds until ``quit``.

    Args:
        variants: Each variant's run, by name (``plain`` and the durable ones).
        info: What the side reports once (versions, the steps each durable run recorded).
        out: Where the protocol's lines go (`protocol_out`).
    """
    for name, run in variants.items():
        answer = await run(PROMPT)
        if answer != ANSWER:
            msg = f"{name} answered {answer!r}, not {ANSWER!r}"
            raise RuntimeError(msg)
    print(json.dumps({"ready": True, **info}), file=out)
    order = list(variants)
    while True:
        line = (await asyncio.to_thread(sys.stdin.readline)).split()
        if not line or line[0] == "quit":
            return
        count = int(line[1])
        figures = {name: await _mean_us(variants[name], count) for name in order}
        wall = {name: us for name, (us, _) in figures.items()}
        cpu = {name: us for name, (_, us) in figures.items()}
        print(json.dumps({"wall": wall, "cpu": cpu}), file=out)
        order.reverse()
