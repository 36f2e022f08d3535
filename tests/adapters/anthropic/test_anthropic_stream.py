"""Streamed Messages calls: deltas, the final response, and every way a stream can fail."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic_fixtures import fake_provider_fixture, make_model_fixture, shared_server_fixture  # noqa: F401
from anthropic_wire import (
    MODEL,
    MakeModel,
    body,
    collect,
    events,
    redacted,
    sent,
    stream_reply,
    text,
    thinking,
    tool_use,
    usage,
)
from fake_provider import FakeProvider, Reply, sse
from returns.result import Success
from support import ASSIGNED, IDS, follow_up

from fncore import (
    Message,
    ModelRequest,
    ModelResponse,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolSpec,
    Usage,
)
from fncore.core import ResponseAssembler
from fncore.errors import ProviderUnavailable, RateLimited, StreamInterrupted
from fncore.events import (
    ReasoningDelta,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallStarted,
    UsageReported,
)

REQUEST = ModelRequest(
    (Message.user("add 2 and 3"),),
    tools=(ToolSpec("add", "Add.", {"type": "object", "properties": {}}),),
)

CONTENTS: dict[str, tuple[dict[str, Any], ...]] = {
    "text": (text("The answer is five."),),
    "parallel tools": (
        text("Adding both."),
        tool_use("c1", "add", a=2, b=3),
        tool_use("c2", "add", a=10, b=-4, note='nested {json} "quotes"'),
    ),
    "thinking": (thinking("Two plus three is five.", "sig-abc"), text("5")),
    "redacted": (redacted("ENCRYPTED=="), thinking("", "sig-2"), text("5")),
    "empty tool input": (tool_use("c1", "add"),),
    "calls without ids": (
        text("Adding."),
        *(tool_use(call_id, "add", a=n, b=1) for n, call_id in enumerate(IDS)),
    ),
}


@pytest.mark.parametrize("name", CONTENTS)
async def test_streamed_equals_non_streamed(
    fake_provider: FakeProvider, make_model: MakeModel, name: str
) -> None:
    """For the same content, stream() ends with exactly what request() returns."""
    content = CONTENTS[name]
    stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
    use = usage(12, 34, cache_read=56, cache_write=7, thinking_tokens=8)
    fake_provider.reply(
        Reply(200, body(*content, stop_reason=stop, use=use)),
        stream_reply(*content, stop_reason=stop, use=use),
    )
    m = make_model()
    plain = await m.request(REQUEST)
    deltas, last = await collect(m, REQUEST)
    assert isinstance(plain, Success), plain
    assert isinstance(last, ModelResponse), last
    assert last == plain.unwrap()
    assert fake_provider.requests[1].body["stream"] is True
    # the deltas alone rebuild the same text, calls and usage
    assembler = ResponseAssembler()
    for delta in deltas:
        assembler.add(delta)
    rebuilt = assembler.finish()
    assert rebuilt.text == last.text
    assert [(c.id, c.name) for c in rebuilt.tool_calls] == [(c.id, c.name) for c in last.tool_calls]
    assert rebuilt.usage == last.usage


async def test_text_deltas_in_order(fake_provider: FakeProvider, make_model: MakeModel) -> None:
    """Text arrives as TextDeltas, then one UsageReported, then the response."""
    fake_provider.reply(stream_reply(text("hello world"), chunk=4))
    deltas, last = await collect(make_model(), REQUEST)
    assert deltas == [
        TextDelta("hell"),
        TextDelta("o wo"),
        TextDelta("rld"),
        UsageReported(Usage(10, 5, requests=1)),
    ]
    assert last == ModelResponse(
        Message.assistant("hello world"), Usage(10, 5, requests=1), "stop", MODEL
    )


async def test_tool_arguments_across_many_fragments(
    fake_provider: FakeProvider, make_model: MakeModel
) -> None:
    """input_json_delta fragments (one char each) give ToolCallArgsDeltas and whole arguments."""
    fake_provider.reply(
        stream_reply(
            tool_use("c1", "add", a=2, b=3),
            tool_use("c2", "add", a=4, b=5),
            stop_reason="tool_use",
            chunk=1,
        )
    )
    deltas, last = await collect(make_model(), REQUEST)
    assert isinstance(last, ModelResponse)
    assert deltas[0] == ToolCallStarted("c1", "add")
    fragments = [d.delta for d in deltas if isinstance(d, ToolCallArgsDelta) and d.call_id == "c1"]
    assert len(fragments) == len('{"a":2,"b":3}')
    assert "".join(fragments) == '{"a":2,"b":3}'
    assert ToolCallStarted("c2", "add") in deltas
    assert last.tool_calls == (
        ToolCallPart("c1", "add", '{"a": 2, "b": 3}'),
        ToolCallPart("c2", "add", '{"a": 4, "b": 5}'),
    )
    assert last.finish_reason == "tool_calls"


async def test_thinking_deltas_and_signature(
    fake_provider: FakeProvider, make_model: MakeModel
) -> None:
    """thinking_delta gives ReasoningDeltas; the signature_delta lands on the ReasoningPart."""
    fake_provider.reply(stream_reply(thinking("abcdef", "SIG"), text("x"), chunk=3))
    deltas, last = await collect(make_model(), REQUEST)
    assert [d for d in deltas if isinstance(d, ReasoningDelta)] == [
        ReasoningDelta("abc"),
        ReasoningDelta("def"),
    ]
    assert isinstance(last, ModelResponse)
    assert last.message.parts == (ReasoningPart("abcdef", signature="SIG"), TextPart("x"))


async def test_usage_from_start_and_delta(
    fake_provider: FakeProvider, make_model: MakeModel
) -> None:
    """message_start gives input and cache counts, message_delta the output; reported once."""
    fake_provider.reply(stream_reply(text("x"), use=usage(3, 40, cache_read=100, cache_write=9)))
    deltas, last = await collect(make_model(), REQUEST)
    expected = Usage(112, 40, cache_read_tokens=100, cache_write_tokens=9, requests=1)
    assert [d for d in deltas if isinstance(d, UsageReported)] == [UsageReported(expected)]
    assert isinstance(last, ModelResponse)
    assert last.usage == expected


async def test_cut_connection_is_stream_interrupted(
    fake_provider: FakeProvider, make_model: MakeModel
) -> None:
    """A connection dropped mid-message gives the deltas so far, then StreamInterrupted."""
    fake_provider.reply(sse(*events(text("hello there friend")), cut_after=4))
    deltas, last = await collect(make_model(), REQUEST)
    assert deltas == [TextDelta("hel")]
    assert isinstance(last, StreamInterrupted)
    assert last.retryable
    assert last.provider == "anthropic"
    assert "\n" not in last.message


async def test_stream_without_message_stop_is_interrupted(
    fake_provider: FakeProvider, make_model: MakeModel
) -> None:
    """A stream that ends cleanly but before message_stop is StreamInterrupted."""
    fake_provider.reply(sse(*events(text("hello"))[:-1]))
    _, last = await collect(make_model(), REQUEST)
    assert isinstance(last, StreamInterrupted)
    assert "message_stop" in last.message


@pytest.mark.parametrize(
    "bad",
    [
        ("content_block_delta", "{not json"),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 7,
                "delta": {"type": "text_delta", "text": "x"},
            },
        ),
    ],
    ids=["undecodable JSON", "delta for a block that never started"],
)
async def test_malformed_payload_is_stream_interrupted(
    fake_provider: FakeProvider, make_model: MakeModel, bad: tuple[str, Any]
) -> None:
    """An event that cannot be decoded ends the stream with StreamInterrupted."""
    fake_provider.reply(sse(*events(text("hello"))[:3], bad, *events(text("hello"))[3:]))
    _, last = await collect(make_model(), REQUEST)
    assert isinstance(last, StreamInterrupted)
    assert "decoded" in last.message


async def test_error_event_overloaded(fake_provider: FakeProvider, make_model: MakeModel) -> None:
    """An overloaded_error event mid-stream is ProviderUnavailable (529), retryable."""
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    fake_provider.reply(sse(*events(text("hello"))[:4], ("error", error)))
    deltas, last = await collect(make_model(), REQUEST)
    assert deltas == [TextDelta("hel")]
    assert isinstance(last, ProviderUnavailable)
    assert last.status == 529
    assert last.retryable
    assert "overloaded_error" in last.message


async def test_error_event_rate_limit(fake_provider: FakeProvider, make_model: MakeModel) -> None:
    """A rate_limit_error event mid-stream is RateLimited."""
    error = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    fake_provider.reply(sse(*events(text("hello"))[:2], ("error", error)))
    _, last = await collect(make_model(), REQUEST)
    assert isinstance(last, RateLimited)


async def test_http_error_when_opening_stream(
    fake_provider: FakeProvider, make_model: MakeModel
) -> None:
    """A 429 answer to a streaming request is the only item: RateLimited with retry_after."""
    fake_provider.reply(
        Reply(
            429,
            {"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}},
            headers={"retry-after": "3"},
        )
    )
    items = [item async for item in make_model().stream(REQUEST)]
    assert len(items) == 1
    assert isinstance(items[0], RateLimited)
    assert items[0].retry_after == 3.0


async def test_unknown_events_and_pings_are_ignored(
    fake_provider: FakeProvider, make_model: MakeModel
) -> None:
    """Pings, unnamed data lines and event types newer than the adapter do not matter."""
    stream = events(text("ok"))
    noise = [
        ("ping", {"type": "ping"}),
        (None, {"type": "ignored without an event name"}),
        ("some_future_event", {"type": "some_future_event", "x": 1}),
    ]
    fake_provider.reply(sse(*stream[:3], *noise, *stream[3:]))
    _, last = await collect(make_model(), REQUEST)
    assert isinstance(last, ModelResponse)
    assert last.text == "ok"


async def test_consumer_stopping_early_closes_the_stream(
    fake_provider: FakeProvider, make_model: MakeModel
) -> None:
    """Leaving the stream after the first delta closes it; the model stays usable."""
    fake_provider.reply(stream_reply(text("a long answer")), stream_reply(text("again")))
    m = make_model()
    stream = m.stream(REQUEST)
    first = await anext(stream)
    assert first == TextDelta("a l")
    await stream.aclose()  # type: ignore[attr-defined]
    _, last = await collect(m, REQUEST)
    assert isinstance(last, ModelResponse)
    assert last.text == "again"


async def test_refusal_and_max_tokens_stream(
    fake_provider: FakeProvider, make_model: MakeModel
) -> None:
    """stop_reason from message_delta sets the streamed finish reason."""
    fake_provider.reply(
        stream_reply(text("no"), stop_reason="refusal"),
        stream_reply(tool_use("c1", "add", a=1), stop_reason="max_tokens"),
    )
    m = make_model()
    _, refused = await collect(m, REQUEST)
    _, cut = await collect(m, REQUEST)
    assert isinstance(refused, ModelResponse)
    assert isinstance(cut, ModelResponse)
    assert refused.finish_reason == "content_filter"
    assert cut.finish_reason == "length"


async def test_truncated_tool_input_is_kept_raw(
    fake_provider: FakeProvider, make_model: MakeModel
) -> None:
    """Tool input cut off by max_tokens stays raw text, for the loop to report as invalid."""
    start, *rest = events(tool_use("c1", "add", a=12345), stop_reason="max_tokens", chunk=4)[:3]
    partial = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "input_json_delta", "partial_json": '{"a": 12'},
    }
    tail = events(text(""), stop_reason="max_tokens")[-2:]
    content_start = events(tool_use("c1", "add"))[2]
    fake_provider.reply(
        sse(start, *rest[:1], content_start, ("content_block_delta", partial), *tail)
    )
    _, last = await collect(make_model(), REQUEST)
    assert isinstance(last, ModelResponse)
    assert last.tool_calls == (ToolCallPart("c1", "add", '{"a": 12'),)
    assert last.finish_reason == "length"


@pytest.mark.parametrize("streamed", [False, True])
async def test_calls_without_ids_get_fallback_ids_sent_back(
    fake_provider: FakeProvider, make_model: MakeModel, streamed: bool
) -> None:
    """Missing, null and empty tool_use ids become call_<index> and go back as such."""
    content = CONTENTS["calls without ids"]
    first = (
        stream_reply(*content, stop_reason="tool_use")
        if streamed
        else Reply(200, body(*content, stop_reason="tool_use"))
    )
    fake_provider.reply(first, Reply(200, body(text("done"))))
    m = make_model()
    if streamed:
        _, response = await collect(m, REQUEST)
    else:
        result = await m.request(REQUEST)
        assert isinstance(result, Success), result
        response = result.unwrap()
    assert isinstance(response, ModelResponse), response
    assert [c.id for c in response.tool_calls] == ASSIGNED
    await m.request(follow_up(response, REQUEST.tools))
    assistant, results = sent(fake_provider)["messages"][1:]
    assert [b["id"] for b in assistant["content"] if b["type"] == "tool_use"] == ASSIGNED
    assert [b["tool_use_id"] for b in results["content"]] == ASSIGNED
