"""``rate_limit``: requests and tokens per minute, and calls in flight, per model.

Requests per minute count in a moving window (the last 60 seconds, exactly); tokens per
minute in a fixed one-minute window that starts with its first reservation, because a
reservation is settled afterwards with the tokens actually used, which only a counter can
give back (to the window it was made in: a call that outlives its window gives nothing
back). ``window`` shortens (or lengthens) the minute: both rates then count per ``window``
seconds. They count in a store chosen by URL: ``memory://``, this process, in windows of
fncore's own (`fncore.middleware._windows`: nothing runs in the background), or
``redis://...``, every process using the same server and ``name``, through the `limits`
library.

Before a call, its tokens are reserved: an estimate of the input (its characters over four)
plus ``max_tokens`` (or ``output_reserve`` when the request sets none). After the call, the
reservation is settled with the response's `Usage`: what was not used is given back, what
was used beyond it is added. A failed call gives its whole reservation back.

A call that finds no capacity waits for it, up to ``max_wait`` seconds, then fails with
`RateLimitExceeded`. ``max_concurrent`` bounds the calls in flight per model in this
process.
"""

from __future__ import annotations

import asyncio
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import Field
from returns.result import Failure, Success

from fncore._distribution import install_hint
from fncore.core import (
    DataPart,
    Message,
    ModelCallContext,
    ModelCallNext,
    ModelRequest,
    ModelResponse,
    Outcome,
    RateLimitExceeded,
    Registry,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)
from fncore.core._fold import checks_itself, raised
from fncore.core._position_names import MODEL_CALL
from fncore.middleware._checked import SomeSeconds, checked
from fncore.middleware._memo import ByIdentity
from fncore.middleware._per_loop import PerLoop
from fncore.middleware._place import place
from fncore.middleware._tally import Tally
from fncore.middleware._windows import InProcess, Limit, Refusal
from fncore.shared_stores import MAX_CONNECTIONS

if TYPE_CHECKING:
    from limits import RateLimitItem

__all__ = ["rate_limit"]

CHARS_PER_TOKEN = 4
"""The estimate's rule of thumb: about four characters of text make a token."""

IMAGE_TOKENS = 1_000
"""What the estimate counts for an image or other binary part."""

POLL = 1.0
"""The longest a waiting call sleeps before it looks again (given-back tokens free room)."""

REDIS_PREFIX = "fncore:limits"
"""The prefix of the rates' keys in Redis (`limits` puts a colon after it)."""

_GIVE_BACK = """
if ARGV[2] ~= '' and redis.call('pexpiretime', KEYS[1]) ~= tonumber(ARGV[2]) then
    return 0
end
local held = tonumber(redis.call('get', KEYS[1]) or '0')
local amount = math.min(tonumber(ARGV[1]), held)
if amount > 0 then redis.call('decrby', KEYS[1], amount) end
return amount
"""
"""Take up to ARGV[1] from the counter KEYS[1], never below zero and never creating it; with
ARGV[2], only if the counter is still the window that ends then (``PEXPIRETIME``)."""


def estimate_tokens(request: ModelRequest) -> int:
    """About how many input tokens ``request`` holds: characters over `CHARS_PER_TOKEN`.

    Counts the instructions, every part of every message (an image as `IMAGE_TOKENS`), the
    tools' names, descriptions and schemas, and a little per message. No tokenizer: it needs
    no download and costs microseconds, and the reservation is settled with the real usage.

    Example:
        >>> from fncore import Message, ModelRequest
        >>> estimate_tokens(ModelRequest((Message.user("What is two plus three?"),)))
        10
    """
    return _estimate(request, _HISTORY)


SHORT = 16
"""Histories up to this many messages are counted afresh: cheaper than looking them up."""


def _estimate(request: ModelRequest, history: Tally) -> int:
    """`estimate_tokens` of ``request``, a long history's characters remembered in ``history``."""
    messages = request.messages
    if len(messages) <= SHORT:
        chars = len(request.instructions) + _message_chars(messages)
    else:
        chars = len(request.instructions) + history.history(
            messages if type(messages) is tuple else tuple(messages)
        )
    for tool in request.tools:
        chars += _tool_chars(tool)
    return math.ceil(chars / CHARS_PER_TOKEN)


