"""`timeout`: model call, tool call and reply deadlines; clean cancellation; config."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from resilience_helpers import Stalling, agent_with, answer, streamed
from returns.result import Success
from support import add, run_ok

from fncore import ConfigError, Message, ModelRequest, load_container
from fncore.errors import DeadlineExceeded, ModelTimeout
from fncore.events import TextDelta
from fncore.middleware import retry, timeout
from fncore.middleware.timeout import within
from fncore.testing import FunctionModel, ScriptedModel, TestModel, tool_calls

MODES = pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])

SHORT = 0.05
"""A deadline that a call waiting forever always misses (and nothing here needs to meet)."""


def only_tasks_left() -> set[asyncio.Task[Any]]:
    """The tasks still running besides the test's own."""
    return asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]


@MODES
async def test_a_model_call_past_its_deadline_is_a_retryable_model_timeout(stream: bool) -> None:
    """The call is cancelled and the run fails with ModelTimeout, retryable."""
    model = Stalling()
    outcome = await answer(agent_with(model, timeout(model_call=SHORT)), "hi", stream)
    error = outcome.failure()
    assert isinstance(error, ModelTimeout)
    assert error.retryable
    assert (error.position, error.middleware) == ("model_call", "timeout")
    assert str(error) == (
        "model_call middleware 'timeout': model 'stalling' did not answer within 0.05s; "
        "retry, or raise timeout's model_call"
    )
    assert (model.started, model.cancelled) == (1, 1)
    assert only_tasks_left() == set()


async def test_retry_outside_sends_a_timed_out_call_again() -> None:
    """Retry stands outside timeout: each attempt has its own deadline."""
    calls: list[int] = []

    async def slow_then_quick(request: ModelRequest) -> str:
        calls.append(1)
        if len(calls) == 1:
            await asyncio.Event().wait()
        return "quick"

    agent = agent_with(
        FunctionModel(slow_then_quick),
        timeout(model_call=SHORT),
        retry(wait_initial=0, wait_jitter=0),
    )
    assert agent.describe().positions["model_call"] == ("retry", "timeout")
    assert run_ok(await agent.run("hi")).output == "quick"
    assert len(calls) == 2


async def test_a_stream_cut_by_its_deadline_keeps_what_it_showed_and_is_not_retried() -> None:
    """Chunks shown before the deadline stay shown; the timeout is then not retried."""
    model = Stalling(deltas=(TextDelta("Hel"),))
    agent = agent_with(model, timeout(model_call=SHORT), retry(wait_initial=0))
    text_seen, outcome = await streamed(agent, "hi")
    assert (text_seen, model.started, model.cancelled) == ("Hel", 1, 1)
    assert isinstance(outcome.failure(), ModelTimeout)


def test_each_deadline_registers_at_its_own_position_only() -> None:
    """A deadline left None adds nothing where it would stand."""
    only_calls = agent_with(TestModel(), timeout(reply=None)).describe().positions
    assert (only_calls["run"], only_calls["model_call"]) == ((), ("timeout",))
    only_tools = agent_with(TestModel(), timeout(model_call=None, reply=None, tool_call=9))
    positions = only_tools.describe().positions
    assert (positions["run"], positions["model_call"], positions["tool_call"]) == (
        (),
        (),
        ("timeout",),
    )


async def test_a_quick_call_is_not_touched() -> None:
    """Within the deadline the answer passes through unchanged."""
    agent = agent_with(TestModel(), timeout(model_call=30, tool_call=30, reply=30), tools=[add])
    assert run_ok(await agent.run("2 and 3")).output == "add: 5"


@MODES
async def test_a_tool_call_past_its_deadline_is_an_error_result(stream: bool) -> None:
    """The model sees the timeout as the tool's error result and goes on."""
    cancelled: list[str] = []

    async def lookup(word: str) -> str:
        """Look a word up, slowly."""
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(word)
            raise
        return word

    async def add(a: int, b: int) -> int:
        """Add two integers, at once: no await, so no load can hold it past the deadline."""
        return a + b

    model = ScriptedModel([tool_calls(("lookup", {"word": "x"}), ("add", {"a": 1, "b": 2})), "ok"])
    agent = agent_with(model, timeout(tool_call=SHORT), tools=[lookup, add])
    result = run_ok(await answer(agent, "go", stream))
    looked, added = result.messages[1].tool_results
    assert (looked.content, looked.is_error) == ("Tool 'lookup' timed out after 0.05s.", True)
    assert (added.content, added.is_error) == ("3", False)
    assert cancelled == ["x"]
    assert result.output == "ok"


async def test_a_sync_tool_past_its_deadline_is_abandoned_in_its_thread() -> None:
    """A thread cannot be stopped: the result is an error now, the thread finishes later."""
    release = threading.Event()

    def blocking() -> str:
        """Block until released."""
        release.wait(10)
        return "late"

    model = ScriptedModel([tool_calls(("blocking", {})), "ok"])
    agent = agent_with(model, timeout(tool_call=SHORT), tools=[blocking])
    try:
        result = run_ok(await agent.run("go"))
    finally:
        release.set()
    assert result.messages[1].tool_results[0].is_error


