"""The cache's entries as data: versioned JSON forms of answers (keys: `_cache_key`).

What a store holds is data, never code: JSON, not pickle. An entry that is not in the
current form (another `VERSION`, or damaged) decodes to ``None``: a miss, then replaced.
``memory://`` keeps an answer as the value a hit gives back (`kept_response`,
`kept_result`): what its JSON form reads back as, and writes that form only when asked
for its bytes.
"""

from __future__ import annotations

import json

from fncore.core import (
    Message,
    ModelResponse,
    ToolResult,
    Usage,
)
from fncore.middleware._cache_key import plain_part
from fncore.middleware._cache_key import request_key as request_key
from fncore.middleware._cache_key import tool_key as tool_key
from fncore.session_stores._json import (
    message_doc,
    part_from_doc,
    str_field,
)


def _dumps(doc: object) -> bytes:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()


VERSION = 1
"""The version of the JSON form entries are kept in; another version is a miss."""


def encode_response(response: ModelResponse) -> bytes:
    """``response`` in the cache's versioned JSON form.

    Example:
        >>> decode_response(encode_response(ModelResponse(Message.assistant("4")))).text
        '4'
    """
    return _dumps(
        {
            "v": VERSION,
            "message": message_doc(response.message),
            "usage": list(_counts(response.usage)),
            "finish_reason": response.finish_reason,
            "model_name": response.model_name,
        }
    )


def decode_response(data: bytes) -> ModelResponse | None:
    """The response ``data`` holds, or ``None`` if it is not one (another version, damaged)."""
    try:
        doc = json.loads(data)
        if doc["v"] != VERSION or doc["message"]["role"] != "assistant":
            return None
        parts = tuple(part_from_doc(p) for p in doc["message"]["parts"])
        counts = doc["usage"]
        if len(counts) != 6 or not all(type(n) is int for n in counts):
            return None
        reason = doc["finish_reason"]
        if reason not in ("stop", "tool_calls", "length", "content_filter"):
            return None
        return ModelResponse(
            Message("assistant", parts), Usage(*counts), reason, str_field(doc, "model_name")
        )
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def encode_result(result: ToolResult) -> bytes:
    """A tool's result in the cache's versioned JSON form."""
    return _dumps({"v": VERSION, "content": result.content})


def decode_result(data: bytes) -> ToolResult | None:
    """The tool result ``data`` holds, or ``None`` if it is not one."""
    try:
        doc = json.loads(data)
        if doc["v"] != VERSION:
            return None
        return ToolResult(str_field(doc, "content"))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


_FINISHED = frozenset({"stop", "tool_calls", "length", "content_filter"})
NO_USAGE = Usage()
"""The usage of an answer from the cache: none."""


# Kept as values (memory://): what the JSON form would read back as --------------------------


def _keepable(response: ModelResponse) -> bool:
    """Whether ``response``'s JSON form reads back as it is, sure without the text."""
    if (
        response.message.role != "assistant"
        or response.finish_reason not in _FINISHED
        or type(response.model_name) is not str
    ):
        return False
    return all(map(plain_part, response.message.parts))


def kept_response(response: ModelResponse) -> ModelResponse | None:
    """``response`` as a hit gives it back: as its JSON form reads back, with no usage.

    Built without the text; ``None`` when that is not sure without it (a field of another
    type than its own, such as a ``str`` subclass), or when the form would not read back.

    Example:
        >>> kept = kept_response(ModelResponse(Message.assistant("4"), Usage(3, 1)))
        >>> kept.text, kept.usage == Usage()
        ('4', True)
    """
    if not _keepable(response):
        return None
    message = response.message
    parts = tuple(message.parts)  # the same tuple, unless it was another sequence
    if message.cache or parts is not message.parts:
        message = Message("assistant", parts)
    return ModelResponse(message, NO_USAGE, response.finish_reason, response.model_name)


def kept_until_hit(response: ModelResponse) -> ModelResponse | None:
    """What ``memory://`` keeps of ``response``: `kept_response` of it, or ``response`` itself.

    Itself when `kept_response` would only drop its usage: a hit replays an answer with
    its usage dropped anyway, so the copy is made by the hit that needs it, not by every
    miss. (Its bytes, asked for, then hold its usage, as a Redis store's do; a hit reads
    them as no usage all the same.)

    Example:
        >>> response = ModelResponse(Message.assistant("4"), Usage(3, 1))
        >>> kept_until_hit(response) is response
        True
    """
    message = response.message
    if message.cache or type(message.parts) is not tuple or response._sent is not None:
        return kept_response(response)
    return response if _keepable(response) else None


def kept_result(result: ToolResult) -> ToolResult | None:
    """``result`` as `decode_result` reads its JSON form back (``None``: not sure)."""
    return ToolResult(result.content) if type(result.content) is str else None


def _counts(usage: Usage) -> tuple[int, ...]:
    return (
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_read_tokens,
        usage.cache_write_tokens,
        usage.reasoning_tokens,
        usage.requests,
    )
