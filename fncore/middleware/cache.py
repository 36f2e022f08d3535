"""``cache``: answers to repeated model requests and tool calls, kept in a store.

A model response is kept under a digest of the normalised request (model, instructions,
messages, tools, tool choice, settings); a tool result under the tool, its schema and its
validated arguments. Both are kept for ``ttl`` seconds in a store chosen by URL
(``memory://``: a bounded LRU in this process; ``redis://...``: shared by every process),
serialised as versioned JSON (never pickle: what a store holds is data, not code). An entry
that cannot be read (another version, damaged) is a miss, and is replaced.

* Errors are never kept: a failed call, a ``Terminate``, an error result of a tool, a
  response that ended in error.
* Model requests sent with ``temperature > 0`` are not cached unless ``sampled=True``: they
  ask for a different answer each time. (An unset temperature is cached.)
* Keys are the same in every process: what a request holds beyond JSON (a set, bytes, an
  enum, a date, ...) is keyed by a canonical form, and a value with none is refused with a
  `MiddlewareError` before anything is sent.
* Concurrent identical misses in one process make one call: the others wait for it.
* An answer from the cache costs no tokens: it comes with empty usage. Streaming, it is
  replayed as the stream events its response is made of.
* Each lookup sets ``fncore.cache.hit`` (true or false) on the current OpenTelemetry span,
  the per-attempt span the ``trace`` built-in keeps current (a no-op without tracing).
* A store that fails (Redis down) is a miss, logged on the ``fncore`` logger: the call is
  made, the run goes on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from returns.result import Failure, Success

from fncore.core import (
    EventMapFailed,
    MiddlewareError,
    ModelCallContext,
    ModelCallNext,
    ModelResponse,
    Outcome,
    ReasoningDelta,
    ReasoningPart,
    Registry,
    TextDelta,
    TextPart,
    ToolCallArgsDelta,
    ToolCallContext,
    ToolCallNext,
    ToolCallPart,
    ToolCallStarted,
    ToolResult,
    Usage,
)
from fncore.core._position_names import MODEL_CALL, TOOL_CALL
from fncore.middleware._cache_json import (
    decode_response,
    decode_result,
    encode_response,
    encode_result,
    request_key,
    tool_key,
)
from fncore.middleware._checked import Seconds, checked
from fncore.middleware._per_loop import PerLoop
from fncore.middleware._place import place
from fncore.session_stores._json import Unkeyable
from fncore.shared_stores import SharedStore, open_store

if TYPE_CHECKING:
    from opentelemetry.trace import Span

__all__ = ["cache"]

HIT_ATTRIBUTE = "fncore.cache.hit"
"""The span attribute saying whether the cache answered a model or tool call."""

_log = logging.getLogger("fncore")
_T = TypeVar("_T")


class _Cache(Generic[_T]):
    """Answers of one kind (model responses, or tool results) in a store."""

    def __init__(
        self,
        store: SharedStore,
        ttl: float | None,
        encode: Callable[[_T], bytes],
        decode: Callable[[bytes], _T | None],
        keep: Callable[[_T], bool],
    ) -> None:
        self._store = store
        self._ttl = ttl
        self._encode = encode
        self._decode = decode
        self._keep = keep
        self._flights: PerLoop[asyncio.Future[Any]] = PerLoop()
        from opentelemetry import trace  # imported when used

        self._current_span = trace.get_current_span

    async def _get(self, key: str) -> _T | None:
        try:
            data = await self._store.get(key)
        except Exception as exc:
            self._failed("read", exc)
            return None
        return None if data is None else self._decode(data)

    async def _set(self, key: str, value: _T) -> None:
        try:
            await self._store.set(key, self._encode(value), self._ttl)
        except Exception as exc:
            self._failed("write", exc)

    def _failed(self, what: str, exc: Exception) -> None:
        store, kind = self._store.url, type(exc).__name__
        _log.warning("cache store %s failed to %s (a miss): %s: %s", store, what, kind, exc)

    async def answer(
        self, key: str, call: Callable[[], Awaitable[Outcome[_T]]]
    ) -> tuple[Outcome[_T], bool]:
        """The kept answer under ``key`` (and ``True``), or ``call``'s outcome (and ``False``).

        The first lookup of a key in this process leads: it reads the store and, on a miss,
        calls and keeps the answer. Lookups of the same key meanwhile wait for the leader's
        answer instead of reading and calling themselves; if it has none to share (it
        failed, or was cancelled), each makes its own call.

        The mark (`HIT_ATTRIBUTE`) is set before the call on a miss, while the span the
        call's attempts copy it to (``trace``'s stand-in for the model call) still can.
        """
        span = self._current_span()
        flights = self._flights.here()
        flight = flights.get(key)
        if flight is None:
            return await self._lead(key, call, flights, span)
        shared = await asyncio.shield(flight)
        span.set_attribute(HIT_ATTRIBUTE, shared is not None)
        return (Success(shared), True) if shared is not None else (await call(), False)

    async def _lead(
        self,
        key: str,
        call: Callable[[], Awaitable[Outcome[_T]]],
        flights: dict[str, asyncio.Future[Any]],
        span: Span,
    ) -> tuple[Outcome[_T], bool]:
        flight = flights[key] = asyncio.get_running_loop().create_future()
        shared: _T | None = None
        try:
            shared = await self._get(key)
            span.set_attribute(HIT_ATTRIBUTE, shared is not None)
            if shared is not None:
                return Success(shared), True
            outcome = await call()
            if type(outcome) is Success and self._keep(outcome.unwrap()):
                shared = outcome.unwrap()
                await self._set(key, shared)
            return outcome, False
        finally:
            del flights[key]
            flight.set_result(shared)


def _replayed(ctx: ModelCallContext, response: ModelResponse) -> Outcome[ModelResponse]:
    """A kept response as this call's answer: streamed if the run streams, with no usage."""
    emit = ctx.run.emit
    if emit is not None:
        try:
            for part in response.message.parts:
                if isinstance(part, TextPart):
                    emit(TextDelta(part.text))
                elif isinstance(part, ReasoningPart):
                    emit(ReasoningDelta(part.text))
                elif isinstance(part, ToolCallPart):
                    emit(ToolCallStarted(part.id, part.name))
                    emit(ToolCallArgsDelta(part.id, part.arguments))
        except EventMapFailed as failed:
            return Failure(failed.error)
    return Success(replace(response, usage=Usage()))


