"""Turning ``openai`` SDK exceptions and error payloads into fncore error values.

Both models share this mapping (`map_exception`, the `fncore.adapter.ExceptionMapper`
every adapter has)::

    APIStatusError (4xx/5xx)       -> Endpoint.status_error: AuthenticationFailed, RateLimited, ...
    APITimeoutError                -> ModelTimeout
    APIConnectionError, transport  -> ConnectionFailed when the server was never reached;
                                      StreamInterrupted once it was answering (a body or
                                      stream cut off mid-way)
    APIResponseValidationError     -> UnexpectedResponse
    APIError in a stream           -> by its error code: RateLimited, ProviderUnavailable, ...
    undecodable data in a stream   -> StreamInterrupted
    anything else                  -> ModelError

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


def map_exception(exc: Exception, endpoint: Endpoint, *, in_stream: bool = False) -> ModelError:
    """The error value for ``exc``, raised by the SDK (or by decoding its data).

    Args:
        exc: What was raised.
        endpoint: Where the request went; builds the error values.
        in_stream: Whether the stream was already open: a lost connection or undecodable
            data then means the answer was cut off.

    Returns:
        The `ModelError` subclass the table in this module's docstring gives.
    """
    if isinstance(exc, openai.APIStatusError):
        detail = _detail(exc.body, exc.message)
        return endpoint.status_error(exc.status_code, detail, exc.response.headers)
    if isinstance(exc, openai.APITimeoutError | httpx2.TimeoutException):
        return endpoint.timed_out()
    if isinstance(exc, openai.APIConnectionError | httpx2.TransportError):
        answering = in_stream or isinstance(exc.__cause__ or exc, ANSWERING)
        return endpoint.connection_lost(exc, answering=answering)
    if isinstance(exc, openai.APIResponseValidationError):
        return endpoint.unexpected(exc.status_code, exc.response.content, exc.message)
    if isinstance(exc, openai.APIError):  # an error payload inside a stream
        return error_for_code(exc.code or exc.type, _detail(exc.body, exc.message), endpoint)
    return endpoint.failed(exc, in_stream=in_stream)
