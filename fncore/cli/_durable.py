"""Durable runs at the command line: ``fncore worker``, ``fncore runs`` and ``run --durable``.

They build on `fncore.durable` (the ``durable`` extra, DBOS Transact), imported only when a
durable command runs. The database is ``[durable] url`` (by default ``durable.sqlite`` in
fncore's data directory, beside ``sessions.db``).

- ``fncore worker`` launches the engine with your agent, which recovers this worker's
  pending runs, takes over the runs of the workers named by ``--take-over``, then serves
  the queue until SIGTERM (or Ctrl-C) and drains; ``--once`` finishes the pending runs and
  exits instead.
- ``fncore runs list|show|cancel`` read and cancel runs over a client: no agent, no launch.
- ``fncore run --durable`` runs one prompt as a durable run, printing ``run <id>`` to
  stderr before it starts.

Every failure is one line (`CommandFailed`): an unreachable database, a wrong password
(never shown), an unknown run id, a run this stack must not recover (its stack changed).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TextIO

from returns.result import Result

from fncore import Agent, AgentError, ConfigError, Decision, RunResult
from fncore._distribution import install_hint
from fncore.cli._commands import (
    _unwrap,
    answer_text,
    chosen_agent,
    opened,
    settle,
    terminal_asker,
)
from fncore.cli._errors import CommandFailed
from fncore.cli._text import safe
from fncore.settings import load_settings

if TYPE_CHECKING:
    from fncore.durable import DurableRunInfo, DurableRuntime
    from fncore.settings import DurableSettings

EXIT_OK = 0
EXIT_BLOCKED = 1
"""Some pending runs cannot be recovered by this stack (each one said so on stderr)."""

DBOS_LOGGER = "dbos"
"""The logger DBOS writes its records to."""


def _positive(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        msg = f"a limit is a whole number of at least 1, not {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return number


def add_worker(commands: Any, shared: Callable[[argparse.ArgumentParser], None]) -> None:
    """The ``worker`` command's parser; ``shared`` adds ``--agent`` and ``--config``."""
    worker = commands.add_parser(
        "worker",
        help="run durable runs: recover this worker's, then serve the queue until SIGTERM",
        description=(
            "Launch the durable engine ([durable] url) with your agent (--agent) or the "
            "example agent: recover this worker's pending runs, take over the runs of dead "
            "workers (--take-over), then serve the queue until SIGTERM or Ctrl-C, and "
            "drain (needs fncore-agents[durable]). Exits 1 if some pending runs started "
            "with a different stack of the agent (one line each)."
        ),
    )
    worker.add_argument(
        "--executor-id",
        metavar="ID",
        help=(
            "this worker's identity: a worker restarted with it recovers its runs "
            "([durable] executor_id; default: one kept in fncore's data directory)"
        ),
    )
    worker.add_argument(
        "--take-over",
        metavar="ID",
        nargs="+",
        action="extend",
        default=[],
        help="also recover the pending runs of these (dead) workers",
    )
    worker.add_argument(
        "--once",
        action="store_true",
        help="finish the pending runs, then exit instead of serving the queue",
    )
    shared(worker)


def add_runs(commands: Any, shared: Callable[[argparse.ArgumentParser], None]) -> None:
    """The ``runs`` command's parser (``list``, ``show ID``, ``cancel ID``)."""
    runs = commands.add_parser(
        "runs",
        help="list, show or cancel durable runs",
        description=(
            "The durable runs in [durable] url (by default durable.sqlite in fncore's "
            "data directory), read without launching the engine or loading an agent."
        ),
    )
    shared(runs)
    actions = runs.add_subparsers(dest="runs_command", metavar="ACTION")
    listing = actions.add_parser(
        "list", help="one line per run, newest first: id, status, agent, session, created"
    )
    listing.add_argument(
        "--status",
        metavar="STATUS",
        help="only the runs in this status: PENDING, ENQUEUED, SUCCESS, ERROR, CANCELLED, ...",
    )
    listing.add_argument(
        "--limit", type=_positive, default=50, help="at most this many runs (default 50)"
    )
    shared(listing)
    show = actions.add_parser("show", help="a run's status, steps and outcome")
    show.add_argument("run_id", metavar="ID", help="the run's id")
    shared(show)
    cancel = actions.add_parser("cancel", help="cancel a run: it stops at its next step")
    cancel.add_argument("run_id", metavar="ID", help="the run's id")
    shared(cancel)


def _engine() -> Any:
    """The `fncore.durable` module.

    Raises:
        ConfigError: if the ``durable`` extra (DBOS) is not installed.
    """
    try:
        import fncore.durable as durable
    except ImportError as exc:
        if not (exc.name or "").startswith("dbos"):
            raise
        msg = f"durable runs need DBOS Transact: {install_hint('durable')}"
        raise ConfigError(msg) from None
    return durable


