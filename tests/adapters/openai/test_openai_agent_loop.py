"""A full agent tool loop on each OpenAI model, streamed and not, against the fake server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from fake_provider import FakeProvider, Reply, sse
from openai_wire import (
    body,
    call,
    call_chunk,
    chat_model,
    chat_stream,
    chunk,
    close_clients,
    completed,
    completion,
    event,
    function_item,
    message_item,
    reasoning_item,
    response,
    responses_model,
)
from support import add, run_ok

from fncore import Agent, Registry, RunResult

Script = Callable[[bool], list[Reply]]


@pytest.fixture(autouse=True)
async def _close() -> AsyncIterator[None]:
    yield
    await close_clients()


def chat_script(streamed: bool) -> list[Reply]:
    """Round 1 asks for add(2, 3) and add(4, 5); round 2 answers."""
    if not streamed:
        return [
            completion(
                None,
                calls=(
                    call("c1", "add", '{"a": 2, "b": 3}'),
                    call("c2", "add", '{"a": 4, "b": 5}'),
                ),
                finish="tool_calls",
            ),
            completion("The sums are 5 and 9."),
        ]
    return [
        chat_stream(
            call_chunk(0, call_id="c1", name="add", args='{"a": 2,'),
            call_chunk(1, call_id="c2", name="add", args='{"a": 4, "b": 5}'),
            call_chunk(0, args=' "b": 3}'),
            finish="tool_calls",
        ),
        chat_stream(chunk({"content": "The sums are "}), chunk({"content": "5 and 9."})),
    ]


def responses_script(streamed: bool) -> list[Reply]:
    """The same two rounds, as Responses answers (with encrypted reasoning)."""
    first = (
        reasoning_item("Use add twice.", "ENC-1"),
        function_item("c1", "add", '{"a": 2, "b": 3}'),
        function_item("c2", "add", '{"a": 4, "b": 5}'),
    )
    second = (message_item("The sums are 5 and 9."),)
    if not streamed:
        return [response(*first), response(*second)]
    return [
        sse(
            event(
                "response.output_item.added",
                output_index=1,
                item={**first[1], "arguments": "", "status": "in_progress"},
            ),
            event(
                "response.function_call_arguments.delta",
                item_id="fc_c1",
                output_index=1,
                delta='{"a": 2, "b": 3}',
            ),
            completed(*first),
        ),
        sse(
            event(
                "response.output_text.delta",
                item_id="msg_1",
                output_index=0,
                content_index=0,
                delta="The sums are 5 and 9.",
                logprobs=[],
            ),
            completed(*second),
        ),
    ]


async def run(agent: Agent, streamed: bool) -> RunResult:
    """Run the agent to its answer, streamed or not."""
    if streamed:
        return run_ok(await agent.stream("add 2+3 and 4+5").result())
    return run_ok(await agent.run("add 2+3 and 4+5"))


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "stream"])
async def test_chat_agent_tool_loop(fake_provider: FakeProvider, streamed: bool) -> None:
    """The chat model drives a two-round tool loop to the final answer."""
    fake_provider.reply(*chat_script(streamed))
    agent = Agent(
        chat_model(fake_provider), registry=Registry(), tools=[add], instructions="Use tools."
    )
    result = await run(agent, streamed)
    assert result.output == "The sums are 5 and 9."
    assert result.rounds == 2
    assert result.usage.requests == 2
    second: dict[str, Any] = body(fake_provider, 1)
    assert second["messages"][0] == {"role": "system", "content": "Use tools."}
    assert second["messages"][-2:] == [
        {"role": "tool", "tool_call_id": "c1", "content": "5"},
        {"role": "tool", "tool_call_id": "c2", "content": "9"},
    ]
    assert [t["function"]["name"] for t in second["tools"]] == ["add"]
    assert second["tools"][0]["function"]["strict"] is True
    assert json.loads(second["messages"][2]["tool_calls"][0]["function"]["arguments"]) == {
        "a": 2,
        "b": 3,
    }


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "stream"])
async def test_responses_agent_tool_loop(fake_provider: FakeProvider, streamed: bool) -> None:
    """The Responses model drives the loop and sends encrypted reasoning back."""
    fake_provider.reply(*responses_script(streamed))
    agent = Agent(
        responses_model(fake_provider), registry=Registry(), tools=[add], instructions="Use tools."
    )
    result = await run(agent, streamed)
    assert result.output == "The sums are 5 and 9."
    assert result.rounds == 2
    second: dict[str, Any] = body(fake_provider, 1)
    assert second["instructions"] == "Use tools."
    types = [item.get("type") for item in second["input"]]
    assert types == [
        "message",
        "reasoning",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
    ]
    assert second["input"][1]["encrypted_content"] == "ENC-1"
    assert second["input"][-2:] == [
        {"type": "function_call_output", "call_id": "c1", "output": "5"},
        {"type": "function_call_output", "call_id": "c2", "output": "9"},
    ]
