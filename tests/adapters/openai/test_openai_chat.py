"""OpenAIChatModel through the real openai SDK against the fake server: bodies and decoding."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from fake_provider import FakeProvider, Reply, sse
from openai_wire import (
    ADD,
    DONE,
    PARSED_ARGUMENTS,
    ask,
    body,
    call,
    call_chunk,
    chat_model,
    chat_stream,
    chat_usage,
    chunk,
    close_clients,
    collect,
    completion,
    decoded,
    greet,
    ok,
)
from pydantic import BaseModel
from returns.result import Failure
from support import ASSIGNED, IDS, add, call_map, follow_up, streamed_calls

from fncore import (
    DataPart,
    Message,
    ModelError,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    ReasoningPart,
    RequireTool,
    TextPart,
    Tool,
    ToolCallPart,
    ToolChoice,
    ToolResultPart,
    Usage,
)
from fncore.core import ReasoningDelta, ResponseAssembler, ToolSpec
from fncore.errors import BadRequest, StreamInterrupted
from fncore.events import TextDelta, ToolCallArgsDelta, ToolCallStarted, UsageReported


@pytest.fixture(autouse=True)
async def _close() -> AsyncIterator[None]:
    yield
    await close_clients()


class Point(BaseModel):
    x: int
    y: int


def centroid(points: list[Point]) -> str:
    """The centroid of points."""
    return ""


# --- request bodies ------------------------------------------------------------------


async def test_instructions_lead_as_system_message(fake_provider: FakeProvider) -> None:
    """Instructions go first as a system message, before the conversation."""
    fake_provider.reply(completion("ok"))
    await chat_model(fake_provider).request(ask("hello", instructions="Be brief."))
    sent = body(fake_provider)
    assert fake_provider.requests[0].path == "/v1/chat/completions"
    assert sent["model"] == "gpt-test"
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hello"},
    ]
    assert "stream" not in sent or sent["stream"] is False
    assert "tools" not in sent
    assert "tool_choice" not in sent


async def test_developer_role_carries_instructions_and_system_messages(
    fake_provider: FakeProvider,
) -> None:
    """With system_role="developer" instructions and system messages use that role."""
    fake_provider.reply(completion("ok"))
    request = ModelRequest((Message.system("rules"), Message.user("q")), instructions="sys")
    await chat_model(fake_provider, system_role="developer").request(request)
    assert [m["role"] for m in body(fake_provider)["messages"]] == [
        "developer",
        "developer",
        "user",
    ]


async def test_tool_results_follow_their_calls(fake_provider: FakeProvider) -> None:
    """Assistant tool calls and one role=tool message per result, paired by tool_call_id."""
    fake_provider.reply(completion("done"))
    calls = Message(
        "assistant",
        (
            ReasoningPart("thinking"),
            TextPart("Let me add."),
            ToolCallPart("call_a", "add", '{"a": 1, "b": 2}'),
            ToolCallPart("call_b", "add", '{"a": 3, "b": 4}'),
        ),
    )
    results = Message(
        "tool",
        (
            ToolResultPart("call_a", "add", "3"),
            ToolResultPart("call_b", "add", "boom", is_error=True),
        ),
    )
    request = ModelRequest((Message.user("add"), calls, results), tools=(ADD,))
    await chat_model(fake_provider).request(request)
    assert body(fake_provider)["messages"][1:] == [
        {
            "role": "assistant",
            "content": "Let me add.",
            "tool_calls": [
                call("call_a", "add", '{"a": 1, "b": 2}'),
                call("call_b", "add", '{"a": 3, "b": 4}'),
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "3"},
        {"role": "tool", "tool_call_id": "call_b", "content": "boom"},
    ]


async def test_assistant_with_only_calls_has_null_content(fake_provider: FakeProvider) -> None:
    """An assistant message of tool calls alone is sent with content null."""
    fake_provider.reply(completion("done"))
    calls = Message("assistant", (ToolCallPart("c1", "add", "{}"),))
    results = Message("tool", (ToolResultPart("c1", "add", "0"),))
    await chat_model(fake_provider).request(ModelRequest((Message.user("x"), calls, results)))
    assert body(fake_provider)["messages"][1]["content"] is None


async def test_tool_specs_strict_only_where_valid(fake_provider: FakeProvider) -> None:
    """Strict schemas are marked strict (nested objects closed); optional fields are not."""
    fake_provider.reply(completion("ok"))
    specs = tuple(Tool.from_function(f).spec for f in (add, centroid, greet))
    await chat_model(fake_provider).request(ask(tools=specs))
    tools = body(fake_provider)["tools"]
    assert [t["type"] for t in tools] == ["function"] * 3
    first, nested, optional = (t["function"] for t in tools)
    assert first == {
        "name": "add",
        "description": "Add two integers.",
        "parameters": dict(ADD.parameters),
        "strict": True,
    }
    assert nested["strict"] is True
    assert nested["parameters"]["$defs"]["Point"]["additionalProperties"] is False
    assert "strict" not in optional
    assert optional["parameters"] == dict(Tool.from_function(greet).spec.parameters)


async def test_free_form_object_is_not_strict(fake_provider: FakeProvider) -> None:
    """A spec claiming strict with an open object schema is sent without strict."""
    fake_provider.reply(completion("ok"))
    spec = ToolSpec(
        "store",
        "Store data.",
        {"type": "object", "properties": {"data": {"type": "object"}}, "required": ["data"]},
        strict=True,
    )
    await chat_model(fake_provider).request(ask(tools=(spec,)))
    assert "strict" not in body(fake_provider)["tools"][0]["function"]


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        (RequireTool("add"), {"type": "function", "function": {"name": "add"}}),
    ],
)
async def test_tool_choice_mapping(
    fake_provider: FakeProvider, choice: ToolChoice, wire: object
) -> None:
    """Each fncore tool choice maps to the Chat Completions form."""
    fake_provider.reply(completion("ok"))
    await chat_model(fake_provider).request(ask(tools=(ADD,), tool_choice=choice))
    assert body(fake_provider)["tool_choice"] == wire


async def test_required_tool_that_is_not_offered_is_bad_request(
    fake_provider: FakeProvider,
) -> None:
    """Requiring a tool that is not offered fails before anything is sent."""
    result = await chat_model(fake_provider).request(
        ask(tools=(ADD,), tool_choice=RequireTool("mul"))
    )
    assert isinstance(result, Failure)
    assert isinstance(result.failure(), BadRequest)
    assert fake_provider.requests == []


async def test_settings_are_sent(fake_provider: FakeProvider) -> None:
    """Temperature, token cap, top_p, stop, seed, parallel calls and extras reach the body."""
    fake_provider.reply(completion("ok"))
    settings = ModelSettings(
        temperature=0.2,
        max_tokens=64,
        top_p=0.9,
        stop=("END",),
        seed=7,
        parallel_tool_calls=False,
        extra={"reasoning_effort": "low", "top_k": 5},
    )
    await chat_model(fake_provider).request(ask(tools=(ADD,), settings=settings))
    sent = body(fake_provider)
    assert sent["temperature"] == 0.2
    assert sent["max_completion_tokens"] == 64
    assert "max_tokens" not in sent
    assert sent["top_p"] == 0.9
    assert sent["stop"] == ["END"]
    assert sent["seed"] == 7
    assert sent["parallel_tool_calls"] is False
    assert sent["reasoning_effort"] == "low"
    assert sent["top_k"] == 5


async def test_legacy_max_tokens_and_default_cap(fake_provider: FakeProvider) -> None:
    """max_tokens_param="max_tokens" sends the model's default cap as max_tokens."""
    fake_provider.reply(completion("ok"))
    model = chat_model(fake_provider, max_tokens_param="max_tokens", max_tokens=128)
    await model.request(ask())
    sent = body(fake_provider)
    assert sent["max_tokens"] == 128
    assert "max_completion_tokens" not in sent


