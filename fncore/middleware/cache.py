"""``cache``: answers to repeated model requests and tool calls, kept in a store.

A model response is kept under a digest of the normalised request (model, instructions,
messages, tools, tool choice, settings, output schema), built from digests remembered per
message, tool definition and conversation (`Digests`), so a long conversation is not
serialised again at every call; a tool result under the tool, its schema and its validated
arguments. Both are kept for ``ttl`` seconds in a store chosen by URL (``redis://...``:
shared by every process, as versioned JSON, never pickle: what a store holds is data, not
code; ``memory://``: a bounded LRU in this process, of the values a hit gives back). An
entry that cannot be read (another version, damaged) is a miss, and is replaced.

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
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast

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
)
from fncore.core._fold import checks_itself, raised
from fncore.core._position_names import MODEL_CALL, TOOL_CALL
from fncore.middleware._cache_json import (
    NO_USAGE,
    decode_response,
    decode_result,
    encode_response,
    encode_result,
    kept_result,
    kept_until_hit,
)
from fncore.middleware._cache_key import Digests, request_key, tool_key
from fncore.middleware._checked import Seconds, checked
from fncore.middleware._per_loop import PerLoop
from fncore.middleware._place import place
from fncore.session_stores._json import Unkeyable
from fncore.shared_stores import MemoryStore, SharedStore, open_store

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span

__all__ = ["cache"]

HIT_ATTRIBUTE = "fncore.cache.hit"
"""The span attribute saying whether the cache answered a model or tool call."""

_log = logging.getLogger("fncore")
_T = TypeVar("_T")
_C = TypeVar("_C")


class _Cache(Generic[_T]):
    """Answers of one kind (model responses, or tool results) in a store.

    On ``memory://`` an answer is kept as the value its JSON form reads back as, and read
    without an ``await``; other stores hold the JSON form.
    """

    def __init__(
        self,
        store: SharedStore,
        ttl: float | None,
        encode: Callable[[_T], bytes],
        decode: Callable[[bytes], _T | None],
        keep: Callable[[_T], bool],
        kept: Callable[[_T], _T | None],
    ) -> None:
        self._store = store
        self._local = store if isinstance(store, MemoryStore) else None
        self._ttl = ttl
        self._encode = encode
        self._decode = decode
        self._keep = keep
        self._kept = kept
        # a key being looked up (and called) by a leader: the future its followers wait on
        self._flights: PerLoop[asyncio.Future[Any] | None] = PerLoop()
        self._current_context = _current_context()
        from opentelemetry import trace  # imported when used

        self._span_in = trace.get_current_span

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
        self, key: str, call: Callable[[_C], Awaitable[Outcome[_T]]], ctx: _C
    ) -> tuple[Outcome[_T], bool]:
        """The kept answer under ``key`` (and ``True``), or ``call(ctx)``'s (and ``False``).

        The first lookup of a key in this process leads: it reads the store and, on a miss,
        calls and keeps the answer. Lookups of the same key meanwhile wait for the leader's
        answer instead of calling themselves; if it has none to share (it failed, or was
        cancelled), each makes its own call. (In memory a lookup reads the store first:
        with no ``await`` in between, a hit needs no leader.)

        The mark (`HIT_ATTRIBUTE`) is set before the call on a miss, while the span the
        call's attempts copy it to (``trace``'s stand-in for the model call) still can.
        """
        # the current span, if any: an empty OpenTelemetry context holds none (a run with
        # no tracing), where looking the span up gives a span that records nothing
        otel = self._current_context()
        span = self._span_in(otel) if otel else None
        local = self._local
        if local is not None:  # read without an await: nothing can change meanwhile
            try:
                found = local.get_kept(key, self._encode)
            except Exception as exc:
                self._failed("read", exc)
                found = None
            shared = self._decode(found) if isinstance(found, bytes) else found
            if shared is not None:
                if span is not None:
                    span.set_attribute(HIT_ATTRIBUTE, True)
                return Success(shared), True
        flights = self._flights.here()
        if key in flights:
            return await self._follow(key, call, ctx, flights, span)
        flights[key] = None  # leading; a follower puts a future here to wait on
        shared = None
        try:
            if local is None:
                shared = await self._get(key)
            if span is not None:
                span.set_attribute(HIT_ATTRIBUTE, shared is not None)
            if shared is not None:
                return Success(shared), True
            outcome = await call(ctx)
            if type(outcome) is Success and self._keep(value := outcome.unwrap()):
                shared = value
                if local is None:
                    await self._set(key, value)
                else:
                    try:  # in memory, without an await
                        kept = self._kept(value)
                        if kept is not None:
                            local.keep(key, kept, self._encode, self._ttl)
                        else:
                            local.keep(key, self._encode(value), _as_is, self._ttl)
                    except Exception as exc:
                        self._failed("write", exc)
            return outcome, False
        finally:
            waiting = flights.pop(key)
            if waiting is not None:
                waiting.set_result(shared)

    async def _follow(
        self,
        key: str,
        call: Callable[[_C], Awaitable[Outcome[_T]]],
        ctx: _C,
        flights: dict[str, asyncio.Future[Any] | None],
        span: Span | None,
    ) -> tuple[Outcome[_T], bool]:
        """Wait for the leader of ``key``: its answer, or a call of one's own if it has none."""
        waiting = flights[key]
        if waiting is None:
            waiting = flights[key] = asyncio.get_running_loop().create_future()
        shared = await asyncio.shield(waiting)
        if span is not None:
            span.set_attribute(HIT_ATTRIBUTE, shared is not None)
        return (Success(shared), True) if shared is not None else (await call(ctx), False)


