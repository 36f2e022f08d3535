"""``limit_calls``: model and tool calls per reply and per session, and each exit."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from helpers import config_error, configured, outcome_of
from returns.result import Failure, Success

from fncore import (
    Agent,
    InMemorySessionStore,
    ModelRequest,
    RegistrationError,
    Registry,
    ScopeRequired,
    StateKey,
    load_container,
)
from fncore.errors import CallLimitExceeded
from fncore.events import TextDelta, ToolResultReady
from fncore.middleware import limit_calls
from fncore.middleware.limit_calls import HINT, MESSAGE
from fncore.testing import FunctionModel, ScriptedModel, TestModel, tool_calls


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def mul(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


def eager(request: ModelRequest) -> Any:
    """Call `add` whenever tools are allowed; answer once they are not."""
    if request.tool_choice == "none":
        return f"final after {len(request.messages)} messages"
    return tool_calls(("add", {"a": 1, "b": 2}))


def agent_with(registry: Registry, model: Any, **options: Any) -> Agent:
    return Agent(model, registry=registry, tools=options.pop("tools", [add, mul, shout]), **options)


@pytest.mark.parametrize("streaming", [False, True])
async def test_end_makes_the_last_allowed_call_answer_without_tools(streaming: bool) -> None:
    """The last allowed model call is told to answer and offered no tools; the run completes."""
    model = FunctionModel(eager)
    agent = agent_with(limit_calls(model_calls_per_reply=3), model)
    result = (await outcome_of(agent, "go", streaming=streaming)).unwrap()
    assert (result.stop_reason, result.rounds) == ("completed", 3)
    assert result.output == "final after 6 messages"
    assert [len(r.tools) for r in model.requests] == [3, 3, 0]
    assert [r.tool_choice for r in model.requests] == ["auto", "auto", "none"]
    assert model.requests[-1].messages[-1].text == HINT
    assert all(m.text != HINT for m in result.messages)  # the hint is not in the transcript


@pytest.mark.parametrize("streaming", [False, True])
async def test_end_stops_with_the_message_when_the_model_keeps_calling(streaming: bool) -> None:
    """A model that calls tools even in its last round is not called again: the run ends."""
    model = ScriptedModel([tool_calls(("add", {"a": 1, "b": 1}))] * 5)
    agent = agent_with(limit_calls(model_calls_per_reply=2, message="Out of calls."), model)
    result = (await outcome_of(agent, "go", streaming=streaming)).unwrap()
    assert (result.stop_reason, result.output) == ("terminated", "Out of calls.")
    assert len(model.requests) == 2


@pytest.mark.parametrize("streaming", [False, True])
async def test_error_fails_before_the_call_over_the_limit(streaming: bool) -> None:
    """exit='error': the call over the limit is not made and the run fails, typed."""
    model = FunctionModel(eager)
    agent = agent_with(limit_calls(model_calls_per_reply=2, exit="error"), model)
    error = (await outcome_of(agent, "go", streaming=streaming)).failure()
    assert isinstance(error, CallLimitExceeded)
    assert (error.limit, error.scope, error.allowed) == ("model_calls_per_reply", "reply", 2)
    assert (error.position, error.middleware) == ("model_call", "limit_calls")
    assert "model_calls_per_reply=2" in error.message
    assert len(model.requests) == 2


async def test_a_limit_of_zero_ends_without_calling_the_model() -> None:
    """No call allowed: the reply ends with the message and the model never sees a request."""
    model = TestModel()
    result = (await agent_with(limit_calls(model_calls_per_reply=0), model).run("hi")).unwrap()
    assert (result.stop_reason, result.output, model.requests) == ("terminated", MESSAGE, [])


async def test_reply_counts_start_fresh_after_an_end_exit() -> None:
    """A reply that ended at its limit leaves nothing behind: the next reply has every call."""
    model = FunctionModel(eager)
    agent = agent_with(limit_calls(model_calls_per_reply=2), model, sessions=InMemorySessionStore())
    for turn in range(3):
        result = (await agent.run(f"turn {turn}", session_id="s")).unwrap()
        assert (result.rounds, result.stop_reason) == (2, "completed")
    assert [r.tool_choice for r in model.requests] == ["auto", "none"] * 3


async def test_session_limits_count_across_replies_and_persist() -> None:
    """model_calls_per_session spans replies; the count is committed with the session."""
    store = InMemorySessionStore()
    model = TestModel()
    agent = agent_with(
        limit_calls(model_calls_per_reply=None, model_calls_per_session=5),
        model,
        tools=[add],
        sessions=store,
    )
    outputs = [(await agent.run("1 2", session_id="s")).unwrap() for _ in range(4)]
    assert [r.stop_reason for r in outputs] == ["completed"] * 3 + ["terminated"]
    assert [len(r.tools) for r in model.requests] == [1, 1, 1, 1, 0]  # 5 calls in all
    session = await store.load("s")
    assert session is not None
    assert session.state["limit_calls.model_calls_per_session"] == 5
    other = (await agent.run("1 2", session_id="other")).unwrap()  # another session: its own
    assert other.rounds == 2


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize(
    "options",
    [
        {"model_calls_per_session": 4},
        {"tool_calls_per_session": 4},
        {"model_calls_per_reply": 3, "tool_calls_per_session": 1, "exit": "error"},
    ],
)
async def test_a_session_limit_without_a_session_fails_before_any_call(
    options: dict[str, Any], streaming: bool
) -> None:
    """No silent no-op: a per-session limit on a run without session_id is a typed error."""
    model = TestModel()
    agent = agent_with(limit_calls(**options), model)
    error = (await outcome_of(agent, "1 2", streaming=streaming)).failure()
    assert isinstance(error, ScopeRequired)
    assert (error.scope, error.position, error.middleware) == ("session", "run", "limit_calls")
    assert error.limit.endswith("_per_session")
    assert "session_id=" in error.message
    assert model.requests == []


@pytest.mark.parametrize("streaming", [False, True])
async def test_continue_answers_calls_over_the_limit_and_goes_on(streaming: bool) -> None:
    """exit='continue': calls over the limit get an error result; the reply goes on."""
    model = TestModel()
    agent = agent_with(limit_calls(tool_calls_per_reply=2, exit="continue"), model)
    result = (await outcome_of(agent, "2 3", streaming=streaming)).unwrap()
    results = result.messages[1].tool_results
    assert [(r.name, r.is_error) for r in results] == [
        ("add", False),
        ("mul", False),
        ("shout", True),
    ]
    assert results[2].content == (
        "Not run: the limit of 2 tool calls per reply is reached. Do not call any tool again."
    )
    assert result.stop_reason == "completed"
    assert [len(r.tools) for r in model.requests] == [3, 3]  # no last round: it continues


async def test_continue_still_ends_the_reply_at_a_model_call_limit() -> None:
    """exit='continue' goes on past tool limits; running out of model calls still ends it."""
    model = FunctionModel(eager)
    registry = limit_calls(model_calls_per_reply=3, tool_calls_per_reply=1, exit="continue")
    result = (await agent_with(registry, model).run("go")).unwrap()
    assert [r.tool_choice for r in model.requests] == ["auto", "auto", "none"]
    assert [r.is_error for m in result.messages for r in m.tool_results] == [False, True]
    assert result.stop_reason == "completed"


async def test_named_tools_are_counted_together_and_others_run_freely() -> None:
    """tools=[...] counts only those tools' calls; the message names them."""
    model = ScriptedModel(
        [
            tool_calls(("add", {"a": 1, "b": 1}), ("mul", {"a": 2, "b": 2})),
            tool_calls(("shout", {"text": "x"}), ("add", {"a": 3, "b": 3})),
            "done",
        ]
    )
    registry = limit_calls(
        model_calls_per_reply=None, tool_calls_per_reply=2, tools=["add", "mul"], exit="continue"
    )
    result = (await agent_with(registry, model).run("go")).unwrap()
    second = result.messages[3].tool_results
    assert [(r.name, r.is_error) for r in second] == [("shout", False), ("add", True)]
    assert second[1].content.endswith("Do not call 'add' or 'mul' again.")
    assert result.output == "done"


