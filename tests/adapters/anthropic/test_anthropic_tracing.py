"""OpenTelemetry: the SDK's own spans are off by default, the trace context still travels."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from anthropic import AsyncAnthropic
from anthropic_fixtures import fake_provider_fixture, make_model_fixture, shared_server_fixture  # noqa: F401
from anthropic_wire import (
    KEY,
    MODEL,
    MakeModel,
    body,
    stream_reply,
    text,
)
from fake_provider import FakeProvider, Reply
from fncore_anthropic import AnthropicModel
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from fncore import Message, ModelRequest, ModelSettings

REQUEST = ModelRequest((Message.user("hi"),))
TRACE_ID = 0x0AF7651916CD43DD8448EB211C80319C
SPAN_ID = 0xB7AD6B7169203331
PARENT = f"00-{TRACE_ID:032x}-{SPAN_ID:016x}-01"


@pytest.fixture(autouse=True)
def no_otel_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK reads ANTHROPIC_OPEN_TELEMETRY*; keep the tests independent of it."""
    for name in ("ANTHROPIC_OPEN_TELEMETRY", "ANTHROPIC_OPEN_TELEMETRY_PROPAGATION"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def active_span() -> Iterator[None]:
    """An active span (as fncore's tracing middleware would have) around the call."""
    context = SpanContext(TRACE_ID, SPAN_ID, is_remote=False, trace_flags=TraceFlags(1))
    with trace.use_span(NonRecordingSpan(context)):
        yield


def traceparent(fake: FakeProvider) -> str | None:
    """The traceparent header of the last request, if any."""
    headers = {k.lower(): v for k, v in fake.requests[-1].headers.items()}
    return headers.get("traceparent")


async def test_sdk_spans_off_by_default(make_model: MakeModel) -> None:
    """sdk_tracing=False (the default) builds the client with open_telemetry=False."""
    options = make_model().client.open_telemetry
    assert options["traces"]["enabled"] is False
    assert make_model(sdk_tracing=True).client.open_telemetry["traces"]["enabled"] is True


@pytest.mark.usefixtures("active_span")
@pytest.mark.parametrize("sdk_tracing", [False, True])
@pytest.mark.parametrize("stream", [False, True], ids=["request", "stream"])
async def test_traceparent_is_the_callers_span(
    fake_provider: FakeProvider, make_model: MakeModel, sdk_tracing: bool, stream: bool
) -> None:
    """Under an active span the server gets its traceparent, whether or not the SDK traces."""
    m = make_model(sdk_tracing=sdk_tracing)
    if stream:
        fake_provider.reply(stream_reply(text("ok")))
        _ = [item async for item in m.stream(REQUEST)]
    else:
        fake_provider.reply(Reply(200, body(text("ok"))))
        assert (await m.request(REQUEST)).unwrap().text == "ok"
    # No SDK tracer provider is installed here, so even with sdk_tracing the SDK's span is
    # the non-recording caller span and the ids match; with a real provider the SDK would
    # put its own span id here, and emit a span fncore's middleware also emits.
    assert traceparent(fake_provider) == PARENT


async def test_no_traceparent_without_a_span(
    fake_provider: FakeProvider, make_model: MakeModel
) -> None:
    """With no active span nothing is added."""
    fake_provider.reply(Reply(200, body(text("ok"))))
    await make_model().request(REQUEST)
    assert traceparent(fake_provider) is None


@pytest.mark.usefixtures("active_span")
async def test_given_client_with_propagation_off_sends_none(
    fake_provider: FakeProvider,
) -> None:
    """A client given with propagation off is respected: no traceparent."""
    client = AsyncAnthropic(
        api_key=KEY,
        base_url=fake_provider.url,
        max_retries=0,
        open_telemetry={"traces": False, "propagation": False},
    )
    fake_provider.reply(Reply(200, body(text("ok"))))
    async with client:
        await AnthropicModel(MODEL, client=client).request(REQUEST)
    assert traceparent(fake_provider) is None


@pytest.mark.usefixtures("active_span")
async def test_explicit_extra_headers_win(
    fake_provider: FakeProvider, make_model: MakeModel
) -> None:
    """A traceparent given in settings.extra["extra_headers"] is kept as given."""
    mine = f"00-{TRACE_ID:032x}-{1:016x}-01"
    settings = ModelSettings(extra={"extra_headers": {"traceparent": mine}})
    fake_provider.reply(Reply(200, body(text("ok"))))
    await make_model().request(ModelRequest((Message.user("hi"),), settings=settings))
    assert traceparent(fake_provider) == mine
