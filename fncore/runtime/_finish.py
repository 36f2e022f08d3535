"""Run a coroutine to its end even if the task awaiting it is cancelled meanwhile.

A session commit must not be cut in half: if the caller cancels the run while the store
is committing, the commit still completes, and only then does the run decide what the
caller sees. Wrapping every commit in a shielded task would cost a task and a loop
iteration per run; instead the coroutine takes its first step inline, and only one that
actually waits (a database round trip) is moved into a task of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Generator
from typing import Any, TypeVar

_T = TypeVar("_T")


class _Resume:
    """Awaitable continuing a coroutine that has already taken its first step."""

    __slots__ = ("_coro", "_waiting")

    def __init__(self, coro: Coroutine[Any, Any, Any], waiting: object) -> None:
        self._coro = coro
        self._waiting = waiting

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, waiting = self._coro, self._waiting
        while True:
            try:
                sent = yield waiting
            except BaseException as exc:
                try:
                    waiting = coro.throw(exc)
                except StopIteration as done:
                    return done.value
            else:
                try:
                    waiting = coro.send(sent)
                except StopIteration as done:
                    return done.value


async def _resume(coro: Coroutine[Any, Any, _T], waiting: object) -> _T:
    result: _T = await _Resume(coro, waiting)
    return result


async def finish(coro: Coroutine[Any, Any, _T]) -> tuple[_T | None, Exception | None, int]:
    """Await ``coro`` to its end: its result, the exception it raised, the cancellations.

    A cancellation of the awaiting task while ``coro`` runs does not reach ``coro``: it is
    counted, and the caller decides what to do once ``coro`` is done. Exactly one of the
    result and the exception is meaningful: the exception, when it is not ``None``.
    """
    try:
        waiting = coro.send(None)
    except StopIteration as done:
        return done.value, None, 0
    except Exception as exc:
        return None, exc, 0
    return await finish_waiting(coro, waiting)


async def finish_waiting(
    coro: Coroutine[Any, Any, _T], waiting: object
) -> tuple[_T | None, Exception | None, int]:
    """`finish` of ``coro`` once its first step (taken by the caller) gave ``waiting``.

    For a caller on a hot path that takes the first step itself, so that a coroutine done
    at once (an in-memory store's) costs no coroutine of `finish`.
    """
    task = asyncio.ensure_future(_resume(coro, waiting))
    cancels = 0
    while not task.done():
        try:
            await asyncio.wait((task,))
        except asyncio.CancelledError:
            cancels += 1
    error = task.exception()
    if error is None:
        return task.result(), None, cancels
    if isinstance(error, Exception):
        return None, error, cancels
    raise error


def absorb(cancels: int) -> None:
    """Withdraw ``cancels`` cancellation requests of the current task: the run returns.

    For a caller whose `finish` counted cancellations it decided not to propagate (what
    it awaited was committed, so the run returns its outcome).
    """
    if not cancels:  # the common case: nothing to withdraw, no task to look up
        return
    task = asyncio.current_task()
    if task is not None:
        for _ in range(cancels):
            task.uncancel()
