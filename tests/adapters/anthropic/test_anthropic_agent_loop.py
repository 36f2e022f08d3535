"""A full fncore agent tool loop over the real SDK client and the fake Anthropic server."""

from __future__ import annotations

import pytest
from anthropic_fixtures import fake_provider_fixture, make_model_fixture, shared_server_fixture  # noqa: F401
from anthropic_wire import (
    KEY,
    MakeModel,
    body,
    stream_reply,
    text,
    tool_use,
    usage,
)
from fake_provider import FakeProvider, Reply
from fncore_anthropic import AnthropicModel
from returns.result import Failure
from support import add, run_ok

from fncore import Agent, ModelError, Registry, Usage, load_container


def script(fake: FakeProvider, *, stream: bool) -> None:
    """Queue: first the model calls add(2, 3) and add(10, 20), then answers."""
    calls = (
        text("Adding."),
        tool_use("toolu_1", "add", a=2, b=3),
        tool_use("toolu_2", "add", a=10, b=20),
    )
    answer = (text("2 + 3 = 5 and 10 + 20 = 30"),)
    if stream:
        fake.reply(
            stream_reply(*calls, stop_reason="tool_use", use=usage(20, 10)),
            stream_reply(*answer, use=usage(40, 8, cache_read=15)),
        )
    else:
        fake.reply(
            Reply(200, body(*calls, stop_reason="tool_use", use=usage(20, 10))),
            Reply(200, body(*answer, use=usage(40, 8, cache_read=15))),
        )


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_agent_tool_loop(
    fake_provider: FakeProvider, make_model: MakeModel, stream: bool
) -> None:
    """The agent runs both calls, sends their results back and returns the final text."""
    script(fake_provider, stream=stream)
    agent = Agent(make_model(), registry=Registry(), tools=[add], instructions="Use the tools.")
    if stream:
        outcome = await agent.stream("add 2 and 3, and 10 and 20").result()
    else:
        outcome = await agent.run("add 2 and 3, and 10 and 20")
    result = run_ok(outcome)
    assert result.output == "2 + 3 = 5 and 10 + 20 = 30"
    assert result.usage == Usage(
        input_tokens=75, output_tokens=18, cache_read_tokens=15, requests=2
    )
    first, second = (r.body for r in fake_provider.requests)
    assert first["system"] == [{"type": "text", "text": "Use the tools."}]
    assert first["tools"][0]["name"] == "add"
    assert first["tools"][0]["input_schema"]["required"] == ["a", "b"]
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user"]
    assert second["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "5", "is_error": False},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "30", "is_error": False},
    ]


async def test_agent_reports_tool_errors_to_the_model(
    fake_provider: FakeProvider, make_model: MakeModel
) -> None:
    """A call with invalid arguments goes back as an is_error tool_result."""
    fake_provider.reply(
        Reply(200, body(tool_use("toolu_1", "add", a="two"), stop_reason="tool_use")),
        Reply(200, body(text("sorry"))),
    )
    agent = Agent(make_model(), registry=Registry(), tools=[add])
    result = run_ok(await agent.run("add two"))
    assert result.output == "sorry"
    block = fake_provider.requests[1].body["messages"][2]["content"][0]
    assert block["tool_use_id"] == "toolu_1"
    assert block["is_error"] is True


async def test_agent_model_error_is_failure(
    fake_provider: FakeProvider, make_model: MakeModel
) -> None:
    """An overloaded provider ends the run as Failure(ProviderUnavailable), not an exception."""
    fake_provider.reply(
        Reply(529, {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}})
    )
    outcome = await Agent(make_model(), registry=Registry(), tools=[add]).run("hi")
    assert isinstance(outcome, Failure)
    assert isinstance(outcome.failure(), ModelError)
    assert outcome.failure().retryable


async def test_agent_from_container_config(fake_provider: FakeProvider) -> None:
    """kind=anthropic in the config builds the adapter (from_config) and runs the loop."""
    script(fake_provider, stream=False)
    container = load_container(
        overrides={
            "model": {
                "kind": "anthropic",
                "name": "claude-test-1",
                "api_key": KEY,
                "base_url": fake_provider.url,
                "max_retries": 0,
                "timeout": 5.0,
                "max_tokens": 777,
            }
        },
        environ={},
    )
    agent = container.agent(registry=Registry(), tools=[add])
    assert isinstance(agent.model, AnthropicModel)
    try:
        result = run_ok(await agent.run("add 2 and 3, and 10 and 20"))
    finally:
        await agent.model.aclose()
    assert result.output == "2 + 3 = 5 and 10 + 20 = 30"
    assert fake_provider.requests[0].body["max_tokens"] == 777
