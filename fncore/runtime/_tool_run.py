"""Running one round's tool calls: the ``tool_call`` onions, timeouts, threads, concurrency.

Every call ends with exactly one result, whatever happens inside: an exception, a
timeout, a value that cannot be turned into text, a ``CancelledError`` nobody asked for.
Two things are not results:

* real cancellation of the run, which propagates;
* a ``BaseException`` that is not an ``Exception`` (``KeyboardInterrupt``, ``SystemExit``),
  which cancels the round's other calls and is raised again, as itself, to the caller of
  ``run`` (or of the stream), whether the round had one call or many.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import anyio.to_thread
from pydantic import BaseModel
from returns.result import Success

from fncore.core import (
    AgentError,
    EventMapFailed,
    MiddlewareError,
    Pause,
    RunInfo,
    Terminate,
    Tool,
    ToolCallPart,
    ToolEnd,
    ToolResult,
    ToolResultPart,
    ToolResultReady,
    ToolStart,
    to_content,
)
from fncore.core._loop import LoopSettings, Ready, Rejected
from fncore.core._position_names import TOOL_CALL
from fncore.core._value import maker
from fncore.runtime._handlers import End
from fncore.runtime._hooks import HookEntry, notify, stepped
from fncore.runtime._steps import Steps
from fncore.runtime._subagent import Delegate

Halting = Terminate | Pause | AgentError | None
"""What stops the loop after a call: a termination, a pause, an error, or nothing."""

WAITING = "Not run: waiting for a human's decision."
"""The stand-in result of a paused call, used only if the round ends for another reason."""

_part = maker(ToolResultPart)
_tool_result = maker(ToolResult)


def _cancelled(name: str) -> ToolResult:
    """The error result of tool ``name`` raising a ``CancelledError`` nobody asked for."""
    return ToolResult(
        f"Tool {name!r} failed: it raised CancelledError, but nothing cancelled it.", True
    )


def _spurious(exc: asyncio.CancelledError) -> bool:
    """Whether ``exc`` was raised without anyone cancelling the current task."""
    task = asyncio.current_task()
    return task is not None and not task.cancelling()


class ToolRunner:
    """Runs tool calls for one agent; owns the agent's worker-thread limit."""

    __slots__ = (
        "_ending",
        "_handlers",
        "_hooked",
        "_settings",
        "_starting",
        "_subagent_hooks",
        "_threads",
        "_tool_end",
        "_tool_start",
    )

    def __init__(
        self,
        settings: LoopSettings,
        handlers: Mapping[str, End],
        tool_start: tuple[HookEntry, ...],
        tool_end: tuple[HookEntry, ...],
        subagent_hooks: tuple[tuple[HookEntry, ...], tuple[HookEntry, ...]] = ((), ()),
    ) -> None:
        self._settings = settings
        self._handlers = handlers
        self._tool_start = tool_start
        self._tool_end = tool_end
        self._subagent_hooks = subagent_hooks
        self._hooked = bool(tool_start or tool_end)
        self._starting = stepped(tool_start)
        """How many ``tool_start`` hooks are steps (in a durable run)."""
        self._ending = stepped(tool_end)
        """How many ``tool_end`` hooks are steps (in a durable run)."""
        self._threads = anyio.CapacityLimiter(settings.max_tool_threads)

    async def invoke(
        self, tool: Tool, args: BaseModel, run: RunInfo, call: ToolCallPart
    ) -> ToolResult | Pause | AgentError:
        """Call ``tool`` with ``args`` under its timeout; any failure is an error result.

        A sub-agent's tool (``Agent.as_tool``) may also pause (its child paused) or fail the
        run (a `SubagentError`).
        """
        settings = self._settings
        timeout = tool.timeout if tool.timeout is not None else settings.tool_timeout
        name = tool.name
        function = tool.function
        try:
            if type(function) is Delegate:
                child = function.call(run, call, args.prompt, self._subagent_hooks)  # type: ignore[attr-defined]
                try:  # the child's run returns its failures: a TimeoutError is the scope's
                    async with asyncio.timeout(timeout):
                        return await child
                except TimeoutError:
                    return ToolResult(f"Tool {name!r} timed out after {timeout}s.", True)
            if tool.inline:
                return self.call_inline(tool, args)
            if tool.is_async:
                pending: Any = tool.function(**tool.keywords(args))
            else:
                # A thread cannot be stopped: on timeout it is abandoned to finish on its
                # own and gives its place under the limit back at once.
                pending = anyio.to_thread.run_sync(
                    functools.partial(tool.function, **tool.keywords(args)),
                    abandon_on_cancel=True,
                    limiter=self._threads,
                )
            if timeout is None:
                value = await pending
            else:
                scope = asyncio.timeout(timeout)
                try:
                    async with scope:
                        value = await pending
                except TimeoutError:
                    if not scope.expired():
                        raise  # the tool's own TimeoutError: a failure like any other
                    return ToolResult(f"Tool {name!r} timed out after {timeout}s.", True)
        except asyncio.CancelledError as exc:
            if not _spurious(exc):
                raise
            return _cancelled(name)
        except Exception as exc:
            return self._failed(name, exc)
        return self._result(name, value)

    def call_inline(self, tool: Tool, args: BaseModel) -> ToolResult:
        """Call the sync ``tool`` (``inline=True``) on the event loop: `invoke` without a wait."""
        return self._result(tool.name, self._inline(tool, args))

    def _inline(self, tool: Tool, args: BaseModel) -> object:
        """What the sync ``tool`` returned, called on the event loop; if it raised, the error."""
        try:
            return tool.function(**tool.keywords(args))
        except asyncio.CancelledError as exc:
            if not _spurious(exc):
                raise
            return _cancelled(tool.name)
        except Exception as exc:
            return self._failed(tool.name, exc)

    def _failed(self, name: str, exc: Exception) -> ToolResult:
        """The error result of tool ``name`` raising ``exc``."""
        detail = f": {type(exc).__name__}: {exc}" if self._settings.include_detailed_errors else ""
        return ToolResult(f"Tool {name!r} failed{detail}.", True)

    def _result(self, name: str, value: object) -> ToolResult:
        """What tool ``name`` returned, as a result: text, or the error of what is not."""
        if type(value) is ToolResult:  # a tool that says itself whether it failed (MCP's)
            return value
        try:
            return _tool_result(to_content(value))
        except Exception as exc:
            detail = (
                f": {type(exc).__name__}: {exc}" if self._settings.include_detailed_errors else ""
            )
            return ToolResult(
                f"Tool {name!r} returned a {type(value).__name__} that could not be turned "
                f"into text{detail}.",
                True,
            )

    def at_once(self, item: Ready | Rejected) -> ToolResultPart | None:
        """``item``'s result if `one` would await nothing for it, else ``None``.

        That is a rejected call, or a call to an inline tool that no ``tool_call``
        middleware wraps, with no tool hooks; the caller checks that nothing streams.
        """
        if type(item) is Rejected:
            return item.result
        call, tool = item.call, item.tool
        if (
            self._hooked
            or not tool.inline
            or call.name in self._handlers
            or type(tool.function) is Delegate
        ):
            return None
        value = self._inline(tool, item.args)  # `call_inline`, the usual text answer first
        cls = type(value)
        if cls is str:
            return _part(call.id, call.name, value, False)  # type: ignore[arg-type]
        if cls is int:
            return _part(call.id, call.name, repr(value), False)
        result = self._result(tool.name, value)
        return _part(call.id, call.name, result.content, result.is_error)

    async def one(
        self, run: RunInfo, item: Ready | Rejected, slots: Sequence[object] = ()
    ) -> tuple[ToolResultPart, Halting]:
        """Run one call through its ``tool_call`` onion; its result and what halts, if any.

        In a durable run the pass is one step (at ``slots``, drawn by `many`, if given),
        and so is each hook registered with ``step=True``.
        """
        halt: Halting = None
        if type(item) is Rejected:
            part = item.result
        else:
            call = item.call
            start, end = self._tool_start, self._tool_end
            if start:
                await notify(start, ToolStart(run, call), slots)
            steps = run._steps
            if steps is None:
                part, halt = await self._through(run, item)
            else:
                at = slots[self._starting] if slots else None
                name = f"tool:{call.name}:{call.id}"
                part, halt = await steps.step(name, functools.partial(self._through, run, item), at)
            if type(halt) is Pause:  # the call waits: it has no result, and it has not ended
                return part, halt
            if end:
                await notify(end, ToolEnd(run, call, part), slots[self._starting + 1 :])
        if run.emit is not None:
            try:
                run.emit(ToolResultReady(part))
            except EventMapFailed as failed:
                if halt is None or type(halt) is Terminate:
                    halt = failed.error
        return part, halt

    async def _through(self, run: RunInfo, item: Ready) -> tuple[ToolResultPart, Halting]:
        """``item``'s pass through its ``tool_call`` onion (the bare call without one)."""
        call = item.call
        handler = self._handlers.get(call.name)
        if handler is None:
            tool = item.tool
            result = (
                self.call_inline(tool, item.args)  # no coroutine to await
                if tool.inline and type(tool.function) is not Delegate
                else await self.invoke(tool, item.args, run, call)
            )
            if type(result) is ToolResult:
                return _part(call.id, call.name, result.content, result.is_error), None
            if type(result) is Pause:
                return ToolResultPart(call.id, call.name, WAITING, True), result
            return ToolResultPart(call.id, call.name, f"Not completed: {result}", True), result
        out = await handler(run, call, item.tool, item.args)
        halt: Halting
        if type(out) is Success:
            result = out.unwrap()
            if type(result.content) is str:
                return _part(call.id, call.name, result.content, result.is_error), None
            halt = MiddlewareError(
                message=(
                    f"returned a ToolResult whose content is "
                    f"{type(result.content).__name__}, not str"
                ),
                position=TOOL_CALL,
            )
        else:
            halt = out.failure()
            if type(halt) is Terminate:
                return ToolResultPart(call.id, call.name, halt.output), halt
            if type(halt) is Pause:
                return ToolResultPart(call.id, call.name, WAITING, True), halt
        return ToolResultPart(call.id, call.name, f"Not completed: {halt}", True), halt

    async def many(
        self, run: RunInfo, calls: tuple[Ready | Rejected, ...]
    ) -> tuple[tuple[ToolResultPart, ...], tuple[Halting, ...]]:
        """Run a round's calls concurrently (bounded); results and halts in call order."""
        limit = asyncio.Semaphore(self._settings.max_concurrent_tools)
        fatal: list[BaseException] = []
        tasks: list[asyncio.Task[tuple[ToolResultPart, Halting] | None]] = []
        steps = run._steps
        slots = () if steps is None else self._reserve(steps, calls)

        async def bounded(
            item: Ready | Rejected, at: Sequence[object]
        ) -> tuple[ToolResultPart, Halting] | None:
            try:
                async with limit:
                    return await self.one(run, item, at)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # KeyboardInterrupt, SystemExit: stop the round
                if not fatal:
                    fatal.append(exc)
                    me = asyncio.current_task()
                    for other in tasks:
                        if other is not me:
                            other.cancel()
                return None

        tasks.extend(
            asyncio.ensure_future(bounded(item, slots[index] if slots else ()))
            for index, item in enumerate(calls)
        )
        try:
            await asyncio.wait(tasks)
        except asyncio.CancelledError:
            for task in tasks:
                task.cancel()
            await asyncio.wait(tasks)
            raise
        if fatal:
            raise fatal[0]
        done: list[tuple[ToolResultPart, Halting]] = [t.result() for t in tasks]  # type: ignore[misc]
        return tuple(p for p, _ in done), tuple(h for _, h in done)

    def _reserve(self, steps: Steps, calls: tuple[Ready | Rejected, ...]) -> list[Sequence[object]]:
        """Each call's step slots, drawn in call order before any call starts.

        A call's slots are its ``tool_start`` step hooks', its pass's, then its
        ``tool_end`` step hooks'; a rejected call has none (it runs no step).
        """
        per_call = self._starting + 1 + self._ending
        ready = sum(type(item) is Ready for item in calls)
        drawn = iter(steps.reserve(per_call * ready))
        return [
            [next(drawn) for _ in range(per_call)] if type(item) is Ready else [] for item in calls
        ]
