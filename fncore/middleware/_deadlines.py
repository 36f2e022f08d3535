"""Deadlines of one length, as many at once as there are runs, on one timer per event loop.

`asyncio.timeout` arms a timer for each scope (a handle pushed on the event loop's heap) and
cancels it when the scope ends; for a deadline that hardly ever passes, that timer is most
of what the scope costs. Deadlines of one length pass in the order they were set, so a queue
of them needs one timer only, armed for the oldest: when it fires, it cancels the tasks whose
deadline has passed, drops the scopes that ended, and arms itself again for the oldest one
still running. A scope that ends only marks itself done.

What happens when a deadline passes is what `asyncio.timeout` does: the task is cancelled;
the scope takes that cancellation back (`asyncio.Task.uncancel`) and reports its deadline,
unless the task was also cancelled for another reason, which then goes on.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["Deadlines"]

_T = TypeVar("_T")

SLACK = 64
"""Ended scopes a queue may hold beyond twice its running ones before it drops them all."""


class _Scope:
    """One deadline: the task it guards, when it passes, and whether it passed.

    ``task`` is ``None`` once the scope ended; ``cancelling`` is how many cancellations the
    task had pending when the scope started (those are not the scope's to take back).
    """

    __slots__ = ("at", "cancelling", "passed", "task")

    def __init__(self, task: asyncio.Task[object], at: float) -> None:
        self.task: asyncio.Task[object] | None = task
        self.at = at
        self.cancelling = task.cancelling()
        self.passed = False


class _Queue:
    """The deadlines of one length on one event loop, oldest first, and its one timer."""

    __slots__ = ("running", "scopes", "timer")

    def __init__(self) -> None:
        self.scopes: deque[_Scope] = deque()
        self.running = 0
        self.timer: asyncio.TimerHandle | None = None

    def enter(self, loop: asyncio.AbstractEventLoop, seconds: float) -> _Scope:
        """Set a deadline ``seconds`` from now for the current task."""
        task = asyncio.current_task(loop)
        if task is None:
            msg = "a deadline guards work in a task: call it from a coroutine run by asyncio"
            raise RuntimeError(msg)
        scope = _Scope(task, loop.time() + seconds)
        scopes = self.scopes
        while scopes and scopes[0].task is None:
            scopes.popleft()
        scopes.append(scope)
        self.running += 1
        if self.timer is None:
            self.timer = loop.call_at(scopes[0].at, self.fire, loop)
        elif len(scopes) > 2 * self.running + SLACK:  # a long-running scope holds the head
            self.scopes = deque(s for s in scopes if s.task is not None)
        return scope

    def leave(self, scope: _Scope) -> bool:
        """End ``scope``: whether its deadline passed and the task's cancellation was its own."""
        self.running -= 1
        task, scope.task = scope.task, None
        return scope.passed and task is not None and task.uncancel() <= scope.cancelling

    def fire(self, loop: asyncio.AbstractEventLoop) -> None:
        """Cancel the tasks whose deadline passed; arm the timer for the next one, if any."""
        self.timer = None
        now = loop.time()
        scopes = self.scopes
        while scopes:
            first = scopes[0]
            task = first.task
            if task is not None:  # still running
                if first.at > now:
                    self.timer = loop.call_at(first.at, self.fire, loop)
                    return
                first.passed = True
                task.cancel()
            scopes.popleft()


class Deadlines:
    """Deadlines of ``seconds``, one for each awaited thing, on one timer per event loop.

    Example:
        >>> async def main() -> list[str]:
        ...     deadlines = Deadlines(0.01)
        ...     return [
        ...         await deadlines.within(asyncio.sleep(0, "on time"), lambda: "late"),
        ...         await deadlines.within(asyncio.sleep(5, "on time"), lambda: "late"),
        ...     ]
        >>> asyncio.run(main())
        ['on time', 'late']
    """

    __slots__ = ("_queues", "seconds")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Queue] = (
            weakref.WeakKeyDictionary()
        )

    async def within(self, pending: Awaitable[_T], late: Callable[[], _T]) -> _T:
        """``pending``'s value, or ``late()`` if the deadline passed first (``pending`` cancelled).

        Raises:
            asyncio.CancelledError: when the task is cancelled for another reason too.
        """
        loop = asyncio.get_running_loop()
        queue = self._queues.get(loop)
        if queue is None:
            queue = self._queues[loop] = _Queue()
        scope = queue.enter(loop, self.seconds)
        try:
            value = await pending
        except asyncio.CancelledError:
            if queue.leave(scope):
                return late()
            raise
        except BaseException:
            queue.leave(scope)
            raise
        queue.leave(scope)
        return value
