"""Typed structured output through the anthropic SDK: ``output_config.format`` on the wire."""

from __future__ import annotations

import json

import pytest
from anthropic_fixtures import fake_provider_fixture, make_model_fixture, shared_server_fixture  # noqa: F401
from anthropic_wire import MakeModel, body, sent, stream_reply, text, tool_use
from fake_provider import FakeProvider, Reply
from pydantic import BaseModel

from fncore import Agent, ModelSettings, Registry


class Weather(BaseModel):
    """The weather in a city."""

    city: str
    celsius: float


class Trip(BaseModel):
    """Where to, and the weather there."""

    to: Weather
    days: int


WEATHER = {"city": "Oslo", "celsius": 4.5}


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_native_output_config_format(
    fake_provider: FakeProvider, make_model: MakeModel, stream: bool
) -> None:
    """The schema goes as ``output_config.format`` (objects closed), beside ``effort``."""
    answer = text(json.dumps({"to": WEATHER, "days": 3}))
    fake_provider.reply(stream_reply(answer) if stream else Reply(200, body(answer)))
    agent = Agent(
        make_model(),
        registry=Registry(),
        output_type=Trip,
        model_settings=ModelSettings(extra={"output_config": {"effort": "low"}}),
    )
    outcome = await (agent.stream("Trip?").result() if stream else agent.run("Trip?"))
    assert outcome.unwrap().output == Trip(to=Weather(**WEATHER), days=3)
    config = sent(fake_provider)["output_config"]
    assert config["effort"] == "low"
    assert config["format"]["type"] == "json_schema"
    schema = config["format"]["schema"]
    assert schema["additionalProperties"] is False
    assert schema["$defs"]["Weather"]["additionalProperties"] is False
    assert schema["required"] == ["to", "days"]


async def test_plain_requests_have_no_output_config(
    fake_provider: FakeProvider, make_model: MakeModel
) -> None:
    """No output_type, no ``output_config``."""
    fake_provider.reply(Reply(200, body(text("hi"))))
    await Agent(make_model(), registry=Registry()).run("hi")
    assert "output_config" not in sent(fake_provider)


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_forced_tool_strategy(
    fake_provider: FakeProvider, make_model: MakeModel, stream: bool
) -> None:
    """``tool``: final_result is offered as a strict tool; its tool_use is the answer."""
    call = tool_use("toolu_1", "final_result", **WEATHER)
    fake_provider.reply(
        stream_reply(call, stop_reason="tool_use")
        if stream
        else Reply(200, body(call, stop_reason="tool_use"))
    )
    agent = Agent(make_model(), registry=Registry(), output_type=Weather, output_strategy="tool")
    outcome = await (agent.stream("Oslo?").result() if stream else agent.run("Oslo?"))
    assert outcome.unwrap().output == Weather(**WEATHER)
    tool = sent(fake_provider)["tools"][0]
    assert (tool["name"], tool["strict"]) == ("final_result", True)
    assert "output_config" not in sent(fake_provider)