async def test_extra_may_not_replace_adapter_arguments(fake_provider: FakeProvider) -> None:
    """settings.extra setting messages is a BadRequest, not a silent override."""
    result = await chat_model(fake_provider).request(
        ask(settings=ModelSettings(extra={"messages": []}))
    )
    assert isinstance(result, Failure)
    assert isinstance(result.failure(), BadRequest)


async def test_images_and_pdfs_as_data_urls(fake_provider: FakeProvider) -> None:
    """An image becomes an image_url part, a PDF a file part, both as data: URLs."""
    fake_provider.reply(completion("a cat"))
    message = Message(
        "user",
        (
            TextPart("What is this?"),
            DataPart(b"\x89PNG", "image/png"),
            DataPart(b"%PDF-1.7", "application/pdf"),
        ),
    )
    await chat_model(fake_provider).request(ModelRequest((message,)))
    assert body(fake_provider)["messages"][0]["content"] == [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}},
        {
            "type": "file",
            "file": {
                "filename": "document.pdf",
                "file_data": "data:application/pdf;base64,JVBERi0xLjc=",
            },
        },
    ]


async def test_unsupported_media_type_is_bad_request(fake_provider: FakeProvider) -> None:
    """Audio data cannot be sent: BadRequest naming the type, and no request made."""
    message = Message("user", (DataPart(b"RIFF", "audio/wav"),))
    result = await chat_model(fake_provider).request(ModelRequest((message,)))
    assert isinstance(result, Failure)
    error = result.failure()
    assert isinstance(error, BadRequest)
    assert "audio/wav" in error.message
    assert fake_provider.requests == []


