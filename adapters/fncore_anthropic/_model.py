"""`AnthropicModel`: fncore's `Model` over the Anthropic Messages API."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any, final

from anthropic import AsyncAnthropic
from returns.result import Failure, Result, Success

from fncore.core import ModelError, ModelRequest, ModelResponse, ModelStreamItem
from fncore_anthropic._client import DEFAULT_MAX_TOKENS, make_client
from fncore_anthropic._decode import decode_message
from fncore_anthropic._errors import map_exception
from fncore_anthropic._request import build_kwargs
from fncore_anthropic._stream import decode_stream


@final
class AnthropicModel:
    """A Claude model behind the Messages API (``POST /v1/messages``).

    Failures are values: `request` returns ``Failure(ModelError)`` and `stream` yields a
    `ModelError` as its last item; no error message ever contains the API key.

    Args:
        model: The model name, e.g. ``claude-sonnet-4-5``.
        client: An ``AsyncAnthropic`` to use as it is; the options below that configure a
            client are then ignored.
        api_key: The key; ``None`` lets the SDK find one (``ANTHROPIC_API_KEY``, ...).
        base_url: The server, without ``/v1`` (the SDK adds it).
        timeout: Seconds per HTTP request.
        max_retries: The SDK's transport retries, honouring ``retry-after``.
        default_max_tokens: ``max_tokens`` when the request's settings give none.
        sdk_tracing: Keep the SDK's own OpenTelemetry span per call (off by default, so
            fncore's middleware owns tracing; the trace context is propagated either way).

    Example:
        >>> m = AnthropicModel("claude-x", api_key="sk-ant-1", base_url="http://127.0.0.1:9")
        >>> m.name, m.default_max_tokens, m.client.open_telemetry["traces"]["enabled"]
        ('claude-x', 4096, False)
    """

    __slots__ = (
        "_client",
        "_model",
        "_owns_client",
        "_propagate",
        "_secrets",
        "default_max_tokens",
    )

    def __init__(
        self,
        model: str,
        *,
        client: AsyncAnthropic | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        default_max_tokens: int = DEFAULT_MAX_TOKENS,
        sdk_tracing: bool = False,
    ) -> None:
        self._owns_client = client is None
        if client is None:
            client = make_client(
                api_key=api_key,
                base_url=base_url,
                timeout=timeout,
                max_retries=max_retries,
                sdk_tracing=sdk_tracing,
            )
        self._client = client
        self._model = model
        self.default_max_tokens = default_max_tokens
        """``max_tokens`` for requests whose settings give none."""
        self._secrets = (api_key, client.api_key, client.auth_token)
        otel = client.open_telemetry
        # Without its spans the SDK sends no trace context; send the caller's instead.
        self._propagate = otel["propagation"] and not otel["traces"]["enabled"]

    @property
    def name(self) -> str:
        """The model name."""
        return self._model

    @property
    def client(self) -> AsyncAnthropic:
        """The SDK client the model sends with."""
        return self._client

    async def aclose(self) -> None:
        """Close the HTTP connections of the client the model built (a given one is left open)."""
        if self._owns_client:
            await self._client.close()

    def __repr__(self) -> str:
        return f"AnthropicModel({self._model!r}, base_url={str(self._client.base_url)!r})"

    async def request(self, request: ModelRequest) -> Result[ModelResponse, ModelError]:
        """Send ``request`` and return the complete response or the error."""
        built = self._kwargs(request)
        if isinstance(built, Failure):
            return built
        try:
            wire = await self._client.messages.create(**built.unwrap())
            return Success(decode_message(wire))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return Failure(map_exception(exc, self._secrets))

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamItem]:
        """Send ``request`` streaming; yield deltas, then the response or the error."""
        built = self._kwargs(request)
        if isinstance(built, Failure):
            yield built.failure()
            return
        try:
            events = await self._client.messages.create(**built.unwrap(), stream=True)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            yield map_exception(exc, self._secrets)
            return
        items = decode_stream(events, self._secrets)
        try:
            async for item in items:
                yield item
        finally:  # also when the consumer leaves early: close the HTTP response now
            await items.aclose()

    def _kwargs(self, request: ModelRequest) -> Result[dict[str, Any], ModelError]:
        built = build_kwargs(request, model=self._model, default_max_tokens=self.default_max_tokens)
        if self._propagate and isinstance(built, Success):
            headers = trace_headers()
            if headers:
                kwargs = built.unwrap()
                given = kwargs.get("extra_headers")
                extra = dict(given) if isinstance(given, Mapping) else {}
                kwargs["extra_headers"] = {**headers, **extra}
        return built


def trace_headers() -> dict[str, str]:
    """The current OpenTelemetry context as headers (``traceparent``, ...); empty without one.

    Uses the propagators the application registered (``OTEL_PROPAGATORS``); never raises.
    """
    carrier: dict[str, str] = {}
    try:
        from opentelemetry import propagate

        propagate.inject(carrier)
    except Exception:
        return {}
    return carrier
