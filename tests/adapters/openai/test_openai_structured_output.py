"""Typed structured output through the openai SDK: the schema on the wire, both APIs."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from fake_provider import FakeProvider, Reply, sse
from openai_wire import (
    body,
    chat_model,
    chat_stream,
    chunk,
    close_clients,
    completed,
    completion,
    event,
    message_item,
    response,
    responses_model,
)
from pydantic import BaseModel

from fncore import Agent, ModelSettings, OutputSchema, Registry
from fncore.core import ModelRequest
from fncore.errors import OutputValidationFailed


@pytest.fixture(autouse=True)
async def _close() -> AsyncIterator[None]:
    yield
    await close_clients()


class Weather(BaseModel):
    """The weather in a city."""

    city: str
    celsius: float


WEATHER = json.dumps({"city": "Oslo", "celsius": 4.5})
STRICT = {
    "type": "object",
    "title": "Weather",
    "properties": {
        "city": {"type": "string", "title": "City"},
        "celsius": {"type": "number", "title": "Celsius"},
    },
    "required": ["city", "celsius"],
    "additionalProperties": False,
}


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_chat_sends_response_format_and_the_agent_types_the_answer(
    fake_provider: FakeProvider, stream: bool
) -> None:
    """Chat Completions: ``response_format`` json_schema, strict; the answer is a Weather."""
    if stream:
        fake_provider.reply(chat_stream(chunk({"role": "assistant", "content": WEATHER})))
    else:
        fake_provider.reply(completion(WEATHER))
    agent = Agent(chat_model(fake_provider), registry=Registry(), output_type=Weather)
    outcome = await (agent.stream("Oslo?").result() if stream else agent.run("Oslo?"))
    assert outcome.unwrap().output == Weather(city="Oslo", celsius=4.5)
    assert body(fake_provider)["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "Weather",
            "schema": STRICT,
            "strict": True,
            "description": "The weather in a city.",
        },
    }


async def test_chat_without_output_type_sends_no_response_format(
    fake_provider: FakeProvider,
) -> None:
    """A plain agent's request carries no response_format."""
    fake_provider.reply(completion("hi"))
    await Agent(chat_model(fake_provider), registry=Registry()).run("hi")
    assert "response_format" not in body(fake_provider)


async def test_chat_invalid_answer_goes_back_then_fails(fake_provider: FakeProvider) -> None:
    """Invalid JSON is retried once with the errors, then OutputValidationFailed."""
    fake_provider.reply(completion('{"city": "Oslo"}'), completion("sunny"))
    agent = Agent(chat_model(fake_provider), registry=Registry(), output_type=Weather)
    error = (await agent.run("Oslo?")).failure()
    assert isinstance(error, OutputValidationFailed)
    assert error.raw == "sunny"
    retry = body(fake_provider, 1)["messages"][-1]
    assert retry["role"] == "user"
    assert "celsius: Field required" in retry["content"]


async def test_chat_non_strict_schema_goes_without_strict(fake_provider: FakeProvider) -> None:
    """A schema strict mode cannot take (an optional field) is sent with strict off."""

    class Loose(BaseModel):
        city: str
        note: str = ""

    fake_provider.reply(completion('{"city": "Oslo"}'))
    agent = Agent(chat_model(fake_provider), registry=Registry(), output_type=Loose)
    assert (await agent.run("x")).unwrap().output == Loose(city="Oslo")
    assert body(fake_provider)["response_format"]["json_schema"]["strict"] is False


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_responses_sends_text_format(fake_provider: FakeProvider, stream: bool) -> None:
    """Responses API: ``text.format`` json_schema, beside text options from settings.extra."""
    if stream:
        delta = event(
            "response.output_text.delta",
            item_id="msg_1",
            output_index=0,
            content_index=0,
            delta=WEATHER,
            logprobs=[],
        )
        fake_provider.reply(sse(delta, completed(message_item(WEATHER))))
    else:
        fake_provider.reply(response(message_item(WEATHER)))
    agent = Agent(
        responses_model(fake_provider),
        registry=Registry(),
        output_type=Weather,
        model_settings=ModelSettings(extra={"text": {"verbosity": "low"}}),
    )
    outcome = await (agent.stream("Oslo?").result() if stream else agent.run("Oslo?"))
    assert outcome.unwrap().output == Weather(city="Oslo", celsius=4.5)
    assert body(fake_provider)["text"] == {
        "verbosity": "low",
        "format": {
            "type": "json_schema",
            "name": "Weather",
            "schema": STRICT,
            "strict": True,
            "description": "The weather in a city.",
        },
    }


async def test_responses_request_without_schema_has_no_text_format(
    fake_provider: FakeProvider,
) -> None:
    """No output schema, no ``text`` key."""
    fake_provider.reply(response(message_item("ok")))
    await responses_model(fake_provider).request(ModelRequest(()))
    assert "text" not in body(fake_provider)


async def test_tool_strategy_offers_final_result_over_the_wire(fake_provider: FakeProvider) -> None:
    """``tool``: the final_result function is offered strict, and its call ends the run."""
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "final_result", "arguments": WEATHER},
    }
    fake_provider.reply(completion(None, calls=(call,), finish="tool_calls"))
    agent = Agent(
        chat_model(fake_provider), registry=Registry(), output_type=Weather, output_strategy="tool"
    )
    assert (await agent.run("Oslo?")).unwrap().output.celsius == 4.5
    sent = body(fake_provider)
    assert "response_format" not in sent
    tool = sent["tools"][0]["function"]
    assert (tool["name"], tool["strict"], tool["parameters"]) == ("final_result", True, STRICT)
    assert len(fake_provider.requests) == 1
    assert OutputSchema("n", {}).strict is True
    assert isinstance(Reply(200, {}), Reply)
