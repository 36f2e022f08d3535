"""HTTP answers as error values: `error_for_status`, `retry_after_seconds`, `redact`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from fncore.adapter import (
    AuthenticationFailed,
    BadRequest,
    ModelError,
    ModelNotFound,
    PermissionDenied,
    ProviderUnavailable,
    RateLimited,
    error_for_status,
    redact,
    retry_after_seconds,
)

NOW = datetime(2026, 11, 24, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, BadRequest),
        (401, AuthenticationFailed),
        (402, BadRequest),
        (403, PermissionDenied),
        (404, ModelNotFound),
        (408, ProviderUnavailable),
        (409, BadRequest),
        (413, BadRequest),
        (418, BadRequest),
        (422, BadRequest),
        (429, RateLimited),
        (499, BadRequest),
        (500, ProviderUnavailable),
        (503, ProviderUnavailable),
        (529, ProviderUnavailable),
        (302, ModelError),
    ],
)
def test_each_status_has_its_error_type(status: int, kind: type[ModelError]) -> None:
    """Every 4xx without a type of its own is a BadRequest; 408 and 5xx are worth a retry."""
    error = error_for_status(status, "no", provider="acme")
    assert type(error) is kind
    assert (error.status, error.provider) == (status, "acme")
    assert error.message.startswith(f"acme answered {status}: no")
    assert error.retryable == (kind in (RateLimited, ProviderUnavailable))


def test_only_a_rate_limit_carries_retry_after() -> None:
    """``retry_after`` goes to a RateLimited; other statuses have no such field."""
    error = error_for_status(429, "slow", provider="acme", retry_after=3.0)
    assert isinstance(error, RateLimited)
    assert error.retry_after == 3.0
    busy = error_for_status(503, "busy", provider="acme", retry_after=3.0)
    assert not hasattr(busy, "retry_after")


@pytest.mark.parametrize(
    ("value", "value_ms", "seconds"),
    [
        ("7", None, 7.0),
        ("0.5", None, 0.5),
        ("-3", None, 0.0),
        (None, "1500", 1.5),
        ("9", "1500", 1.5),
        ("9", "soon", 9.0),
        (None, None, None),
        ("", None, None),
        ("soon", None, None),
        (format_datetime(NOW + timedelta(seconds=90), usegmt=True), None, 90.0),
        (format_datetime(NOW - timedelta(seconds=90), usegmt=True), None, 0.0),
        ("Tue, 24 Nov 2026 12:00:30", None, 30.0),
    ],
)
def test_retry_after_seconds(
    value: str | None, value_ms: str | None, seconds: float | None
) -> None:
    """Seconds or an HTTP date (never negative); ``retry-after-ms`` wins when it is a number."""
    assert retry_after_seconds(value, value_ms, now=NOW) == seconds


def test_an_http_date_needs_the_time_it_is_measured_from() -> None:
    """Without ``now`` a date gives ``None``, while seconds still count."""
    date = format_datetime(NOW + timedelta(seconds=90), usegmt=True)
    assert retry_after_seconds(date) is None
    assert retry_after_seconds("4") == 4.0


def test_redact_replaces_every_secret_long_enough() -> None:
    """Each secret is replaced wherever it stands; absent and very short ones are skipped."""
    text = "key sk-123 and tok-9 (again sk-123), id abc"
    assert redact(text, "sk-123", None, "tok-9", "abc") == (
        "key [redacted] and [redacted] (again [redacted]), id abc"
    )
