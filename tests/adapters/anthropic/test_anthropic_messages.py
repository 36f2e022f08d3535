"""Non-streamed Messages calls: what the adapter sends and how it decodes the answer."""

from __future__ import annotations

import base64
from typing import Any, Protocol

import pytest
from anthropic_fixtures import fake_provider_fixture, make_model_fixture, shared_server_fixture  # noqa: F401
from anthropic_wire import (
    KEY,
    MODEL,
    MakeModel,
    body,
    redacted,
    sent,
    text,
    thinking,
    tool_use,
    usage,
)
from fake_provider import FakeProvider, Reply
from returns.result import Failure, Success

from fncore import (
    DataPart,
    Message,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    ReasoningPart,
    RequireTool,
    TextPart,
    ToolCallPart,
    ToolChoice,
    ToolResultPart,
    ToolSpec,
    Usage,
)
from fncore.errors import BadRequest

ADD = ToolSpec(
    "add",
    "Add two integers.",
    {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    },
    strict=True,
)


class Answer(Protocol):
    """Sends a request to the fake server, which answers ``reply``; returns the response."""

    async def __call__(
        self, request: ModelRequest, reply: dict[str, Any] | None = None, **options: Any
    ) -> ModelResponse: ...


ECHO = ToolSpec("echo", "Echo the text.", {"type": "object", "properties": {"text": {}}})


@pytest.fixture
def answer(fake_provider: FakeProvider, make_model: MakeModel) -> Answer:
    """Send a request to the fake server answering a reply; return the response."""

    async def send(
        request: ModelRequest, reply: dict[str, Any] | None = None, **options: Any
    ) -> ModelResponse:
        fake_provider.reply(Reply(200, reply or body(text("ok"))))
        result = await make_model(**options).request(request)
        assert isinstance(result, Success), result
        response: ModelResponse = result.unwrap()
        return response

    return send


async def test_text_response_and_request_basics(
    fake_provider: FakeProvider, answer: Answer
) -> None:
    """A text answer decodes; the request goes to /v1/messages with model, max_tokens, key."""
    response = await answer(ModelRequest((Message.user("hi"),)))
    assert response == ModelResponse(
        Message.assistant("ok"), Usage(10, 5, requests=1), "stop", MODEL
    )
    recorded = fake_provider.requests[0]
    assert (recorded.method, recorded.path) == ("POST", "/v1/messages")
    assert recorded.headers["Authorization"] == f"Bearer {KEY}"
    assert "anthropic-version" in recorded.headers
    assert recorded.body == {
        "model": MODEL,
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    }


async def test_system_from_instructions_and_system_messages(
    fake_provider: FakeProvider, answer: Answer
) -> None:
    """Instructions, then system-role messages, form ``system``; none stay in ``messages``."""
    request = ModelRequest(
        (Message.system("rule one"), Message.user("hi"), Message.system("rule two")),
        instructions="be brief",
    )
    await answer(request)
    sent_body = sent(fake_provider)
    assert sent_body["system"] == [
        {"type": "text", "text": "be brief"},
        {"type": "text", "text": "rule one"},
        {"type": "text", "text": "rule two"},
    ]
    assert [m["role"] for m in sent_body["messages"]] == ["user"]


async def test_no_system_when_empty(fake_provider: FakeProvider, answer: Answer) -> None:
    """Empty instructions and no system message: no ``system`` key at all."""
    await answer(ModelRequest((Message.user("hi"),)))
    assert "system" not in sent(fake_provider)


async def test_cache_instructions_marks_last_system_block(
    fake_provider: FakeProvider, answer: Answer
) -> None:
    """``cache_instructions`` puts ``cache_control`` on the last system block only."""
    request = ModelRequest(
        (Message.system("rule"), Message.user("hi")),
        instructions="be brief",
        cache_instructions=True,
    )
    await answer(request)
    system = sent(fake_provider)["system"]
    assert "cache_control" not in system[0]
    assert system[1]["cache_control"] == {"type": "ephemeral"}


