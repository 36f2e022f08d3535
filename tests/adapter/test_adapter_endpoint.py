"""`fncore.adapter.Endpoint`: the error values every adapter builds, one line and no secrets."""

from __future__ import annotations

import pytest

from fncore.adapter import (
    AuthenticationFailed,
    BadRequest,
    ConnectionFailed,
    Endpoint,
    ModelError,
    ModelTimeout,
    ProviderUnavailable,
    RateLimited,
    StreamInterrupted,
    UnexpectedResponse,
    excerpt,
    one_line,
)

KEY = "sk-acme-SECRET-0123456789"
URL = "https://bot:pw-SECRET-42@api.acme.test/v1?sig=SIG-SECRET-7&region=eu"
SECRETS = (KEY, "pw-SECRET-42", "SIG-SECRET-7")

ENDPOINT = Endpoint.create("acme", URL, secrets=[KEY, None], timeout=12.5)


def clean(error: ModelError) -> ModelError:
    """``error``, after checking it names the provider, is one line and shows no secret."""
    assert error.provider == "acme"
    assert "\n" not in error.message
    for secret in SECRETS:
        assert secret not in error.message
        assert secret not in str(error)
        assert secret not in repr(error)
    return error


def test_create_redacts_the_url_and_keeps_its_secrets() -> None:
    """The URL is shown redacted; its credentials join the secrets; the repr shows none."""
    assert ENDPOINT.url == "https://[redacted]@api.acme.test/v1?sig=[redacted]&region=eu"
    assert set(SECRETS) <= set(ENDPOINT.secrets)
    assert ENDPOINT.timeout == 12.5
    for secret in SECRETS:
        assert secret not in repr(ENDPOINT)
    assert Endpoint.create("acme", "http://h", timeout=object()).timeout is None


@pytest.mark.parametrize(
    ("status", "kind", "hint"),
    [
        (400, BadRequest, "fix the request"),
        (401, AuthenticationFailed, "check the API key"),
        (409, BadRequest, "retry the request"),
        (418, BadRequest, ""),
        (429, RateLimited, "wait and retry"),
        (408, ProviderUnavailable, "retry later"),
        (503, ProviderUnavailable, "acme failed to answer"),
        (529, ProviderUnavailable, "acme is overloaded"),
    ],
)
def test_status_error(status: int, kind: type[ModelError], hint: str) -> None:
    """Each status gives its type, the provider's message redacted, and what to do."""
    error = clean(ENDPOINT.status_error(status, f"bad key {KEY}\n  try again"))
    assert type(error) is kind
    assert error.status == status
    assert f"acme answered {status}: bad key [redacted] try again" in error.message
    assert hint in error.message


def test_status_error_retry_after_from_headers() -> None:
    """retry-after-ms wins over retry-after; an HTTP date in the past is zero."""
    error = ENDPOINT.status_error(429, "slow", {"retry-after": "9", "retry-after-ms": "1500"})
    assert isinstance(error, RateLimited)
    assert error.retry_after == 1.5
    dated = ENDPOINT.status_error(429, "slow", {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})
    assert isinstance(dated, RateLimited)
    assert dated.retry_after == 0.0


def test_a_long_detail_is_cut_after_redaction() -> None:
    """A key straddling the cut is redacted whole, not half kept."""
    detail = "x" * 290 + KEY
    error = clean(ENDPOINT.status_error(400, detail))
    assert KEY[:8] not in error.message


def test_timed_out_unreachable_interrupted() -> None:
    """Timeouts name the limit, connection errors the redacted URL, cuts say to retry."""
    timeout = clean(ENDPOINT.timed_out())
    assert isinstance(timeout, ModelTimeout)
    assert "within 12.5s" in timeout.message
    assert "model.timeout" in timeout.message
    unreachable = clean(ENDPOINT.unreachable(OSError(f"refused by {URL}")))
    assert isinstance(unreachable, ConnectionFailed)
    assert ENDPOINT.url in unreachable.message
    assert "model.base_url" in unreachable.message
    cut = clean(ENDPOINT.connection_lost(OSError("peer closed"), answering=True))
    assert isinstance(cut, StreamInterrupted)
    assert cut.retryable
    assert "cut off" in cut.message
    assert isinstance(ENDPOINT.connection_lost(OSError("no"), answering=False), ConnectionFailed)


def test_unexpected_quotes_the_body_redacted_and_short() -> None:
    """An unexpected body is quoted (start only, one line), with status and no secrets."""
    body = f"<html>\n<p>Sign in</p><!-- {KEY} -->" + "x" * 500 + "</html>"
    error = clean(ENDPOINT.unexpected(200, body.encode(), ValueError("no choices")))
    assert isinstance(error, UnexpectedResponse)
    assert error.status == 200
    assert not error.retryable
    assert "(ValueError: no choices)" in error.message
    assert "'<html> <p>Sign in</p><!-- [redacted] -->" in error.message
    assert "</html>" not in error.message
    assert len(error.message) < 500
    half = "y" * 150 + KEY  # the excerpt cut falls inside the key
    assert KEY[:6] not in clean(ENDPOINT.unexpected(200, half, "not JSON")).message


def test_bad_request_and_failed() -> None:
    """Requests that cannot be sent are BadRequest; anything else a plain ModelError."""
    bad = clean(ENDPOINT.bad_request(f"no audio, {KEY}"))
    assert isinstance(bad, BadRequest)
    assert "cannot send this request to acme" in bad.message
    failed = clean(ENDPOINT.failed(RuntimeError(KEY)))
    assert type(failed) is ModelError
    assert "RuntimeError" in failed.message
    in_stream = clean(ENDPOINT.failed(KeyError("delta"), in_stream=True))
    assert isinstance(in_stream, StreamInterrupted)
    assert "could not be decoded" in in_stream.message
    assert type(ENDPOINT.failed(RuntimeError("x"), in_stream=True)) is ModelError


def test_redacted_keeps_an_error_that_was_clean() -> None:
    """`redacted` returns the same error when there is nothing to remove."""
    error = ModelError(message="fine", provider="acme")
    assert ENDPOINT.redacted(error) is error
    dirty = ModelError(message=f"key {KEY}\nagain", provider="acme")
    assert clean(ENDPOINT.redacted(dirty)).message == "key [redacted] again"


def test_text_helpers() -> None:
    """`one_line` collapses and cuts; `excerpt` quotes the start of a body."""
    assert one_line("a \n\t b") == "a b"
    assert one_line("abcdef", 4) == "abc…"
    assert one_line("abcdef", None) == "abcdef"
    assert excerpt(b"{}") == "'{}'"
    assert excerpt(b"   ") == "an empty body"
    assert excerpt(b"\xff\xfe<html>") == "'\ufffd\ufffd<html>'"