@pytest.mark.parametrize("streaming", [False, True])
async def test_end_after_the_tool_limit_makes_the_next_round_the_last(streaming: bool) -> None:
    """exit='end' with a tool limit: once no tool call is left, the next round answers."""
    model = FunctionModel(eager)
    registry = limit_calls(model_calls_per_reply=None, tool_calls_per_reply=2)
    result = (await outcome_of(agent_with(registry, model), "go", streaming=streaming)).unwrap()
    assert (result.rounds, result.stop_reason) == (3, "completed")
    assert [r.tool_choice for r in model.requests] == ["auto", "auto", "none"]


async def test_end_blocks_calls_over_the_tool_limit_within_one_response() -> None:
    """Calls over the limit in one response are answered with an error, then the reply ends."""
    model = TestModel()
    registry = limit_calls(model_calls_per_reply=None, tool_calls_per_reply=1)
    result = (await agent_with(registry, model).run("4 5")).unwrap()
    assert [r.is_error for r in result.messages[1].tool_results] == [False, True, True]
    assert (result.rounds, model.requests[-1].tools) == (2, ())


@pytest.mark.parametrize("streaming", [False, True])
async def test_error_on_a_tool_limit_fails_the_run(streaming: bool) -> None:
    """exit='error' with a tool limit: the call over the limit fails the run, typed."""
    agent = agent_with(
        limit_calls(model_calls_per_reply=None, tool_calls_per_session=1, exit="error"),
        TestModel(),
    )
    error = (await outcome_of(agent, "4 5", streaming=streaming, session_id="s")).failure()
    assert isinstance(error, CallLimitExceeded)
    assert (error.limit, error.scope) == ("tool_calls_per_session", "session")
    assert error.position == "tool_call"
    assert "a call of 'mul'" in error.message