async def test_tools_and_cache_tools(fake_provider: FakeProvider, answer: Answer) -> None:
    """Tools go as name/description/input_schema (strict when valid); cache marks the last."""
    request = ModelRequest((Message.user("hi"),), tools=(ECHO, ADD), cache_tools=True)
    await answer(request)
    tools = sent(fake_provider)["tools"]
    assert tools == [
        {"name": "echo", "description": "Echo the text.", "input_schema": dict(ECHO.parameters)},
        {
            "name": "add",
            "description": "Add two integers.",
            "input_schema": dict(ADD.parameters),
            "strict": True,
            "cache_control": {"type": "ephemeral"},
        },
    ]


@pytest.mark.parametrize(
    ("choice", "parallel", "expected"),
    [
        ("auto", None, {"type": "auto"}),
        ("none", None, {"type": "none"}),
        ("required", None, {"type": "any"}),
        (RequireTool("add"), None, {"type": "tool", "name": "add"}),
        ("auto", False, {"type": "auto", "disable_parallel_tool_use": True}),
        ("required", False, {"type": "any", "disable_parallel_tool_use": True}),
        ("auto", True, {"type": "auto"}),
    ],
)
async def test_tool_choice_mapping(
    fake_provider: FakeProvider,
    answer: Answer,
    choice: ToolChoice,
    parallel: bool | None,
    expected: object,
) -> None:
    """auto/none/required/RequireTool map to auto/none/any/tool; parallel=False disables it."""
    request = ModelRequest(
        (Message.user("hi"),),
        tools=(ADD,),
        tool_choice=choice,
        settings=ModelSettings(parallel_tool_calls=parallel),
    )
    await answer(request)
    assert sent(fake_provider)["tool_choice"] == expected


async def test_no_tool_choice_without_tools(fake_provider: FakeProvider, answer: Answer) -> None:
    """Without tools neither ``tools`` nor ``tool_choice`` is sent."""
    await answer(ModelRequest((Message.user("hi"),), tool_choice="required"))
    assert "tools" not in sent(fake_provider)
    assert "tool_choice" not in sent(fake_provider)


async def test_require_unknown_tool_is_bad_request_before_sending(
    fake_provider: FakeProvider,
    make_model: MakeModel,
) -> None:
    """RequireTool naming a tool that is not offered fails locally with BadRequest."""
    request = ModelRequest((Message.user("hi"),), tools=(ADD,), tool_choice=RequireTool("mul"))
    result = await make_model().request(request)
    assert isinstance(result, Failure)
    assert isinstance(result.failure(), BadRequest)
    assert "'mul'" in result.failure().message
    assert fake_provider.requests == []


async def test_settings_are_sent(fake_provider: FakeProvider, answer: Answer) -> None:
    """temperature, top_p, max_tokens, stop and extra reach the body; seed is not sent."""
    settings = ModelSettings(
        temperature=0.2,
        top_p=0.9,
        max_tokens=300,
        stop=("END", "STOP"),
        seed=7,
        extra={"thinking": {"type": "enabled", "budget_tokens": 2048}, "top_k": 5},
    )
    await answer(ModelRequest((Message.user("hi"),), settings=settings))
    sent_body = sent(fake_provider)
    assert sent_body["temperature"] == 0.2
    assert sent_body["top_p"] == 0.9
    assert sent_body["max_tokens"] == 300
    assert sent_body["stop_sequences"] == ["END", "STOP"]
    assert sent_body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert sent_body["top_k"] == 5
    assert "seed" not in sent_body


async def test_default_max_tokens_from_constructor(
    fake_provider: FakeProvider, answer: Answer
) -> None:
    """Without settings.max_tokens the constructor's ``default_max_tokens`` is sent."""
    await answer(ModelRequest((Message.user("hi"),)), default_max_tokens=123)
    assert sent(fake_provider)["max_tokens"] == 123


async def test_extra_headers_in_settings_extra(fake_provider: FakeProvider, answer: Answer) -> None:
    """An SDK keyword in settings.extra (extra_headers) is passed to the SDK call."""
    settings = ModelSettings(extra={"extra_headers": {"anthropic-beta": "some-beta"}})
    await answer(ModelRequest((Message.user("hi"),), settings=settings))
    assert fake_provider.requests[0].headers["anthropic-beta"] == "some-beta"


