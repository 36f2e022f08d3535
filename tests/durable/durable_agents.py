"""Agents for the real-engine durable tests, loaded by ``fncore`` subprocesses.

``--agent durable_agents:NAME`` with this folder on ``PYTHONPATH``. Each agent is built from
environment variables the test sets (see `durable_support.agent_env`):

- ``DURABLE_DIR``: the folder of the tool log (``tools.log``, one line per tool start and
  end, appended) and of the markers a tool leaves when it reaches its hold;
- ``DURABLE_HOLD``: the tool (``steps``) or job (``queue``) whose call waits forever once
  it started, after writing the marker ``reached-<name>`` (holding its pid): the test
  SIGKILLs the process there; ``DURABLE_GATE`` likewise, waiting until the file
  ``go-<name>`` is made instead;
- ``DURABLE_MODEL``: the fake provider's root URL (OpenAI chat completions);
- ``FNCORE_SESSIONS__URL``: the session store (also what ``fncore sessions`` reads);
- ``DURABLE_GAUGE``: for ``queue``, the PostgreSQL database of the concurrency gauge.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import psycopg
from fncore_openai import OpenAIChatModel

from fncore import Agent, Message, ModelRequest, Registry, open_session_store
from fncore.middleware import approve
from fncore.testing import FunctionModel, tool_calls

LOG = "tools.log"
"""The tool log's file name in ``DURABLE_DIR``."""


def _folder() -> Path:
    return Path(os.environ["DURABLE_DIR"])


def log(line: str) -> None:
    """Append ``line`` to the tool log: one ``write`` of a whole line, so a kill never tears it."""
    fd = os.open(_folder() / LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{line}\n".encode())
    finally:
        os.close(fd)


async def hold_if_chosen(name: str) -> None:
    """Hold if ``name`` is ``DURABLE_HOLD`` (forever) or ``DURABLE_GATE`` (until let go).

    The first call to reach the hold writes the marker ``reached-<name>`` (its pid), made
    with ``O_EXCL`` so that only one call ever holds: the test kills its process, or lets
    it go on by making the file ``go-<name>``.
    """
    held = os.environ.get("DURABLE_HOLD") == name
    if not held and os.environ.get("DURABLE_GATE") != name:
        return
    try:
        fd = os.open(_folder() / f"reached-{name}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    if held:
        await asyncio.Event().wait()
    while not (_folder() / f"go-{name}").exists():  # noqa: ASYNC110 - another process makes it
        await asyncio.sleep(0.02)


async def _step(name: str) -> str:
    log(f"start {name}")
    await hold_if_chosen(name)
    log(f"end {name}")
    return f"{name} done"


async def t1(note: str) -> str:
    """Do step t1; ``note`` says why."""
    return await _step("t1")


async def t2(note: str) -> str:
    """Do step t2; ``note`` says why."""
    return await _step("t2")


async def t3(note: str) -> str:
    """Do step t3; ``note`` says why."""
    return await _step("t3")


def _steps_registry() -> Registry:
    registry = Registry()
    for tool in (t1, t2, t3):
        registry.tool(tool)
    return registry


def _model() -> OpenAIChatModel:
    return OpenAIChatModel(
        "fake", base_url=os.environ["DURABLE_MODEL"] + "/v1", api_key="test-key", max_retries=0
    )


def _on_fake_provider(registry: Registry, name: str) -> Agent:
    sessions = open_session_store(os.environ["FNCORE_SESSIONS__URL"])
    return Agent(_model(), registry=registry, sessions=sessions, name=name)


def steps() -> Agent:
    """Three tools ``t1``, ``t2``, ``t3`` that log their start and end, on the fake provider."""
    return _on_fake_provider(_steps_registry(), "steps")


def changed() -> Agent:
    """`steps` with one more tool: another stack, so another config hash."""
    registry = _steps_registry()

    @registry.tool
    async def t4(note: str) -> str:
        """Do step t4."""
        return note

    return _on_fake_provider(registry, "steps")


def careful() -> Agent:
    """`steps`, where every call of ``t2`` waits for a person's approval."""
    registry = Registry()
    registry.include(approve(tools=["t2"]))
    registry.include(_steps_registry())
    return _on_fake_provider(registry, "careful")


class Gauge:
    """Rows ``(seq, job, pid, kind)`` in PostgreSQL: a tool's ``enter`` and ``exit``.

    Ordered by a sequence (a logical clock): a SIGKILLed process leaves its ``enter``
    rows open, and the test closes them with a ``killed`` row of its pid.
    """

    def __init__(self) -> None:
        self._connection: psycopg.AsyncConnection[object] | None = None
        self._lock = asyncio.Lock()

    async def mark(self, job: str, kind: str) -> None:
        """Add the row ``(job, this pid, kind)``, committed before this returns.

        Without ``DURABLE_GAUGE``, nothing is measured.
        """
        if "DURABLE_GAUGE" not in os.environ:
            return
        async with self._lock:
            if self._connection is None:
                self._connection = await psycopg.AsyncConnection.connect(
                    os.environ["DURABLE_GAUGE"], autocommit=True
                )
            await self._connection.execute(
                "INSERT INTO gauge (job, pid, kind) VALUES (%s, %s, %s)",
                (job, os.getpid(), kind),
            )


def _queue_reply(request: ModelRequest) -> Message | str:
    last = request.messages[-1]
    if last.role == "tool":
        return f"finished {last.parts[0].content}"  # type: ignore[union-attr]
    return tool_calls(("work", {"job": last.text}))


def queue() -> Agent:
    """One tool, ``work(job)``, measured by the `Gauge`; its model asks for it once per run."""
    registry = Registry()
    gauge = Gauge()

    @registry.tool
    async def work(job: str) -> str:
        """Do the job."""
        await gauge.mark(job, "enter")
        await hold_if_chosen(job)
        await asyncio.sleep(0.01)  # the work itself: a tool that takes a moment
        await gauge.mark(job, "exit")
        return job

    return Agent(FunctionModel(_queue_reply), registry=registry, name="queue")
