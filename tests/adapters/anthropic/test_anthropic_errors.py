"""Error values: HTTP statuses, retry-after, connection failures, timeouts, redaction."""

from __future__ import annotations

import pytest
from adapters_common import failure
from anthropic_fixtures import fake_provider_fixture, make_model_fixture, shared_server_fixture  # noqa: F401
from anthropic_wire import (
    KEY,
    MakeModel,
    collect,
)
from fake_provider import FakeProvider, Reply, free_port
from returns.result import Failure

from fncore import Message, ModelError, ModelRequest
from fncore.errors import (
    AuthenticationFailed,
    BadRequest,
    ConnectionFailed,
    ModelNotFound,
    ModelTimeout,
    PermissionDenied,
    ProviderUnavailable,
    RateLimited,
)

REQUEST = ModelRequest((Message.user("hi"),))


def error_body(kind: str, message: str) -> dict[str, object]:
    """An Anthropic error body."""
    return {"type": "error", "error": {"type": kind, "message": message}}


async def failure_of(make_model: MakeModel, stream: bool, url: str | None = None) -> ModelError:
    """The error of one request (or the last item of one stream)."""
    return await failure(make_model(url), stream)


@pytest.mark.parametrize("stream", [False, True], ids=["request", "stream"])
@pytest.mark.parametrize(
    ("status", "kind", "expected", "retryable"),
    [
        (400, "invalid_request_error", BadRequest, False),
        (401, "authentication_error", AuthenticationFailed, False),
        (403, "permission_error", PermissionDenied, False),
        (404, "not_found_error", ModelNotFound, False),
        (413, "request_too_large", BadRequest, False),
        (429, "rate_limit_error", RateLimited, True),
        (500, "api_error", ProviderUnavailable, True),
        (529, "overloaded_error", ProviderUnavailable, True),
    ],
)
async def test_status_errors(
    fake_provider: FakeProvider,
    make_model: MakeModel,
    stream: bool,
    status: int,
    kind: str,
    expected: type[ModelError],
    retryable: bool,
) -> None:
    """Each HTTP error status gives its error type, one line, with status and provider."""
    fake_provider.reply(Reply(status, error_body(kind, "something\nwent wrong")))
    error = await failure_of(make_model, stream)
    assert type(error) is expected
    assert error.status == status
    assert error.provider == "anthropic"
    assert error.retryable is retryable
    assert "\n" not in error.message
    assert "went wrong" in error.message
    assert kind in error.message


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [({"retry-after": "7"}, 7.0), ({"retry-after-ms": "1500"}, 1.5), ({}, None)],
)
async def test_rate_limited_retry_after(
    fake_provider: FakeProvider,
    make_model: MakeModel,
    headers: dict[str, str],
    seconds: float | None,
) -> None:
    """429 carries retry_after from retry-after or retry-after-ms."""
    fake_provider.reply(Reply(429, error_body("rate_limit_error", "slow down"), headers=headers))
    error = await failure_of(make_model, stream=False)
    assert isinstance(error, RateLimited)
    assert error.retry_after == seconds


@pytest.mark.parametrize("stream", [False, True], ids=["request", "stream"])
async def test_api_key_never_in_message(
    fake_provider: FakeProvider, make_model: MakeModel, stream: bool
) -> None:
    """An error body echoing the key is redacted in the message."""
    fake_provider.reply(Reply(401, error_body("authentication_error", f"invalid x-api-key {KEY}")))
    error = await failure_of(make_model, stream)
    assert isinstance(error, AuthenticationFailed)
    assert KEY not in error.message
    assert KEY not in str(error)
    assert "[redacted]" in error.message
    assert "api_key" in error.message  # says what to do


@pytest.mark.parametrize("stream", [False, True], ids=["request", "stream"])
async def test_connection_refused(make_model: MakeModel, stream: bool) -> None:
    """Nothing listening on the port gives ConnectionFailed naming the base URL."""
    url = f"http://127.0.0.1:{free_port()}"
    error = await failure_of(make_model, stream, url)
    assert isinstance(error, ConnectionFailed)
    assert error.retryable
    assert "127.0.0.1" in error.message
    assert "base_url" in error.message


@pytest.mark.parametrize("stream", [False, True], ids=["request", "stream"])
async def test_timeout(make_model: MakeModel, silent_server: str, stream: bool) -> None:
    """No answer within the timeout gives ModelTimeout."""
    m = make_model(silent_server, timeout=0.3)
    if stream:
        _, error = await collect(m, REQUEST)
    else:
        result = await m.request(REQUEST)
        assert isinstance(result, Failure)
        error = result.failure()
    assert isinstance(error, ModelTimeout)
    assert "model.timeout" in error.message
