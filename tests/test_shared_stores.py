"""Shared stores by URL: the same behaviour in memory and on a real redis-server."""

from __future__ import annotations

import asyncio
import sys

import pytest
import redis.asyncio

from fncore import ConfigError, shared_stores
from fncore.shared_stores import MemoryStore, RedisStore, SharedStore, open_store


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
        await store.set("short", b"x", ttl=1)  # long enough to be read back on a busy machine
        assert await store.get("short") == b"x"
        await asyncio.sleep(1.1)
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


async def test_a_lock_is_held_by_one_task_at_a_time(store: SharedStore) -> None:
    """100 tasks take one key's lock: never two inside at once; other keys are free."""
    inside: list[int] = []
    most = 0

    async def hold(key: str) -> None:
        nonlocal most
        async with store.lock(key):
            inside.append(1)
            most = max(most, len(inside))
            await asyncio.sleep(0)
            inside.pop()

    try:
        await asyncio.gather(*(hold("turn") for _ in range(100)))
        assert most == 1
        async with store.lock("turn"), store.lock("another"):
            pass  # each key has its own lock, and a released one can be taken again
    finally:
        await store.aclose()


def test_a_memory_lock_keeps_no_entry_once_released() -> None:
    """The in-process lock table holds only the keys held or waited for."""
    store = MemoryStore()

    async def use() -> int:
        async with store.lock("a"):
            assert len(store._locks[asyncio.get_running_loop()]) == 1
        return len(store._locks[asyncio.get_running_loop()])

    assert asyncio.run(use()) == 0
    assert asyncio.run(use()) == 0  # and a new event loop gets a table of its own


async def test_two_clients_of_one_redis_exclude_each_other(redis_url: str) -> None:
    """A lock one client holds, another (as another process would be) waits for."""
    first, second = RedisStore(redis_url), RedisStore(redis_url)
    order: list[str] = []
    entered = asyncio.Event()

    async def take(store: RedisStore, who: str) -> None:
        async with store.lock("turn"):
            order.append(f"{who} in")
            entered.set()
            await asyncio.sleep(0.1)
            order.append(f"{who} out")

    try:
        holder = asyncio.create_task(take(first, "first"))
        await entered.wait()
        await asyncio.gather(holder, take(second, "second"))
        assert order == ["first in", "first out", "second in", "second out"]
    finally:
        await first.aclose()
        await second.aclose()