def _history() -> tuple[Message, ...]:
    calls = Message(
        "assistant",
        (
            TextPart("let me add"),
            ToolCallPart("c1", "add", '{"a": 2, "b": 3}'),
            ToolCallPart("c2", "add", '{"a": 1, "b": 1}'),
        ),
    )
    results = Message(
        "tool",
        (
            ToolResultPart("c1", "add", "5"),
            ToolResultPart("c2", "add", "boom", is_error=True),
        ),
    )
    return (Message.user("add things"), calls, results)


async def test_tool_calls_and_results_are_paired(
    fake_provider: FakeProvider, answer: Answer
) -> None:
    """Calls become tool_use blocks; results one user turn of tool_result blocks in order."""
    await answer(ModelRequest(_history(), tools=(ADD,)))
    messages = sent(fake_provider)["messages"]
    assert messages[1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "let me add"},
            {"type": "tool_use", "id": "c1", "name": "add", "input": {"a": 2, "b": 3}},
            {"type": "tool_use", "id": "c2", "name": "add", "input": {"a": 1, "b": 1}},
        ],
    }
    assert messages[2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "c1", "content": "5", "is_error": False},
            {"type": "tool_result", "tool_use_id": "c2", "content": "boom", "is_error": True},
        ],
    }


async def test_roles_alternate_tool_results_merge_with_user_text(
    fake_provider: FakeProvider,
    answer: Answer,
) -> None:
    """A user message next to tool results joins their user turn, results first."""
    history = (
        Message.user("first"),
        Message.user("second"),
        *_history()[1:],
        Message.user("and now?"),
        Message.assistant("one"),
        Message.assistant("two"),
    )
    await answer(ModelRequest(history, tools=(ADD,)))
    messages = sent(fake_provider)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    assert [b["text"] for b in messages[0]["content"]] == ["first", "second"]
    assert [b["type"] for b in messages[2]["content"]] == ["tool_result", "tool_result", "text"]
    assert [b["text"] for b in messages[3]["content"]] == ["one", "two"]


async def test_tool_results_lead_a_turn_even_after_user_text(
    fake_provider: FakeProvider, answer: Answer
) -> None:
    """Results following a user message in the same turn are moved before its text."""
    user, calls, results = _history()
    history = (user, calls, Message.user("note"), results)
    await answer(ModelRequest(history, tools=(ADD,)))
    turn = sent(fake_provider)["messages"][2]["content"]
    assert [b["type"] for b in turn] == ["tool_result", "tool_result", "text"]


async def test_invalid_json_arguments_in_history_are_sent_raw(
    fake_provider: FakeProvider,
    answer: Answer,
) -> None:
    """Arguments that are not a JSON object go as {"_raw": text}; empty ones as {}."""
    history = (
        Message.user("go"),
        Message(
            "assistant",
            (
                ToolCallPart("c1", "add", '{"a": 2,'),
                ToolCallPart("c2", "add", "[1, 2]"),
                ToolCallPart("c3", "add", ""),
            ),
        ),
        Message(
            "tool",
            tuple(ToolResultPart(c, "add", "invalid", is_error=True) for c in ("c1", "c2", "c3")),
        ),
    )
    await answer(ModelRequest(history, tools=(ADD,)))
    inputs = [b["input"] for b in sent(fake_provider)["messages"][1]["content"]]
    assert inputs == [{"_raw": '{"a": 2,'}, {"_raw": "[1, 2]"}, {}]