def _current_context() -> Callable[[], Context]:
    """`opentelemetry.context.get_current`, or what it calls when that is a context variable.

    The API's default runtime context keeps the current context in a ``ContextVar``:
    reading it straight gives the same context for two Python calls less.
    """
    from opentelemetry import context  # imported when used
    from opentelemetry.context.contextvars_context import ContextVarsRuntimeContext

    runtime = getattr(context, "_RUNTIME_CONTEXT", None)
    current = getattr(runtime, "_current_context", None)
    if type(runtime) is ContextVarsRuntimeContext and type(current) is ContextVar:
        return cast("Callable[[], Context]", current.get)
    return context.get_current


def _as_is(data: bytes) -> bytes:
    return data


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
    if response.usage is not NO_USAGE:  # read from its JSON form
        response = ModelResponse(
            response.message, NO_USAGE, response.finish_reason, response.model_name
        )
    return Success(response)


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
    digests = Digests()
    if models:
        responses = _Cache(
            kept, ttl, encode_response, decode_response, _keeps_response, kept_until_hit
        )

        @registry.on(MODEL_CALL, name=name, **place("cache"))
        @checks_itself(MODEL_CALL, name)
        async def cached_model_call(
            ctx: ModelCallContext, call_next: ModelCallNext
        ) -> Outcome[ModelResponse]:
            try:
                request = ctx.request
                temperature = request.settings.temperature
                if temperature is not None and temperature > 0 and not sampled:
                    return await call_next(ctx)
                try:
                    key = f"{prefix}model:{request_key(request, ctx.model.name, digests)}"
                except Unkeyable as exc:
                    return Failure(_unkeyable(exc, MODEL_CALL, name))
                outcome, hit = await responses.answer(key, call_next, ctx)
                return _replayed(ctx, outcome.unwrap()) if hit else outcome
            except Exception as exc:
                return raised(MODEL_CALL, name, exc)

    if tools:
        results = _Cache(kept, ttl, encode_result, decode_result, _keeps_result, kept_result)

        @registry.on(TOOL_CALL, name=name, tools=list(tools), **place("cache"))
        async def cached_tool_call(
            ctx: ToolCallContext, call_next: ToolCallNext
        ) -> Outcome[ToolResult]:
            try:
                key = f"{prefix}tool:{ctx.tool.name}:{tool_key(ctx, digests)}"
            except Unkeyable as exc:
                return Failure(_unkeyable(exc, TOOL_CALL, name))
            outcome, _ = await results.answer(key, call_next, ctx)
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
