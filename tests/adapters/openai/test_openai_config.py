"""Building the OpenAI models from the container's ``model`` section, and the public names."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import fncore_openai
import pytest
from fake_provider import FakeProvider
from fncore_openai import (
    OpenAIChatModel,
    OpenAIResponsesModel,
    chat_model_from_config,
    responses_model_from_config,
)
from openai_wire import KEY, body, close_clients, completion, message_item, response
from returns.result import Success

from fncore import ConfigError, Message, ModelRequest, load_container

REQUEST = ModelRequest((Message.user("hi"),), instructions="sys")


@pytest.fixture(autouse=True)
async def _close() -> AsyncIterator[None]:
    yield
    await close_clients()


def test_public_names() -> None:
    """The package exports exactly the two models and their config factories."""
    assert fncore_openai.__all__ == [
        "OpenAIChatModel",
        "OpenAIResponsesModel",
        "chat_model_from_config",
        "responses_model_from_config",
    ]


def test_chat_from_config_builds_the_client() -> None:
    """name, base_url, timeout and max_retries reach the model and its SDK client."""
    model = chat_model_from_config(
        {
            "kind": "openai",
            "name": "llama3.1",
            "base_url": "http://localhost:11434/v1",
            "api_key": "local",
            "timeout": 12.5,
            "max_retries": 0,
            "max_tokens": None,
            "sdk_tracing": False,
            "options": {},
        }
    )
    assert isinstance(model, OpenAIChatModel)
    assert model.name == "llama3.1"
    assert str(model.client.base_url) == "http://localhost:11434/v1/"
    assert model.client.timeout == 12.5
    assert model.client.max_retries == 0


async def test_chat_options_reach_the_request(fake_provider: FakeProvider) -> None:
    """options.system_role, options.max_tokens_param and max_tokens shape the body."""
    fake_provider.reply(completion("ok"))
    model = chat_model_from_config(
        {
            "name": "m",
            "base_url": f"{fake_provider.url}/v1",
            "api_key": KEY,
            "max_retries": 0,
            "max_tokens": 50,
            "options": {"system_role": "developer", "max_tokens_param": "max_tokens"},
        }
    )
    assert isinstance(model, OpenAIChatModel)
    assert isinstance(await model.request(REQUEST), Success)
    await model.client.close()
    sent = body(fake_provider)
    assert sent["messages"][0] == {"role": "developer", "content": "sys"}
    assert sent["max_tokens"] == 50


async def test_responses_options_reach_the_request(fake_provider: FakeProvider) -> None:
    """options.store and max_tokens reach the Responses body."""
    fake_provider.reply(response(message_item("ok")))
    model = responses_model_from_config(
        {
            "name": "m",
            "base_url": f"{fake_provider.url}/v1",
            "api_key": KEY,
            "max_retries": 0,
            "max_tokens": 77,
            "options": {"store": True},
        }
    )
    assert isinstance(model, OpenAIResponsesModel)
    assert isinstance(await model.request(REQUEST), Success)
    await model.client.close()
    sent = body(fake_provider)
    assert sent["store"] is True
    assert sent["max_output_tokens"] == 77


@pytest.mark.parametrize("factory", [chat_model_from_config, responses_model_from_config])
def test_api_key_from_environment(factory: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """api_key None falls back to OPENAI_API_KEY."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    model = factory({"name": "m", "api_key": None})
    assert model.client.api_key == "sk-env"


@pytest.mark.parametrize("factory", [chat_model_from_config, responses_model_from_config])
def test_missing_api_key_names_both_places(factory: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """No key anywhere: ValueError naming OPENAI_API_KEY and model.api_key, on one line."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY") as info:
        factory({"name": "m", "base_url": "http://localhost:8000/v1"})
    message = str(info.value)
    assert "model.api_key" in message
    assert "compatible server" in message
    assert "\n" not in message


def test_model_without_key_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    """The constructor raises the same ValueError when it must build a client without key."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match=r"model\.api_key"):
        OpenAIChatModel("m")


@pytest.mark.parametrize(
    ("factory", "config", "fragment"),
    [
        (chat_model_from_config, {"api_key": "k"}, "model.name"),
        (chat_model_from_config, {"name": "m", "api_key": "k", "colour": 1}, "model.colour"),
        (
            chat_model_from_config,
            {"name": "m", "api_key": "k", "options": {"store": True}},
            "model.options.store",
        ),
        (
            chat_model_from_config,
            {"name": "m", "api_key": "k", "options": {"system_role": "root"}},
            "'system' or 'developer'",
        ),
        (
            responses_model_from_config,
            {"name": "m", "api_key": "k", "options": {"system_role": "developer"}},
            "known: store",
        ),
    ],
)
def test_config_mistakes(factory: Any, config: dict[str, Any], fragment: str) -> None:
    """A missing name or a wrong key or option is a ValueError saying which."""
    with pytest.raises(ValueError, match="model") as info:
        factory(config)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("kind", "cls"), [("openai", OpenAIChatModel), ("openai-responses", OpenAIResponsesModel)]
)
def test_container_selects_the_model(kind: str, cls: type) -> None:
    """The container builds the right class for each OpenAI model kind."""
    container = load_container(
        overrides={"model": {"kind": kind, "name": "gpt-x", "api_key": "k"}}, environ={}
    )
    model = container.model()
    assert isinstance(model, cls)
    assert model.name == "gpt-x"


def test_container_reports_missing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the container, a missing key is a ConfigError with the adapter's message."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    container = load_container(overrides={"model": {"kind": "openai", "name": "m"}}, environ={})
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        container.model()