async def test_thinking_round_trip(fake_provider: FakeProvider, answer: Answer) -> None:
    """Thinking and redacted thinking decode to ReasoningParts and are sent back unchanged."""
    reply = body(
        thinking("I should add.", "sig-1"),
        redacted("ENCRYPTED"),
        tool_use("c1", "add", a=2, b=3),
        stop_reason="tool_use",
    )
    request = ModelRequest((Message.user("add 2 and 3"),), tools=(ADD,))
    response = await answer(request, reply)
    assert response.message.parts == (
        ReasoningPart("I should add.", signature="sig-1"),
        ReasoningPart("", redacted="ENCRYPTED"),
        ToolCallPart("c1", "add", '{"a": 2, "b": 3}'),
    )
    assert response.finish_reason == "tool_calls"
    follow_up = ModelRequest(
        (*request.messages, response.message, Message("tool", (ToolResultPart("c1", "add", "5"),))),
        tools=(ADD,),
    )
    await answer(follow_up)
    assert sent(fake_provider)["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "I should add.", "signature": "sig-1"},
        {"type": "redacted_thinking", "data": "ENCRYPTED"},
        {"type": "tool_use", "id": "c1", "name": "add", "input": {"a": 2, "b": 3}},
    ]


async def test_reasoning_without_signature_is_not_sent(
    fake_provider: FakeProvider, answer: Answer
) -> None:
    """Reasoning with no signature (another provider's summary) cannot be sent back: dropped."""
    history = (
        Message.user("hi"),
        Message("assistant", (ReasoningPart("a summary"), TextPart("hello"))),
        Message.user("again"),
    )
    await answer(ModelRequest(history))
    assert sent(fake_provider)["messages"][1]["content"] == [{"type": "text", "text": "hello"}]


async def test_message_cache_marks_its_last_block(
    fake_provider: FakeProvider, answer: Answer
) -> None:
    """Message.cache puts cache_control on that message's last block, skipping thinking."""
    _, calls, results = _history()
    history = (
        Message("user", (TextPart("a"), TextPart("b")), cache=True),
        Message(
            "assistant",
            (TextPart("x"), ReasoningPart("t", signature="s")),
            cache=True,
        ),
        Message.user("again"),
        calls,
        Message("tool", results.parts, cache=True),
    )
    await answer(ModelRequest(history, tools=(ADD,)))
    messages = sent(fake_provider)["messages"]
    marked = [
        (i, j)
        for i, m in enumerate(messages)
        for j, b in enumerate(m["content"])
        if b.get("cache_control") == {"type": "ephemeral"}
    ]
    # user [a, b*], assistant [x*, thinking], user [again], assistant [calls], user [r1, r2*]
    assert marked == [(0, 1), (1, 0), (4, 1)]


async def test_images_and_pdf(fake_provider: FakeProvider, answer: Answer) -> None:
    """Image DataParts become base64 image blocks, PDFs base64 document blocks."""
    png, pdf = b"\x89PNG\r\n", b"%PDF-1.7"
    message = Message(
        "user",
        (TextPart("what is this?"), DataPart(png, "image/png"), DataPart(pdf, "application/pdf")),
    )
    await answer(ModelRequest((message,)))
    content = sent(fake_provider)["messages"][0]["content"]
    assert content[1] == {
        "type": "image",
        "source": {
            "type": "base64",
            "media_type": "image/png",
            "data": base64.b64encode(png).decode(),
        },
    }
    assert content[2] == {
        "type": "document",
        "source": {
            "type": "base64",
            "media_type": "application/pdf",
            "data": base64.b64encode(pdf).decode(),
        },
    }


@pytest.mark.parametrize(
    ("message", "words"),
    [
        (Message("user", (DataPart(b"a,b", "text/csv"),)), "'text/csv'"),
        (Message("user", (DataPart(b"<svg/>", "image/svg+xml"),)), "'image/svg+xml'"),
        (Message("assistant", (DataPart(b"x", "image/png"),)), "DataPart"),
        (Message("user", (ToolCallPart("c1", "add"),)), "ToolCallPart"),
        (Message("system", (DataPart(b"x", "image/png"),)), "system"),
    ],
)
async def test_unexpressible_content_is_bad_request(
    fake_provider: FakeProvider, make_model: MakeModel, message: Message, words: str
) -> None:
    """Unsupported media types or misplaced parts give BadRequest and send nothing."""
    model_ = make_model()
    result = await model_.request(ModelRequest((message,)))
    assert isinstance(result, Failure)
    error = result.failure()
    assert isinstance(error, BadRequest)
    assert words in error.message
    assert error.provider == "anthropic"
    streamed = [item async for item in model_.stream(ModelRequest((message,)))]
    assert streamed == [error]
    assert fake_provider.requests == []