async def test_a_failed_run_commits_no_session_count() -> None:
    """Session counts follow the session's rule: a run that fails commits nothing."""
    store = InMemorySessionStore()
    agent = agent_with(
        limit_calls(model_calls_per_reply=None, tool_calls_per_session=1, exit="error"),
        TestModel(),
        sessions=store,
    )
    assert isinstance(await agent.run("4 5", session_id="s"), Failure)
    assert await store.load("s") is None


async def test_two_instances_with_names_combine_model_and_tool_limits() -> None:
    """A model-call limit that ends and a tool limit that continues, side by side."""
    registry = limit_calls(model_calls_per_reply=3)
    registry.include(limit_calls(tool_calls_per_reply=1, exit="continue", name="one_tool"))
    model = FunctionModel(eager)
    agent = agent_with(registry, model)
    assert agent.describe().positions["tool_call"] == ("one_tool",)
    result = (await agent.run("go")).unwrap()
    assert [r.is_error for m in result.messages for r in m.tool_results] == [False, True]
    assert result.rounds == 3


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"model_calls_per_reply": None}, "needs a limit"),
        ({"tools": ["add"]}, "tools= names the tools a tool-call limit counts"),
        ({"tool_calls_per_reply": 1, "tools": []}, "tools= names the tools"),
    ],
)
def test_bad_combinations_are_value_errors(options: dict[str, Any], words: str) -> None:
    """Combinations that cannot work are refused when the registry is made."""
    with pytest.raises(ValueError, match=words):
        limit_calls(**options)


def test_an_unknown_tool_name_is_a_build_error() -> None:
    """A misspelt tool name does not silently count nothing: the agent refuses to build."""
    registry = limit_calls(tool_calls_per_reply=1, tools=["ad"])
    with pytest.raises(RegistrationError, match="'ad'"):
        agent_with(registry, TestModel())


async def test_configuration_loads_it_with_use_alone() -> None:
    """Configured by name alone: 20 model calls per reply, ending gracefully."""
    container = configured({"use": "limit_calls"})
    agent = container.agent(tools=[add])
    positions = agent.describe().positions
    assert positions["model_call"] == ("limit_calls",)
    assert positions["reasoning"] == ("limit_calls",)
    assert (await agent.run("1 2")).unwrap().output == "add: 3"


async def test_configuration_from_a_toml_file(tmp_path: Path) -> None:
    """A [[middleware]] block in a TOML file, parameters validated and applied."""
    path = tmp_path / "fncore.toml"
    path.write_text(
        '[[middleware]]\nuse = "limit_calls"\nmodel_calls_per_reply = 1\nexit = "error"\n'
    )
    agent = load_container(path, environ={}).agent(tools=[add])
    error = (await agent.run("1 2")).failure()
    assert isinstance(error, CallLimitExceeded)
    assert error.allowed == 1


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"use": "limit_calls", "model_calls_per_reply": -1}, "greater than or equal to 0"),
        ({"use": "limit_calls", "exit": "stop"}, "parameter 'exit'"),
        ({"use": "limit_calls", "tools": ["add"]}, "tools= names the tools"),
    ],
)
def test_configuration_errors_are_one_line(entry: dict[str, Any], words: str) -> None:
    """Out-of-range values and bad combinations are one ConfigError line naming the entry."""
    assert words in config_error(entry)


async def test_a_thousand_concurrent_replies_each_get_exactly_their_calls() -> None:
    """1,000 concurrent runs through one stack: every reply makes exactly its 3 calls."""

    async def slow_eager(request: ModelRequest) -> Any:
        await asyncio.sleep(0)
        return eager(request)

    model = FunctionModel(slow_eager)
    agent = agent_with(limit_calls(model_calls_per_reply=3, tool_calls_per_reply=5), model)
    outcomes = await asyncio.gather(*(agent.run(f"run {i}") for i in range(1000)))
    assert all(isinstance(o, Success) and o.unwrap().rounds == 3 for o in outcomes)
    assert len(model.requests) == 3000
    assert sum(r.tool_choice == "none" for r in model.requests) == 1000


async def test_a_thousand_concurrent_sessions_count_exactly() -> None:
    """1,000 sessions run concurrently, twice each: every session count is exact."""
    store = InMemorySessionStore()
    agent = agent_with(
        limit_calls(model_calls_per_reply=None, tool_calls_per_session=3),
        TestModel(),
        tools=[add],
        sessions=store,
    )
    for _ in range(2):
        runs = (agent.run("1 2", session_id=f"s{i}") for i in range(1000))
        outcomes = await asyncio.gather(*runs)
        assert all(isinstance(o, Success) for o in outcomes)
    key: StateKey[int] = StateKey("limit_calls.tool_calls_per_session", default=int)
    sessions = [await store.load(f"s{i}") for i in range(1000)]
    assert all(s is not None and s.state[key.name] == 2 for s in sessions)


async def test_streamed_text_of_the_last_round_reaches_the_consumer() -> None:
    """Streaming: the last round's answer streams like any other."""
    agent = agent_with(limit_calls(model_calls_per_reply=2), FunctionModel(eager))
    events = [e async for e in agent.stream("go")]
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "final after 4 messages"
    assert sum(isinstance(e, ToolResultReady) for e in events) == 1
