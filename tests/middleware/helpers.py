"""What the built-ins' tests share: a run's outcome in either mode, and real processes."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

import pytest

from fncore import Agent, ConfigError, Container, RunCompleted, RunOutcome, load_container


def configured(*entries: dict[str, Any]) -> Container:
    """A container whose configuration lists ``entries`` under ``[[middleware]]``."""
    return load_container(overrides={"middleware": list(entries)}, environ={})


def config_error(entry: dict[str, Any]) -> str:
    """The one-line ConfigError that building an agent with ``entry`` raises."""
    with pytest.raises(ConfigError) as info:
        configured(entry).agent()
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(f"config key 'middleware[0]' (use = {entry['use']!r}): ")
    return text


async def outcome_of(agent: Agent, prompt: str, *, streaming: bool, **options: Any) -> RunOutcome:
    """The run's outcome, from ``run`` or from the last event of ``stream``."""
    if not streaming:
        return await agent.run(prompt, **options)
    last: Any = None
    async for event in agent.stream(prompt, **options):
        last = event
    assert isinstance(last, RunCompleted)
    return last.outcome


async def run_processes(script: str, *args: str, count: int = 2) -> list[Any]:
    """Run ``script`` in ``count`` Python processes at once; each one's JSON output.

    Each process gets ``args``, then its index, then a start time a moment ahead, which the
    script waits for (``wait_for_start``) so that the processes overlap once imported.

    Raises:
        AssertionError: with the process's stderr, if one fails.
    """
    start = str(time.time() + 1.5)
    processes = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-W",
            "error",
            "-c",
            script,
            *args,
            str(index),
            start,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for index in range(count)
    ]
    outputs = await asyncio.gather(*(p.communicate() for p in processes))
    for process, (_, err) in zip(processes, outputs, strict=True):
        if process.returncode:
            msg = f"a worker process failed ({process.returncode}):\n{err.decode()}"
            raise AssertionError(msg)
    return [json.loads(out) for out, _ in outputs]


PRELUDE = """
import asyncio, json, sys, time


async def wait_for_start():
    await asyncio.sleep(max(0.0, float(sys.argv[-1]) - time.time()))
"""
"""What every worker script starts with: imports and ``wait_for_start``."""

BARRIER = """
import redis.asyncio


async def barrier(url, name, count):
    # Wait until ``count`` workers reach the barrier ``name``, counted in Redis.
    client = redis.asyncio.Redis.from_url(url)
    await client.incr(f"test:barrier:{name}")
    while int(await client.get(f"test:barrier:{name}")) < count:
        await asyncio.sleep(0.01)
    await client.aclose()
"""
"""What a worker script adds to `PRELUDE` to wait for the others: ``barrier(url, name, n)``,
so the workers start a phase together however long each took to import."""
