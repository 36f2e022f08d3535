"""Shared stores, chosen by URL: state that outlives a run or is shared between processes.

Built-in middleware that count or remember across runs (a cache, a budget per tenant) keep
that state in a `SharedStore`, never on themselves:

* ``memory://`` (the default): in this process, a bounded LRU with per-entry expiry;
  ``memory://?max_entries=10000`` sets the bound;
* ``redis://host:port/db`` (and ``rediss://`` for TLS): shared by every process using the
  same server; the key prefix ``fncore:`` keeps fncore's keys apart.

Values are bytes; counters are floats changed atomically (Redis ``INCRBYFLOAT``). A lock
(`SharedStore.lock`) holds a key exclusively among every user of the store: an
``asyncio.Lock`` in memory, a Redis lock (redis-py's ``Lock``) whose lease is renewed while it
is held and runs out soon after its holder dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import time
import uuid
import weakref
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol, TypeVar, runtime_checkable
from urllib.parse import parse_qs, urlsplit

from fncore._session_url import redact_password
from fncore.settings import ConfigError

DEFAULT_MAX_ENTRIES = 10_000
"""How many entries ``memory://`` keeps before it evicts the least recently used."""

MAX_CONNECTIONS = 32
"""Connections a Redis store opens at most; more concurrent calls wait for one."""

_V = TypeVar("_V")

LEASE = 30.0
"""Seconds a Redis lock lasts unless renewed: its holder renews it every third of that, so a
lock outlives its holder (a process killed while holding it) by at most this long."""


@runtime_checkable
class SharedStore(Protocol):
    """Keys to bytes and to counters, each with an optional time to live in seconds."""

    @property
    def url(self) -> str:
        """The store's URL, credentials redacted."""
        ...

    async def get(self, key: str) -> bytes | None:
        """The value under ``key``, or ``None`` if absent or expired."""
        ...

    async def set(self, key: str, value: bytes, ttl: float | None = None) -> None:
        """Store ``value`` under ``key``; it expires after ``ttl`` seconds if given."""
        ...

    async def incr(self, key: str, amount: float, ttl: float | None = None) -> float:
        """Add ``amount`` to the counter ``key`` (0 if absent) atomically; the new value.

        ``ttl`` applies when the counter is created, so a window resets by itself.
        """
        ...

    async def delete(self, key: str) -> None:
        """Remove ``key``."""
        ...

    def lock(self, key: str) -> AbstractAsyncContextManager[None]:
        """Hold ``key`` exclusively among every user of the store, waiting for it if taken.

        Not reentrant: a holder that asks for the same key again waits for itself.
        """
        ...

    async def aclose(self) -> None:
        """Release connections; the store may be used again afterwards."""
        ...


class _Entry:
    """A value and its deadline; ``encode`` gives its bytes if it is kept as a value."""

    __slots__ = ("encode", "expires", "value")

    def __init__(
        self, value: Any, expires: float, encode: Callable[[Any], bytes] | None = None
    ) -> None:
        self.value = value
        self.expires = expires
        self.encode = encode


class _KeyLock:
    """One key's in-process lock, and how many tasks hold it or wait for it."""

    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0


_NEVER = float("inf")