@checked
def cache(
    *,
    models: bool = True,
    sampled: bool = False,
    tools: Sequence[str] = (),
    ttl: Seconds | None = 3600.0,
    store: str = "memory://",
    name: str = "cache",
) -> Registry:
    """Answer repeated model requests and tool calls from a store.

    Args:
        models: Cache model responses.
        sampled: Cache them even for requests with ``temperature > 0``.
        tools: The tools whose results are cached (none by default: only tools whose
            result depends on their arguments alone belong here). A name that is not a
            tool of the agent is a build error.
        ttl: Seconds an entry is kept (``None``: until the store evicts it).
        store: ``memory://`` (``?max_entries=N``, 10,000 by default) or
            ``redis://host:port/db`` (shared by every process using it).
        name: The middleware's name; also its entries' key prefix, so caches with the same
            name and store share their entries.

    Returns:
        A registry with the middleware (``model_call``, and ``tool_call`` for ``tools``),
        owning the store.

    Raises:
        ValueError: if it would cache nothing (``models=False`` and no tools).

    Example:
        >>> registry = cache(tools=["lookup"], ttl=600)
        >>> sorted(r.position for r in registry.middleware)
        ['model_call', 'tool_call']
    """
    if not models and not tools:
        msg = "cache would cache nothing: keep models=True, or name tools=[...]"
        raise ValueError(msg)
    registry = Registry()
    kept = registry.own(open_store(store))
    prefix = f"cache:{name}:"
    if models:
        responses = _Cache(kept, ttl, encode_response, decode_response, _keeps_response)

        @registry.on(MODEL_CALL, name=name, **place("cache"))
        async def cached_model_call(
            ctx: ModelCallContext, call_next: ModelCallNext
        ) -> Outcome[ModelResponse]:
            request = ctx.request
            temperature = request.settings.temperature
            if temperature is not None and temperature > 0 and not sampled:
                return await call_next(ctx)
            try:
                key = f"{prefix}model:{request_key(request, ctx.model.name)}"
            except Unkeyable as exc:
                return Failure(_unkeyable(exc, MODEL_CALL, name))
            outcome, hit = await responses.answer(key, lambda: call_next(ctx))
            return _replayed(ctx, outcome.unwrap()) if hit else outcome

    if tools:
        results = _Cache(kept, ttl, encode_result, decode_result, _keeps_result)

        @registry.on(TOOL_CALL, name=name, tools=list(tools), **place("cache"))
        async def cached_tool_call(
            ctx: ToolCallContext, call_next: ToolCallNext
        ) -> Outcome[ToolResult]:
            try:
                key = f"{prefix}tool:{ctx.tool.name}:{tool_key(ctx)}"
            except Unkeyable as exc:
                return Failure(_unkeyable(exc, TOOL_CALL, name))
            outcome, _ = await results.answer(key, lambda: call_next(ctx))
            return outcome

    return registry


def _unkeyable(
    exc: Unkeyable, position: Literal["model_call", "tool_call"], name: str
) -> MiddlewareError:
    """The error value of a call the cache cannot key: nothing was sent."""
    return MiddlewareError(message=f"{exc}; nothing was sent", position=position, middleware=name)


def _keeps_response(response: ModelResponse) -> bool:
    return response.finish_reason != "error"


def _keeps_result(result: ToolResult) -> bool:
    return not result.is_error
