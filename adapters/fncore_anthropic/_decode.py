"""Decoding of a Messages API response into a fncore `ModelResponse`.

The builders here (`text_part`, `reasoning_part`, `call_part`, `usage_of`,
`finish_reason`) are shared with the stream decoder, so a streamed response equals the
non-streamed one for the same content.
"""

from __future__ import annotations

import json

from anthropic.types import (
    Message as WireMessage,
)
from anthropic.types import (
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
)

from fncore.adapter import (
    FinishReason,
    Message,
    ModelResponse,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    Usage,
    usable_call_id,
)

_FINISH: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    # Only server tools (web search, code execution) pause a turn, and fncore does not offer
    # them; the partial answer is returned as a normal stop.
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


def finish_reason(stop_reason: str | None, *, has_calls: bool) -> FinishReason:
    """The fncore finish reason for Anthropic's ``stop_reason``.

    Example:
        >>> finish_reason("max_tokens", has_calls=False), finish_reason(None, has_calls=True)
        ('length', 'tool_calls')
    """
    if stop_reason in _FINISH:
        return _FINISH[stop_reason]
    return "tool_calls" if has_calls else "stop"


def usage_of(
    input_tokens: int | None,
    output_tokens: int | None,
    cache_read: int | None,
    cache_write: int | None,
    thinking: int | None,
) -> Usage:
    """The fncore `Usage` for Anthropic's counts (``None`` is zero).

    Anthropic's ``input_tokens`` leaves out the cached prompt; fncore's includes both the
    tokens read from and written to the cache.

    Example:
        >>> usage_of(10, 5, 100, 20, None).input_tokens
        130
    """
    read = cache_read or 0
    write = cache_write or 0
    return Usage(
        input_tokens=(input_tokens or 0) + read + write,
        output_tokens=output_tokens or 0,
        cache_read_tokens=read,
        cache_write_tokens=write,
        reasoning_tokens=thinking or 0,
        requests=1,
    )


def text_part(text: str) -> TextPart | None:
    """The part for a text block; ``None`` for an empty one, which carries nothing."""
    return TextPart(text) if text else None


def reasoning_part(thinking: str, signature: str) -> ReasoningPart:
    """The part for a ``thinking`` block, keeping its signature to send back."""
    return ReasoningPart(thinking, signature=signature or None)


def redacted_part(data: str) -> ReasoningPart:
    """The part for a ``redacted_thinking`` block: no text, the encrypted data kept."""
    return ReasoningPart("", redacted=data)


def call_part(call_id: str, name: str, arguments: str) -> ToolCallPart:
    """The part for a ``tool_use`` block whose input arrived as JSON text ``arguments``.

    Valid JSON is re-serialised with `json.dumps`, as the non-streamed decoder does, so
    both give the same text; anything else (input cut off by ``max_tokens``) is kept raw
    for the loop to report to the model.
    """
    try:
        value = json.loads(arguments)
    except ValueError:
        return ToolCallPart(call_id, name, arguments)
    return ToolCallPart(call_id, name, json.dumps(value))


def decode_message(wire: object) -> ModelResponse:
    """The `ModelResponse` for a non-streamed response, as the SDK parsed the body.

    Server-tool blocks (``server_tool_use``, ``web_search_tool_result``, ...) have no fncore
    part and are left out.

    Raises:
        ValueError: if ``wire`` is not a message with a ``content`` list and ``usage`` (an
            HTML page, ``{}``, an error object sent with status 200).
    """
    if not isinstance(wire, WireMessage):  # the SDK gives a non-JSON body as text
        msg = f"a Messages API answer is a JSON object, not {type(wire).__name__}"
        raise ValueError(msg)
    content = getattr(wire, "content", None)  # the SDK does not check its fields
    if not isinstance(content, list) or getattr(wire, "usage", None) is None:
        msg = "the answer lacks its content list or its usage"
        raise ValueError(msg)
    parts: list[Part] = []
    calls = 0
    for block in content:
        part: Part | None = None
        kind = block.type  # the SDK builds unknown block types as some known class
        if kind == "text" and isinstance(block, TextBlock):
            part = text_part(block.text)
        elif kind == "thinking" and isinstance(block, ThinkingBlock):
            part = reasoning_part(block.thinking, block.signature)
        elif kind == "redacted_thinking" and isinstance(block, RedactedThinkingBlock):
            part = redacted_part(block.data)
        elif kind == "tool_use" and isinstance(block, ToolUseBlock):
            call_id = usable_call_id(getattr(block, "id", None), calls)
            part = ToolCallPart(call_id, block.name, json.dumps(block.input))
            calls += 1
        if part is not None:
            parts.append(part)
    has_calls = any(isinstance(p, ToolCallPart) for p in parts)
    u = wire.usage
    details = u.output_tokens_details
    usage = usage_of(
        u.input_tokens,
        u.output_tokens,
        u.cache_read_input_tokens,
        u.cache_creation_input_tokens,
        details.thinking_tokens if details is not None else None,
    )
    return ModelResponse(
        Message("assistant", tuple(parts)),
        usage,
        finish_reason(wire.stop_reason, has_calls=has_calls),
        wire.model,
    )