class _Entries:
    """A bounded LRU of entries that expire one by one: the table of `MemoryStore`.

    What cachetools' ``TLRUCache`` did here, at a fraction of its cost (under 1 µs a write
    instead of 4): an ``OrderedDict`` in LRU order, and the deadlines as plain tuples, where
    ``TLRUCache`` orders objects by a Python ``__lt__`` and expires on every write. A write
    to a full table first forgets what has expired, then the least recently used; an
    expired entry is never read.

    Deadlines that come in order (the same ttl each time, as a cache's) are kept in a
    queue, oldest first: a full table's least recently used entry is then most often the
    queue's first, forgotten with it, so nothing piles up. The others wait in a heap.
    What piles up all the same (deadlines of replaced or evicted entries) is swept out
    once there are twice as many deadlines as entries.
    """

    __slots__ = ("_clock", "_deadlines", "_late", "max_entries", "table")

    def __init__(self, max_entries: int, clock: Callable[[], float]) -> None:
        self.max_entries = max_entries
        self._clock = clock
        self.table: OrderedDict[str, _Entry] = OrderedDict()
        """The entries by key, least recently used first (expired ones among them)."""
        self._deadlines: deque[tuple[float, str]] = deque()  # in order: oldest first
        self._late: list[tuple[float, str]] = []  # a heap of those that came out of order

    def get(self, key: str) -> _Entry | None:
        """The live entry under ``key`` (now the most recently used), or ``None``."""
        entry = self.table.get(key)
        if entry is None:
            return None
        if entry.expires <= self._clock():
            del self.table[key]
            return None
        self.table.move_to_end(key)
        return entry

    def put(self, key: str, entry: _Entry) -> None:
        """Keep ``entry`` under ``key``, forgetting what expired or was used least if full."""
        entries = self.table
        if key in entries:
            entries[key] = entry
            entries.move_to_end(key)
        else:
            entries[key] = entry  # a new key comes last already
        expires = entry.expires
        if expires != _NEVER:
            deadlines = self._deadlines
            if not deadlines or deadlines[-1][0] <= expires:
                deadlines.append((expires, key))
            else:
                heapq.heappush(self._late, (expires, key))
            if len(deadlines) + len(self._late) > 2 * len(entries) + 16:
                self._sweep()
        if len(entries) > self.max_entries:
            self._make_room()

    def _sweep(self) -> None:
        """Forget the deadlines of entries replaced or evicted since they were kept."""
        get = self.table.get
        live = [d for d in self._deadlines if (e := get(d[1])) is not None and e.expires == d[0]]
        self._deadlines = deque(live)
        late = self._late
        late[:] = [d for d in late if (e := get(d[1])) is not None and e.expires == d[0]]
        heapq.heapify(late)

    def _make_room(self) -> None:
        """Forget what has expired, then the least recently used, down to ``max_entries``."""
        entries, deadlines, late = self.table, self._deadlines, self._late
        now = self._clock()
        while deadlines and deadlines[0][0] <= now:
            self._expire(*deadlines.popleft())
        while late and late[0][0] <= now:
            self._expire(*heapq.heappop(late))
        while len(entries) > self.max_entries:
            old, gone = entries.popitem(last=False)
            if deadlines and deadlines[0][1] == old and deadlines[0][0] == gone.expires:
                deadlines.popleft()  # its deadline: most often the oldest

    def _expire(self, expires: float, key: str) -> None:
        """Forget ``key`` if its entry is still the one that expires at ``expires``."""
        entry = self.table.get(key)
        if entry is not None and entry.expires == expires:
            del self.table[key]

    def pop(self, key: str) -> None:
        """Forget ``key``."""
        self.table.pop(key, None)


