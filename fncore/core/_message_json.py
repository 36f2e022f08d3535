"""Messages as JSON data: the one form that the cache and the session stores write.

A message is ``{"role": ..., "parts": [...]}``; each part is an object tagged ``type``
(``text``, ``reasoning``, ``tool_call``, ``tool_result``, ``data``), with data as base64.
The prompt-cache flag (``Message.cache``) is not part of it: a cache key must not depend on
it, and a store that keeps it adds it itself. Readers check every field's type, so a
damaged document raises instead of building a message of the wrong types.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from fncore.core._messages import (
    DataPart,
    Message,
    Part,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

_ROLES: frozenset[str] = frozenset({"system", "user", "assistant", "tool"})


def part_doc(part: object) -> dict[str, Any]:
    """``part`` as JSON data.

    Raises:
        TypeError: if ``part`` is not one of fncore's part types.

    Example:
        >>> part_doc(TextPart("hi"))
        {'type': 'text', 'text': 'hi'}
    """
    kind = type(part)
    p: Any = part
    if kind is TextPart:
        return {"type": "text", "text": p.text}
    if kind is ReasoningPart:
        return {
            "type": "reasoning",
            "text": p.text,
            "signature": p.signature,
            "redacted": p.redacted,
        }
    if kind is ToolCallPart:
        return {"type": "tool_call", "id": p.id, "name": p.name, "arguments": p.arguments}
    if kind is ToolResultPart:
        return {
            "type": "tool_result",
            "call_id": p.call_id,
            "name": p.name,
            "content": p.content,
            "is_error": p.is_error,
        }
    if kind is DataPart:
        data = base64.b64encode(p.data).decode("ascii")
        return {"type": "data", "media_type": p.media_type, "data": data}
    msg = f"a message part of type {kind.__qualname__} is not one of fncore's part types"
    raise TypeError(msg)


def str_field(doc: Mapping[str, Any], key: str) -> str:
    """``doc[key]``, checked to be a ``str``.

    Raises:
        KeyError, TypeError: if it is missing or not a string.
    """
    value = doc[key]
    if type(value) is not str:
        msg = f"{key} is {type(value).__name__}, not str"
        raise TypeError(msg)
    return value


def _optional_str(doc: Mapping[str, Any], key: str) -> str | None:
    return None if doc.get(key) is None else str_field(doc, key)


def part_from_doc(doc: Mapping[str, Any]) -> Part:
    """The part ``doc`` describes.

    Raises:
        ValueError, TypeError, KeyError: if ``doc`` is not a part's JSON data.

    Example:
        >>> part_from_doc({"type": "text", "text": "hi"})
        TextPart(text='hi')
    """
    kind = doc["type"]
    if kind == "text":
        return TextPart(str_field(doc, "text"))
    if kind == "reasoning":
        return ReasoningPart(
            str_field(doc, "text"),
            _optional_str(doc, "signature"),
            _optional_str(doc, "redacted"),
        )
    if kind == "tool_call":
        return ToolCallPart(
            str_field(doc, "id"), str_field(doc, "name"), str_field(doc, "arguments")
        )
    if kind == "tool_result":
        is_error = doc["is_error"]
        if type(is_error) is not bool:
            msg = "is_error is not a bool"
            raise TypeError(msg)
        return ToolResultPart(
            str_field(doc, "call_id"), str_field(doc, "name"), str_field(doc, "content"), is_error
        )
    if kind == "data":
        return DataPart(
            base64.b64decode(str_field(doc, "data"), validate=True), str_field(doc, "media_type")
        )
    msg = f"unknown part type {kind!r}"
    raise ValueError(msg)


def message_doc(message: Message) -> dict[str, Any]:
    """``message`` as JSON data (without its prompt-cache flag).

    Raises:
        TypeError: if a part is not one of fncore's part types.

    Example:
        >>> message_doc(Message.user("hi"))
        {'role': 'user', 'parts': [{'type': 'text', 'text': 'hi'}]}
    """
    return {"role": message.role, "parts": [part_doc(p) for p in message.parts]}


def message_from_doc(doc: Mapping[str, Any], cache: bool = False) -> Message:
    """The message ``doc`` describes, with the prompt-cache flag ``cache``.

    Raises:
        ValueError, TypeError, KeyError: if ``doc`` is not a message's JSON data.

    Example:
        >>> message_from_doc(message_doc(Message.assistant("hello"))).text
        'hello'
    """
    role = doc["role"]
    if role not in _ROLES:
        msg = f"unknown role {role!r}"
        raise ValueError(msg)
    known: Role = role
    return Message(known, tuple([part_from_doc(p) for p in doc["parts"]]), cache)
