"""`select_tools`: a selecting model narrows the tools offered on each model call."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from helpers import config_error, configured, outcome_of
from returns.result import Failure, Success

from fncore import Agent, MiddlewareError, ModelRequest, Registry, RequireTool, Tool, load_container
from fncore.errors import ProviderUnavailable
from fncore.middleware import select_tools, trace
from fncore.testing import FunctionModel, TestModel, tool_calls

MODES = pytest.mark.parametrize("streaming", [False, True], ids=["run", "stream"])


def make_tool(name: str) -> Tool:
    """A tool called ``name`` that returns its name."""

    def run() -> str:
        return name

    run.__name__ = name
    run.__doc__ = f"The {name} tool."
    return Tool.from_function(run)


TOOLS = [make_tool(f"t{i}") for i in range(10)]


def selector(reply: str | Any) -> FunctionModel:
    """A selecting model that always answers ``reply``."""
    return FunctionModel(lambda request: reply, name="selector")


def agent_with(model: Any, *registries: Registry, tools: list[Tool] = TOOLS) -> Agent:
    """An agent on ``model`` with ``registries`` and ``tools``."""
    registry = Registry()
    for each in registries:
        registry.include(each)
    return Agent(model, registry=registry, tools=tools)


def answering() -> FunctionModel:
    """The agent's model: answers with the names of the tools it was offered."""
    return FunctionModel(lambda request: ",".join(t.name for t in request.tools), name="agent")


@MODES
async def test_only_the_selected_tools_are_offered(streaming: bool) -> None:
    """The selector's JSON array, minus invented names, plus always_include, in tool order."""
    pick = selector('Sure: ["t7", "nope", "t2", "t7"]')
    agent = agent_with(answering(), select_tools(max_tools=3, always_include=["t9"], model=pick))
    outcome = await outcome_of(agent, "use t2 and t7", streaming=streaming)
    assert outcome.unwrap().output == "t2,t7,t9"
    (asked,) = pick.requests
    assert "at most 3" in asked.instructions
    assert (asked.tools, asked.tool_choice) == ((), "none")
    prompt = asked.messages[0].text
    assert "user: use t2 and t7" in prompt
    assert re.findall(r"^\d+\. (t\d)", prompt, re.MULTILINE) == [f"t{i}" for i in range(9)]


async def test_more_picks_than_allowed_keep_the_first() -> None:
    """Beyond max_tools, the selector's first picks are kept."""
    agent = agent_with(answering(), select_tools(max_tools=2, model=selector('["t5","t1","t3"]')))
    assert (await agent.run("x")).unwrap().output == "t1,t5"


async def test_few_tools_make_no_selection_call() -> None:
    """At or below max_tools (always_include aside), the request goes unchanged, unasked."""
    pick = selector('["t0"]')
    agent = agent_with(answering(), select_tools(max_tools=9, always_include=["t9"], model=pick))
    assert (await agent.run("x")).unwrap().output == ",".join(t.name for t in TOOLS)
    assert pick.requests == []


async def test_the_agents_model_selects_by_default_and_is_not_reentered() -> None:
    """model=None: the agent's own model selects, once per call, through the onion."""
    calls: list[str] = []

    def model(request: ModelRequest) -> str:
        if request.instructions.startswith("You choose which tools"):
            calls.append("select")
            return '["t3"]'
        calls.append("answer")
        return ",".join(t.name for t in request.tools)

    agent = agent_with(FunctionModel(model), trace(), select_tools(max_tools=1))
    assert (await agent.run("x")).unwrap().output == "t3"
    assert calls == ["select", "answer"]


async def test_an_empty_array_offers_always_include_only() -> None:
    """[] is a valid answer: only always_include is offered."""
    agent = agent_with(
        answering(), select_tools(max_tools=2, always_include=["t0"], model=selector("[]"))
    )
    assert (await agent.run("x")).unwrap().output == "t0"


async def test_a_required_tool_stays_offered() -> None:
    """A tool_choice naming a tool keeps that tool among those offered."""
    seen: list[tuple[str, ...]] = []

    def model(request: ModelRequest) -> str:
        seen.append(tuple(t.name for t in request.tools))
        return "done"

    agent = agent_with(FunctionModel(model), select_tools(max_tools=1, model=selector('["t1"]')))
    await agent.run("x", tool_choice=RequireTool("t8"))
    assert seen[0] == ("t1", "t8")