class MemoryStore:
    """A `SharedStore` in this process: a bounded LRU whose entries expire one by one.

    Example:
        >>> import asyncio
        >>> store = MemoryStore(max_entries=2)
        >>> asyncio.run(store.incr("calls", 1)), asyncio.run(store.incr("calls", 2))
        (1.0, 3.0)
    """

    __slots__ = ("_clock", "_entries", "_locks", "max_entries")

    def __init__(
        self, max_entries: int = DEFAULT_MAX_ENTRIES, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.max_entries = max_entries
        self._clock = clock
        self._entries = _Entries(max_entries, clock)
        # asyncio locks belong to a loop: one table per running loop, the held keys only
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, _KeyLock]] = (
            weakref.WeakKeyDictionary()
        )

    @property
    def url(self) -> str:
        """``memory://?max_entries=N``."""
        return f"memory://?max_entries={self.max_entries}"

    def _deadline(self, ttl: float | None) -> float:
        return _NEVER if ttl is None else self._clock() + ttl

    async def get(self, key: str) -> bytes | None:
        """The value, or ``None`` (a value kept by `keep`: the bytes its codec gives)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        return entry.value if entry.encode is None else entry.encode(entry.value)

    def get_kept(self, key: str, encode: Callable[[_V], bytes]) -> _V | bytes | None:
        """What `keep` kept under ``key`` with ``encode``, else the bytes there, or ``None``.

        A value kept with another codec is given as its bytes, as `get` gives it.
        """
        if key not in self._entries.table:  # a miss, known without `_Entries.get`
            return None
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry.encode is encode or entry.encode is None:
            return entry.value  # type: ignore[no-any-return]
        return entry.encode(entry.value)

    def keep(
        self, key: str, value: _V, encode: Callable[[_V], bytes], ttl: float | None = None
    ) -> None:
        """Store ``value`` as it is, encoded by ``encode`` only if its bytes are asked for.

        What reads it back with the same ``encode`` (`get_kept`) gets ``value`` itself, not
        a copy: keep only values that do not change.
        """
        self._entries.put(key, _Entry(value, self._deadline(ttl), encode))

    async def set(self, key: str, value: bytes, ttl: float | None = None) -> None:
        """Store the value."""
        self._entries.put(key, _Entry(value, self._deadline(ttl)))

    async def incr(self, key: str, amount: float, ttl: float | None = None) -> float:
        """Add to the counter (no await inside: atomic within the event loop)."""
        entry = self._entries.get(key)
        if entry is None:
            entry = _Entry(0.0, self._deadline(ttl))
            self._entries.put(key, entry)
        entry.value = float(entry.value) + amount
        return float(entry.value)

    async def delete(self, key: str) -> None:
        """Remove the key."""
        self._entries.pop(key)

    @asynccontextmanager
    async def lock(self, key: str) -> AsyncIterator[None]:
        """Hold ``key`` among the tasks of this process (an ``asyncio.Lock`` per key)."""
        locks = self._locks.setdefault(asyncio.get_running_loop(), {})
        held = locks.get(key)
        if held is None:
            held = locks[key] = _KeyLock()
        held.users += 1
        try:
            async with held.lock:
                yield
        finally:
            held.users -= 1
            if not held.users:
                del locks[key]

    async def aclose(self) -> None:
        """Nothing to release."""


class RedisStore:
    """A `SharedStore` on a Redis server, shared by every process that uses it.

    The client connects on first use and is closed by `aclose` (a container closes the
    stores of the middleware it built in ``shutdown``).
    """

    __slots__ = ("_client", "_prefix", "_url")

    def __init__(self, url: str, prefix: str = "fncore:") -> None:
        self._url = url
        self._prefix = prefix
        self._client: Any = None

    @property
    def url(self) -> str:
        """The server's URL, its password redacted."""
        return redact_password(self._url)

    def __repr__(self) -> str:
        return f"RedisStore({self.url!r})"

    def _redis(self) -> Any:
        if self._client is None:
            import redis.asyncio

            # A bounded pool that waits for a free connection: a thousand concurrent runs
            # share MAX_CONNECTIONS connections instead of opening a thousand.
            pool = redis.asyncio.BlockingConnectionPool.from_url(
                self._url, max_connections=MAX_CONNECTIONS, timeout=30
            )
            self._client = redis.asyncio.Redis(connection_pool=pool)
        return self._client

    async def get(self, key: str) -> bytes | None:
        """The value, or ``None``."""
        value = await self._redis().get(self._prefix + key)
        return None if value is None else bytes(value)

    async def set(self, key: str, value: bytes, ttl: float | None = None) -> None:
        """Store the value, with ``PX`` expiry when ``ttl`` is given."""
        px = None if ttl is None else max(1, int(ttl * 1000))
        await self._redis().set(self._prefix + key, value, px=px)

    async def incr(self, key: str, amount: float, ttl: float | None = None) -> float:
        """``INCRBYFLOAT``, and ``PEXPIRE NX`` so only a new counter gets the expiry."""
        name = self._prefix + key
        async with self._redis().pipeline(transaction=True) as pipe:
            pipe.incrbyfloat(name, amount)
            if ttl is not None:
                pipe.pexpire(name, max(1, int(ttl * 1000)), nx=True)
            results = await pipe.execute()
        return float(results[0])

    async def delete(self, key: str) -> None:
        """Remove the key."""
        await self._redis().delete(self._prefix + key)

    @asynccontextmanager
    async def lock(self, key: str) -> AsyncIterator[None]:
        """Hold ``key`` among every process using the server (redis-py's ``Lock``).

        The lock lasts `LEASE` seconds and is renewed while held, so a holder that dies
        gives it up by itself; one that lost it meanwhile (the server lost it) lets go
        quietly. A holder cancelled while it takes the lock releases it in case the server
        had granted it already, so the key is not left held until the lease runs out.
        """
        held = self._redis().lock(f"{self._prefix}lock:{key}", timeout=LEASE, sleep=0.02)
        token = uuid.uuid4().hex.encode()
        try:
            await held.acquire(token=token)
        except BaseException:  # cancelled (or failed) perhaps after the server said yes
            await _release(held, token, after_failure=True)
            raise
        renewing = asyncio.ensure_future(_renew(held))
        try:
            yield
        finally:
            renewing.cancel()
            await asyncio.gather(renewing, return_exceptions=True)
            await _release(held, token)

    async def aclose(self) -> None:
        """Close the connection pool."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose(close_connection_pool=True)


async def _release(held: Any, token: bytes, *, after_failure: bool = False) -> None:
    """Delete ``held``'s key if ``token`` still holds it, even if the caller is cancelled.

    The release runs shielded: a cancellation arriving meanwhile does not stop it. Not
    holding the lock (any more) is fine; so is any Redis error ``after_failure`` (taking
    the lock failed: that error is the one to report).
    """
    from redis.exceptions import LockError, RedisError

    ignored = RedisError if after_failure else LockError

    async def release() -> None:
        with contextlib.suppress(ignored):
            await held.do_release(token)

    await asyncio.shield(release())


async def _renew(held: Any) -> None:
    """Renew ``held``'s lease every third of `LEASE` until cancelled, or until it is lost."""
    from redis.exceptions import LockError

    with contextlib.suppress(LockError):
        while True:
            await asyncio.sleep(LEASE / 3)
            await held.reacquire()


def open_store(url: str) -> SharedStore:
    """The store a URL names: ``memory://`` (``?max_entries=N``) or ``redis://...``.

    Raises:
        ConfigError: for a scheme fncore has no store for, or a malformed option.

    Example:
        >>> open_store("memory://?max_entries=50").url
        'memory://?max_entries=50'
    """
    parts = urlsplit(url)
    shown = redact_password(url)
    if parts.scheme == "memory":
        options = parse_qs(parts.query)
        unknown = sorted(set(options) - {"max_entries"})
        if unknown:
            msg = f"store {shown!r}: unknown option {unknown[0]!r} (memory:// takes max_entries)"
            raise ConfigError(msg)
        raw = options.get("max_entries", [str(DEFAULT_MAX_ENTRIES)])[-1]
        if not raw.isdigit() or int(raw) < 1:
            msg = f"store {shown!r}: max_entries must be a positive whole number, not {raw!r}"
            raise ConfigError(msg)
        return MemoryStore(int(raw))
    if parts.scheme in ("redis", "rediss", "unix"):
        return RedisStore(url)
    msg = f"store {shown!r}: unknown scheme {parts.scheme!r}; use memory:// or redis://host:port"
    raise ConfigError(msg)