async def test_a_held_redis_lock_is_renewed_and_a_dead_holders_runs_out(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Held past its lease, a lock is still held; a process killed holding it lets it go."""
    # renewed every 0.8 s: a renewal may come 1.6 s late on a busy machine
    monkeypatch.setattr(shared_stores, "LEASE", 2.4)
    first, second = RedisStore(redis_url), RedisStore(redis_url)
    raw = redis.asyncio.Redis.from_url(redis_url)
    try:
        async with first.lock("turn"):
            await asyncio.sleep(5)  # past two leases: renewed meanwhile
            assert await raw.exists("fncore:lock:turn") == 1
        assert await raw.exists("fncore:lock:turn") == 0  # released
        script = (
            "import asyncio, os, sys\n"
            "from fncore import shared_stores\n"
            "shared_stores.LEASE = 0.5\n"
            "async def main():\n"
            "    async with shared_stores.RedisStore(sys.argv[1]).lock('turn'):\n"
            "        print('held', flush=True)\n"
            "        os._exit(0)\n"
            "asyncio.run(main())\n"
        )
        worker = await asyncio.create_subprocess_exec(
            sys.executable, "-c", script, redis_url, stdout=asyncio.subprocess.PIPE
        )
        out, _ = await worker.communicate()
        assert out == b"held\n"
        assert await raw.exists("fncore:lock:turn") == 1  # its holder died holding it
        async with asyncio.timeout(10), second.lock("turn"):
            pass  # the lease ran out
    finally:
        await raw.aclose()
        await first.aclose()
        await second.aclose()


class _CancelledOnGrant(redis.asyncio.Redis):
    """A real client whose task is cancelled the moment the server grants a lock (SET NX)."""

    async def set(self, *args: object, **kwargs: object) -> object:  # type: ignore[override]
        granted = await super().set(*args, **kwargs)  # type: ignore[arg-type]
        if kwargs.get("nx"):
            task = asyncio.current_task()
            assert task is not None
            task.cancel()
            await asyncio.sleep(0)  # the cancellation lands here, the lock already granted
        return granted


async def test_a_run_cancelled_as_it_gets_a_redis_lock_releases_it(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancelled right after the server granted the lock, the holder releases it at once."""
    monkeypatch.setattr(redis.asyncio, "Redis", _CancelledOnGrant)
    store = RedisStore(redis_url)
    raw = redis.asyncio.client.Redis.from_url(redis_url)
    entered: list[str] = []

    async def take() -> None:
        async with store.lock("turn"):
            entered.append("in")

    try:
        with pytest.raises(asyncio.CancelledError):
            await asyncio.create_task(take())
        assert entered == []
        assert await raw.exists("fncore:lock:turn") == 0  # released, not left to the lease
    finally:
        await raw.aclose()
        await store.aclose()


def test_the_former_module_still_gives_the_same_stores() -> None:
    """``fncore.stores``, the shared stores' former home, names the very same objects."""
    from fncore import stores

    for name in stores.__all__:
        assert getattr(stores, name) is getattr(shared_stores, name), name
    assert set(stores.__all__) == {"SharedStore", "MemoryStore", "RedisStore", "open_store"} | {
        "DEFAULT_MAX_ENTRIES",
        "LEASE",
        "MAX_CONNECTIONS",
    }
    assert isinstance(stores.open_store("memory://"), shared_stores.MemoryStore)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_full_memory_store_forgets_what_expired_before_what_was_used_least() -> None:
    """A write to a full store drops expired entries first, then the least recently used."""

    async def scenario() -> list[bytes | None]:
        clock = Clock()
        store = MemoryStore(max_entries=3, clock=clock)
        await store.set("old", b"1")  # never expires, used least recently
        await store.set("short", b"2", ttl=5)
        await store.set("long", b"3", ttl=50)
        assert await store.get("short") == b"2"  # now the most recently used
        clock.now = 10.0  # "short" has expired
        await store.set("new", b"4")
        kept = [await store.get(k) for k in ("old", "short", "long", "new")]
        await store.get("old")  # "long" is now the least recently used
        await store.set("newer", b"5")
        return [*kept, await store.get("long"), await store.get("old")]

    assert asyncio.run(scenario()) == [b"1", None, b"3", b"4", None, b"1"]


def test_a_deadline_out_of_order_still_expires_first_when_the_store_is_full() -> None:
    """A shorter ttl after a longer one (out of order) is still forgotten before the LRU."""

    async def scenario() -> list[bytes | None]:
        clock = Clock()
        store = MemoryStore(max_entries=3, clock=clock)
        await store.set("old", b"1")  # never expires, used least recently
        await store.set("long", b"2", ttl=50)
        await store.set("short", b"3", ttl=5)  # its deadline comes before the one above
        clock.now = 10.0  # "short" has expired
        await store.set("new", b"4")
        return [await store.get(k) for k in ("old", "long", "short", "new")]

    assert asyncio.run(scenario()) == [b"1", b"2", None, b"4"]


def test_a_full_store_of_one_ttl_forgets_each_evicted_entrys_deadline_with_it() -> None:
    """Entries written with one ttl, evicted oldest first, leave no deadline behind."""

    async def scenario() -> tuple[int, int]:
        store = MemoryStore(max_entries=100)
        for i in range(1_000):
            await store.set(f"k{i}", b"x", ttl=3600)
        return len(store._entries._deadlines), len(store._entries._late)

    assert asyncio.run(scenario()) == (100, 0)


def test_an_expired_entry_is_never_read_and_a_counter_restarts() -> None:
    """Past its ttl an entry reads as absent, and a counter starts again from zero."""

    async def scenario() -> list[object]:
        clock = Clock()
        store = MemoryStore(clock=clock)
        await store.set("k", b"v", ttl=1)
        first = await store.incr("n", 2, ttl=1)
        clock.now = 1.0
        return [first, await store.get("k"), await store.incr("n", 1, ttl=1)]

    assert asyncio.run(scenario()) == [2.0, None, 1.0]


def test_many_writes_of_one_key_keep_the_store_small() -> None:
    """Rewriting one key with a ttl does not pile up deadlines without bound."""

    async def scenario() -> int:
        store = MemoryStore(max_entries=10)
        for i in range(10_000):
            await store.set("same", str(i).encode(), ttl=3600)
        return len(store._entries._deadlines)

    assert asyncio.run(scenario()) <= 2 * 1 + 16 + 1


def test_a_value_kept_as_it_is_reads_back_as_itself_or_as_its_bytes() -> None:
    """keep(): get_kept with the same codec gives the value, get() and other codecs bytes."""

    def encode(value: list[int]) -> bytes:
        return bytes(value)

    async def scenario() -> list[object]:
        store = MemoryStore()
        value = [1, 2, 3]
        store.keep("k", value, encode, ttl=60)
        await store.set("raw", b"\x09")
        return [
            store.get_kept("k", encode) is value,
            store.get_kept("k", lambda v: b"other"),
            await store.get("k"),
            store.get_kept("raw", encode),
            store.get_kept("absent", encode),
        ]

    assert asyncio.run(scenario()) == [True, b"\x01\x02\x03", b"\x01\x02\x03", b"\x09", None]


def test_tables_per_loop_stay_apart() -> None:
    """PerLoop gives each event loop its own table, the same one throughout a loop."""
    from fncore.middleware._per_loop import PerLoop

    tables: PerLoop[int] = PerLoop()

    async def fill(value: int) -> dict[str, int]:
        tables.here()["v"] = value
        await asyncio.sleep(0)
        assert tables.here()["v"] == value
        return tables.here()

    first, second = asyncio.run(fill(1)), asyncio.run(fill(2))
    assert (first, second) == ({"v": 1}, {"v": 2})
    assert first is not second


def test_a_rewritten_key_is_the_most_recent_and_get_kept_misses_what_is_gone() -> None:
    """A rewritten key moves last; get_kept misses what was never kept, evicted or expired."""

    async def scenario() -> list[object]:
        clock = Clock()
        store = MemoryStore(max_entries=3, clock=clock)
        for key in ("a", "b", "c"):
            store.keep(key, [key], repr, ttl=10)
        store.keep("a", ["a2"], repr, ttl=10)  # rewritten: now the most recent
        order = list(store._entries.table)
        store.keep("d", ["d"], repr, ttl=10)  # full: "b", the least recently used, goes
        clock.now = 5.0
        store.keep("e", ["e"], repr, ttl=1)
        clock.now = 6.0  # "e" has expired; it is still in the table
        expired_held = "e" in store._entries.table
        kept = [store.get_kept(k, repr) for k in ("a", "b", "e", "never")]
        return [order, expired_held, kept, [await store.get(k) for k in ("b", "e", "never")]]

    assert asyncio.run(scenario()) == [
        ["b", "c", "a"],
        True,
        [["a2"], None, None, None],
        [None, None, None],
    ]