@MODES
async def test_the_reply_deadline_stops_everything_inside(stream: bool) -> None:
    """Past the reply's deadline, the running tools are cancelled: DeadlineExceeded."""
    cancelled: list[int] = []

    async def wait(n: int) -> str:
        """Wait forever."""
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(n)
            raise
        return "never"

    calls = tool_calls(*[("wait", {"n": n}) for n in range(3)])
    agent = agent_with(ScriptedModel([calls]), timeout(reply=SHORT), tools=[wait])
    error = (await answer(agent, "go", stream)).failure()
    assert isinstance(error, DeadlineExceeded)
    assert (error.limit, error.scope, error.seconds) == ("reply", "reply", SHORT)
    assert str(error) == (
        "run middleware 'timeout': the reply took longer than its deadline of 0.05s; "
        "raise timeout's reply or ask for less"
    )
    assert sorted(cancelled) == [0, 1, 2]
    assert only_tasks_left() == set()


async def test_the_reply_deadline_also_cuts_a_waiting_model_and_commits_nothing() -> None:
    """A model call cut by the reply's deadline: DeadlineExceeded; the session is unchanged."""
    model = Stalling()
    agent = agent_with(model, timeout(reply=SHORT, model_call=30))
    outcome = await agent.run("hi", session_id="s")
    assert isinstance(outcome.failure(), DeadlineExceeded)
    assert model.cancelled == 1
    assert await agent.sessions.load("s") is None


async def test_cancelling_the_run_is_not_a_deadline() -> None:
    """Cancellation from outside propagates as CancelledError, as always."""
    model = Stalling()
    task = asyncio.create_task(agent_with(model, timeout()).run("hi"))
    for _ in range(20):
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert model.cancelled == 1


async def test_many_concurrent_runs_each_keep_their_own_deadline() -> None:
    """1,000 runs, half on a model that never answers: exactly 500 time out."""

    async def maybe_hang(request: ModelRequest) -> str:
        n = int(request.messages[-1].text)
        if n % 2:
            await asyncio.Event().wait()
        return str(n)

    agent = agent_with(FunctionModel(maybe_hang), timeout(model_call=0.5))
    outcomes = await asyncio.gather(*(agent.run(str(n)) for n in range(1000)))
    answered = [run_ok(o).output for o in outcomes if isinstance(o, Success)]
    timed_out = [o.failure() for o in outcomes if not isinstance(o, Success)]
    assert answered == [str(n) for n in range(0, 1000, 2)]
    assert len(timed_out) == 500
    assert all(isinstance(e, ModelTimeout) for e in timed_out)
    assert only_tasks_left() == set()


async def test_within_lets_a_timeout_error_of_the_work_through() -> None:
    """A TimeoutError the awaited work raises itself is not taken for the deadline."""

    async def raises() -> None:
        raise TimeoutError("the work's own")

    with pytest.raises(TimeoutError, match="the work's own"):
        await within(10, raises(), lambda: None)


# --- configuration ---------------------------------------------------------------------------


async def test_use_timeout_alone_bounds_model_calls_and_the_reply() -> None:
    """The defaults: 120 s per model call, 600 s per reply, no extra tool deadline."""
    container = load_container(overrides={"middleware": [{"use": "timeout"}]}, environ={})
    positions = container.agent().describe().positions
    assert (positions["run"], positions["model_call"], positions["tool_call"]) == (
        ("timeout",),
        ("timeout",),
        (),
    )
    assert run_ok(await container.agent().run("hi")).output == "hi"


async def test_timeout_from_a_toml_file(tmp_path: Path) -> None:
    """Deadlines from a file; a None-able one left out keeps its default."""
    path = tmp_path / "fncore.toml"
    path.write_text(
        """
[[middleware]]
use = "timeout"
model_call = 0.05
tool_call = 30
"""
    )
    container = load_container(path, environ={})
    agent = container.agent(model=Stalling(), tools=[add])
    assert isinstance((await agent.run("hi")).failure(), ModelTimeout)
    assert agent.describe().positions["tool_call"] == ("timeout",)


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"use": "timeout", "model_call": 0}, "parameter 'model_call':"),
        ({"use": "timeout", "reply": -1.5}, "parameter 'reply':"),
        ({"use": "timeout", "tool_call": "soon"}, "parameter 'tool_call':"),
        ({"use": "timeout", "reply": float("inf")}, "parameter 'reply':"),
    ],
)
def test_a_bad_timeout_entry_is_one_line(entry: dict[str, Any], words: str) -> None:
    """Zero, negative, infinite or non-numbers name the entry, on one line."""
    with pytest.raises(ConfigError) as info:
        load_container(overrides={"middleware": [entry]}, environ={}).agent()
    assert "\n" not in str(info.value)
    assert words in str(info.value)


def test_a_timeout_with_no_deadline_is_refused() -> None:
    """All three None would do nothing: refused, in code and in configuration."""
    with pytest.raises(ValueError, match="timeout needs a deadline"):
        timeout(model_call=None, reply=None)
    with pytest.raises(ConfigError, match="timeout needs a deadline"):
        load_container(
            overrides={"middleware": [{"use": "timeout", "model_call": None, "reply": None}]},
            environ={},
        ).agent()


async def test_history_untouched_by_deadlines() -> None:
    """A run within its deadlines returns the same transcript as without the middleware."""
    history = [Message.user("1 and 2")]
    plain = run_ok(await agent_with(TestModel(), tools=[add]).run(history))
    timed = run_ok(await agent_with(TestModel(), timeout(tool_call=30), tools=[add]).run(history))
    assert plain.messages == timed.messages
