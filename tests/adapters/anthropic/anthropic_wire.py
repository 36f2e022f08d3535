"""Messages API wire fixtures: response bodies and the equivalent SSE event streams.

`body(...)` and `events(...)` describe the same answer, so a test can check that the
streamed and the non-streamed decoding agree.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from fake_provider import FakeProvider, Reply, sse
from fncore_anthropic import AnthropicModel
from support import ABSENT

from fncore import ModelError, ModelRequest, ModelResponse
from fncore.core import ModelStreamItem, StreamDelta


class MakeModel(Protocol):
    """Builds an `AnthropicModel` (on the fake server unless ``url`` is given)."""

    def __call__(self, url: str | None = None, **options: Any) -> AnthropicModel: ...


KEY = "sk-ant-test-0123456789abcdef"
"""The API key every test model uses; no error message may contain it."""

MODEL = "claude-test-1"


def text(value: str) -> dict[str, Any]:
    """A text block."""
    return {"type": "text", "text": value}


def tool_use(call_id: Any, name: str, **arguments: Any) -> dict[str, Any]:
    """A tool_use block (no ``id`` field when ``call_id`` is `ABSENT`)."""
    block: dict[str, Any] = {"type": "tool_use", "id": call_id, "name": name, "input": arguments}
    if call_id is ABSENT:
        del block["id"]
    return block


def thinking(value: str, signature: str) -> dict[str, Any]:
    """A thinking block with its signature."""
    return {"type": "thinking", "thinking": value, "signature": signature}


def redacted(data: str) -> dict[str, Any]:
    """A redacted_thinking block."""
    return {"type": "redacted_thinking", "data": data}


def usage(
    input_tokens: int = 10,
    output_tokens: int = 5,
    *,
    cache_read: int | None = None,
    cache_write: int | None = None,
    thinking_tokens: int | None = None,
) -> dict[str, Any]:
    """A usage object."""
    u: dict[str, Any] = {"input_tokens": input_tokens, "output_tokens": output_tokens}
    if cache_read is not None:
        u["cache_read_input_tokens"] = cache_read
    if cache_write is not None:
        u["cache_creation_input_tokens"] = cache_write
    if thinking_tokens is not None:
        u["output_tokens_details"] = {"thinking_tokens": thinking_tokens}
    return u


def body(
    *content: dict[str, Any],
    stop_reason: str | None = "end_turn",
    use: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A non-streamed Messages response."""
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": list(content),
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": use or usage(),
    }


def events(
    *content: dict[str, Any],
    stop_reason: str | None = "end_turn",
    use: dict[str, Any] | None = None,
    chunk: int = 3,
) -> list[tuple[str | None, Any]]:
    """The SSE events of the same response, with a ping among them.

    Text, thinking and tool input arrive in ``chunk``-sized fragments.
    """
    final = use or usage()
    start_usage = {**final, "output_tokens": 1}
    start_usage.pop("output_tokens_details", None)
    out: list[tuple[str | None, Any]] = [
        (
            "message_start",
            {"type": "message_start", "message": {**body(use=start_usage), "stop_reason": None}},
        ),
        ("ping", {"type": "ping"}),
    ]
    for index, block in enumerate(content):
        out.extend(_block_events(index, block, chunk))
    delta_usage = {k: v for k, v in final.items() if k != "input_tokens"}
    out.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": delta_usage,
            },
        )
    )
    out.append(("message_stop", {"type": "message_stop"}))
    return out


def _pieces(value: str, chunk: int) -> list[str]:
    return [value[i : i + chunk] for i in range(0, len(value), chunk)]


def _block_events(index: int, block: dict[str, Any], chunk: int) -> list[tuple[str, Any]]:
    kind = block["type"]
    start: dict[str, Any]
    deltas: list[dict[str, Any]] = []
    if kind == "text":
        start = text("")
        deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"], chunk)]
    elif kind == "thinking":
        start = thinking("", "")
        deltas = [
            {"type": "thinking_delta", "thinking": p} for p in _pieces(block["thinking"], chunk)
        ]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind == "tool_use":
        start = {**block, "input": {}}
        arguments = json.dumps(block["input"], separators=(",", ":"))
        deltas = [
            {"type": "input_json_delta", "partial_json": p} for p in _pieces(arguments, chunk)
        ]
    else:
        start = block
    return [
        (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        ),
        *[
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        ],
        ("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


def stream_reply(*content: dict[str, Any], **options: Any) -> Reply:
    """A streamed reply of ``content``."""
    return sse(*events(*content, **options))


async def collect(
    m: AnthropicModel, request: ModelRequest
) -> tuple[list[StreamDelta], ModelResponse | ModelError]:
    """The deltas of a stream and its one final item (asserting it is last and single)."""
    items: list[ModelStreamItem] = [item async for item in m.stream(request)]
    assert items, "the stream yielded nothing"
    *deltas, last = items
    assert not any(isinstance(d, ModelResponse | ModelError) for d in deltas), items
    assert isinstance(last, ModelResponse | ModelError), last
    return deltas, last  # type: ignore[return-value]


def sent(fake: FakeProvider, index: int = -1) -> dict[str, Any]:
    """The JSON body of a request the server received."""
    recorded: dict[str, Any] = fake.requests[index].body
    return recorded
