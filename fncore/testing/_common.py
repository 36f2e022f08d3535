"""What the offline models share: deltas from a response, token counts, recording."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

from fncore.core import (
    Message,
    ModelRequest,
    ModelResponse,
    ModelStreamItem,
    ReasoningDelta,
    ReasoningPart,
    StreamDelta,
    TextDelta,
    TextPart,
    ToolCallArgsDelta,
    ToolCallPart,
    ToolCallStarted,
    Usage,
    UsageReported,
)


def _pieces(text: str, size: int) -> Iterator[str]:
    for i in range(0, len(text), size):
        yield text[i : i + size]


def deltas(response: ModelResponse, chunk: int = 8) -> Iterator[StreamDelta]:
    """The stream deltas that assemble into ``response``, text cut every ``chunk`` chars.

    Example:
        >>> from fncore import Message, ModelResponse
        >>> [type(d).__name__ for d in deltas(ModelResponse(Message.assistant("hi there")), 4)]
        ['TextDelta', 'TextDelta', 'UsageReported']
    """
    for part in response.message.parts:
        if type(part) is TextPart:
            for piece in _pieces(part.text, chunk):
                yield TextDelta(piece)
        elif type(part) is ReasoningPart:
            for piece in _pieces(part.text, chunk):
                yield ReasoningDelta(piece)
        elif type(part) is ToolCallPart:
            yield ToolCallStarted(part.id, part.name)
            for piece in _pieces(part.arguments, chunk):
                yield ToolCallArgsDelta(part.id, piece)
    yield UsageReported(response.usage)


async def stream_of(response: ModelResponse, chunk: int = 8) -> AsyncIterator[ModelStreamItem]:
    """Yield the deltas of ``response``, then ``response`` itself."""
    for delta in deltas(response, chunk):
        yield delta
    yield response


def count_tokens(messages: tuple[Message, ...], instructions: str = "") -> int:
    """A deterministic stand-in for a tokenizer: whitespace-separated words."""
    words = len(instructions.split())
    for m in messages:
        for p in m.parts:
            text = getattr(p, "text", None) or getattr(p, "content", None) or ""
            words += len(str(text).split()) + 1
    return words


def usage_for(request: ModelRequest, message: Message) -> Usage:
    """Usage of answering ``request`` with ``message``, in stand-in tokens."""
    out = count_tokens((message,))
    return Usage(count_tokens(request.messages, request.instructions), out, requests=1)


def dumps(args: dict[str, object]) -> str:
    """Arguments as compact JSON, as a model would send them."""
    return json.dumps(args, separators=(",", ":"))
