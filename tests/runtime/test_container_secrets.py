"""Passwords in configured URLs reach what connects, and nothing fncore returns or shows."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import redis.asyncio
from pydantic import SecretStr

from fncore import ConfigError, InMemorySessionStore, load_container
from fncore.settings import load_settings
from fncore.shared_stores import RedisStore, open_store

PASSWORD = "s3cr3t-pw"
API_KEY = "sk-preset-0123456789"


def leaves(value: Any) -> Iterator[object]:
    """Every value in a nested configuration mapping."""
    if isinstance(value, dict):
        for item in value.values():
            yield from leaves(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from leaves(item)
    else:
        yield value


def counted_in(redis_url: str, password: str) -> dict[str, Any]:
    """Settings whose rate limits are counted on the test server, as user ``fncore-test``."""
    host = redis_url.removeprefix("redis://")
    store = f"redis://fncore-test:{password}@{host}"
    return {"middleware": [{"use": "rate_limit", "window": 5, "store": store}]}


def configured(redis_url: str) -> dict[str, Any]:
    """Settings holding a password in every place a URL or key can be given."""
    return {
        **counted_in(redis_url, PASSWORD),
        "sessions": {"url": f"postgresql://app:{PASSWORD}@127.0.0.1:1/app"},
        "model": {"base_url": f"https://bot:{PASSWORD}@proxy.example/v1"},
        "models": {"openai": {"api_key": API_KEY, "base_url": "https://api.example/v1"}},
        "mcp": {"servers": {"web": {"url": f"https://u:{PASSWORD}@mcp.example/mcp"}}},
        "app": {"cache": f"redis://:{PASSWORD}@cache.example:6379/0"},
    }


@pytest.fixture
async def redis_user(redis_url: str) -> AsyncIterator[str]:
    """A user on the test redis-server whose password is `PASSWORD`."""
    admin = redis.asyncio.Redis.from_url(redis_url)
    await admin.acl_setuser(
        "fncore-test", enabled=True, passwords=[f"+{PASSWORD}"], keys=["*"], commands=["+@all"]
    )
    yield redis_url
    await admin.acl_deluser("fncore-test")
    await admin.aclose()


async def test_container_config_shows_no_password_or_key(redis_user: str) -> None:
    """`container.config()` holds no secret as text; `get_secret_value` gives it back."""
    container = load_container(overrides=configured(redis_user), environ={})
    config = container.config()
    for shown in (repr(config), str(config), *map(str, leaves(config))):
        assert PASSWORD not in shown
        assert API_KEY not in shown
    url = container.config.sessions.url()
    assert isinstance(url, SecretStr)
    assert str(url) == "postgresql://app:[redacted]@127.0.0.1:1/app"
    assert url.get_secret_value() == f"postgresql://app:{PASSWORD}@127.0.0.1:1/app"
    assert repr(container.config.models.openai.api_key()) == "SecretStr('**********')"
    assert repr(container.sessions()) == (
        "PostgresSessionStore('postgresql://app:[redacted]@127.0.0.1:1/app')"
    )
    await container.shutdown()


async def test_what_connects_gets_the_real_password(redis_user: str) -> None:
    """A `[[middleware]]` store URL with a password reaches its server whole."""
    container = load_container(overrides=counted_in(redis_user, PASSWORD), environ={})
    result = await container.agent(sessions=InMemorySessionStore()).run("hi")
    assert result.unwrap().output
    raw = redis.asyncio.Redis.from_url(redis_user)
    assert await raw.keys("*rate_limit*")  # counted on the server, as user fncore-test
    await raw.aclose()
    await container.shutdown()


async def test_a_refused_password_is_not_shown(redis_user: str) -> None:
    """A wrong password fails the run with an error that does not hold the password."""
    wrong = f"{PASSWORD}-wrong"
    container = load_container(overrides=counted_in(redis_user, wrong), environ={})
    outcome = await container.agent(sessions=InMemorySessionStore()).run("hi")
    error = outcome.failure()
    assert "WRONGPASS" in str(error) or "invalid username-password" in str(error)
    assert wrong not in repr(error)
    await container.shutdown()


def test_settings_and_stores_show_no_password() -> None:
    """Reprs of the settings and of a Redis store, and a store URL's errors, hide it."""
    settings = load_settings(overrides=configured("redis://127.0.0.1:1/0"), environ={})
    assert PASSWORD not in repr(settings)
    assert PASSWORD not in repr(RedisStore(f"redis://user:{PASSWORD}@127.0.0.1:1/0"))
    with pytest.raises(ConfigError) as raised:
        open_store(f"mongodb://user:{PASSWORD}@127.0.0.1/db")
    assert PASSWORD not in str(raised.value)
    assert "mongodb://user:[redacted]@127.0.0.1/db" in str(raised.value)
