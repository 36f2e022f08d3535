"""Turning ``openai`` SDK exceptions and error payloads into fncore error values.

Both models share this mapping, `map_exception`: the shared `fncore.adapter.SdkExceptionMapper`
over the SDK's classes, which maps statuses, timeouts, lost connections and unreadable
answers. What is the SDK's own: the provider's message is read from the error body, and an
``APIError`` of no other kind (an error payload inside a stream) maps by its error code
(`error_for_code`): RateLimited, ProviderUnavailable, BadRequest or ModelError.

Every message is one line, with the API key and the URL's credentials redacted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import httpx2
import openai

from fncore.adapter import (
    BadRequest,
    Endpoint,
    ModelError,
    ProviderUnavailable,
    RateLimited,
    SdkExceptionMapper,
)

PROVIDER = "openai"
"""The provider name carried by every error value this adapter returns."""

ANSWERING = (httpx2.ReadError, httpx2.RemoteProtocolError)
"""Transport errors raised once the server has the request: the answer broke off."""


def _detail(body: object, fallback: str) -> str:
    """The provider's own error message from an error body, else ``fallback``."""
    if isinstance(body, Mapping):
        message = body.get("message")
        if isinstance(message, str) and message:
            return message
        return json.dumps(body, default=str)
    if isinstance(body, str) and body:
        return body
    return fallback


def error_for_code(code: str | None, message: str, endpoint: Endpoint) -> ModelError:
    """The error value for an error reported inside a 200 answer, chosen by its code.

    Such errors come in a stream ``error`` event or a response whose status is ``failed``.
    """
    text = endpoint.detail(f"{PROVIDER} reported an error ({code or 'no code'}): {message}")
    kind = (code or "").lower()
    if "rate_limit" in kind or "quota" in kind:
        return RateLimited(message=text, provider=PROVIDER)
    if kind in {"server_error", "overloaded_error", "internal_error", "service_unavailable"}:
        return ProviderUnavailable(message=text, provider=PROVIDER)
    if kind.startswith("invalid") or kind == "context_length_exceeded":
        return BadRequest(message=text, provider=PROVIDER)
    return ModelError(message=text, provider=PROVIDER)


def status_error(exc: openai.APIStatusError, endpoint: Endpoint) -> ModelError:
    """The error value for an HTTP error, with the provider's message from the body."""
    detail = _detail(exc.body, exc.message)
    return endpoint.status_error(exc.status_code, detail, exc.response.headers)


def reported_or_failed(
    exc: Exception, endpoint: Endpoint, *, in_stream: bool = False
) -> ModelError:
    """An error payload inside a stream by its code (`error_for_code`); else `Endpoint.failed`."""
    if isinstance(exc, openai.APIError):  # none of the kinds `map_exception` checks first
        return error_for_code(exc.code or exc.type, _detail(exc.body, exc.message), endpoint)
    return endpoint.failed(exc, in_stream=in_stream)


map_exception = SdkExceptionMapper(
    status=openai.APIStatusError,
    status_error=status_error,
    timeouts=(openai.APITimeoutError, httpx2.TimeoutException),
    connection_errors=(openai.APIConnectionError, httpx2.TransportError),
    answering=ANSWERING,
    invalid_answer=openai.APIResponseValidationError,
    otherwise=reported_or_failed,
)
"""The `fncore.adapter.ExceptionMapper` of both OpenAI models."""
