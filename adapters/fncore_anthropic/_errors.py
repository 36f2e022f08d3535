"""Turning ``anthropic`` SDK exceptions and stream failures into fncore error values.

`map_exception` is this adapter's `fncore.adapter.ExceptionMapper`: the shared
`fncore.adapter.SdkExceptionMapper` over the SDK's classes, which maps statuses, timeouts,
lost connections and unreadable answers. What is the SDK's own is `status_error`: the
Anthropic error type and ``request-id`` go into the message, and an ``error`` event
mid-stream maps as the status its type stands for (``overloaded_error``: 529).

Every message is one line, with the API key and the URL's credentials redacted.
"""

from __future__ import annotations

import anthropic
import httpx2

from fncore.adapter import Endpoint, ModelError, SdkExceptionMapper

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


map_exception = SdkExceptionMapper(
    status=anthropic.APIStatusError,
    status_error=status_error,
    timeouts=(anthropic.APITimeoutError, httpx2.TimeoutException),
    connection_errors=(anthropic.APIConnectionError, httpx2.TransportError),
    answering=ANSWERING,
    invalid_answer=anthropic.APIResponseValidationError,
)
"""This adapter's `fncore.adapter.ExceptionMapper`."""
