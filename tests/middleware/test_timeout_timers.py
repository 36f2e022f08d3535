"""`timeout`'s deadlines share one timer per length and event loop, and behave as asyncio's."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from resilience_helpers import agent_with
from returns.result import Success

from fncore import ModelRequest
from fncore.errors import DeadlineExceeded, ModelTimeout
from fncore.middleware import timeout
from fncore.middleware._deadlines import SLACK, Deadlines
from fncore.testing import FunctionModel

SHORT = 0.05
"""A deadline that a call waiting forever always misses (and nothing here needs to meet)."""


class CountingLoop(asyncio.SelectorEventLoop):
    """An event loop that counts the timers armed on it."""

    armed = 0

    def call_at(self, when: float, callback: Callable[..., object], *args: Any, **kw: Any) -> Any:
        """Arm a timer, counted."""
        self.armed += 1
        return super().call_at(when, callback, *args, **kw)


def timers_for(runs: int, *registries: Any) -> int:
    """The timers armed by ``runs`` runs, one after the other, of an agent with ``registries``."""
    with asyncio.Runner(loop_factory=CountingLoop) as runner:
        agent = agent_with(FunctionModel(lambda request: "ok"), *registries)
        for n in range(runs):
            assert isinstance(runner.run(agent.run(f"run {n}")), Success)
        loop = runner.get_loop()
        assert isinstance(loop, CountingLoop)
        return loop.armed


def test_runs_arm_one_timer_per_deadline_length_not_one_per_scope() -> None:
    """100 runs with a reply and a model call deadline arm two timers, not one per scope."""
    assert timers_for(100) == 0  # the runs alone arm none
    assert timers_for(100, timeout(model_call=120, reply=600, tool_call=30)) == 2


async def test_a_deadline_set_after_one_that_ended_still_passes() -> None:
    """The timer armed for an ended call fires, then arms itself for the call still running."""

    async def model(request: ModelRequest) -> str:
        if request.messages[-1].text == "hang":
            await asyncio.Event().wait()
        return "ok"

    agent = agent_with(FunctionModel(model), timeout(model_call=SHORT))
    assert isinstance(await agent.run("quick"), Success)
    assert isinstance((await agent.run("hang")).failure(), ModelTimeout)


async def test_when_the_reply_and_its_call_pass_together_the_reply_deadline_is_reported() -> None:
    """Nested deadlines of one length: the outer one passes first, as with asyncio.timeout."""

    async def hang(request: ModelRequest) -> str:
        await asyncio.Event().wait()
        return "never"

    agent = agent_with(FunctionModel(hang), timeout(model_call=SHORT, reply=SHORT))
    error = (await agent.run("hi")).failure()
    assert isinstance(error, DeadlineExceeded)


async def test_ended_deadlines_do_not_pile_up_behind_one_still_running() -> None:
    """A long call holds the oldest place; the many quick ones that ended are dropped anyway."""
    deadlines = Deadlines(60)
    release = asyncio.Event()
    held = asyncio.create_task(deadlines.within(release.wait(), lambda: False))
    await asyncio.sleep(0)
    for _ in range(1_000):
        assert await deadlines.within(asyncio.sleep(0, True), lambda: False)
    queue = deadlines._queues[asyncio.get_running_loop()]
    assert len(queue.scopes) <= 2 * queue.running + SLACK + 1
    release.set()
    assert await held


async def test_a_cancellation_from_outside_goes_on_after_the_deadline_passed() -> None:
    """Cancelled for another reason as its deadline passed: the cancellation is not swallowed."""
    deadlines = Deadlines(SHORT)
    passed = asyncio.Event()

    async def work() -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            passed.set()
            await asyncio.sleep(0)  # the other cancellation arrives meanwhile
            raise
        return "never"

    task = asyncio.create_task(deadlines.within(work(), lambda: "late"))
    await passed.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_deadline_outside_a_task_is_refused() -> None:
    """A deadline guards work in a task: from a bare callback there is no task to cancel."""
    loop = asyncio.get_running_loop()
    deadlines = Deadlines(SHORT)
    said: asyncio.Future[str] = loop.create_future()

    def step() -> None:
        work = asyncio.sleep(0)
        guarded = deadlines.within(work, lambda: None)
        try:
            guarded.send(None)
        except RuntimeError as error:
            said.set_result(str(error))
        finally:
            work.close()

    loop.call_soon(step)
    assert "guards work in a task" in await said