def durable_settings(config: str | None, settings: Mapping[str, Any]) -> DurableSettings | None:
    """The ``[durable]`` settings (defaults < file < ``FNCORE_*`` < flags), or ``None``.

    Read from the settings rather than the container, whose copy hides the URL's password.

    Raises:
        ConfigError: for bad configuration.
    """
    return load_settings(config, overrides=settings).durable


@asynccontextmanager
async def _unavailable_is_one_line() -> AsyncIterator[None]:
    """Turn `DurableUnavailableError` (no database) into `CommandFailed`, one line.

    DBOS's own log records are dropped meanwhile: it logs what fails (an unreachable
    database, say) before fncore says it in one line.
    """
    dbos = logging.getLogger(DBOS_LOGGER)
    silent, propagated = logging.NullHandler(), dbos.propagate
    dbos.addHandler(silent)  # DBOS adds its console handler only to a logger without one
    dbos.propagate = False
    try:
        yield
    except _engine().DurableUnavailableError as exc:
        raise CommandFailed(str(exc)) from None
    finally:
        dbos.propagate = propagated
        dbos.removeHandler(silent)


@asynccontextmanager
async def launched(
    agent: Agent, durable: DurableSettings | None, executor_id: str | None = None
) -> AsyncIterator[DurableRuntime]:
    """The durable engine launched with ``agent``, torn down (drained) when the block ends.

    Raises:
        ConfigError: without the ``durable`` extra.
        CommandFailed: if the database cannot be used (one line, no password).
    """
    runtime = _engine().DurableRuntime([agent], durable, executor_id=executor_id)
    async with _unavailable_is_one_line(), runtime:
        yield runtime


def _stop_on_signals(stop: asyncio.Event) -> Callable[[], None]:
    loop = asyncio.get_running_loop()
    wanted = (signal.SIGTERM, signal.SIGINT)
    for sig in wanted:
        loop.add_signal_handler(sig, stop.set)

    def restore() -> None:
        for sig in wanted:
            loop.remove_signal_handler(sig)

    return restore


async def serve_worker(
    agent: Agent,
    durable: DurableSettings | None,
    *,
    executor_id: str | None,
    take_over: Sequence[str],
    once: bool,
) -> int:
    """``fncore worker``'s work with ``agent``; the exit status (1: some runs are blocked)."""
    stop = asyncio.Event()
    restore = _stop_on_signals(stop)
    try:
        async with launched(agent, durable, executor_id) as runtime:
            for blocked in runtime.blocked:
                _say(f"fncore: error: {blocked}")
            taken = await runtime.take_over(take_over) if take_over else ()
            if once:
                await _until_first(runtime.wait_idle(), stop.wait())
            else:
                _say(
                    f"worker {runtime.executor_id} serving queue {runtime.settings.queue} "
                    f"(version {runtime.app_version}); SIGTERM drains and stops"
                )
                if take_over:
                    _say(f"took over {len(taken)} run(s) of {', '.join(take_over)}")
                await stop.wait()
                _say(f"worker {runtime.executor_id} draining")
            return EXIT_BLOCKED if runtime.blocked else EXIT_OK
    finally:
        restore()


async def _until_first(*waits: Coroutine[Any, Any, object]) -> None:
    """Wait until one of ``waits`` ends (the others are cancelled); its exception, if any."""
    tasks = [asyncio.ensure_future(wait) for wait in waits]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    for task in done:
        task.result()


def _say(line: str) -> None:
    print(safe(line), file=sys.stderr, flush=True)


async def durable_prompt(
    agent: Agent,
    durable: DurableSettings | None,
    prompt: str,
    out: TextIO,
    session_id: str | None,
) -> None:
    """``fncore run --durable``: ``prompt`` as one durable run; the answer on ``out``.

    ``run <id>`` goes to stderr before the run starts. A pause is handled as ``fncore
    run`` does (`settle`), a decision at the terminal resuming through the engine.

    Raises:
        CommandFailed: if the database cannot be used.
        RunFailed: if the run returns ``Failure``.
        Waiting: if it paused for approval with nobody at a terminal to decide.
    """
    async with launched(agent, durable) as runtime:
        run_id = uuid.uuid4().hex
        _say(f"run {run_id}")
        outcome = await runtime.run(agent, prompt, session_id=session_id, run_id=run_id)
        await _answer(runtime, agent, outcome, out)


async def durable_resume(
    agent: Agent,
    durable: DurableSettings | None,
    checkpoint_id: str,
    decision: Decision,
    out: TextIO,
) -> None:
    """``fncore resume --durable``: the paused run goes on as a new durable run.

    Raises:
        CommandFailed: if the database cannot be used.
        RunFailed: if the resume returns ``Failure`` (an unknown checkpoint, say).
        Waiting: if the run paused again with nobody at a terminal to decide.
    """
    async with launched(agent, durable) as runtime:
        outcome = await runtime.resume(agent, checkpoint_id, decision)
        await _answer(runtime, agent, outcome, out)


