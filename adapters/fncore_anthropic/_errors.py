"""Turning ``anthropic`` SDK exceptions and stream failures into fncore error values.

`map_exception` is this adapter's `fncore.adapter.ExceptionMapper`::

    APIStatusError (4xx/5xx)       -> Endpoint.status_error: AuthenticationFailed, RateLimited, ...
    an ``error`` event mid-stream  -> the status its type stands for (overloaded_error: 529)
    APITimeoutError, timeouts      -> ModelTimeout
    APIConnectionError, transport  -> ConnectionFailed when the server was never reached;
                                      StreamInterrupted once it was answering (a body or
                                      stream cut off mid-way)
    APIResponseValidationError     -> UnexpectedResponse
    undecodable data in a stream   -> StreamInterrupted
    anything else                  -> ModelError

Every message is one line, with the API key and the URL's credentials redacted.
"""

from __future__ import annotations

import anthropic
import httpx2

from fncore.adapter import Endpoint, ModelError

PROVIDER = "anthropic"
"""The ``provider`` of every error this adapter returns."""

ANSWERING = (httpx2.ReadError, httpx2.RemoteProtocolError)
"""Transport errors raised once the server has the request: the answer broke off."""

_STATUS_OF_TYPE: dict[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "conflict_error": 409,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
"""The HTTP status an Anthropic ``error.type`` stands for, for an ``error`` event that
arrives inside a stream whose HTTP status was 200."""


def status_error(exc: anthropic.APIStatusError, endpoint: Endpoint) -> ModelError:
    """The error value for an HTTP error, or for an ``error`` event inside a stream.

    Returns:
        The `ModelError` subclass for the status, with the Anthropic error type and
        ``request-id`` in the message and ``retry_after`` from the ``retry-after`` or
        ``retry-after-ms`` header.
    """
    status = exc.status_code
    kind = exc.type
    detail = exc.api_message or exc.message
    if kind and not detail.startswith(kind):
        detail = f"{kind}: {detail}"
    if status < 400:  # an `error` event in a 200 stream: its type says what happened
        status = _STATUS_OF_TYPE.get(kind or "", 500)
        detail = f"{detail} (an error event mid-stream)"
    if exc.request_id:
        detail = f"{detail} (request-id {exc.request_id})"
    return endpoint.status_error(status, detail, exc.response.headers)


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
    if isinstance(exc, anthropic.APIStatusError):
        return status_error(exc, endpoint)
    if isinstance(exc, anthropic.APITimeoutError | httpx2.TimeoutException):
        return endpoint.timed_out()
    if isinstance(exc, anthropic.APIConnectionError | httpx2.TransportError):
        answering = in_stream or isinstance(exc.__cause__ or exc, ANSWERING)
        return endpoint.connection_lost(exc, answering=answering)
    if isinstance(exc, anthropic.APIResponseValidationError):
        return endpoint.unexpected(exc.status_code, exc.response.content, exc.message)
    return endpoint.failed(exc, in_stream=in_stream)
