"""Wire-format builders for the OpenAI tests: completions, chunks, responses, events."""

from __future__ import annotations

import json
from typing import Any

from fake_provider import FakeProvider, Reply, sse
from fncore_openai import OpenAIChatModel, OpenAIResponsesModel
from openai import AsyncOpenAI
from returns.result import Success
from support import ABSENT, add

from fncore import Message, Model, ModelRequest, ModelResponse, Tool
from fncore.core import ModelStreamItem

KEY = "sk-test-SECRET-0123456789"
"""The API key the tests use; it must never appear in an error message."""


_OPEN: list[AsyncOpenAI] = []


async def close_clients() -> None:
    """Close the SDK clients the builders below made (call at the end of each test)."""
    while _OPEN:
        await _OPEN.pop().close()


def chat_model(fake: FakeProvider | str, **options: Any) -> OpenAIChatModel:
    """A chat model on the fake server (or a base URL), without retries."""
    options.setdefault("timeout", 5.0)
    url = fake if isinstance(fake, str) else f"{fake.url}/v1"
    model = OpenAIChatModel("gpt-test", api_key=KEY, base_url=url, max_retries=0, **options)
    _OPEN.append(model.client)
    return model


def responses_model(fake: FakeProvider | str, **options: Any) -> OpenAIResponsesModel:
    """A Responses model on the fake server (or a base URL), without retries."""
    options.setdefault("timeout", 5.0)
    url = fake if isinstance(fake, str) else f"{fake.url}/v1"
    model = OpenAIResponsesModel("gpt-test", api_key=KEY, base_url=url, max_retries=0, **options)
    _OPEN.append(model.client)
    return model


def body(fake: FakeProvider, n: int = -1) -> dict[str, Any]:
    """The JSON body of the ``n``-th request the server received."""
    received: dict[str, Any] = fake.requests[n].body
    return received


# --- Chat Completions -----------------------------------------------------------------


def chat_usage(
    prompt: int = 10, completion: int = 5, cached: int = 0, reasoning: int = 0, written: int = 0
) -> dict[str, Any]:
    """A Chat Completions usage object."""
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached, "cache_write_tokens": written},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }


def call(call_id: Any, name: str, arguments: Any) -> dict[str, Any]:
    """A tool call in a completion message (no ``id`` field when ``call_id`` is `ABSENT`)."""
    wire: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": arguments}}
    if call_id is not ABSENT:
        wire["id"] = call_id
    return wire


def completion(
    content: str | None = None,
    *,
    calls: tuple[dict[str, Any], ...] = (),
    finish: str = "stop",
    usage: dict[str, Any] | None = None,
    **message_extra: Any,
) -> Reply:
    """A whole chat completion."""
    message: dict[str, Any] = {"role": "assistant", "content": content, **message_extra}
    if calls:
        message["tool_calls"] = list(calls)
    return Reply(
        body={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-test-2026",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage or chat_usage(),
        }
    )


def chunk(
    delta: dict[str, Any] | None = None,
    *,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
) -> tuple[None, dict[str, Any]]:
    """One streamed chunk (no choices when ``delta`` is None)."""
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return (
        None,
        {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-test-2026",
            "choices": choices,
            "usage": usage,
        },
    )


def call_chunk(
    index: int, *, call_id: Any = ABSENT, name: str | None = None, args: Any = ABSENT
) -> tuple[None, dict[str, Any]]:
    """A chunk carrying one tool-call fragment (``id`` and ``arguments`` only when given)."""
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if args is not ABSENT:
        function["arguments"] = args
    fragment: dict[str, Any] = {"index": index, "function": function}
    if call_id is not ABSENT:
        fragment.update(id=call_id, type="function")
    return chunk({"tool_calls": [fragment]})


DONE: tuple[None, str] = (None, "[DONE]")

