"""`emulate_tools`: a model answers tool calls; the real tools never run."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from helpers import config_error, configured, outcome_of
from otel_support import Otel, attrs
from returns.result import Failure, Success

from fncore import (
    Agent,
    Message,
    ModelCallContext,
    ModelCallNext,
    ModelRequest,
    ModelResponse,
    Outcome,
    Registry,
    load_container,
)
from fncore.errors import CallLimitExceeded, ProviderUnavailable
from fncore.events import TextDelta
from fncore.middleware import emulate_tools, limit_calls
from fncore.middleware.emulate_tools import EMULATED, EMULATED_ATTRIBUTE, INSTRUCTIONS
from fncore.testing import FunctionModel, ScriptedModel, TestModel, tool_calls

MODES = pytest.mark.parametrize("streaming", [False, True], ids=["run", "stream"])

ran: list[str] = []


def send_mail(to: str, subject: str) -> str:
    """Send an email; returns the message id."""
    ran.append(to)
    return "real-id"


def lookup(word: str) -> str:
    """Look a word up in the dictionary."""
    ran.append(word)
    return f"{word}: a real definition"


def emulator(reply: str = '{"id": "msg-42"}') -> FunctionModel:
    """A model that answers every emulation request with ``reply``."""
    return FunctionModel(lambda request: reply, name="emulator")


def registry_of(*parts: Registry) -> Registry:
    """One registry including ``parts``, outermost first."""
    registry = Registry()
    for part in parts:
        registry.include(part)
    return registry


@pytest.fixture(autouse=True)
def clear_ran() -> None:
    """Each test starts with no tool having run."""
    ran.clear()


@MODES
async def test_listed_tools_are_answered_by_the_model_and_never_run(streaming: bool) -> None:
    """send_mail is emulated from its name, description, schema and arguments; lookup runs."""
    model = emulator()
    agent = Agent(
        TestModel(),
        registry=registry_of(emulate_tools(tools=["send_mail"], model=model)),
        tools=[send_mail, lookup],
    )
    outcome = await outcome_of(agent, "ana", streaming=streaming)
    assert isinstance(outcome, Success), outcome
    results = {p.name: p for m in outcome.unwrap().messages for p in m.tool_results}
    assert results["send_mail"].content == '{"id": "msg-42"}'
    assert not results["send_mail"].is_error
    assert results["lookup"].content == "ana: a real definition"
    assert ran == ["ana"]  # lookup only
    (asked,) = model.requests
    assert asked.instructions == INSTRUCTIONS
    assert (asked.tools, asked.tool_choice) == ((), "none")
    described = json.loads(asked.messages[0].text)
    assert described["tool"] == "send_mail"
    assert described["description"] == "Send an email; returns the message id."
    assert described["parameters"]["required"] == ["to", "subject"]
    assert described["arguments"] == {"to": "ana", "subject": "ana"}


@MODES
async def test_without_a_list_every_tool_is_emulated_by_the_agents_model(streaming: bool) -> None:
    """tools=None, model=None: the agent's model answers every call, and streams none of it."""

    def agent_model(request: ModelRequest) -> str | Message:
        if request.instructions == INSTRUCTIONS:
            return "emulated " + json.loads(request.messages[0].text)["tool"]
        if request.messages[-1].role == "user":
            return tool_calls(("lookup", {"word": "x"}), ("send_mail", {"to": "b", "subject": "s"}))
        return " | ".join(p.content for p in request.messages[-1].tool_results)

    agent = Agent(
        FunctionModel(agent_model), registry=registry_of(emulate_tools()), tools=[send_mail, lookup]
    )
    if streaming:
        texts = [
            e.text
            async for e in agent.stream("go")
            if isinstance(e, TextDelta)  # type: ignore[attr-defined]
        ]
        assert "".join(texts) == "emulated lookup | emulated send_mail"
    else:
        outcome = await agent.run("go")
        assert outcome.unwrap().output == "emulated lookup | emulated send_mail"
    assert ran == []


