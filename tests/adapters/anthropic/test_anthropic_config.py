"""Construction: ``from_config`` and the constructor's defaults."""

from __future__ import annotations

import pytest
from anthropic import AsyncAnthropic
from anthropic_wire import KEY
from fncore_anthropic import AnthropicModel, from_config

from fncore import Model


@pytest.fixture(autouse=True)
def no_key_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests set ANTHROPIC_API_KEY themselves."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


async def test_from_config_reads_the_section() -> None:
    """Every key of the model section reaches the model and its client."""
    m = from_config(
        {
            "kind": "anthropic",
            "name": "claude-x",
            "api_key": KEY,
            "base_url": "http://127.0.0.1:9",
            "timeout": 12.5,
            "max_retries": 4,
            "max_tokens": 999,
            "sdk_tracing": True,
        }
    )
    assert isinstance(m, AnthropicModel)
    assert isinstance(m, Model)
    assert m.name == "claude-x"
    assert m.default_max_tokens == 999
    assert m.client.api_key == KEY
    assert str(m.client.base_url).startswith("http://127.0.0.1:9")
    assert m.client.timeout == 12.5
    assert m.client.max_retries == 4
    assert m.client.open_telemetry["traces"]["enabled"] is True
    await m.aclose()


async def test_from_config_defaults_and_env_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """api_key None falls back to ANTHROPIC_API_KEY; None values take the defaults."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    m = from_config(
        {
            "kind": "anthropic",
            "name": "claude-x",
            "api_key": None,
            "base_url": None,
            "max_tokens": None,
            "timeout": 60.0,
            "max_retries": 2,
        }
    )
    assert m.client.api_key == KEY
    assert m.default_max_tokens == 4096
    assert m.client.open_telemetry["traces"]["enabled"] is False
    await m.aclose()


def test_from_config_without_any_key() -> None:
    """No key anywhere: ValueError naming the variable and model.api_key, no value printed."""
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY") as info:
        from_config({"kind": "anthropic", "name": "claude-x", "api_key": None})
    assert "model.api_key" in str(info.value)
    assert "\n" not in str(info.value)


def test_from_config_without_name() -> None:
    """A section with no model name is a ValueError."""
    with pytest.raises(ValueError, match=r"model\.name"):
        from_config({"kind": "anthropic", "api_key": KEY})


async def test_given_client_is_used_and_not_closed() -> None:
    """A client passed in is used as is; aclose leaves it to its owner."""
    client = AsyncAnthropic(api_key=KEY, base_url="http://127.0.0.1:9")
    m = AnthropicModel("claude-x", client=client)
    assert m.client is client
    await m.aclose()
    assert not client.is_closed()
    await client.close()
    assert "claude-x" in repr(m)


def test_unknown_options_are_a_value_error() -> None:
    """`model.options` with keys the anthropic model does not take is a clear error."""
    with pytest.raises(ValueError, match=r"model\.options \['top_k'\]"):
        from_config({"name": "claude-x", "api_key": "sk-ant-1", "options": {"top_k": 3}})
