"""Both adapters' `map_exception`, one `SdkExceptionMapper`, fed their SDKs' real exceptions.

The exceptions are built as each SDK builds them from an HTTP answer (``httpx2`` requests
and responses, no server): statuses, ``retry-after``, timeouts, lost connections, answers
that are not the API's, and the errors each API reports inside a stream.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from fncore_anthropic._errors import map_exception as anthropic_map
from fncore_openai._errors import map_exception as openai_map

from fncore.adapter import (
    AuthenticationFailed,
    BadRequest,
    ConnectionFailed,
    Endpoint,
    ExceptionMapper,
    ModelError,
    ModelNotFound,
    ModelTimeout,
    PermissionDenied,
    ProviderUnavailable,
    RateLimited,
    SdkExceptionMapper,
    StreamInterrupted,
    UnexpectedResponse,
)

KEY = "sk-map-SECRET-0123456789"
REQUEST = httpx2.Request("POST", "https://api.acme.test/v1/messages")


@dataclass(frozen=True)
class Sdk:
    """One SDK: its exception module, its adapter's mapping, its error body."""

    name: str
    module: Any
    map_exception: ExceptionMapper
    body: Callable[[str, str], dict[str, Any]]


SDKS = [
    pytest.param(
        Sdk(
            "openai",
            openai,
            openai_map,
            lambda kind, msg: {"error": {"message": msg, "type": kind, "code": None}},
        ),
        id="openai",
    ),
    pytest.param(
        Sdk(
            "anthropic",
            anthropic,
            anthropic_map,
            lambda kind, msg: {"type": "error", "error": {"type": kind, "message": msg}},
        ),
        id="anthropic",
    ),
]


def endpoint(sdk: Sdk) -> Endpoint:
    """Where the failed request went, with the key to hide."""
    return Endpoint.create(sdk.name, "https://api.acme.test", secrets=[KEY])


def status_error(
    sdk: Sdk, status: int, message: str = "no", headers: dict[str, str] | None = None
) -> Exception:
    """The SDK's ``APIStatusError`` for an error answer, as its client raises it."""
    body = sdk.body("some_error", message)
    response = httpx2.Response(status, headers=headers, json=body, request=REQUEST)
    error: Exception = sdk.module.APIStatusError(message, response=response, body=body)
    return error


def mapped(sdk: Sdk, exc: Exception, *, in_stream: bool = False) -> ModelError:
    """The adapter's error value for ``exc``, checked to name the provider and hide the key."""
    error = sdk.map_exception(exc, endpoint(sdk), in_stream=in_stream)
    assert error.provider == sdk.name
    assert KEY not in error.message
    assert "\n" not in error.message
    return error


def test_both_adapters_share_one_classification() -> None:
    """Each adapter's ``map_exception`` is an `SdkExceptionMapper` over its SDK's classes."""
    assert isinstance(openai_map, SdkExceptionMapper)
    assert isinstance(anthropic_map, SdkExceptionMapper)
    assert (openai_map.status, anthropic_map.status) == (
        openai.APIStatusError,
        anthropic.APIStatusError,
    )


@pytest.mark.parametrize("sdk", SDKS)
@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, BadRequest),
        (401, AuthenticationFailed),
        (403, PermissionDenied),
        (404, ModelNotFound),
        (408, ProviderUnavailable),
        (409, BadRequest),
        (413, BadRequest),
        (418, BadRequest),
        (422, BadRequest),
        (429, RateLimited),
        (500, ProviderUnavailable),
        (502, ProviderUnavailable),
        (529, ProviderUnavailable),
    ],
)
def test_status_codes(sdk: Sdk, status: int, kind: type[ModelError]) -> None:
    """An HTTP error status gives its error type, with the provider's own message."""
    error = mapped(sdk, status_error(sdk, status, f"problem {status} with {KEY}"))
    assert type(error) is kind
    assert error.status == status
    assert f"problem {status}" in error.message
    assert "[redacted]" in error.message


@pytest.mark.parametrize("sdk", SDKS)
@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "7"}, 7.0),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
        ({"retry-after": "Thu, 01 Jan 2015 00:00:00 GMT"}, 0.0),
        ({"retry-after": "later"}, None),
        ({}, None),
    ],
)
def test_retry_after(sdk: Sdk, headers: dict[str, str], seconds: float | None) -> None:
    """A 429 carries ``retry_after`` from ``retry-after`` (seconds or a date) or ``-ms``."""
    error = mapped(sdk, status_error(sdk, 429, "slow down", headers))
    assert isinstance(error, RateLimited)
    assert error.retry_after == seconds


@pytest.mark.parametrize("sdk", SDKS)
def test_retry_after_as_a_date_to_come(sdk: Sdk) -> None:
    """An HTTP date is measured from now: a date next year is a wait of up to a year."""
    headers = {"retry-after": "Fri, 01 Jan 2100 00:00:00 GMT"}
    error = mapped(sdk, status_error(sdk, 429, "slow down", headers))
    assert isinstance(error, RateLimited)
    assert error.retry_after is not None
    assert error.retry_after > 0