async def test_emulated_calls_are_marked_in_state_and_on_the_tool_span() -> None:
    """The call id goes in EMULATED; trace's execute_tool span gets fncore.tool.emulated."""
    otel = Otel()
    seen: list[tuple[str, ...]] = []

    async def after(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        seen.append(ctx.run.state.get(EMULATED))
        return await call_next(ctx)

    spy = Registry()
    spy.on("model_call", name="spy")(after)
    model = ScriptedModel([tool_calls(("send_mail", {"to": "a", "subject": "s"})), "sent"])
    registry = registry_of(otel.registry(), spy, emulate_tools(model=emulator()))
    agent = Agent(model, registry=registry, tools=[send_mail, lookup])
    assert (await agent.run("mail a")).unwrap().output == "sent"
    assert seen[-1] == ("call_0",)
    assert attrs(otel.one("execute_tool send_mail"))[EMULATED_ATTRIBUTE] is True
    chats = [s.name for s in otel.spans() if s.name.startswith("chat")]
    assert chats == ["chat scripted", "chat emulator", "chat scripted"]


@MODES
async def test_a_failing_emulator_is_an_error_result_the_model_sees(streaming: bool) -> None:
    """A ModelError from the emulating model becomes an error result; the tool still never runs."""
    broken = FunctionModel(lambda request: ProviderUnavailable(message="down"), name="broken")
    model = ScriptedModel([tool_calls(("send_mail", {"to": "a", "subject": "s"})), "gave up"])
    agent = Agent(
        model, registry=registry_of(emulate_tools(model=broken)), tools=[send_mail, lookup]
    )
    outcome = await outcome_of(agent, "mail a", streaming=streaming)
    (result,) = outcome.unwrap().messages[1].tool_results
    assert result.is_error
    assert result.content == "Tool 'send_mail' could not be emulated: down"
    assert ran == []


async def test_a_limit_hit_by_the_emulation_call_ends_the_run() -> None:
    """The call goes through the model_call onion: limit_calls counts it and stops the run."""
    model = ScriptedModel([tool_calls(("send_mail", {"to": "a", "subject": "s"})), "sent"])
    registry = registry_of(
        limit_calls(model_calls_per_reply=1, exit="error"), emulate_tools(model=emulator())
    )
    agent = Agent(model, registry=registry, tools=[send_mail, lookup])
    outcome = await agent.run("mail a")
    assert isinstance(outcome, Failure)
    assert isinstance(outcome.failure(), CallLimitExceeded)
    assert ran == []


def test_an_empty_list_is_refused() -> None:
    """tools=[] would emulate nothing: ValueError in code, one line in configuration."""
    with pytest.raises(ValueError, match="tools is empty"):
        emulate_tools(tools=[])
    assert "tools is empty" in config_error({"use": "emulate_tools", "tools": []})


async def test_use_alone_emulates_every_tool_with_the_agents_model() -> None:
    """[[middleware]] use = 'emulate_tools': the agent's model answers every tool call."""
    agent = configured({"use": "emulate_tools"}).agent(model=TestModel(), tools=[lookup])
    outcome = await agent.run("word")
    assert isinstance(outcome, Success), outcome
    assert ran == []
    (result,) = outcome.unwrap().messages[1].tool_results
    assert json.loads(result.content)["tool"] == "lookup"  # TestModel echoes the request


async def test_a_preset_model_from_a_toml_file(tmp_path: Path) -> None:
    """A model preset named in the TOML entry answers the listed tools."""
    config = tmp_path / "fncore.toml"
    config.write_text(
        """
[[middleware]]
use = "emulate_tools"
tools = ["send_mail"]
model = "fake"

[models.fake]
kind = "test"
name = "fake-tools"
"""
    )
    container = load_container(config, environ={})
    agent = container.agent(model=TestModel(), tools=[send_mail, lookup])
    outcome = await agent.run("ana")
    assert isinstance(outcome, Success), outcome
    assert ran == ["ana"]
    results = {p.name: p.content for p in outcome.unwrap().messages[1].tool_results}
    assert json.loads(results["send_mail"])["arguments"] == {"to": "ana", "subject": "ana"}


async def test_a_thousand_concurrent_runs_each_emulate_their_own_call() -> None:
    """1,000 runs sharing one stack: 1,000 emulation calls, each result with its own run."""

    def answer(request: ModelRequest) -> str:
        return "to " + json.loads(request.messages[0].text)["arguments"]["to"]

    model = FunctionModel(answer, name="emulator")
    agent = Agent(TestModel(), registry=registry_of(emulate_tools(model=model)), tools=[send_mail])
    outcomes = await asyncio.gather(*(agent.run(f"r{i}") for i in range(1000)))
    for i, outcome in enumerate(outcomes):
        assert outcome.unwrap().messages[1].tool_results[0].content == f"to r{i}"
    assert len(model.requests) == 1000
    assert ran == []
