"""Real processes for the tests: workers, several at once or killed, and ``fncore serve``."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any


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


def kill_after(lines: int, *args: str) -> list[str]:
    """Run ``python -W error ARGS``; read ``lines`` lines of its stdout, then SIGKILL it.

    Returns:
        The lines read, without their line ends.

    Raises:
        AssertionError: with the process's stderr, if it ends before printing them all.
    """
    worker = subprocess.Popen(
        [sys.executable, "-W", "error", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert worker.stdout is not None
    read: list[str] = []
    try:
        for _ in range(lines):
            line = worker.stdout.readline()
            if not line:
                worker.wait()
                msg = f"the worker ended ({worker.returncode}) before it was killed:\n"
                raise AssertionError(msg + (worker.stderr.read() if worker.stderr else ""))
            read.append(line.rstrip("\n"))
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.communicate()
    assert worker.returncode == -signal.SIGKILL
    return read


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


LISTENING = re.compile(r"^serving on (http://[^\s,]+)")
SAFETY_SECONDS = 120
"""How long a line of the server may take before the test gives up (a hang guard, as
`run_fncore`'s; nothing waits for it)."""


class Served:
    """A running ``fncore serve``: its process, its URL, and its stderr lines (``None``: EOF)."""

    def __init__(self, process: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
        self.process = process
        self._lines = lines
        line = self._next()
        found = LISTENING.match(line or "")
        assert found is not None, line
        self.url = found[1]

    def _next(self) -> str | None:
        return self._lines.get(timeout=SAFETY_SECONDS)

    def stop(self, signum: int) -> tuple[int, str]:
        """Send ``signum``; the exit status and what the server printed after listening."""
        self.process.send_signal(signum)
        return self.end()

    def end(self) -> tuple[int, str]:
        """The exit status and what the server printed after listening, once it ends."""
        status = self.process.wait(timeout=SAFETY_SECONDS)
        rest = []
        while (line := self._next()) is not None:
            rest.append(line)
        return status, "".join(rest)


@contextmanager
def serving(cwd: Path, *args: str, environ: Mapping[str, str] | None = None) -> Iterator[Served]:
    """``fncore serve ARGS`` running in ``cwd`` (with ``environ`` added), once it listens.

    The server is killed at the end if the test did not stop it.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("FNCORE_")}
    env["FNCORE_HOME"] = str(cwd)
    env.update(environ or {})
    script = Path(sys.executable).parent / "fncore"
    process = subprocess.Popen(
        [str(script), "serve", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    stderr = process.stderr
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        for line in stderr:
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        yield Served(process, lines)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        reader.join(timeout=SAFETY_SECONDS)
        stderr.close()
