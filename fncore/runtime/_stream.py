"""`RunStream`: the events of a streaming run, then its result."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Generic, TypeAlias, final

from returns.result import Result
from typing_extensions import TypeVar

from fncore.core import AgentError, Emit, RunCompleted, RunResult
from fncore.core._events import Progress

_OutputT = TypeVar("_OutputT", default=str)

Starter: TypeAlias = Callable[[Emit], Awaitable[Result[RunResult[_OutputT], AgentError]]]


class _Crashed:
    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


@final
class RunStream(Generic[_OutputT]):
    """An async iterator of `StreamEvent`; the last event is `RunCompleted`.

    ``RunStream[T]`` (from an agent with ``output_type=T``) ends with a ``RunCompleted[T]``.

    Nothing starts until iteration does. ``await stream.result()`` returns the run's
    outcome, consuming any events not yet read. Leaving the iteration early (``break``,
    ``aclose()``) cancels the run.

    Example:
        >>> async def show(agent):
        ...     async for event in agent.stream("hi"):
        ...         print(type(event).__name__)
    """

    __slots__ = ("_done", "_outcome", "_queue", "_start", "_task")

    def __init__(self, start: Starter[_OutputT]) -> None:
        self._start = start
        self._queue: asyncio.Queue[Progress | RunCompleted[_OutputT] | _Crashed] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._done = False
        self._outcome: Result[RunResult[_OutputT], AgentError] | None = None

    def __aiter__(self) -> AsyncIterator[Progress | RunCompleted[_OutputT]]:
        return self._events()

    async def _events(self) -> AsyncIterator[Progress | RunCompleted[_OutputT]]:
        # A generator, so that ``break`` in ``async for`` closes it (asyncio finalizes an
        # abandoned async generator at once) and the close cancels the run.
        try:
            while True:
                try:
                    event = await self.__anext__()
                except StopAsyncIteration:
                    return
                yield event
        finally:
            await self.aclose()

    async def _drive(self) -> None:
        try:
            outcome = await self._start(self._queue.put_nowait)  # type: ignore[arg-type]
        except asyncio.CancelledError:
            self._queue.put_nowait(_Crashed(asyncio.CancelledError()))
            raise
        except BaseException as exc:
            # A KeyboardInterrupt or SystemExit from inside the run: hand it to the consumer,
            # to be raised in its task, as ``run`` would; raising it here would send it out
            # of the event loop, past the consumer's ``try``.
            self._queue.put_nowait(_Crashed(exc))
            return
        self._queue.put_nowait(RunCompleted(outcome))

    async def __anext__(self) -> Progress | RunCompleted[_OutputT]:
        if self._done:
            raise StopAsyncIteration
        if self._task is None:
            self._task = asyncio.create_task(self._drive())
        try:
            item = await self._queue.get()
        except BaseException:
            await self.aclose()
            raise
        if isinstance(item, _Crashed):
            self._done = True
            raise item.error
        if type(item) is RunCompleted:
            self._done = True
            self._outcome = item.outcome
        return item

    async def result(self) -> Result[RunResult[_OutputT], AgentError]:
        """Run to the end (if not already) and return the outcome."""
        async for _ in self:
            pass
        if self._outcome is None:
            msg = "the stream was closed before the run completed"
            raise RuntimeError(msg)
        return self._outcome

    async def aclose(self) -> None:
        """Stop reading; a run still going is cancelled."""
        self._done = True
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