def _message_chars(messages: Sequence[Message]) -> int:
    """The characters ``messages`` count, framing included (see `estimate_tokens`)."""
    chars = 0
    for message in messages:
        chars += 16  # the role and the message's framing
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                chars += len(part.name) + len(part.arguments)
            elif isinstance(part, ToolResultPart):
                chars += len(part.content)
            elif isinstance(part, DataPart):
                chars += IMAGE_TOKENS * CHARS_PER_TOKEN
            else:
                chars += len(part.text)
    return chars


_HISTORY = Tally(_message_chars)
"""Each message's characters and the totals of recent histories, remembered (bounded): a
long conversation's next call counts only its new messages, so the estimate stays flat in
its length (a history of up to `SHORT` messages is counted afresh). `estimate_tokens` uses
this one; each `rate_limit` has its own, so that agents serving many sessions do not push
each other's histories out."""


TOOLS_KEPT = 1_024
"""How many tool definitions' characters are remembered at most (past it, the older half is
forgotten)."""


def _measure_tool(tool: ToolSpec) -> int:
    """The characters ``tool``'s name, description and schema count (the schema as text)."""
    return len(tool.name) + len(tool.description) + len(str(tool.parameters))


_tool_chars: ByIdentity[ToolSpec, int] = ByIdentity(_measure_tool, TOOLS_KEPT)
"""`_measure_tool` of the tool definitions seen last, by identity: an agent sends the same
ones on every call."""

_TOOL_CHARS = _tool_chars.entries
"""What `_tool_chars` holds."""


def _redis(url: str) -> tuple[Any, Any]:
    """The `limits` storage on the Redis server ``url`` names, and its connection pool."""
    from limits.storage import storage_from_string  # imported when used: it takes ~30 ms

    try:
        import redis.asyncio
    except ImportError:
        msg = f"store {url!r} needs the Redis client: {install_hint('redis')}"
        raise ValueError(msg) from None
    # A bounded pool, as fncore's own Redis store: many concurrent calls share a few
    # connections instead of opening one each.
    pool = redis.asyncio.BlockingConnectionPool.from_url(
        url, max_connections=MAX_CONNECTIONS, timeout=30
    )
    target = f"async+redis+unix{url[4:]}" if url.startswith("unix") else f"async+{url}"
    options: dict[str, Any] = {"connection_pool": pool}  # limits types options as scalars
    storage = storage_from_string(
        target, implementation="redispy", key_prefix=REDIS_PREFIX, **options
    )
    return storage, pool


