"""Error mapping for both OpenAI models: statuses, transport failures, broken streams."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from fake_provider import FakeProvider, Reply, free_port, sse
from openai_wire import (
    KEY,
    chat_model,
    chunk,
    close_clients,
    completed,
    event,
    message_item,
    responses_model,
)
from returns.result import Failure

from fncore import Message, ModelError, ModelRequest
from fncore.adapter import UnexpectedResponse
from fncore.core import Model
from fncore.errors import (
    AuthenticationFailed,
    BadRequest,
    ConnectionFailed,
    ModelNotFound,
    ModelTimeout,
    PermissionDenied,
    ProviderUnavailable,
    RateLimited,
    StreamInterrupted,
)
from fncore.events import TextDelta

Factory = Callable[..., Any]
KINDS = [pytest.param(chat_model, id="chat"), pytest.param(responses_model, id="responses")]
REQUEST = ModelRequest((Message.user("hi"),))


@pytest.fixture(autouse=True)
async def _close() -> AsyncIterator[None]:
    yield
    await close_clients()


async def failure_of(model: Model, streamed: bool) -> ModelError:
    """The error a request (or a stream, as its only item) returns."""
    if streamed:
        items = [item async for item in model.stream(REQUEST)]
        assert len(items) == 1, items
        error = items[0]
    else:
        result = await model.request(REQUEST)
        assert isinstance(result, Failure), result
        error = result.failure()
    assert isinstance(error, ModelError)
    assert error.provider == "openai"
    assert KEY not in error.message
    assert "\n" not in error.message
    return error


def error_reply(status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
    """An OpenAI error answer."""
    return Reply(
        status,
        {"error": {"message": message, "type": "invalid_request_error", "code": None}},
        headers=headers or {},
    )


@pytest.mark.parametrize("streamed", [False, True], ids=["request", "stream"])
@pytest.mark.parametrize("make", KINDS)
@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, BadRequest),
        (401, AuthenticationFailed),
        (403, PermissionDenied),
        (404, ModelNotFound),
        (500, ProviderUnavailable),
        (529, ProviderUnavailable),
    ],
)
async def test_status_errors(
    fake_provider: FakeProvider, make: Factory, streamed: bool, status: int, kind: type
) -> None:
    """Each HTTP error status maps to its error type, with the provider's message."""
    fake_provider.reply(error_reply(status, f"problem {status}"))
    error = await failure_of(make(fake_provider), streamed)
    assert type(error) is kind
    assert error.status == status
    assert f"problem {status}" in error.message
    assert error.retryable == (status >= 500)


@pytest.mark.parametrize("streamed", [False, True], ids=["request", "stream"])
@pytest.mark.parametrize("make", KINDS)
async def test_rate_limit_carries_retry_after(
    fake_provider: FakeProvider, make: Factory, streamed: bool
) -> None:
    """429 gives RateLimited with the retry-after seconds."""
    fake_provider.reply(error_reply(429, "slow down", {"retry-after": "7"}))
    error = await failure_of(make(fake_provider), streamed)
    assert isinstance(error, RateLimited)
    assert error.retry_after == 7.0
    assert error.retryable


@pytest.mark.parametrize("make", KINDS)
async def test_rate_limit_retry_after_ms(fake_provider: FakeProvider, make: Factory) -> None:
    """retry-after-ms wins and is converted to seconds."""
    fake_provider.reply(error_reply(429, "slow", {"retry-after-ms": "1500", "retry-after": "9"}))
    error = await failure_of(make(fake_provider), False)
    assert isinstance(error, RateLimited)
    assert error.retry_after == 1.5


@pytest.mark.parametrize("make", KINDS)
async def test_api_key_never_in_message(fake_provider: FakeProvider, make: Factory) -> None:
    """A provider message quoting the key is redacted."""
    fake_provider.reply(error_reply(401, f"Incorrect API key provided: {KEY}."))
    error = await failure_of(make(fake_provider), False)
    assert isinstance(error, AuthenticationFailed)
    assert "[redacted]" in error.message
    assert "api_key" in error.message


