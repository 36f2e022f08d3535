"""Dispatch lifecycle events to hooks, each in a task of its own under a timeout.

A hook runs in its own task so that one that swallows its timeout's cancellation and keeps
waiting cannot hold the run: at the timeout it is cancelled and abandoned (it goes on in
the background until it returns), and the run continues.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from fncore.core import HookEvent

logger = logging.getLogger("fncore")

HookEntry = tuple[str, Callable[[Any], Awaitable[None]], float, str | None]
"""A hook: its name, function, timeout, and step name if it is a step in a durable run."""

_abandoned: set[asyncio.Task[object]] = set()
"""Hooks cut off at their timeout that have not returned yet (kept so they are not lost)."""


class _Fatal:
    """A non-``Exception`` error (``KeyboardInterrupt``, ``SystemExit``) a hook raised."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


async def _guarded(fn: Callable[[Any], Awaitable[None]], event: HookEvent) -> object:
    """Run one hook; return ``None``, a failure's description, or a `_Fatal`."""
    try:
        await fn(event)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
        return "CancelledError, though nothing cancelled it"
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    except BaseException as exc:
        return _Fatal(exc)
    return None


def _abandon(task: asyncio.Task[object]) -> None:
    task.cancel()
    if not task.done():
        _abandoned.add(task)
        task.add_done_callback(_abandoned.discard)


def stepped(entries: tuple[HookEntry, ...]) -> int:
    """How many of ``entries`` are steps in a durable run (registered with ``step=True``)."""
    return sum(step is not None for _, _, _, step in entries)


async def notify(
    entries: tuple[HookEntry, ...], event: HookEvent, slots: Sequence[object] = ()
) -> None:
    """Run every hook for ``event`` in turn; a slow or failing hook is skipped with a warning.

    Hooks observe only, so nothing they do (or fail to do) changes the run. A hook that
    raises a ``BaseException`` that is not an ``Exception`` (``KeyboardInterrupt``,
    ``SystemExit``) stops the run: it is raised again here. In a durable run, a hook
    registered with ``step=True`` runs as one step (at the next of ``slots``, if given).
    """
    taken = 0
    for entry in entries:
        step = entry[3]
        if step is not None and (steps := event.run._steps) is not None:
            at = slots[taken] if slots else None
            taken += 1
            await steps.step(step, partial(_notify_one, entry, event), at)
        else:
            await _notify_one(entry, event)


async def _notify_one(entry: HookEntry, event: HookEvent) -> None:
    """Run one hook for ``event`` (see `notify`)."""
    name, fn, timeout, _ = entry
    task = asyncio.ensure_future(_guarded(fn, event))
    try:
        done, _ = await asyncio.wait((task,), timeout=timeout)
    except asyncio.CancelledError:
        _abandon(task)
        raise
    if not done:
        _abandon(task)
        logger.warning(
            "hook %r skipped: it took longer than %ss on %s",
            name,
            timeout,
            type(event).__name__,
        )
        return
    failure = "it cancelled itself" if task.cancelled() else task.result()
    if failure is None:
        return
    if type(failure) is _Fatal:
        raise failure.error
    logger.warning("hook %r failed on %s and was skipped: %s", name, type(event).__name__, failure)


@dataclass(frozen=True, slots=True)
class Hooks:
    """Each event's hooks, with their timeouts resolved."""

    run_start: tuple[HookEntry, ...] = ()
    run_end: tuple[HookEntry, ...] = ()
    round_start: tuple[HookEntry, ...] = ()
    tool_start: tuple[HookEntry, ...] = ()
    tool_end: tuple[HookEntry, ...] = ()
    compaction: tuple[HookEntry, ...] = ()
    error: tuple[HookEntry, ...] = ()
    subagent_start: tuple[HookEntry, ...] = ()
    subagent_end: tuple[HookEntry, ...] = ()