def _per(amount: int, window: int) -> RateLimitItem:
    """``amount`` per ``window`` seconds, as a `limits` item.

    Whole minutes stay minutes, which keeps a per-minute rate's key as it always was.
    """
    from limits import RateLimitItemPerMinute, RateLimitItemPerSecond

    if window % 60 == 0:
        return RateLimitItemPerMinute(amount, window // 60)
    return RateLimitItemPerSecond(amount, window)


class _Rates(ABC):
    """One ``rate_limit``'s counts, wherever they are kept, and its slots per model; owned.

    A store's counts implement `take` and `settle`.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._slots: PerLoop[asyncio.Semaphore] = PerLoop()

    def slots(self, model: str, size: int) -> asyncio.Semaphore:
        """The semaphore bounding ``model``'s calls in flight to ``size``, in this loop."""
        slots = self._slots.here()
        slot = slots.get(model)
        if slot is None:
            slot = slots[model] = asyncio.Semaphore(size)
        return slot

    def exceeded(self, model: str, limit: Limit, wait: float | None) -> RateLimitExceeded:
        """The error of a call that found no capacity within ``max_wait``."""
        after = "" if wait is None else f"; try again in about {wait:.1f}s"
        return RateLimitExceeded(
            message=(
                f"no capacity for model {model!r} within the longest wait: {limit} is "
                f"reached{after}"
            ),
            position=MODEL_CALL,
            middleware=self.name,
            limit=limit,
            scope="shared",
            retry_after=wait,
        )

    @abstractmethod
    async def take(self, model: str, reserved: int) -> Refusal | float:
        """A request and ``reserved`` tokens for ``model`` now: the tokens' window, or why not.

        Returns:
            When the window the tokens were reserved in ends (0 without a token limit), or
            the `Refusal` of the limit that has no room.
        """

    @abstractmethod
    async def settle(
        self, model: str, reserved: int, window: float, outcome: Outcome[ModelResponse]
    ) -> None:
        """Settle ``reserved`` tokens, taken in ``window``, with what the call used.

        A failed call used none; what a call used beyond its reservation counts in the
        current window.
        """

    async def admit(self, model: str, reserved: int, deadline: float) -> RateLimitExceeded | float:
        """Wait for a request and ``reserved`` tokens until ``deadline`` (monotonic).

        Returns:
            What `take` returned once it took them, or the error of a call that waited too long.
        """
        while True:
            taken = await self.take(model, reserved)
            if not isinstance(taken, Refusal):
                return taken
            left = deadline - time.monotonic()
            if left <= 0:
                return self.exceeded(model, taken.limit, max(taken.wait, 0.0))
            await asyncio.sleep(min(max(taken.wait, 0.01), left, POLL))

    @abstractmethod
    async def aclose(self) -> None:
        """Close the store's connections, if it has any."""


def _used(outcome: Outcome[ModelResponse]) -> int:
    """The tokens a call used: its response's input and output tokens; none if it failed."""
    if type(outcome) is Success:
        response: ModelResponse = outcome.unwrap()
        return response.usage.input_tokens + response.usage.output_tokens
    return 0


class _Local(_Rates):
    """Counts in this process (``memory://``), in fncore's own windows."""

    def __init__(self, name: str, requests: int | None, tokens: int | None, window: int) -> None:
        super().__init__(name)
        self.windows = InProcess(requests, tokens, window)

    async def take(self, model: str, reserved: int) -> Refusal | float:
        return self.windows.take(model, reserved)

    async def settle(
        self, model: str, reserved: int, window: float, outcome: Outcome[ModelResponse]
    ) -> None:
        self.windows.settle(model, reserved, window, _used(outcome))

    async def aclose(self) -> None:
        """Nothing to close: the windows are plain values."""


class _Limits(_Rates):
    """Counts on a Redis server, through the `limits` library's windows."""

    def __init__(
        self,
        name: str,
        store: str,
        requests: int | None,
        tokens: int | None,
        window: int = 60,
    ) -> None:
        from limits.aio.strategies import FixedWindowRateLimiter, MovingWindowRateLimiter

        super().__init__(name)
        self.storage, self._pool = _redis(store)
        self.requests = None if requests is None else _per(requests, window)
        self.tokens = None if tokens is None else _per(tokens, window)
        self.moving = MovingWindowRateLimiter(self.storage)
        self.fixed = FixedWindowRateLimiter(self.storage)
        import redis.asyncio

        self._client = redis.asyncio.Redis(connection_pool=self._pool)
        self._give_back = self._client.register_script(_GIVE_BACK)

    async def _try(self, model: str, reserved: int) -> Refusal | None:
        """Take a request and ``reserved`` tokens: ``None``, or the limit reached and the wait."""
        tokens, requests = self.tokens, self.requests
        if tokens is not None and not await self.fixed.hit(tokens, self.name, model, cost=reserved):
            # a refused fixed-window hit has counted its cost all the same: take it back
            await self.give_back(tokens, model, reserved)
            stats = await self.fixed.get_window_stats(tokens, self.name, model)
            return Refusal("tokens_per_minute", stats.reset_time - time.time())
        if requests is not None and not await self.moving.hit(requests, self.name, model):
            if tokens is not None:
                await self.give_back(tokens, model, reserved)
            stats = await self.moving.get_window_stats(requests, self.name, model)
            return Refusal("requests_per_minute", stats.reset_time - time.time())
        return None

    async def take(self, model: str, reserved: int) -> Refusal | float:
        refused = await self._try(model, reserved)
        if refused is not None:
            return refused
        # read just after the reservation, it names the window the reservation was made in
        return 0.0 if self.tokens is None else await self.window(self.tokens, model)

    def _key(self, tokens: RateLimitItem, model: str) -> str:
        return tokens.key_for(self.name, model)

    async def window(self, tokens: RateLimitItem, model: str) -> float:
        """Which window ``model``'s tokens count in now, named by when it ends, exactly."""
        return float(await self._client.pexpiretime(f"{REDIS_PREFIX}:{self._key(tokens, model)}"))

    async def give_back(
        self, tokens: RateLimitItem, model: str, amount: int, window: float | None = None
    ) -> None:
        """Give back ``amount`` reserved tokens to ``window``, no more than it holds.

        A window that ended meanwhile is given nothing: what a reservation did not use
        never frees room in a later window, which counts other calls' reservations (nor
        becomes credit there). ``None``: the current window (a hit just refused). The check
        and the decrement are one step (a Lua script), so another process giving back at
        once cannot take a window below zero.
        """
        key = self._key(tokens, model)
        await self._give_back(
            keys=[f"{REDIS_PREFIX}:{key}"], args=[amount, "" if window is None else window]
        )

    async def settle(
        self, model: str, reserved: int, window: float, outcome: Outcome[ModelResponse]
    ) -> None:
        tokens, used = self.tokens, _used(outcome)
        if tokens is None or used == reserved:
            return
        if used < reserved:
            await self.give_back(tokens, model, reserved - used, window)
        else:
            await self.storage.incr(
                self._key(tokens, model), tokens.get_expiry(), amount=used - reserved
            )

    async def aclose(self) -> None:
        """Close the Redis connections."""
        await self._pool.aclose()


def _open(name: str, store: str, requests: int | None, tokens: int | None, window: int) -> _Rates:
    """The counts of a ``rate_limit`` in the store ``store`` names."""
    scheme = urlsplit(store).scheme
    if scheme == "memory":
        if store.rstrip("/") != "memory:":
            msg = f"store {store!r}: memory:// takes no host or options here"
            raise ValueError(msg)
        return _Local(name, requests, tokens, window)
    if scheme in ("redis", "rediss", "unix"):
        return _Limits(name, store, requests, tokens, window)
    msg = f"store {store!r}: unknown scheme {scheme!r}; use memory:// or redis://host:port"
    raise ValueError(msg)


async def _take(slot: asyncio.Semaphore, wait: float) -> bool:
    """Take a slot, waiting up to ``wait`` seconds for one; whether it was taken.

    The wait runs in a task of its own, given up after ``asyncio.wait``: cancelling the
    caller's own task for a timeout (``asyncio.timeout``) proved fragile on Python 3.11, where
    a cancellation could outlive the timeout and cancel the run.
    """
    if not slot.locked():
        await slot.acquire()  # free: returns at once
        return True
    if wait <= 0:
        return False
    waiter = asyncio.ensure_future(slot.acquire())
    try:
        await asyncio.wait((waiter,), timeout=wait)
    except BaseException:  # cancelled while waiting
        _give_up(waiter, slot)
        raise
    if waiter.done() and not waiter.cancelled():
        return True
    _give_up(waiter, slot)
    return False


def _give_up(waiter: asyncio.Task[Literal[True]], slot: asyncio.Semaphore) -> None:
    """Stop waiting for a slot; one granted meanwhile (or as the wait ends) goes back."""

    def give_back(done: asyncio.Task[Literal[True]]) -> None:
        if not done.cancelled():
            slot.release()

    waiter.cancel()
    waiter.add_done_callback(give_back)


def _too_big(rates: _Rates, model: str, reserved: int, allowed: int) -> RateLimitExceeded:
    error = rates.exceeded(model, "tokens_per_minute", None)
    return replace(
        error,
        message=(
            f"a call to model {model!r} reserves about {reserved} tokens (its input, estimated, "
            f"and max_tokens or output_reserve), more than tokens_per_minute={allowed} ever "
            "allows: lower max_tokens, or raise the limit"
        ),
    )


PerMinute = Annotated[int, Field(ge=1)]
"""A rate: at least one per minute (per window)."""

Window = Annotated[int, Field(ge=1)]
"""A window: a whole number of seconds, at least one."""


@checked
def rate_limit(
    *,
    requests_per_minute: PerMinute | None = 60,
    tokens_per_minute: PerMinute | None = None,
    max_concurrent: Annotated[int, Field(ge=1)] | None = None,
    max_wait: SomeSeconds = 60.0,
    output_reserve: Annotated[int, Field(ge=0)] = 1024,
    window: Window = 60,
    store: str = "memory://",
    name: str = "rate_limit",
) -> Registry:
    """Keep each model's calls under requests and tokens per minute, and calls in flight.

    Args:
        requests_per_minute: Calls per model in any 60 seconds, or in any ``window`` seconds
            (``None``: no limit).
        tokens_per_minute: Input plus output tokens per model per minute, or per ``window``
            (``None``: no limit); each call reserves its estimate before it is sent.
        max_concurrent: Calls per model in flight at once, in this process (``None``: no
            limit).
        max_wait: Seconds a call may wait for capacity before it fails with
            `RateLimitExceeded` (0: fail at once).
        output_reserve: Tokens reserved for the answer when a request sets no
            ``max_tokens``.
        window: The seconds both rates count over: a minute by default; ``window=1`` makes
            them per second (as some providers count), a short window suits tests.
        store: Where the rates are counted: ``memory://`` (this process) or
            ``redis://host:port/db`` (every process using it).
        name: The middleware's name; also the rates' key, so two agents (or processes) with
            the same name and store share their limits.

    Returns:
        A registry with one ``model_call`` middleware, which owns the store's connections.

    Raises:
        ValueError: for no limit at all, or a store URL it cannot use.

    Example:
        >>> registry = rate_limit(requests_per_minute=500, tokens_per_minute=200_000)
        >>> [r.position for r in registry.middleware]
        ['model_call']
    """
    if requests_per_minute is None and tokens_per_minute is None and max_concurrent is None:
        msg = (
            "rate_limit needs a limit: set requests_per_minute, tokens_per_minute or max_concurrent"
        )
        raise ValueError(msg)
    rates = _open(name, store, requests_per_minute, tokens_per_minute, window)
    registry = Registry()
    registry.own(rates)
    tokens = tokens_per_minute
    counted = requests_per_minute is not None or tokens is not None
    history = Tally(_message_chars)
    local = rates.windows if isinstance(rates, _Local) else None

    @registry.on(MODEL_CALL, name=name, **place("rate_limit"))
    @checks_itself(MODEL_CALL, name)
    async def rate_limited(
        ctx: ModelCallContext, call_next: ModelCallNext
    ) -> Outcome[ModelResponse]:
        try:
            model = ctx.model.name
            slot = deadline = None
            if max_concurrent is not None:
                deadline = time.monotonic() + max_wait  # the wait for a slot counts in it
                slot = rates.slots(model, max_concurrent)
                if not await _take(slot, max_wait):
                    return Failure(rates.exceeded(model, "max_concurrent", None))
            try:
                reserved = 0
                if tokens is not None:
                    request = ctx.request
                    answer = request.settings.max_tokens
                    reserved = _estimate(request, history) + (
                        output_reserve if answer is None else answer
                    )
                    if reserved > tokens:
                        return Failure(_too_big(rates, model, reserved, tokens))
                if not counted:
                    return await call_next(ctx)
                # In memory, take without an await first; wait (`admit`) only on a refusal.
                taken = local.take(model, reserved) if local is not None else None
                if taken is None or isinstance(taken, Refusal):
                    if deadline is None:
                        deadline = time.monotonic() + max_wait
                    admitted = await rates.admit(model, reserved, deadline)
                    if isinstance(admitted, RateLimitExceeded):
                        return Failure(admitted)
                    taken = admitted
                window = taken
                if tokens is None:
                    return await call_next(ctx)
                outcome = await call_next(ctx)
                if local is not None:
                    local.settle(model, reserved, window, _used(outcome))
                else:
                    await rates.settle(model, reserved, window, outcome)
                return outcome
            finally:
                if slot is not None:
                    slot.release()
        except Exception as exc:
            return raised(MODEL_CALL, name, exc)

    return registry
