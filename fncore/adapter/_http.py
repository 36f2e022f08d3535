"""HTTP answers as error values: the error type of a status, the wait ``retry-after`` asks."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from fncore.core import (
    AuthenticationFailed,
    BadRequest,
    ModelError,
    ModelNotFound,
    PermissionDenied,
    ProviderUnavailable,
    RateLimited,
)

__all__ = ["error_for_status", "retry_after_seconds"]


def retry_after_seconds(
    value: str | None, value_ms: str | None = None, *, now: datetime | None = None
) -> float | None:
    """Seconds to wait from ``retry-after`` (seconds or an HTTP date) or ``retry-after-ms``.

    An HTTP date is measured from ``now``, which the caller passes (`Endpoint.status_error`
    passes the current time); without it a date gives ``None``.

    Example:
        >>> retry_after_seconds("2"), retry_after_seconds(None, "1500"), retry_after_seconds("x")
        (2.0, 1.5, None)
    """
    if value_ms:
        try:
            return max(float(value_ms) / 1000, 0.0)
        except ValueError:
            pass
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    if now is None:
        return None
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - now).total_seconds(), 0.0)


def error_for_status(
    status: int,
    message: str,
    *,
    provider: str,
    retry_after: float | None = None,
) -> ModelError:
    """The error value for an HTTP error ``status`` from ``provider``.

    Example:
        >>> type(error_for_status(429, "slow down", provider="openai", retry_after=2.0)).__name__
        'RateLimited'
    """
    text = f"{provider} answered {status}: {message}"
    if status == 401:
        return AuthenticationFailed(
            message=f"{text}; check the API key (model.api_key or the provider's variable)",
            provider=provider,
            status=status,
        )
    if status == 403:
        return PermissionDenied(message=text, provider=provider, status=status)
    if status == 404:
        return ModelNotFound(
            message=f"{text}; check the model name and base URL", provider=provider, status=status
        )
    if status == 429:
        return RateLimited(message=text, provider=provider, status=status, retry_after=retry_after)
    if status == 408 or status >= 500:
        return ProviderUnavailable(message=text, provider=provider, status=status)
    if 400 <= status < 500:
        return BadRequest(message=text, provider=provider, status=status)
    return ModelError(message=text, provider=provider, status=status)