# --- whole responses -----------------------------------------------------------------


async def test_text_response_and_usage(fake_provider: FakeProvider) -> None:
    """Text, model name and usage with cached, cache-write and reasoning tokens decode."""
    usage = chat_usage(prompt=100, completion=40, cached=60, reasoning=25, written=10)
    fake_provider.reply(completion("Hello!", usage=usage))
    response = ok(await chat_model(fake_provider).request(ask()))
    assert response.message == Message.assistant("Hello!")
    assert response.finish_reason == "stop"
    assert response.model_name == "gpt-test-2026"
    assert response.usage == Usage(100, 40, 60, 10, 25, 1)


async def test_parallel_tool_calls_decode(fake_provider: FakeProvider) -> None:
    """Several tool calls come back as ToolCallParts in order, finish tool_calls."""
    fake_provider.reply(
        completion(
            None,
            calls=(call("c1", "add", '{"a":1,"b":2}'), call("c2", "add", '{"a":3,"b":4}')),
            finish="tool_calls",
        )
    )
    response = ok(await chat_model(fake_provider).request(ask(tools=(ADD,))))
    assert response.tool_calls == (
        ToolCallPart("c1", "add", '{"a":1,"b":2}'),
        ToolCallPart("c2", "add", '{"a":3,"b":4}'),
    )
    assert response.finish_reason == "tool_calls"


@pytest.mark.parametrize(
    ("wire", "reason"),
    [
        ("stop", "stop"),
        ("length", "length"),
        ("content_filter", "content_filter"),
        ("tool_calls", "tool_calls"),
    ],
)
async def test_finish_reasons(fake_provider: FakeProvider, wire: str, reason: str) -> None:
    """Chat finish reasons map to fncore's."""
    fake_provider.reply(completion("x", finish=wire))
    assert ok(await chat_model(fake_provider).request(ask())).finish_reason == reason


async def test_calls_with_stop_finish_count_as_tool_calls(fake_provider: FakeProvider) -> None:
    """A server that says "stop" next to tool calls still gives finish tool_calls."""
    fake_provider.reply(completion(None, calls=(call("c1", "add", "{}"),), finish="stop"))
    assert ok(await chat_model(fake_provider).request(ask())).finish_reason == "tool_calls"


async def test_reasoning_content_from_compatible_servers(fake_provider: FakeProvider) -> None:
    """A reasoning_content field (vLLM, DeepSeek) becomes a ReasoningPart before the text."""
    fake_provider.reply(completion("4", reasoning_content="2+2 is 4"))
    response = ok(await chat_model(fake_provider).request(ask()))
    assert response.message.parts == (ReasoningPart("2+2 is 4"), TextPart("4"))


async def test_reasoning_is_not_sent_back(fake_provider: FakeProvider) -> None:
    """Reasoning parts of earlier turns are left out of the request."""
    fake_provider.reply(completion("ok"))
    earlier = Message("assistant", (ReasoningPart("hmm", signature="sig"), TextPart("4")))
    await chat_model(fake_provider).request(ModelRequest((Message.user("q"), earlier)))
    assert body(fake_provider)["messages"][1] == {"role": "assistant", "content": "4"}