@pytest.mark.parametrize("streamed", [False, True], ids=["request", "stream"])
@pytest.mark.parametrize("make", KINDS)
async def test_connection_refused(make: Factory, streamed: bool) -> None:
    """Nothing listening gives ConnectionFailed naming the base URL."""
    url = f"http://127.0.0.1:{free_port()}/v1"
    error = await failure_of(make(url), streamed)
    assert isinstance(error, ConnectionFailed)
    assert url in error.message
    assert error.retryable


@pytest.mark.parametrize("make", KINDS)
async def test_timeout(make: Factory, silent_server: str) -> None:
    """No answer within the timeout gives ModelTimeout."""
    error = await failure_of(make(f"{silent_server}/v1", timeout=0.2), False)
    assert isinstance(error, ModelTimeout)
    assert "model.timeout" in error.message


async def test_chat_stream_cut_mid_message(fake_provider: FakeProvider) -> None:
    """A chat stream whose connection drops mid-message ends with StreamInterrupted."""
    fake_provider.reply(
        sse(
            chunk({"content": "Hel"}),
            chunk({"content": "lo"}),
            chunk({"content": "!"}),
            cut_after=2,
        )
    )
    items = [i async for i in chat_model(fake_provider).stream(REQUEST)]
    assert items[:2] == [TextDelta("Hel"), TextDelta("lo")]
    assert isinstance(items[-1], StreamInterrupted)
    assert len(items) == 3


async def test_responses_stream_cut_mid_message(fake_provider: FakeProvider) -> None:
    """A Responses stream whose connection drops ends with StreamInterrupted."""
    delta = event(
        "response.output_text.delta",
        item_id="m",
        output_index=0,
        content_index=0,
        delta="x",
        logprobs=[],
    )
    fake_provider.reply(sse(delta, delta, delta, cut_after=1))
    items = [i async for i in responses_model(fake_provider).stream(REQUEST)]
    assert items[0] == TextDelta("x")
    assert isinstance(items[-1], StreamInterrupted)


async def test_chat_malformed_sse_payload(fake_provider: FakeProvider) -> None:
    """A chunk that is not JSON ends the chat stream with StreamInterrupted."""
    fake_provider.reply(sse(chunk({"content": "a"}), (None, "{not json")))
    items = [i async for i in chat_model(fake_provider).stream(REQUEST)]
    assert items[0] == TextDelta("a")
    assert isinstance(items[-1], StreamInterrupted)
    assert "could not be decoded" in items[-1].message


async def test_responses_malformed_sse_payload(fake_provider: FakeProvider) -> None:
    """An event that is not JSON ends the Responses stream with StreamInterrupted."""
    fake_provider.reply(sse(("response.output_text.delta", "{oops")))
    items = [i async for i in responses_model(fake_provider).stream(REQUEST)]
    assert len(items) == 1
    assert isinstance(items[0], StreamInterrupted)


async def test_chat_stream_error_payload(fake_provider: FakeProvider) -> None:
    """An error object inside a chat stream maps by its type to an error value."""
    fake_provider.reply(
        sse(
            chunk({"content": "a"}),
            (None, {"error": {"message": "overloaded", "type": "server_error", "code": None}}),
        )
    )
    items = [i async for i in chat_model(fake_provider).stream(REQUEST)]
    assert items[0] == TextDelta("a")
    error = items[-1]
    assert isinstance(error, ProviderUnavailable)
    assert "overloaded" in error.message


async def test_chat_completion_without_choices(fake_provider: FakeProvider) -> None:
    """A completion with no choices is an UnexpectedResponse (see test_unexpected_answers)."""
    fake_provider.reply(
        Reply(
            body={"id": "x", "object": "chat.completion", "model": "m", "created": 0, "choices": []}
        )
    )
    error = await failure_of(chat_model(fake_provider), False)
    assert isinstance(error, UnexpectedResponse)
    assert "no choices" in error.message


async def test_responses_stream_ignores_events_after_completion(
    fake_provider: FakeProvider,
) -> None:
    """The first terminal event decides; later events are ignored."""
    fake_provider.reply(sse(completed(message_item("done")), event("error", message="late")))
    items = [i async for i in responses_model(fake_provider).stream(REQUEST)]
    assert items[-1].message.text == "done"  # type: ignore[union-attr]
