"""Each adapter names its provider, and `trace` records it with the server it talks to."""

from __future__ import annotations

from typing import Any

import pytest
from adapters_common import API_PARAMS, TEXT, Api, models_fixture, on  # noqa: F401
from fake_provider import FakeProvider
from otel_support import Otel, attrs
from returns.result import Success

from fncore import Agent
from fncore.adapter import ProviderModel


@pytest.mark.parametrize("api", API_PARAMS)
async def test_provider_is_the_endpoints(
    fake_provider: FakeProvider, models: list[ProviderModel[Any, Any]], api: Api
) -> None:
    """ProviderModel.provider is the endpoint's provider: openai or anthropic."""
    model = on(api, fake_provider, models)
    assert model.provider == api.provider == model.endpoint.provider


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("api", API_PARAMS)
async def test_a_traced_run_names_provider_server_and_usage(
    fake_provider: FakeProvider, models: list[ProviderModel[Any, Any]], api: Api, streamed: bool
) -> None:
    """The chat span holds gen_ai.provider.name, server.address and server.port."""
    otel = Otel()
    fake_provider.reply(api.stream() if streamed else api.answer())
    agent = Agent(on(api, fake_provider, models), registry=otel.registry())
    outcome = await (agent.stream("hi").result() if streamed else agent.run("hi"))
    assert isinstance(outcome, Success), outcome
    assert outcome.unwrap().output == TEXT
    chat = attrs(otel.one("chat m"))
    host, port = fake_provider.url.removeprefix("http://").split(":")
    assert chat["gen_ai.provider.name"] == api.provider
    assert chat["server.address"] == host
    assert chat["server.port"] == int(port)
    assert chat["gen_ai.response.finish_reasons"] == ("stop",)
    assert attrs(otel.one("invoke_agent agent"))["gen_ai.provider.name"] == api.provider
