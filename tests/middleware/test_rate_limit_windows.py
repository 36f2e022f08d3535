"""``rate_limit`` on ``memory://``: fncore's own windows, exact at their edges, nothing behind."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Success

from fncore import Agent, Message, ModelRequest, ModelResponse, Usage
from fncore.middleware import rate_limit
from fncore.middleware._windows import FixedWindow, InProcess, MovingWindow, Refusal
from fncore.testing import FunctionModel


def test_a_moving_window_counts_a_hit_until_it_has_left_exactly() -> None:
    """Three per ten seconds: a hit counts until ten seconds after it, inclusive."""
    window = MovingWindow(3, 10)
    for now in (0.0, 1.0, 2.0):
        assert window.wait(now) is None
        window.hit(now)
    assert window.wait(9.5) == 0.5  # full until the first hit leaves
    assert window.wait(10.0) == 0.0  # at 10.0 the hit at 0.0 still counts
    assert window.wait(10.25) is None
    window.hit(10.25)
    assert window.wait(10.5) == 0.5  # the hit at 1.0 is now the oldest
    assert window.wait(11.5) is None


def test_a_fixed_window_starts_with_what_it_first_counts_and_ends_exactly() -> None:
    """100 per 60 seconds, from the first reservation; room again once the window ends."""
    window = FixedWindow(100, 60)
    assert window.wait(100, 5.0) is None
    assert window.add(100, 5.0) == 65.0  # the window runs from 5.0 to 65.0
    assert window.wait(1, 64.0) == 1.0
    assert window.wait(1, 65.0) is None  # ended: it counts nothing
    assert window.add(30, 70.0) == 130.0  # a new window, from 70.0


def test_what_goes_back_goes_only_to_its_own_window_and_never_below_zero() -> None:
    """A give-back names its window: an ended one takes nothing; a count never goes negative."""
    window = FixedWindow(100, 60)
    first = window.add(80, 0.0)
    window.give_back(200, first, 1.0)
    assert window.count == 0
    second = window.add(50, 2.0)  # it was empty: a window from 2.0
    assert second == 62.0
    window.give_back(50, first, 10.0)  # to a window that is no more: nothing given
    assert window.count == 50
    window.give_back(50, second, 62.0)  # the window has just ended: nothing given
    assert window.add(90, 62.0) == 122.0
    window.give_back(40, second, 63.0)
    assert window.count == 90


@given(
    st.lists(st.tuples(st.integers(0, 3_000), st.booleans()), max_size=60),
    st.integers(1, 5),
)
def test_a_moving_window_admits_what_counting_every_hit_would(
    steps: list[tuple[int, bool]], limit: int
) -> None:
    """Against the rule itself: a hit passes if fewer than ``limit`` hits are in the last 10 s."""
    window, hits, now = MovingWindow(limit, 10), [], 0.0
    for step, hit in steps:
        now += step / 1000  # exact window edges come up often at these steps
        passes = sum(1 for t in hits if t >= now - 10) < limit
        assert (window.wait(now) is None) == passes
        if passes and hit:
            window.hit(now)
            hits.append(now)


@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 60)), max_size=60))
def test_a_fixed_window_admits_what_its_rule_says(steps: list[tuple[int, int]]) -> None:
    """Against the rule itself: the window ends 20 s after the amount that found it empty."""
    window, count, ends, now = FixedWindow(100, 20), 0, -1.0, 0.0
    for step, amount in steps:
        now += step
        if ends <= now:
            count = 0
        passes = count + amount <= 100
        assert (window.wait(amount, now) is None) == passes
        if passes:
            count += amount
            if count == amount:
                ends = now + 20
            assert window.add(amount, now) == ends


def test_a_refused_call_takes_neither_tokens_nor_a_request() -> None:
    """A request and its tokens are taken both or neither."""
    rates = InProcess(requests=2, tokens=100, seconds=60)
    assert isinstance(rates.take("m", 60), float)
    refused = rates.take("m", 50)  # the request fits, the tokens do not
    assert isinstance(refused, Refusal)
    assert refused.limit == "tokens_per_minute"
    assert 59 < refused.wait <= 60
    assert isinstance(rates.take("m", 40), float)  # so the refused call took no request
    refused = rates.take("m", 0)  # now the tokens fit, the request does not
    assert isinstance(refused, Refusal)
    assert refused.limit == "requests_per_minute"
    other = InProcess(requests=1, tokens=100, seconds=60)
    window = other.take("m", 50)
    assert isinstance(window, float)
    assert isinstance(other.take("m", 50), Refusal)  # no request left, the tokens would fit
    other.settle("m", 50, window, used=0)  # the first call's 50 back
    tokens = other._windows["m"][1]
    assert tokens is not None
    assert tokens.count == 0  # the refused call had taken none


def test_settling_without_a_token_limit_changes_nothing() -> None:
    """Requests alone: there is no reservation to settle, whatever the call used."""
    rates = InProcess(requests=1, tokens=None, seconds=60)
    assert rates.take("m", 0) == 0.0
    rates.settle("m", 0, 0.0, used=500)
    assert isinstance(rates.take("m", 0), Refusal)


@pytest.fixture
def short_switches() -> Iterator[None]:
    """Threads switch as often as CPython allows, so an unguarded check-then-count races."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(interval)