@pytest.mark.parametrize("sdk", SDKS)
@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.APITimeoutError(request=REQUEST),
        lambda m: httpx2.ReadTimeout("slow", request=REQUEST),
    ],
    ids=["sdk", "transport"],
)
def test_timeouts(sdk: Sdk, make: Callable[[Any], Exception]) -> None:
    """The SDK's timeout, or the HTTP client's, is a ModelTimeout."""
    assert isinstance(mapped(sdk, make(sdk.module)), ModelTimeout)


def connection_error(sdk: Sdk, cause: Exception) -> Exception:
    """The SDK's ``APIConnectionError`` raised from the HTTP client's ``cause``."""
    error: Exception = sdk.module.APIConnectionError(request=REQUEST)
    error.__cause__ = cause
    return error


@pytest.mark.parametrize("sdk", SDKS)
def test_a_server_never_reached(sdk: Sdk) -> None:
    """A refused connection is a ConnectionFailed naming the cause and the base URL."""
    error = mapped(sdk, connection_error(sdk, httpx2.ConnectError("refused")))
    assert isinstance(error, ConnectionFailed)
    assert "ConnectError: refused" in error.message
    assert "https://api.acme.test" in error.message


@pytest.mark.parametrize("sdk", SDKS)
@pytest.mark.parametrize(
    ("make", "in_stream"),
    [
        (lambda sdk: connection_error(sdk, httpx2.ReadError("reset")), False),
        (lambda sdk: connection_error(sdk, httpx2.RemoteProtocolError("closed")), False),
        (lambda sdk: httpx2.RemoteProtocolError("closed"), False),
        (lambda sdk: connection_error(sdk, httpx2.ConnectError("gone")), True),
    ],
    ids=["read-error", "protocol-error", "bare-transport-error", "in-stream"],
)
def test_an_answer_cut_off(sdk: Sdk, make: Callable[[Sdk], Exception], in_stream: bool) -> None:
    """A connection lost once the server was answering is a StreamInterrupted."""
    error = mapped(sdk, make(sdk), in_stream=in_stream)
    assert isinstance(error, StreamInterrupted)
    assert "cut off" in error.message


@pytest.mark.parametrize("sdk", SDKS)
def test_an_answer_that_is_not_the_apis(sdk: Sdk) -> None:
    """An answer the SDK cannot read as its API's is an UnexpectedResponse quoting it."""
    response = httpx2.Response(200, text="<html>Sign in</html>", request=REQUEST)
    error = mapped(sdk, sdk.module.APIResponseValidationError(response, None))
    assert isinstance(error, UnexpectedResponse)
    assert error.status == 200
    assert "<html>Sign in</html>" in error.message


@pytest.mark.parametrize("sdk", SDKS)
@pytest.mark.parametrize(("in_stream", "kind"), [(False, ModelError), (True, StreamInterrupted)])
def test_anything_else(sdk: Sdk, in_stream: bool, kind: type[ModelError]) -> None:
    """Any other exception is a ModelError, or in a stream (undecodable data) a cut answer."""
    error = mapped(sdk, KeyError("choices"), in_stream=in_stream)
    assert type(error) is kind
    assert "KeyError" in error.message


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("server_error", ProviderUnavailable),
        ("rate_limit_exceeded", RateLimited),
        ("invalid_request_error", BadRequest),
        ("mystery", ModelError),
    ],
)
def test_openai_error_payload_in_a_stream(kind: str, expected: type[ModelError]) -> None:
    """An OpenAI ``APIError`` of no other kind (an error inside a stream) maps by its type."""
    body = {"message": "it broke", "type": kind, "code": None}
    sdk = Sdk("openai", openai, openai_map, lambda k, m: {})
    error = mapped(sdk, openai.APIError("it broke", REQUEST, body=body), in_stream=True)
    assert type(error) is expected
    assert "it broke" in error.message


@pytest.mark.parametrize(
    ("kind", "expected", "status"),
    [
        ("overloaded_error", ProviderUnavailable, 529),
        ("rate_limit_error", RateLimited, 429),
        ("invalid_request_error", BadRequest, 400),
        ("mystery", ProviderUnavailable, 500),
    ],
)
def test_anthropic_error_event_in_a_stream(
    kind: str, expected: type[ModelError], status: int
) -> None:
    """An Anthropic ``error`` event in a 200 stream maps as the status its type stands for."""
    body = {"type": "error", "error": {"type": kind, "message": "mid-way"}}
    response = httpx2.Response(200, json=body, request=REQUEST)
    exc = anthropic.APIStatusError("mid-way", response=response, body=body)
    sdk = Sdk("anthropic", anthropic, anthropic_map, lambda k, m: {})
    error = mapped(sdk, exc, in_stream=True)
    assert type(error) is expected
    assert error.status == status
    assert "an error event mid-stream" in error.message
