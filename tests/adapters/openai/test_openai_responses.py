"""OpenAIResponsesModel through the real openai SDK against the fake server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Literal, TypeAlias

import pytest
from fake_provider import FakeProvider, Reply, sse
from openai_wire import (
    ADD,
    PARSED_ARGUMENTS,
    ask,
    body,
    close_clients,
    collect,
    completed,
    decoded,
    event,
    function_item,
    greet,
    message_item,
    ok,
    reasoning_item,
    response,
    response_obj,
    responses_model,
    responses_usage,
)
from returns.result import Failure
from support import ASSIGNED, IDS, call_map, follow_up, streamed_calls

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
from fncore.core import ProviderUnavailable
from fncore.errors import BadRequest, RateLimited, StreamInterrupted
from fncore.events import (
    ReasoningDelta,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallStarted,
    UsageReported,
)


@pytest.fixture(autouse=True)
async def _close() -> AsyncIterator[None]:
    yield
    await close_clients()


# --- request bodies ------------------------------------------------------------------


async def test_instructions_store_and_include(fake_provider: FakeProvider) -> None:
    """Instructions go to `instructions`; store is false and encrypted reasoning included."""
    fake_provider.reply(response(message_item("ok")))
    await responses_model(fake_provider).request(ask("hello", instructions="Be brief."))
    sent = body(fake_provider)
    assert fake_provider.requests[0].path == "/v1/responses"
    assert sent["model"] == "gpt-test"
    assert sent["instructions"] == "Be brief."
    assert sent["store"] is False
    assert sent["include"] == ["reasoning.encrypted_content"]
    assert sent["input"] == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]}
    ]
    assert "tools" not in sent
    assert "tool_choice" not in sent


async def test_store_option(fake_provider: FakeProvider) -> None:
    """store=True is sent as it is."""
    fake_provider.reply(response(message_item("ok")))
    await responses_model(fake_provider, store=True).request(ask())
    assert body(fake_provider)["store"] is True


async def test_transcript_items_in_order(fake_provider: FakeProvider) -> None:
    """Reasoning, text, function calls and their outputs become input items in order."""
    fake_provider.reply(response(message_item("done")))
    turn = Message(
        "assistant",
        (
            ReasoningPart("plan", signature="ENC1"),
            ReasoningPart("unsigned reasoning is dropped"),
            TextPart("Adding."),
            ToolCallPart("call_a", "add", '{"a": 1, "b": 2}'),
            ToolCallPart("call_b", "add", '{"a": 3, "b": 4}'),
        ),
    )
    results = Message(
        "tool",
        (ToolResultPart("call_a", "add", "3"), ToolResultPart("call_b", "add", "7")),
    )
    request = ModelRequest(
        (Message.system("rules"), Message.user("add"), turn, results), tools=(ADD,)
    )
    await responses_model(fake_provider).request(request)
    assert body(fake_provider)["input"] == [
        {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "rules"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "add"}]},
        {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "plan"}],
            "encrypted_content": "ENC1",
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Adding."}],
        },
        {
            "type": "function_call",
            "call_id": "call_a",
            "name": "add",
            "arguments": '{"a": 1, "b": 2}',
        },
        {
            "type": "function_call",
            "call_id": "call_b",
            "name": "add",
            "arguments": '{"a": 3, "b": 4}',
        },
        {"type": "function_call_output", "call_id": "call_a", "output": "3"},
        {"type": "function_call_output", "call_id": "call_b", "output": "7"},
    ]


async def test_tools_flat_with_strict(fake_provider: FakeProvider) -> None:
    """Tools are flat function tools; strict is true only where the schema allows it."""
    fake_provider.reply(response(message_item("ok")))
    specs = (ADD, Tool.from_function(greet).spec)
    await responses_model(fake_provider).request(ask(tools=specs))
    strict, loose = body(fake_provider)["tools"]
    assert strict == {
        "type": "function",
        "name": "add",
        "description": "Add two integers.",
        "parameters": dict(ADD.parameters),
        "strict": True,
    }
    assert loose["strict"] is False


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        (RequireTool("add"), {"type": "function", "name": "add"}),
    ],
)
async def test_tool_choice_mapping(
    fake_provider: FakeProvider, choice: ToolChoice, wire: object
) -> None:
    """Each fncore tool choice maps to the Responses form."""
    fake_provider.reply(response(message_item("ok")))
    await responses_model(fake_provider).request(ask(tools=(ADD,), tool_choice=choice))
    assert body(fake_provider)["tool_choice"] == wire


async def test_settings_are_sent(fake_provider: FakeProvider) -> None:
    """Token cap, temperature, top_p, parallel calls and extras reach the body."""
    fake_provider.reply(response(message_item("ok")))
    settings = ModelSettings(
        temperature=0.3,
        max_tokens=99,
        top_p=0.5,
        seed=3,
        parallel_tool_calls=True,
        extra={"reasoning": {"effort": "low", "summary": "auto"}, "vendor_flag": 1},
    )
    await responses_model(fake_provider).request(ask(tools=(ADD,), settings=settings))
    sent = body(fake_provider)
    assert sent["max_output_tokens"] == 99
    assert sent["temperature"] == 0.3
    assert sent["top_p"] == 0.5
    assert sent["parallel_tool_calls"] is True
    assert sent["reasoning"] == {"effort": "low", "summary": "auto"}
    assert sent["vendor_flag"] == 1
    assert "seed" not in sent


async def test_stop_sequences_are_bad_request(fake_provider: FakeProvider) -> None:
    """The Responses API has no stop sequences: BadRequest before sending."""
    result = await responses_model(fake_provider).request(
        ask(settings=ModelSettings(stop=("END",)))
    )
    assert isinstance(result, Failure)
    assert isinstance(result.failure(), BadRequest)
    assert fake_provider.requests == []


async def test_images_and_pdfs(fake_provider: FakeProvider) -> None:
    """Images become input_image and PDFs input_file, both as data: URLs."""
    fake_provider.reply(response(message_item("ok")))
    message = Message(
        "user",
        (TextPart("Look"), DataPart(b"GIF8", "image/gif"), DataPart(b"%PDF", "application/pdf")),
    )
    await responses_model(fake_provider).request(ModelRequest((message,)))
    assert body(fake_provider)["input"][0]["content"] == [
        {"type": "input_text", "text": "Look"},
        {"type": "input_image", "image_url": "data:image/gif;base64,R0lGOA==", "detail": "auto"},
        {
            "type": "input_file",
            "filename": "document.pdf",
            "file_data": "data:application/pdf;base64,JVBERg==",
        },
    ]


async def test_unsupported_media_type_is_bad_request(fake_provider: FakeProvider) -> None:
    """A video part is a BadRequest and nothing is sent."""
    message = Message("user", (DataPart(b"...", "video/mp4"),))
    result = await responses_model(fake_provider).request(ModelRequest((message,)))
    assert isinstance(result, Failure)
    assert isinstance(result.failure(), BadRequest)
    assert fake_provider.requests == []


# --- whole responses -----------------------------------------------------------------


async def test_text_reasoning_and_usage(fake_provider: FakeProvider) -> None:
    """Reasoning summary + encrypted content, text and detailed usage decode."""
    usage = responses_usage(inputs=200, outputs=50, cached=120, reasoning=30, written=8)
    fake_provider.reply(
        response(reasoning_item("Adding numbers", "ENC"), message_item("5"), usage=usage)
    )
    answer = ok(await responses_model(fake_provider).request(ask()))
    assert answer.message.parts == (ReasoningPart("Adding numbers", signature="ENC"), TextPart("5"))
    assert answer.usage == Usage(200, 50, 120, 8, 30, 1)
    assert answer.finish_reason == "stop"
    assert answer.model_name == "gpt-test-2026"


async def test_reasoning_round_trip(fake_provider: FakeProvider) -> None:
    """The decoded reasoning part is sent back as a reasoning item without its id."""
    fake_provider.reply(
        response(reasoning_item("", "ENC-XYZ"), function_item("c1", "add", '{"a":1,"b":1}')),
        response(message_item("2")),
    )
    model = responses_model(fake_provider)
    first = ok(await model.request(ask(tools=(ADD,))))
    assert first.message.parts[0] == ReasoningPart("", signature="ENC-XYZ")
    results = Message("tool", (ToolResultPart("c1", "add", "2"),))
    await model.request(ModelRequest((Message.user("hi"), first.message, results), tools=(ADD,)))
    items = body(fake_provider)["input"]
    assert items[1] == {"type": "reasoning", "summary": [], "encrypted_content": "ENC-XYZ"}
    assert items[2]["type"] == "function_call"
    assert "id" not in items[2]


async def test_parallel_function_calls(fake_provider: FakeProvider) -> None:
    """function_call items become ToolCallParts with their call ids; finish tool_calls."""
    fake_provider.reply(
        response(function_item("c1", "add", '{"a":1,"b":2}'), function_item("c2", "add", "{}"))
    )
    answer = ok(await responses_model(fake_provider).request(ask(tools=(ADD,))))
    assert answer.tool_calls == (
        ToolCallPart("c1", "add", '{"a":1,"b":2}'),
        ToolCallPart("c2", "add", "{}"),
    )
    assert answer.finish_reason == "tool_calls"


@pytest.mark.parametrize(
    ("reason", "finish"), [("max_output_tokens", "length"), ("content_filter", "content_filter")]
)
async def test_incomplete_finish_reasons(
    fake_provider: FakeProvider, reason: str, finish: str
) -> None:
    """An incomplete response maps its reason to length or content_filter."""
    fake_provider.reply(response(message_item("cut"), status="incomplete", incomplete=reason))
    assert ok(await responses_model(fake_provider).request(ask())).finish_reason == finish


async def test_failed_response_is_an_error(fake_provider: FakeProvider) -> None:
    """A response with status failed returns the error its code names."""
    fake_provider.reply(
        response(status="failed", error={"code": "server_error", "message": "oops"})
    )
    result = await responses_model(fake_provider).request(ask())
    assert isinstance(result, Failure)
    assert isinstance(result.failure(), ProviderUnavailable)
    assert "oops" in result.failure().message


# --- streaming -----------------------------------------------------------------------


async def test_stream_text_then_completed_response(fake_provider: FakeProvider) -> None:
    """Text and reasoning deltas, usage, then the response decoded from response.completed."""
    final_output = (reasoning_item("Think", "ENC"), message_item("Hello"))
    fake_provider.reply(
        sse(
            event("response.created", response=response_obj(status="in_progress")),
            event(
                "response.reasoning_summary_text.delta",
                item_id="rs_1",
                output_index=0,
                summary_index=0,
                delta="Think",
            ),
            event(
                "response.output_item.added",
                output_index=1,
                item={
                    "type": "message",
                    "id": "msg_1",
                    "role": "assistant",
                    "status": "in_progress",
                    "content": [],
                },
            ),
            event(
                "response.output_text.delta",
                item_id="msg_1",
                output_index=1,
                content_index=0,
                delta="Hel",
                logprobs=[],
            ),
            event(
                "response.output_text.delta",
                item_id="msg_1",
                output_index=1,
                content_index=0,
                delta="lo",
                logprobs=[],
            ),
            completed(*final_output),
        ),
        response(*final_output),
    )
    model = responses_model(fake_provider)
    items = await collect(model, ask())
    assert body(fake_provider, 0)["stream"] is True
    assert items[:-1] == [
        ReasoningDelta("Think"),
        TextDelta("Hel"),
        TextDelta("lo"),
        UsageReported(Usage(10, 5, 0, 0, 0, 1)),
    ]
    assert items[-1] == ok(await model.request(ask()))


async def test_stream_function_call_arguments(fake_provider: FakeProvider) -> None:
    """output_item.added starts a call; argument deltas follow by item id."""
    fake_provider.reply(
        sse(
            event(
                "response.output_item.added",
                output_index=0,
                item={
                    "type": "function_call",
                    "id": "fc_1",
                    "call_id": "c1",
                    "name": "add",
                    "arguments": "",
                    "status": "in_progress",
                },
            ),
            event(
                "response.output_item.added",
                output_index=1,
                item={
                    "type": "function_call",
                    "id": "fc_2",
                    "call_id": "c2",
                    "name": "add",
                    "arguments": "",
                    "status": "in_progress",
                },
            ),
            event(
                "response.function_call_arguments.delta",
                item_id="fc_1",
                output_index=0,
                delta='{"a": 1,',
            ),
            event(
                "response.function_call_arguments.delta",
                item_id="fc_2",
                output_index=1,
                delta='{"a": 2, "b": 2}',
            ),
            event(
                "response.function_call_arguments.delta",
                item_id="fc_1",
                output_index=0,
                delta=' "b": 1}',
            ),
            completed(
                function_item("c1", "add", '{"a": 1, "b": 1}', "fc_1"),
                function_item("c2", "add", '{"a": 2, "b": 2}', "fc_2"),
            ),
        )
    )
    items = await collect(responses_model(fake_provider), ask(tools=(ADD,)))
    assert items[:5] == [
        ToolCallStarted("c1", "add"),
        ToolCallStarted("c2", "add"),
        ToolCallArgsDelta("c1", '{"a": 1,'),
        ToolCallArgsDelta("c2", '{"a": 2, "b": 2}'),
        ToolCallArgsDelta("c1", ' "b": 1}'),
    ]
    final = items[-1]
    assert isinstance(final, ModelResponse)
    assert final.tool_calls == (
        ToolCallPart("c1", "add", '{"a": 1, "b": 1}'),
        ToolCallPart("c2", "add", '{"a": 2, "b": 2}'),
    )
    assert final.finish_reason == "tool_calls"


async def test_stream_incomplete_is_terminal(fake_provider: FakeProvider) -> None:
    """response.incomplete ends the stream with finish_reason length."""
    fake_provider.reply(
        sse(
            event(
                "response.incomplete",
                response=response_obj(
                    message_item("cu"), status="incomplete", incomplete="max_output_tokens"
                ),
            ),
        )
    )
    final = (await collect(responses_model(fake_provider), ask()))[-1]
    assert isinstance(final, ModelResponse)
    assert final.finish_reason == "length"


async def test_stream_without_completed_is_interrupted(fake_provider: FakeProvider) -> None:
    """A stream that ends before response.completed yields StreamInterrupted."""
    fake_provider.reply(
        sse(
            event(
                "response.output_text.delta",
                item_id="m",
                output_index=0,
                content_index=0,
                delta="par",
                logprobs=[],
            ),
        )
    )
    items = await collect(responses_model(fake_provider), ask())
    assert items[0] == TextDelta("par")
    assert isinstance(items[-1], StreamInterrupted)


async def test_stream_failed_event(fake_provider: FakeProvider) -> None:
    """response.failed ends the stream with the error its code names."""
    fake_provider.reply(
        sse(
            event(
                "response.failed",
                response=response_obj(
                    status="failed", error={"code": "rate_limit_exceeded", "message": "slow"}
                ),
            ),
        )
    )
    items = await collect(responses_model(fake_provider), ask())
    assert len(items) == 1
    assert isinstance(items[0], RateLimited)


async def test_stream_error_event(fake_provider: FakeProvider) -> None:
    """An `error` event ends the stream with a ModelError carrying its message."""
    fake_provider.reply(
        sse(event("error", code="invalid_prompt", message="bad prompt", param=None))
    )
    items = await collect(responses_model(fake_provider), ask())
    assert len(items) == 1
    error = items[0]
    assert isinstance(error, ModelError)
    assert isinstance(error, BadRequest)
    assert "bad prompt" in error.message


# --- tool-call ids and arguments as compatible servers send them -----------------------

Mode: TypeAlias = Literal["whole", "added", "delta"]
"""How the calls arrive: a whole response; streamed with the arguments in the
``output_item.added`` item; streamed with them in one ``function_call_arguments.delta``."""


def calls_reply(mode: Mode, ids: tuple[Any, ...], args: tuple[Any, ...]) -> Reply:
    """A message, then one add call per id and arguments, in the given mode."""
    lead = message_item("Adding.")
    items = [
        function_item(i, "add", a, f"fc_{n}")
        for n, (i, a) in enumerate(zip(ids, args, strict=True))
    ]
    if mode == "whole":
        return response(lead, *items)
    events = [event("response.output_item.added", output_index=0, item=lead)]
    for n, item in enumerate(items, 1):
        added = {**item, "status": "in_progress"}
        if mode == "delta":
            added["arguments"] = ""
        events.append(event("response.output_item.added", output_index=n, item=added))
        if mode == "delta":
            delta = {"item_id": item["id"], "output_index": n, "delta": item["arguments"]}
            events.append(event("response.function_call_arguments.delta", **delta))
    return sse(*events, completed(lead, *items))


async def test_calls_without_ids_get_fallback_ids_in_both_modes(
    fake_provider: FakeProvider,
) -> None:
    """Missing, null and empty call_ids become call_<index> alike whole and streamed."""
    args = tuple(f'{{"a": {n}, "b": 1}}' for n in range(len(IDS)))
    fake_provider.reply(calls_reply("whole", IDS, args), calls_reply("delta", IDS, args))
    _, whole = await decoded(responses_model(fake_provider), False)
    items, streamed = await decoded(responses_model(fake_provider), True)
    assert [c.id for c in whole.tool_calls] == ASSIGNED
    assert streamed == whole
    assert streamed_calls(items) == call_map(whole)


@pytest.mark.parametrize("mode", ["whole", "delta"])
async def test_assigned_ids_are_sent_back(fake_provider: FakeProvider, mode: Mode) -> None:
    """The next request carries the assigned ids on the calls and on their outputs."""
    fake_provider.reply(calls_reply(mode, IDS, ("{}",) * len(IDS)), response(message_item("ok")))
    _, first = await decoded(responses_model(fake_provider), mode != "whole")
    await responses_model(fake_provider).request(follow_up(first, (ADD,)))
    sent = body(fake_provider)["input"]
    assert [i["call_id"] for i in sent if i["type"] == "function_call"] == ASSIGNED
    assert [i["call_id"] for i in sent if i["type"] == "function_call_output"] == ASSIGNED


@pytest.mark.parametrize("mode", ["whole", "added", "delta"])
@pytest.mark.parametrize(("wire", "text"), PARSED_ARGUMENTS)
async def test_parsed_arguments_become_json_text(
    fake_provider: FakeProvider, mode: Mode, wire: Any, text: str
) -> None:
    """Arguments sent as JSON values, not strings, decode to JSON text and go back as such."""
    fake_provider.reply(calls_reply(mode, ("c1",), (wire,)), response(message_item("ok")))
    items, first = await decoded(responses_model(fake_provider), mode != "whole")
    assert first.tool_calls == (ToolCallPart("c1", "add", text),)
    if items:
        assert streamed_calls(items) == call_map(first)
    await responses_model(fake_provider).request(follow_up(first, (ADD,)))
    calls = [i for i in body(fake_provider)["input"] if i["type"] == "function_call"]
    assert [c["arguments"] for c in calls] == [text]