@pytest.mark.usefixtures("short_switches")
def test_event_loops_in_several_threads_share_the_exact_quota() -> None:
    """Four threads, each with its own event loop, hit one rate: exactly its quota passes."""
    rates = rate_limit(requests_per_minute=2_000, max_wait=0)
    passed: list[int] = []

    def runs() -> None:
        async def main() -> int:
            agent = Agent(FunctionModel(lambda request: "ok"), registry=rates)
            outcomes = [await agent.run(f"run {i}") for i in range(1_000)]
            return sum(isinstance(o, Success) for o in outcomes)

        passed.append(asyncio.run(main()))

    threads = [threading.Thread(target=runs) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(passed) == 2_000


async def test_a_hit_leaves_no_task_and_no_thread_behind() -> None:
    """Many calls with requests and tokens counted, each yielding: no task, no thread appears."""
    seen: list[tuple[int, int]] = []

    async def yielding(request: ModelRequest) -> ModelResponse:
        await asyncio.sleep(0)  # the event loop turns, as in a real network call
        seen.append((threading.active_count(), len(asyncio.all_tasks())))
        return ModelResponse(Message.assistant("ok"), Usage(3, 2))

    registry = rate_limit(requests_per_minute=10_000, tokens_per_minute=10_000_000)
    agent = Agent(FunctionModel(yielding), registry=registry)
    before = (threading.active_count(), len(asyncio.all_tasks()))
    for i in range(50):
        assert isinstance(await agent.run(f"run {i}"), Success)
        await asyncio.sleep(0)
        assert (threading.active_count(), len(asyncio.all_tasks())) == before
    assert set(seen) == {before}
    await registry.aclose()


def test_a_moving_window_takes_a_hit_only_if_it_fits() -> None:
    """take() is wait() then hit() when it fits: the hit counts, or the wait is given."""
    window = MovingWindow(1, 60)
    assert window.take(0.0) is None
    assert window.take(1.0) == 59.0
    assert window.take(60.5) is None


def test_settling_gives_back_what_was_not_used_and_counts_what_went_over() -> None:
    """Unused tokens go back to their window if it has not ended; overuse counts now.

    What a call used beyond its reservation counts in the current window.
    """
    now = [0.0]
    rates = InProcess(requests=None, tokens=100, seconds=10, clock=lambda: now[0])
    first = rates.take("m", 60)
    assert first == 10.0  # the window the call found empty ends 10 s later
    rates.settle("m", 60, first, used=20)  # 40 back
    now[0] = 4.0
    second = rates.take("m", 80)  # 20 + 80 fits exactly
    assert second == 10.0
    rates.settle("m", 80, second, used=90)  # 10 more than reserved: 110 counted
    assert rates.take("m", 0) == Refusal("tokens_per_minute", 6.0)
    now[0] = 10.0  # the window has ended: a new one starts with what it counts
    third = rates.take("m", 30)
    assert third == 20.0
    rates.settle("m", 80, second, used=0)  # given back to a window that ended: to nothing
    rates.settle("m", 30, third, used=100)  # 70 over, in the current window: 100 counted
    assert rates.take("m", 1) == Refusal("tokens_per_minute", 10.0)
    assert rates.take("m", 0) == 20.0