async def _answer(
    runtime: DurableRuntime,
    agent: Agent,
    outcome: Result[RunResult, AgentError],
    out: TextIO,
) -> None:
    """Print the answer of ``outcome``, after settling its pauses through ``runtime``."""

    async def resume(
        checkpoint_id: str, decisions: Mapping[str, Decision]
    ) -> Result[RunResult, AgentError]:
        resumed: Result[RunResult, AgentError] = await runtime.resume(
            agent, checkpoint_id, decisions
        )
        return resumed

    result = await settle(agent, _unwrap(outcome), out, terminal_asker(), resume)
    print(answer_text(result.output, out), file=out, flush=True)


def worker_command(
    *,
    config: str | None,
    settings: Mapping[str, Any],
    ref: str | None,
    executor_id: str | None,
    take_over: Sequence[str],
    once: bool,
) -> int:
    """``fncore worker``: serve durable runs with the chosen agent (`chosen_agent`).

    Returns:
        0, or 1 when some pending runs started with a different stack (said on stderr).

    Raises:
        ConfigError: for bad configuration, or without the ``durable`` extra.
        RegistrationError: if the stack cannot be built.
        CommandFailed: if ``ref`` gives no agent, or the database cannot be used.
    """
    durable = durable_settings(config, settings)

    async def work() -> int:
        async with opened(*await chosen_agent(ref, config, settings)) as agent:
            return await serve_worker(
                agent, durable, executor_id=executor_id, take_over=take_over, once=once
            )

    return asyncio.run(work())


def runs_command(
    action: str,
    *,
    config: str | None,
    settings: Mapping[str, Any],
    out: TextIO,
    run_id: str = "",
    status: str | None = None,
    limit: int = 50,
) -> None:
    """``fncore runs ACTION``: list, show or cancel durable runs over a client.

    Raises:
        ConfigError: for bad configuration, or without the ``durable`` extra.
        CommandFailed: if the database cannot be used, or ``run_id`` names no run.
    """
    durable = _engine()
    client = durable.DurableClient(durable_settings(config, settings))

    async def act() -> None:
        async with _unavailable_is_one_line(), client:
            if action == "list":
                try:
                    listed = await client.runs(status=status, limit=limit)
                except ValueError as exc:  # an unknown status, listing the known ones
                    raise CommandFailed(str(exc)) from None
                _print_list(listed, out)
                return
            found = await (client.show if action == "show" else client.cancel)(run_id)
            if isinstance(found, durable.UnknownRun):
                raise CommandFailed(str(found))
            if found is None:
                print(f"cancelled {safe(run_id)}", file=out)
            else:
                _print_run(found, out)

    asyncio.run(act())


def _when(ms: int | None) -> str:
    """A time in Unix epoch milliseconds as UTC ISO 8601, to the second (``-``: unknown)."""
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds")


def _print_list(infos: Sequence[DurableRunInfo], out: TextIO) -> None:
    if not infos:
        print("no durable runs", file=sys.stderr)
        return
    rows = [
        (safe(i.id), i.status, safe(i.agent or "-"), safe(i.session_id or "-"), _when(i.created_at))
        for i in infos
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    for row in rows:
        print(
            "  ".join(f"{cell:<{w}}" for cell, w in zip(row, widths, strict=True)).rstrip(),
            file=out,
        )


def _print_run(info: DurableRunInfo, out: TextIO) -> None:
    fields = {
        "run": info.id,
        "status": info.status,
        "agent": info.agent or "-",
        "session": info.session_id or "-",
        "executor": info.executor_id or "-",
        "version": info.app_version or "-",
        "created": _when(info.created_at),
        "updated": _when(info.updated_at),
    }
    for name, value in fields.items():
        print(f"{name}: {safe(value)}", file=out)
    print(f"steps: {len(info.steps)}", file=out)
    for step in info.steps:
        took = ""
        if step.started_ms is not None and step.ended_ms is not None:
            took = f"  {step.ended_ms - step.started_ms} ms"
        outcome = "ok" if step.ok else f"error: {step.error}" if step.error else "unfinished"
        print(f"  {step.id}  {safe(step.name)}  {safe(outcome)}{took}", file=out)
    if info.stop_reason is not None:
        print(f"stop reason: {safe(info.stop_reason)}", file=out)
    if info.output is not None:
        print(f"output: {safe(info.output, lines=True)}", file=out)
    if info.error is not None:
        print(f"error: {safe(info.error)}", file=out)
