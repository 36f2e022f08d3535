"""`retry` and `retry_tools` say each retry they schedule in one line on ``fncore.retry``."""

from __future__ import annotations

import logging

import pytest
import stamina
import stamina.instrumentation
from resilience_helpers import agent_with
from support import run_ok

from fncore.errors import ProviderUnavailable
from fncore.middleware import retry, retry_tools
from fncore.testing import ScriptedModel, TestModel

QUICK = {"wait_initial": 0.01, "wait_max": 0.02, "wait_jitter": 0.0}


def said(caplog: pytest.LogCaptureFixture) -> list[tuple[str, int, str]]:
    """What was logged on ``fncore.retry``: (logger, level, message) each."""
    return [(r.name, r.levelno, r.getMessage()) for r in caplog.records if r.name == "fncore.retry"]


@pytest.fixture(autouse=True)
def _default_hooks() -> object:
    """The hooks stamina has in a fresh process, before and after each test."""
    stamina.instrumentation.set_on_retry_hooks(None)
    yield
    stamina.instrumentation.set_on_retry_hooks(None)


async def test_a_model_call_retry_is_one_readable_line(caplog: pytest.LogCaptureFixture) -> None:
    """Attempt, attempts in all, cause and wait, for each retry scheduled: none for the last."""
    busy = ProviderUnavailable(message="busy")
    model = ScriptedModel([busy, busy, "fine"], name="primary")
    with caplog.at_level(logging.WARNING, logger="fncore.retry"):
        assert run_ok(await agent_with(model, retry(**QUICK)).run("hi")).output == "fine"
    assert said(caplog) == [
        (
            "fncore.retry",
            logging.WARNING,
            "model call to primary: attempt 1 of 3 failed (ProviderUnavailable: busy); "
            "attempt 2 in 0.01 s",
        ),
        (
            "fncore.retry",
            logging.WARNING,
            "model call to primary: attempt 2 of 3 failed (ProviderUnavailable: busy); "
            "attempt 3 in 0.02 s",
        ),
    ]


async def test_a_tool_call_retry_names_the_call(caplog: pytest.LogCaptureFixture) -> None:
    """retry_tools names the tool and the call, and quotes the error result."""
    tries: list[int] = []

    def add(a: int, b: int) -> int:
        """Add two integers, failing once."""
        tries.append(a)
        if len(tries) == 1:
            raise RuntimeError("not now")
        return a + b

    agent = agent_with(TestModel(), retry_tools(**QUICK), tools=[add])
    with caplog.at_level(logging.WARNING, logger="fncore.retry"):
        assert run_ok(await agent.run("What is 2 + 3?")).output == "add: 5"
    assert [line for _, _, line in said(caplog)] == [
        "tool call add [call_0_0]: attempt 1 of 3 failed "
        """(error result "Tool 'add' failed."); attempt 2 in 0.01 s"""
    ]


async def test_a_long_cause_is_cut(caplog: pytest.LogCaptureFixture) -> None:
    """The cause is quoted up to CAUSE_LENGTH characters, so the line stays short."""
    model = ScriptedModel([ProviderUnavailable(message="x" * 5000), "fine"])
    with caplog.at_level(logging.WARNING, logger="fncore.retry"):
        run_ok(await agent_with(model, retry(**QUICK)).run("hi"))
    ((_, _, line),) = said(caplog)
    assert line.startswith("model call to scripted: attempt 1 of 3 failed (ProviderUnavailable: xx")
    assert line.endswith("x…); attempt 2 in 0.01 s")
    assert (
        len(line)
        == len("model call to scripted: attempt 1 of 3 failed (); attempt 2 in 0.01 s") + 200
    )


async def test_retries_of_others_are_not_announced(caplog: pytest.LogCaptureFixture) -> None:
    """An application's own stamina retries get no fncore line."""
    calls: list[int] = []

    @stamina.retry(on=ValueError, attempts=2, wait_initial=0.0, wait_jitter=0.0)
    async def flaky() -> int:
        calls.append(1)
        if len(calls) == 1:
            raise ValueError("once")
        return 1

    # A retry of ours first, so fncore's hook is installed.
    model = ScriptedModel([ProviderUnavailable(message="busy"), "fine"])
    with caplog.at_level(logging.WARNING):
        run_ok(await agent_with(model, retry(**QUICK)).run("hi"))
        caplog.clear()
        assert await flaky() == 1
    assert said(caplog) == []
    assert [r.getMessage() for r in caplog.records] == ["stamina.retry_scheduled"]


async def test_the_line_comes_back_after_an_application_resets_the_hooks(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Hooks an application set (even none) keep theirs; fncore's is added next to them."""
    seen: list[int] = []
    stamina.instrumentation.set_on_retry_hooks([lambda details: seen.append(details.retry_num)])
    model = ScriptedModel([ProviderUnavailable(message="busy"), "fine"])
    with caplog.at_level(logging.WARNING, logger="fncore.retry"):
        run_ok(await agent_with(model, retry(**QUICK)).run("hi"))
    assert seen == [1]
    assert len(said(caplog)) == 1
