"""`ProviderModel`: the body every adapter shares; an adapter fills in mapping and decoding.

The adapter's parts, and where the base class calls them::

    request(request)                        stream(request)
      _arguments(request)  -> kwargs          _arguments(request)  -> kwargs
      _answer(kwargs)      -> response          _open_stream(kwargs) -> events
                                              _decoder()           -> decoder
                                              decoder.feed(event)  -> deltas   (each event)
                                              decoder.finish()     -> deltas, final item

``_arguments`` raises `NotExpressible` for what the API cannot take (a `BadRequest`, nothing
sent); any exception from the others goes to the adapter's `ExceptionMapper`. So `request`
and `stream` never raise (`asyncio.CancelledError` aside), a stream ends with exactly one
`ModelResponse` or `ModelError`, and the SDK stream is closed on every exit.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from typing import Any, Generic, Protocol, Self, TypeVar, runtime_checkable

from returns.result import Failure, Result, Success

from fncore.adapter._endpoint import Endpoint
from fncore.core import ModelError, ModelRequest, ModelResponse, ModelStreamItem, StreamDelta

__all__ = [
    "Client",
    "EventStream",
    "ExceptionMapper",
    "NotExpressible",
    "ProviderModel",
    "StreamDecoder",
]

_E_co = TypeVar("_E_co", covariant=True)
_E_contra = TypeVar("_E_contra", contravariant=True)
_Event = TypeVar("_Event")


class NotExpressible(Exception):
    """Raised by request mapping for a request the API has no form for.

    The message says what and what to do instead; `ProviderModel` returns it as a
    `BadRequest` without sending anything.
    """


class Client(Protocol):
    """An SDK client: something with connections to close."""

    async def close(self) -> None:
        """Close the client's HTTP connections."""
        ...


_ClientT = TypeVar("_ClientT", bound=Client)


@runtime_checkable
class _RetryingClient(Protocol):
    """A client with the SDK's own retries (the OpenAI and Anthropic SDKs have this shape)."""

    max_retries: int

    def with_options(self, *, max_retries: int) -> Any:
        """A copy of the client with other options, sharing its connection pool."""
        ...


class EventStream(Protocol[_E_co]):
    """An open response stream of an SDK: iterated for events, closed when done."""

    def __aiter__(self) -> AsyncIterator[_E_co]:
        """The events, in order."""
        ...

    async def close(self) -> None:
        """Close the HTTP response."""
        ...


class StreamDecoder(Protocol[_E_contra]):
    """Turns one API's stream events into deltas, and at the end into the final item."""

    @property
    def done(self) -> bool:
        """Whether the terminal event arrived: the rest of the stream is not read."""
        ...

    def feed(self, event: _E_contra) -> Sequence[StreamDelta]:
        """The deltas ``event`` gives; raises on an event that cannot be decoded."""
        ...

    def finish(self) -> tuple[Sequence[StreamDelta], ModelResponse | ModelError]:
        """After the last event: deltas still owed, then the response or the error.

        A stream that ended before its terminal event gives `Endpoint.interrupted`.
        """
        ...


class ExceptionMapper(Protocol):
    """An adapter's error mapping: any exception of its SDK (or its decoding) to a value.

    Every adapter has one, ``map_exception`` in its ``_errors`` module, built from the
    `Endpoint` error helpers.
    """

    def __call__(
        self, exc: Exception, endpoint: Endpoint, *, in_stream: bool = False
    ) -> ModelError:
        """The error value for ``exc``.

        Args:
            exc: What the SDK call, the SDK stream or decoding raised.
            endpoint: Where the request went; builds the error values.
            in_stream: Whether the stream was already open, so that a broken connection or
                undecodable data means the answer was cut off.
        """
        ...


