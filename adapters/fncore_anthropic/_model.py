"""`AnthropicModel`: fncore's `Model` over the Anthropic Messages API."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, final

from anthropic import AsyncAnthropic, AsyncStream
from anthropic.types import RawMessageStreamEvent

from fncore.adapter import ApiKey, ModelError, ModelRequest, ModelResponse, ProviderModel
from fncore_anthropic._client import DEFAULT_MAX_TOKENS, endpoint_of, make_client
from fncore_anthropic._decode import decode_message
from fncore_anthropic._errors import map_exception
from fncore_anthropic._request import build_kwargs
from fncore_anthropic._stream import StreamDecoder


@final
class AnthropicModel(ProviderModel[AsyncAnthropic, RawMessageStreamEvent]):
    """A Claude model behind the Messages API (``POST /v1/messages``).

    Failures are values: `request` returns ``Failure(ModelError)`` and `stream` yields a
    `ModelError` as its last item; no error message ever contains the API key.

    Args:
        model: The model name, e.g. ``claude-sonnet-4-5``.
        client: An ``AsyncAnthropic`` to use as it is; the options below that configure a
            client are then ignored.
        api_key: The key, as text or a `pydantic.SecretStr` (unwrapped only to build the
            client); ``None`` lets the SDK find one (``ANTHROPIC_API_KEY``, ...).
        base_url: The server, without ``/v1`` (the SDK adds it).
        timeout: Seconds per HTTP request.
        max_retries: The SDK's transport retries, honouring ``retry-after``.
        default_max_tokens: ``max_tokens`` when the request's settings give none.
        sdk_tracing: Keep the SDK's own OpenTelemetry span per call (off by default, leaving
            spans to the application's middleware; the caller's trace context is
            propagated either way).

    Example:
        >>> m = AnthropicModel("claude-x", api_key="sk-ant-1", base_url="http://127.0.0.1:9")
        >>> m.name, m.default_max_tokens, m.client.open_telemetry["traces"]["enabled"]
        ('claude-x', 4096, False)
    """

    __slots__ = ("_propagate", "default_max_tokens")

    native_output = True
    """Requests' `OutputSchema` goes as ``output_config.format`` (native structured output)."""

    def __init__(
        self,
        model: str,
        *,
        client: AsyncAnthropic | None = None,
        api_key: ApiKey = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        default_max_tokens: int = DEFAULT_MAX_TOKENS,
        sdk_tracing: bool = False,
    ) -> None:
        owns_client = client is None
        if client is None:
            client = make_client(
                api_key=api_key,
                base_url=base_url,
                timeout=timeout,
                max_retries=max_retries,
                sdk_tracing=sdk_tracing,
            )
        super().__init__(model, client, endpoint_of(client), map_exception, owns_client=owns_client)
        self.default_max_tokens = default_max_tokens
        """``max_tokens`` for requests whose settings give none."""
        otel = client.open_telemetry
        # Without its spans the SDK sends no trace context; send the caller's instead.
        self._propagate = otel["propagation"] and not otel["traces"]["enabled"]

    def _arguments(self, request: ModelRequest) -> dict[str, Any]:
        arguments = build_kwargs(
            request, model=self._model, default_max_tokens=self.default_max_tokens
        )
        if self._propagate:
            headers = trace_headers()
            if headers:
                given = arguments.get("extra_headers")
                extra = dict(given) if isinstance(given, Mapping) else {}
                arguments["extra_headers"] = {**headers, **extra}
        return arguments

    async def _answer(self, arguments: dict[str, Any]) -> ModelResponse | ModelError:
        raw = await self._client.messages.with_raw_response.create(**arguments)
        try:
            return decode_message(await raw.parse())
        except Exception as exc:  # not JSON, or not a Messages API message
            return self._endpoint.unexpected(raw.status_code, raw.http_response.content, exc)

    async def _open_stream(self, arguments: dict[str, Any]) -> AsyncStream[RawMessageStreamEvent]:
        events: AsyncStream[RawMessageStreamEvent] = await self._client.messages.create(
            **arguments, stream=True
        )
        return events

    def _decoder(self) -> StreamDecoder:
        return StreamDecoder(self._endpoint)


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