@pytest.mark.parametrize(
    "reply", ["t1 and t2", '{"tools": "t1"}', "[not json", ProviderUnavailable(message="down")]
)
async def test_an_unusable_selection_offers_every_tool(reply: Any) -> None:
    """No JSON array, or a failed selection call: every tool is offered (the default)."""
    seen: list[Any] = []

    def model(request: ModelRequest) -> str:
        seen.append(len(request.tools))
        return "ok"

    agent = agent_with(FunctionModel(model), select_tools(max_tools=2, model=selector(reply)))
    assert isinstance(await agent.run("x"), Success)
    assert seen == [10]


async def test_on_failure_fail_returns_the_error() -> None:
    """on_failure='fail': a failed call's error, or a MiddlewareError for an unusable answer."""
    down = ProviderUnavailable(message="down")
    agent = agent_with(
        answering(), select_tools(max_tools=2, model=selector(down), on_failure="fail")
    )
    error = (await agent.run("x")).failure()
    assert isinstance(error, ProviderUnavailable)
    agent = agent_with(
        answering(), select_tools(max_tools=2, model=selector("no"), on_failure="fail")
    )
    error = (await agent.run("x")).failure()
    assert isinstance(error, MiddlewareError)
    assert (error.position, error.middleware) == ("model_call", "select_tools")
    assert "no JSON array" in error.message


async def test_every_round_is_selected_again() -> None:
    """Each model call of a reply gets its own selection, from the conversation so far."""
    rounds: list[tuple[str, ...]] = []
    asked: list[str] = []

    def pick(request: ModelRequest) -> str:
        asked.append(request.messages[0].text)
        return '["t1"]' if len(asked) == 1 else '["t2"]'

    def model(request: ModelRequest) -> Any:
        rounds.append(tuple(t.name for t in request.tools))
        if len(rounds) == 1:
            return tool_calls(("t1", {}))
        return "done"

    agent = agent_with(FunctionModel(model), select_tools(max_tools=1, model=FunctionModel(pick)))
    assert (await agent.run("x")).unwrap().output == "done"
    assert rounds == [("t1",), ("t2",)]
    assert "tool: [t1: t1]" in asked[1]


async def test_max_tools_must_be_positive() -> None:
    """max_tools=0 is refused, in code and in configuration."""
    with pytest.raises(ValueError, match="max_tools"):
        select_tools(max_tools=0)
    assert "max_tools" in config_error({"use": "select_tools", "max_tools": 0})


async def test_use_alone_selects_up_to_eight_with_the_agents_model() -> None:
    """[[middleware]] use = 'select_tools': 10 tools > 8, so the agent's model selects."""
    agent = configured({"use": "select_tools"}).agent(model=TestModel(), tools=TOOLS)
    outcome = await agent.run("x")
    assert isinstance(outcome, Success), outcome
    # TestModel echoes the selection prompt: no JSON array, so every tool was offered.
    assert len(outcome.unwrap().messages[0].tool_calls) == 10


async def test_a_preset_selector_from_a_toml_file(tmp_path: Path) -> None:
    """A preset selector, max_tools and always_include, all from a TOML file."""
    config = tmp_path / "fncore.toml"
    config.write_text(
        """
[[middleware]]
use = "select_tools"
max_tools = 2
always_include = ["t9"]
model = "picker"
on_failure = "fail"

[models.picker]
kind = "test"
"""
    )
    agent = load_container(config, environ={}).agent(model=answering(), tools=TOOLS)
    outcome = await agent.run("x")
    assert isinstance(outcome, Failure)  # TestModel answers no array: on_failure = "fail"
    assert isinstance(outcome.failure(), MiddlewareError)


async def test_a_thousand_concurrent_runs_each_get_their_own_selection() -> None:
    """1,000 runs share one stack: one selection call each, each run offered its own pick."""

    def pick(request: ModelRequest) -> str:
        number = int(request.messages[0].text.split("user: r")[1].split()[0])
        return f'["t{number % 10}"]'

    selecting = FunctionModel(pick)
    agent = agent_with(answering(), select_tools(max_tools=1, model=selecting))
    outcomes = await asyncio.gather(*(agent.run(f"r{i}") for i in range(1000)))
    assert [o.unwrap().output for o in outcomes] == [f"t{i % 10}" for i in range(1000)]
    assert len(selecting.requests) == 1000