PARSED_ARGUMENTS: list[tuple[Any, str]] = [
    ({"a": 1, "b": 2}, json.dumps({"a": 1, "b": 2})),
    ({}, "{}"),
    (None, "{}"),
    (7, "7"),
]
"""Arguments sent as JSON values instead of strings, and the JSON text each decodes to."""


def chat_stream(
    *events: tuple[None, Any],
    usage: dict[str, Any] | None = None,
    finish: str = "stop",
    cut_after: int | None = None,
) -> Reply:
    """A full chat stream: ``events``, a finish chunk, a usage chunk, ``[DONE]``."""
    return sse(
        *events,
        chunk({}, finish=finish),
        chunk(usage=usage or chat_usage()),
        DONE,
        cut_after=cut_after,
    )


# --- Responses -------------------------------------------------------------------------


def responses_usage(
    inputs: int = 10, outputs: int = 5, cached: int = 0, reasoning: int = 0, written: int = 0
) -> dict[str, Any]:
    """A Responses usage object."""
    return {
        "input_tokens": inputs,
        "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": written},
        "output_tokens": outputs,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": inputs + outputs,
    }


def message_item(text: str, item_id: str = "msg_1") -> dict[str, Any]:
    """An assistant message output item."""
    return {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def function_item(call_id: Any, name: str, arguments: Any, item_id: str = "") -> dict[str, Any]:
    """A function_call output item (no ``call_id`` field when ``call_id`` is `ABSENT`)."""
    item: dict[str, Any] = {
        "type": "function_call",
        "id": item_id or f"fc_{call_id}",
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }
    if call_id is not ABSENT:
        item["call_id"] = call_id
    return item


def reasoning_item(summary: str, encrypted: str | None, item_id: str = "rs_1") -> dict[str, Any]:
    """A reasoning output item."""
    return {
        "type": "reasoning",
        "id": item_id,
        "summary": [{"type": "summary_text", "text": summary}] if summary else [],
        "encrypted_content": encrypted,
    }


def response_obj(
    *output: dict[str, Any],
    status: str = "completed",
    incomplete: str | None = None,
    usage: dict[str, Any] | None = None,
    error: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A Responses ``response`` object."""
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "model": "gpt-test-2026",
        "status": status,
        "error": error,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "output": list(output),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage or responses_usage(),
    }


def response(*output: dict[str, Any], **kwargs: Any) -> Reply:
    """A whole Responses answer."""
    return Reply(body=response_obj(*output, **kwargs))


def event(kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
    """One Responses stream event (named, as OpenAI sends them)."""
    return (kind, {"type": kind, "sequence_number": 0, **fields})


def completed(*output: dict[str, Any], **kwargs: Any) -> tuple[str, dict[str, Any]]:
    """The terminal ``response.completed`` event."""
    return event("response.completed", response=response_obj(*output, **kwargs))


# --- request and result helpers shared by the chat and Responses tests ------------------


def greet(name: str, polite: bool = True) -> str:
    """Greet someone."""
    return name


ADD = Tool.from_function(add).spec
"""The spec of the ``add`` tool."""


def ask(text: str = "hi", **kwargs: Any) -> ModelRequest:
    """A one-message request."""
    return ModelRequest((Message.user(text),), **kwargs)


async def collect(model: Model, request: ModelRequest) -> list[ModelStreamItem]:
    """Every item the model's stream yields."""
    return [item async for item in model.stream(request)]


def ok(result: object) -> ModelResponse:
    """Unwrap a successful model result."""
    assert isinstance(result, Success), result
    response: ModelResponse = result.unwrap()
    return response


async def decoded(model: Model, streamed: bool) -> tuple[list[ModelStreamItem], ModelResponse]:
    """The stream's items (none when not streamed) and the response, to a request with ADD."""
    if not streamed:
        return [], ok(await model.request(ask(tools=(ADD,))))
    items = await collect(model, ask(tools=(ADD,)))
    last = items[-1]
    assert isinstance(last, ModelResponse), last
    return items, last