# --- streaming -----------------------------------------------------------------------


async def test_stream_text_usage_then_same_response(fake_provider: FakeProvider) -> None:
    """Text deltas, usage, then the response request() gives for the same content."""
    usage = chat_usage(prompt=12, completion=3, cached=4)
    fake_provider.reply(
        chat_stream(
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "Hel"}),
            chunk({"content": "lo"}),
            usage=usage,
        ),
        completion("Hello", usage=usage),
    )
    model = chat_model(fake_provider)
    items = await collect(model, ask())
    sent = body(fake_provider, 0)
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}
    assert items[:3] == [TextDelta("Hel"), TextDelta("lo"), UsageReported(Usage(12, 3, 4, 0, 0, 1))]
    assert items[-1] == ok(await model.request(ask()))
    assert len(items) == 4


async def test_stream_assembles_tool_call_fragments(fake_provider: FakeProvider) -> None:
    """Parallel calls split over many chunks: started once each, fragments in order."""
    fake_provider.reply(
        chat_stream(
            call_chunk(0, call_id="c1", name="add", args=""),
            call_chunk(0, args='{"a"'),
            call_chunk(0, args=": 1, "),
            call_chunk(1, call_id="c2", name="add"),
            call_chunk(0, args='"b": 2}'),
            call_chunk(1, args='{"a": 3, "b": 4}'),
            finish="tool_calls",
        )
    )
    items = await collect(chat_model(fake_provider), ask(tools=(ADD,)))
    deltas = [i for i in items if not isinstance(i, ModelResponse | UsageReported)]
    assert deltas == [
        ToolCallStarted("c1", "add"),
        ToolCallArgsDelta("c1", '{"a"'),
        ToolCallArgsDelta("c1", ": 1, "),
        ToolCallStarted("c2", "add"),
        ToolCallArgsDelta("c1", '"b": 2}'),
        ToolCallArgsDelta("c2", '{"a": 3, "b": 4}'),
    ]
    final = items[-1]
    assert isinstance(final, ModelResponse)
    assert final.tool_calls == (
        ToolCallPart("c1", "add", '{"a": 1, "b": 2}'),
        ToolCallPart("c2", "add", '{"a": 3, "b": 4}'),
    )
    assert final.finish_reason == "tool_calls"
    assembler = ResponseAssembler()
    for item in items[:-1]:
        assert not isinstance(item, ModelResponse | ModelError)
        assembler.add(item)
    assert assembler.finish(model_name=final.model_name) == final


async def test_stream_buffers_arguments_until_the_call_is_named(
    fake_provider: FakeProvider,
) -> None:
    """Arguments sent before the id and name are held back until ToolCallStarted."""
    fake_provider.reply(
        chat_stream(
            call_chunk(0, args='{"a": 1}'),
            call_chunk(0, call_id="c9", name="add"),
            finish="tool_calls",
        )
    )
    items = await collect(chat_model(fake_provider), ask(tools=(ADD,)))
    assert items[:2] == [ToolCallStarted("c9", "add"), ToolCallArgsDelta("c9", '{"a": 1}')]


async def test_stream_reasoning_content(fake_provider: FakeProvider) -> None:
    """reasoning_content deltas stream as ReasoningDelta and end up in a ReasoningPart."""
    fake_provider.reply(
        chat_stream(chunk({"reasoning_content": "think"}), chunk({"content": "42"}))
    )
    items = await collect(chat_model(fake_provider), ask())
    final = items[-1]
    assert isinstance(final, ModelResponse)
    assert final.message.parts == (ReasoningPart("think"), TextPart("42"))
    assert items[0] == ReasoningDelta("think")


async def test_stream_without_finish_reason_is_interrupted(fake_provider: FakeProvider) -> None:
    """A stream that ends without a finish reason yields StreamInterrupted last."""
    fake_provider.reply(sse(chunk({"content": "partial"}), DONE))
    items = await collect(chat_model(fake_provider), ask())
    assert items[0] == TextDelta("partial")
    assert isinstance(items[-1], StreamInterrupted)
    assert items[-1].retryable