async def test_parallel_tool_calls_decode(fake_provider: FakeProvider, answer: Answer) -> None:
    """Several tool_use blocks give several ToolCallParts, in order."""
    reply = body(
        text("adding"),
        tool_use("c1", "add", a=1, b=2),
        tool_use("c2", "add", a=3, b=4),
        stop_reason="tool_use",
    )
    response = await answer(ModelRequest((Message.user("go"),), tools=(ADD,)), reply)
    assert response.text == "adding"
    assert response.tool_calls == (
        ToolCallPart("c1", "add", '{"a": 1, "b": 2}'),
        ToolCallPart("c2", "add", '{"a": 3, "b": 4}'),
    )


async def test_usage_with_cache_and_thinking(fake_provider: FakeProvider, answer: Answer) -> None:
    """input_tokens counts cached and cache-written tokens too; thinking is reasoning_tokens."""
    reply = body(text("ok"), use=usage(10, 50, cache_read=100, cache_write=20, thinking_tokens=30))
    response = await answer(ModelRequest((Message.user("hi"),)), reply)
    assert response.usage == Usage(
        input_tokens=130,
        output_tokens=50,
        cache_read_tokens=100,
        cache_write_tokens=20,
        reasoning_tokens=30,
        requests=1,
    )


@pytest.mark.parametrize(
    ("stop_reason", "expected"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("pause_turn", "stop"),
        ("max_tokens", "length"),
        ("model_context_window_exceeded", "length"),
        ("tool_use", "tool_calls"),
        ("refusal", "content_filter"),
    ],
)
async def test_finish_reasons(
    fake_provider: FakeProvider, answer: Answer, stop_reason: str, expected: str
) -> None:
    """Every stop_reason maps to fncore's finish reason."""
    reply = body(text("x"), stop_reason=stop_reason)
    response = await answer(ModelRequest((Message.user("hi"),)), reply)
    assert response.finish_reason == expected


async def test_server_tool_blocks_are_left_out(fake_provider: FakeProvider, answer: Answer) -> None:
    """Blocks fncore has no part for (server tool use) are skipped, text kept."""
    reply = body(
        {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"q": "x"}},
        text("found it"),
    )
    response = await answer(ModelRequest((Message.user("hi"),)), reply)
    assert response.message.parts == (TextPart("found it"),)


async def test_unknown_block_types_are_left_out(answer: Answer) -> None:
    """A content block type newer than the adapter is skipped, not mistaken for text."""
    reply = body({"type": "some_future_block", "payload": 1}, text("still here"))
    response = await answer(ModelRequest((Message.user("hi"),)), reply)
    assert response.message.parts == (TextPart("still here"),)


async def test_cached_system_message_marks_its_block(
    fake_provider: FakeProvider, answer: Answer
) -> None:
    """A system message with cache=True marks its own last block in ``system``."""
    request = ModelRequest(
        (Message("system", (TextPart("stable"),), cache=True), Message.user("hi")),
        instructions="first",
    )
    await answer(request)
    system = sent(fake_provider)["system"]
    assert [b.get("cache_control") for b in system] == [None, {"type": "ephemeral"}]


async def test_cache_ttl_goes_on_every_marker(fake_provider: FakeProvider, answer: Answer) -> None:
    """``cache_ttl`` adds ``ttl`` to each cache_control: system, tools and messages."""
    request = ModelRequest(
        (Message("user", (TextPart("hi"),), cache=True),),
        instructions="be brief",
        tools=(ECHO,),
        cache_instructions=True,
        cache_tools=True,
        cache_ttl="1h",
    )
    await answer(request)
    body = sent(fake_provider)
    marker = {"type": "ephemeral", "ttl": "1h"}
    assert body["system"][0]["cache_control"] == marker
    assert body["tools"][0]["cache_control"] == marker
    assert body["messages"][0]["content"][0]["cache_control"] == marker