class ProviderModel(ABC, Generic[_ClientT, _Event]):
    """A `Model` over a provider's SDK client: `request` and `stream` written once.

    Subclasses map requests (`_arguments`), send and decode (`_answer`, `_open_stream`,
    `_decoder`) and pass their `ExceptionMapper`; this class turns every failure into a
    `ModelError` value and never raises.

    Args:
        model: The model name requests are sent with.
        client: The SDK client.
        endpoint: Where the client sends, for error values and the ``repr``.
        map_exception: The adapter's error mapping.
        owns_client: Whether `aclose` closes the client (one the model built itself).
    """

    __slots__ = (
        "_client",
        "_endpoint",
        "_map_exception",
        "_model",
        "_owns_client",
        "_without_retries",
    )

    def __init__(
        self,
        model: str,
        client: _ClientT,
        endpoint: Endpoint,
        map_exception: ExceptionMapper,
        *,
        owns_client: bool,
    ) -> None:
        self._model = model
        self._client = client
        self._endpoint = endpoint
        self._map_exception = map_exception
        self._owns_client = owns_client
        self._without_retries: Self | None = None

    @property
    def name(self) -> str:
        """The model name requests are sent with."""
        return self._model

    @property
    def provider(self) -> str:
        """The provider's name (``openai``, ``anthropic``, ...): the endpoint's, for traces.

        The ``trace`` built-in records it as ``gen_ai.provider.name``.
        """
        return self._endpoint.provider

    @property
    def client(self) -> _ClientT:
        """The SDK client in use."""
        return self._client

    @property
    def endpoint(self) -> Endpoint:
        """Where requests go (credentials redacted), and the error values for it."""
        return self._endpoint

    def without_sdk_retries(self) -> Self:
        """This model with its SDK's own retries off, sharing this model's connections.

        The `retry` middleware sends through it, so that its retries are the only ones:
        with the SDK's as well (``max_retries``, 2 by default), each of its attempts would
        be up to three requests. The copy is made once (the SDK's
        ``client.with_options(max_retries=0)``, which shares the connection pool) and
        kept; it owns nothing, so only this model's `aclose` closes the connections. A
        client without SDK retries (or without that option) gives this model itself.
        """
        twin = self._without_retries
        if twin is None:
            client: object = self._client
            if isinstance(client, _RetryingClient) and client.max_retries != 0:
                twin = copy.copy(self)
                twin._client = client.with_options(max_retries=0)
                twin._owns_client = False
                twin._without_retries = twin
            else:
                twin = self
            self._without_retries = twin
        return twin

    async def aclose(self) -> None:
        """Close the HTTP connections of the client the model built (a given one is left open)."""
        if self._owns_client:
            await self._client.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._model!r}, base_url={self._endpoint.url!r})"

    @abstractmethod
    def _arguments(self, request: ModelRequest) -> dict[str, Any]:
        """The SDK call's keyword arguments for ``request`` (without ``stream``).

        Raises:
            NotExpressible: for a request the API cannot take.
        """

    @abstractmethod
    async def _answer(self, arguments: dict[str, Any]) -> ModelResponse | ModelError:
        """Send a request and decode the whole answer.

        A 2xx body that is not the API's answer is an `Endpoint.unexpected` value.
        """

    @abstractmethod
    async def _open_stream(self, arguments: dict[str, Any]) -> EventStream[_Event]:
        """Send a streamed request; the open stream of events."""

    @abstractmethod
    def _decoder(self) -> StreamDecoder[_Event]:
        """A fresh decoder for one stream."""

    def _prepared(self, request: ModelRequest) -> dict[str, Any] | ModelError:
        """`_arguments`, or the error value for a request that cannot be sent."""
        try:
            return self._arguments(request)
        except NotExpressible as exc:
            return self._endpoint.bad_request(str(exc))
        except Exception as exc:
            return self._map_exception(exc, self._endpoint)

    async def request(self, request: ModelRequest) -> Result[ModelResponse, ModelError]:
        """Send ``request`` and return the whole response, or the error."""
        arguments = self._prepared(request)
        if isinstance(arguments, ModelError):
            return Failure(arguments)
        try:
            result = await self._answer(arguments)
        except Exception as exc:
            return Failure(self._map_exception(exc, self._endpoint))
        return Failure(result) if isinstance(result, ModelError) else Success(result)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamItem]:
        """Send ``request`` streamed: yield deltas, then the response (or an error)."""
        arguments = self._prepared(request)
        if isinstance(arguments, ModelError):
            yield arguments
            return
        try:
            events = await self._open_stream(arguments)
        except Exception as exc:
            yield self._map_exception(exc, self._endpoint)
            return
        decoder = self._decoder()
        try:
            async for event in events:
                for delta in decoder.feed(event):
                    yield delta
                if decoder.done:
                    break
        except Exception as exc:
            yield self._map_exception(exc, self._endpoint, in_stream=True)
            return
        finally:  # also when the consumer stops early: close the HTTP response now
            await events.close()
        deltas, final = decoder.finish()
        for delta in deltas:
            yield delta
        yield final
