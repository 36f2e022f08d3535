"""Mapping of ``anthropic`` SDK exceptions and stream failures to fncore error values."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime

import anthropic
import httpx2

from fncore.core import (
    BadRequest,
    ConnectionFailed,
    ModelError,
    ModelTimeout,
    StreamInterrupted,
    error_for_status,
    redact,
    retry_after_seconds,
)

PROVIDER = "anthropic"
"""The ``provider`` of every error this adapter returns."""

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

_HINTS: dict[int, str] = {
    400: "fix the request (the message names the field)",
    402: "check the account's billing",
    403: "check the key's workspace and model access",
    409: "retry the request",
    413: "send fewer or smaller messages",
    429: "wait and retry, or lower the request rate",
    529: "Anthropic is overloaded: retry later",
}


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _hint(status: int) -> str:
    if status in _HINTS:
        return _HINTS[status]
    if status >= 500:
        return "the provider failed: retry later"
    return ""


def status_error(exc: anthropic.APIStatusError, secrets: Sequence[str | None]) -> ModelError:
    """The error value for an HTTP error, or for an ``error`` event inside a stream.

    Args:
        exc: The SDK's exception.
        secrets: Values (API keys) that must not appear in the message.

    Returns:
        The `ModelError` subclass for the status (``error_for_status``), with ``retry_after``
        from the ``retry-after``/``retry-after-ms`` headers.
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
    hint = _hint(status)
    if hint and status not in (401, 404):  # error_for_status already says what to do for these
        detail = f"{detail}; {hint}"
    headers = exc.response.headers
    retry_after = retry_after_seconds(
        headers.get("retry-after"), headers.get("retry-after-ms"), now=datetime.now(UTC)
    )
    error = error_for_status(status, _one_line(detail), provider=PROVIDER, retry_after=retry_after)
    return _redacted(error, secrets)


def map_exception(
    exc: Exception, secrets: Sequence[str | None], *, streaming: bool = False
) -> ModelError:
    """The error value for any exception raised by the SDK call or while reading its stream.

    Args:
        exc: What was raised.
        secrets: Values (API keys) that must not appear in the message.
        streaming: Whether the response stream was already being read, so that a broken
            connection or undecodable data means the stream was cut off.

    Returns:
        ``status_error`` for HTTP errors; `ModelTimeout`, `ConnectionFailed`,
        `StreamInterrupted`, or a plain `ModelError` for anything else.
    """
    if isinstance(exc, anthropic.APIStatusError):
        return status_error(exc, secrets)
    if isinstance(exc, anthropic.APITimeoutError | httpx2.TimeoutException):
        return _redacted(
            ModelTimeout(
                message=f"{PROVIDER} did not answer in time; raise model.timeout or retry",
                provider=PROVIDER,
            ),
            secrets,
        )
    if streaming and isinstance(exc, httpx2.TransportError | anthropic.APIConnectionError):
        return interrupted(f"the connection broke ({_describe(exc)})", secrets)
    if isinstance(exc, anthropic.APIConnectionError):
        cause = exc.__cause__ if isinstance(exc.__cause__, Exception) else exc
        return _redacted(
            ConnectionFailed(
                message=(
                    f"could not reach {PROVIDER} at {exc.request.url.copy_with(path='/')} "
                    f"({_describe(cause)}); check model.base_url, the network and any proxy"
                ),
                provider=PROVIDER,
            ),
            secrets,
        )
    if isinstance(exc, ValueError | KeyError | AttributeError | TypeError):
        if streaming:
            return interrupted(f"an event could not be decoded ({_describe(exc)})", secrets)
        return _redacted(
            ModelError(
                message=(
                    f"the {PROVIDER} response could not be decoded ({_describe(exc)}); check "
                    "that model.base_url points at an Anthropic Messages API"
                ),
                provider=PROVIDER,
            ),
            secrets,
        )
    return _redacted(
        ModelError(
            message=f"{PROVIDER} call failed: {_describe(exc)}; retry, or report it if it persists",
            provider=PROVIDER,
        ),
        secrets,
    )


def interrupted(reason: str, secrets: Sequence[str | None]) -> StreamInterrupted:
    """A `StreamInterrupted` saying why, for a stream that ended early or held bad data."""
    return StreamInterrupted(
        message=redact(
            _one_line(f"the {PROVIDER} response stream was cut off: {reason}; retry the request"),
            *secrets,
        ),
        provider=PROVIDER,
    )


def unsupported(reason: str) -> BadRequest:
    """A `BadRequest` for a request this adapter cannot express, returned before sending."""
    return BadRequest(message=_one_line(f"cannot send to {PROVIDER}: {reason}"), provider=PROVIDER)


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _redacted(error: ModelError, secrets: Sequence[str | None]) -> ModelError:
    message = redact(_one_line(error.message), *secrets)
    if message == error.message:
        return error
    return replace(error, message=message)
