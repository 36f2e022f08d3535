"""Shared stores by URL: the same behaviour in memory and on a real redis-server."""

from __future__ import annotations

import asyncio

import pytest

from fncore import ConfigError
from fncore.stores import MemoryStore, RedisStore, SharedStore, open_store


@pytest.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest) -> SharedStore:
    """Each test runs against memory:// and against the test redis-server."""
    if request.param == "memory":
        return open_store("memory://")
    return open_store(request.getfixturevalue("redis_url"))


async def test_values_round_trip_and_expire(store: SharedStore) -> None:
    """set/get/delete, and a value with a ttl is gone after it."""
    try:
        await store.set("k", b"v")
        assert await store.get("k") == b"v"
        await store.set("short", b"x", ttl=0.05)
        assert await store.get("short") == b"x"
        await asyncio.sleep(0.15)
        assert await store.get("short") is None
        await store.delete("k")
        assert await store.get("k") is None
    finally:
        await store.aclose()


async def test_counters_add_up_atomically_under_concurrency(store: SharedStore) -> None:
    """1,000 concurrent increments give exactly 1,000; a window's ttl is set once."""
    try:
        await asyncio.gather(*(store.incr("hits", 1, ttl=60) for _ in range(1000)))
        assert await store.incr("hits", 0) == 1000.0
        assert await store.incr("spend", 0.25) == 0.25
        assert await store.incr("spend", 0.5) == 0.75
    finally:
        await store.aclose()


def test_memory_store_is_bounded() -> None:
    """memory:// keeps at most max_entries, evicting the least recently used."""

    async def fill() -> MemoryStore:
        small = MemoryStore(max_entries=3)
        for i in range(5):
            await small.set(f"k{i}", b"x")
        return small

    small = asyncio.run(fill())
    assert asyncio.run(small.get("k0")) is None
    assert asyncio.run(small.get("k4")) == b"x"


def test_two_clients_of_one_redis_share_state(redis_url: str) -> None:
    """Two stores on one server (as two processes would be) see the same counters."""

    async def both() -> float:
        first, second = RedisStore(redis_url), RedisStore(redis_url)
        try:
            await first.incr("shared", 2)
            await second.incr("shared", 3)
            return await first.incr("shared", 0)
        finally:
            await first.aclose()
            await second.aclose()

    assert asyncio.run(both()) == 5.0


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("memcached://x", "unknown scheme 'memcached'"),
        ("memory://?max_entries=zero", "max_entries must be a positive whole number"),
        ("memory://?size=3", "unknown option 'size'"),
    ],
)
def test_a_bad_url_is_a_config_error(url: str, words: str) -> None:
    """Unknown schemes and options are one-line ConfigErrors naming the URL."""
    with pytest.raises(ConfigError, match=words):
        open_store(url)


def test_a_redis_password_never_shows() -> None:
    """The store's url and repr redact the password."""
    store = RedisStore("redis://user:s3cr3t-pw@127.0.0.1:6390/0")
    assert "s3cr3t-pw" not in store.url
    assert "s3cr3t-pw" not in repr(store)
