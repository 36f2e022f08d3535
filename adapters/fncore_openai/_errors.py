"""Turning ``openai`` SDK exceptions and error payloads into fncore error values.

Both models share this mapping::

    APIStatusError (4xx/5xx)     -> error_for_status(...): AuthenticationFailed, RateLimited, ...
    APITimeoutError              -> ModelTimeout
    APIConnectionError           -> ConnectionFailed (StreamInterrupted once a stream is open)
    APIError in a stream         -> by its error code: RateLimited, ProviderUnavailable, ModelError
    undecodable data in a stream -> StreamInterrupted
    anything else                -> ModelError

Every message is one line and passes through `redact` with the API key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime

import openai

from fncore.core import (
    BadRequest,
    ConnectionFailed,
    ModelError,
    ModelTimeout,
    ProviderUnavailable,
    RateLimited,
    StreamInterrupted,
    error_for_status,
    redact,
    retry_after_seconds,
)

PROVIDER = "openai"
"""The provider name carried by every error value this adapter returns."""

_MAX_DETAIL = 300


class NotExpressible(Exception):
    """Raised inside request mapping when fncore's request has no OpenAI form."""


def one_line(text: str, limit: int = _MAX_DETAIL) -> str:
    """``text`` on one line, collapsed and shortened to ``limit`` characters.

    Example:
        >>> one_line("a  b ")
        'a b'
    """
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


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


def bad_request(message: str, api_key: str | None = None) -> BadRequest:
    """A `BadRequest` for a request the adapter cannot send as it is."""
    return BadRequest(
        message=redact(one_line(f"{PROVIDER}: {message}"), api_key),
        provider=PROVIDER,
    )


def interrupted(message: str, api_key: str | None = None) -> StreamInterrupted:
    """A `StreamInterrupted` saying what went wrong with the stream."""
    return StreamInterrupted(
        message=redact(
            one_line(f"{PROVIDER} stream interrupted: {message}; retry the request"), api_key
        ),
        provider=PROVIDER,
    )


def error_for_code(code: str | None, message: str, api_key: str | None = None) -> ModelError:
    """The error value for an error reported inside a 200 answer, chosen by its code.

    Such errors come in a stream ``error`` event or a response whose status is ``failed``.
    """
    text = redact(
        one_line(f"{PROVIDER} reported an error ({code or 'no code'}): {message}"), api_key
    )
    kind = (code or "").lower()
    if "rate_limit" in kind or "quota" in kind:
        return RateLimited(message=text, provider=PROVIDER)
    if kind in {"server_error", "overloaded_error", "internal_error", "service_unavailable"}:
        return ProviderUnavailable(message=text, provider=PROVIDER)
    if kind.startswith("invalid") or kind in {"invalid_request_error", "context_length_exceeded"}:
        return BadRequest(message=text, provider=PROVIDER)
    return ModelError(message=text, provider=PROVIDER)


def map_exception(
    exc: Exception,
    *,
    api_key: str | None,
    base_url: str,
    timeout: float | None,
    in_stream: bool = False,
) -> ModelError:
    """The error value for ``exc``, raised by the SDK while calling ``base_url``.

    Args:
        exc: What the SDK (or decoding its data) raised.
        api_key: The key to keep out of every message.
        base_url: Where the client sends requests, named in connection errors.
        timeout: The client's timeout in seconds, named in timeout errors.
        in_stream: Whether the stream was already open: a lost connection or undecodable
            data then means the stream was cut off.

    Returns:
        The `ModelError` subclass the brief's mapping gives.
    """
    if isinstance(exc, openai.APIStatusError):
        headers = exc.response.headers
        retry_after = retry_after_seconds(
            headers.get("retry-after"), headers.get("retry-after-ms"), now=datetime.now(UTC)
        )
        detail = one_line(_detail(exc.body, exc.message))
        err = error_for_status(exc.status_code, detail, provider=PROVIDER, retry_after=retry_after)
        return _redacted(err, api_key)
    if isinstance(exc, openai.APITimeoutError):
        limit = f" within {timeout:g}s" if timeout else ""
        return ModelTimeout(
            message=redact(
                f"{PROVIDER} did not answer{limit} at {base_url}; raise model.timeout or retry",
                api_key,
            ),
            provider=PROVIDER,
        )
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        reason = one_line(f"{type(cause).__name__}: {cause}") if cause else exc.message
        if in_stream:
            return interrupted(f"the connection was lost ({reason})", api_key)
        return ConnectionFailed(
            message=redact(
                one_line(
                    f"could not reach {PROVIDER} at {base_url} ({reason}); "
                    "check model.base_url, the network and any proxy"
                ),
                api_key,
            ),
            provider=PROVIDER,
        )
    if isinstance(exc, openai.APIResponseValidationError):
        return ModelError(
            message=redact(
                one_line(f"{PROVIDER} sent an unexpected answer: {exc.message}"), api_key
            ),
            provider=PROVIDER,
            status=exc.status_code,
        )
    if isinstance(exc, openai.APIError):  # an error payload inside a stream
        code = exc.code or exc.type
        return error_for_code(code, _detail(exc.body, exc.message), api_key)
    if in_stream and isinstance(exc, ValueError | TypeError | AttributeError | KeyError):
        return interrupted(f"undecodable data ({type(exc).__name__}: {exc})", api_key)
    return ModelError(
        message=redact(
            one_line(f"{PROVIDER} call failed: {type(exc).__name__}: {exc}; retry or report it"),
            api_key,
        ),
        provider=PROVIDER,
    )


def _redacted(err: ModelError, api_key: str | None) -> ModelError:
    """``err`` with the API key removed from its message (a no-op when absent)."""
    message = redact(err.message, api_key)
    if message == err.message:
        return err
    return replace(err, message=message)