async def test_stream_length_finish(fake_provider: FakeProvider) -> None:
    """A streamed length finish gives finish_reason length."""
    fake_provider.reply(chat_stream(chunk({"content": "cut"}), finish="length"))
    final = (await collect(chat_model(fake_provider), ask()))[-1]
    assert isinstance(final, ModelResponse)
    assert final.finish_reason == "length"


async def test_stream_call_without_id_gets_one(fake_provider: FakeProvider) -> None:
    """A server that never sends a call id gets call_<n>, started before the response."""
    fake_provider.reply(
        chat_stream(call_chunk(0, name="add"), call_chunk(0, args="{}"), finish="tool_calls")
    )
    items = await collect(chat_model(fake_provider), ask(tools=(ADD,)))
    assert items[-3:-1] == [ToolCallStarted("call_0", "add"), ToolCallArgsDelta("call_0", "{}")]
    final = items[-1]
    assert isinstance(final, ModelResponse)
    assert final.tool_calls == (ToolCallPart("call_0", "add", "{}"),)


async def test_stream_without_usage_chunk(fake_provider: FakeProvider) -> None:
    """A compatible server that sends no usage still gives a response counting one request."""
    fake_provider.reply(sse(chunk({"content": "ok"}), chunk({}, finish="stop"), DONE))
    items = await collect(chat_model(fake_provider), ask())
    assert items[0] == TextDelta("ok")
    final = items[-1]
    assert isinstance(final, ModelResponse)
    assert final.usage == Usage(requests=1)
    assert len(items) == 2


# --- tool-call ids and arguments as compatible servers send them -----------------------


def calls_reply(streamed: bool, ids: tuple[Any, ...], args: tuple[Any, ...]) -> Reply:
    """One add call per id and arguments, as a whole completion or a stream."""
    if streamed:
        fragments = [
            call_chunk(n, call_id=i, name="add", args=a)
            for n, (i, a) in enumerate(zip(ids, args, strict=True))
        ]
        return chat_stream(*fragments, finish="tool_calls")
    calls = tuple(call(i, "add", a) for i, a in zip(ids, args, strict=True))
    return completion(None, calls=calls, finish="tool_calls")


async def test_calls_without_ids_get_fallback_ids_in_both_modes(
    fake_provider: FakeProvider,
) -> None:
    """Missing, null and empty ids become call_<index> alike whole and streamed, deltas too."""
    args = tuple(f'{{"a": {n}, "b": 1}}' for n in range(len(IDS)))
    fake_provider.reply(calls_reply(False, IDS, args), calls_reply(True, IDS, args))
    _, whole = await decoded(chat_model(fake_provider), False)
    items, streamed = await decoded(chat_model(fake_provider), True)
    assert [c.id for c in whole.tool_calls] == ASSIGNED
    assert streamed == whole
    assert streamed_calls(items) == call_map(whole)


@pytest.mark.parametrize("streamed", [False, True])
async def test_assigned_ids_are_sent_back(fake_provider: FakeProvider, streamed: bool) -> None:
    """The next request carries the assigned ids on the calls and on their results."""
    fake_provider.reply(calls_reply(streamed, IDS, ("{}",) * len(IDS)), completion("done"))
    _, first = await decoded(chat_model(fake_provider), streamed)
    await chat_model(fake_provider).request(follow_up(first, (ADD,)))
    sent = body(fake_provider)["messages"]
    assert [c["id"] for c in sent[1]["tool_calls"]] == ASSIGNED
    assert [m["tool_call_id"] for m in sent[2:]] == ASSIGNED


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize(("wire", "text"), PARSED_ARGUMENTS)
async def test_parsed_arguments_become_json_text(
    fake_provider: FakeProvider, streamed: bool, wire: Any, text: str
) -> None:
    """Arguments sent as JSON values, not strings, decode to JSON text and go back as such."""
    fake_provider.reply(calls_reply(streamed, ("c1",), (wire,)), completion("done"))
    items, first = await decoded(chat_model(fake_provider), streamed)
    assert first.tool_calls == (ToolCallPart("c1", "add", text),)
    if items:
        assert streamed_calls(items) == call_map(first)
    await chat_model(fake_provider).request(follow_up(first, (ADD,)))
    assert body(fake_provider)["messages"][1]["tool_calls"][0]["function"]["arguments"] == text
