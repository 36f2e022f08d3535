"""Conversation messages and their content parts."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal, TypeAlias, final

from fncore.core._value import value

__all__ = [
    "DataPart",
    "Message",
    "Part",
    "ReasoningPart",
    "Role",
    "TextPart",
    "ToolCallPart",
    "ToolResultPart",
    "fallback_call_id",
    "usable_call_id",
]

Role: TypeAlias = Literal["system", "user", "assistant", "tool"]
"""Who a message is from. Tool results travel in ``tool`` messages."""


@final
@value
@dataclass(frozen=True, slots=True)
class TextPart:
    """Plain text.

    Example:
        >>> TextPart("hello").text
        'hello'
    """

    text: str
    """The text."""


@final
@value
@dataclass(frozen=True, slots=True)
class ReasoningPart:
    """The model's visible reasoning (a thinking block or reasoning summary)."""

    text: str
    """The reasoning text (a summary, for providers that only show one)."""
    signature: str | None = None
    """Opaque provider data to send back unchanged with the next request (Anthropic's
    thinking signature, OpenAI's encrypted reasoning), if any."""
    redacted: str | None = None
    """Encrypted reasoning the provider withheld (Anthropic ``redacted_thinking``)."""


@final
@value
@dataclass(frozen=True, slots=True)
class ToolCallPart:
    """A tool call the model asked for.

    ``arguments`` is the raw JSON text the model produced; it is validated against the
    tool's schema only when the call runs, so malformed JSON becomes a message the model
    can react to instead of an exception.

    Example:
        >>> ToolCallPart(id="c1", name="add", arguments='{"a": 1, "b": 2}').parsed_arguments()
        {'a': 1, 'b': 2}
    """

    id: str
    """The call id that the matching result refers to."""
    name: str
    """The tool's name."""
    arguments: str = "{}"
    """The arguments as raw JSON text."""

    def parsed_arguments(self) -> object:
        """Return the arguments parsed as JSON, or ``None`` when they are not valid JSON."""
        try:
            return json.loads(self.arguments or "{}")
        except ValueError:
            return None


@final
@value
@dataclass(frozen=True, slots=True)
class ToolResultPart:
    """The result of one tool call, paired with it by ``call_id``."""

    call_id: str
    """The id of the tool call this answers."""
    name: str
    """The tool's name."""
    content: str
    """What the tool returned, as text for the model."""
    is_error: bool = False
    """Whether the call failed (unknown tool, invalid arguments, the tool raised)."""


@final
@dataclass(frozen=True, slots=True)
class DataPart:
    """Binary data, such as an image, with its media type."""

    data: bytes = field(repr=False)
    """The raw bytes."""
    media_type: str
    """The IANA media type, e.g. ``image/png``."""


Part: TypeAlias = TextPart | ReasoningPart | ToolCallPart | ToolResultPart | DataPart
"""Any content part of a message."""


@final
@value
@dataclass(frozen=True, slots=True)
class Message:
    """One message of a conversation: a role and a tuple of content parts.

    Example:
        >>> Message.user("What is 2 + 3?").text
        'What is 2 + 3?'
    """

    role: Role
    """Who the message is from."""
    parts: tuple[Part, ...]
    """The content, in order."""
    cache: bool = False
    """A prompt-cache breakpoint: ask the provider to cache the conversation up to and
    including this message (Anthropic ``cache_control``; providers that cache on their own
    ignore it). A ``model_call`` middleware sets it with ``dataclasses.replace``."""

    @classmethod
    def system(cls, text: str) -> Message:
        """Build a system message holding ``text``."""
        return cls("system", (TextPart(text),))

    @classmethod
    def user(cls, text: str) -> Message:
        """Build a user message holding ``text``."""
        return cls("user", (TextPart(text),))

    @classmethod
    def assistant(cls, text: str) -> Message:
        """Build an assistant message holding ``text``."""
        return cls("assistant", (TextPart(text),))

    @property
    def text(self) -> str:
        """The concatenated text parts."""
        parts = self.parts
        if len(parts) == 1:
            only = parts[0]
            return only.text if type(only) is TextPart else ""
        return "".join([p.text for p in parts if type(p) is TextPart])

    @property
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        """The tool-call parts, in order."""
        return tuple([p for p in self.parts if type(p) is ToolCallPart])

    @property
    def tool_results(self) -> tuple[ToolResultPart, ...]:
        """The tool-result parts, in order."""
        return tuple([p for p in self.parts if type(p) is ToolResultPart])


def fallback_call_id(index: int) -> str:
    """The id of the ``index``-th tool call of a response that came without a usable id.

    Adapters use it when a server sends no id (or ``null``, or ``""``), streaming or not, and
    the agent loop uses it for an id repeated within one response, so the same response
    gets the same ids in both modes.

    Example:
        >>> fallback_call_id(0)
        'call_0'
    """
    return f"call_{index}"


def usable_call_id(raw: object, index: int) -> str:
    """The id of the ``index``-th tool call of a response, as a server sent it (0-based).

    A non-empty string is kept as it is, even when another call of the response has it
    too (the agent loop renames duplicates). A missing, ``null`` or empty id, or one that
    is not a string, is replaced by `fallback_call_id` of ``index``. Adapters call it for
    every call they decode, streaming or not.

    Example:
        >>> usable_call_id("call_abc", 3), usable_call_id(None, 1), usable_call_id("", 0)
        ('call_abc', 'call_1', 'call_0')
    """
    return raw if isinstance(raw, str) and raw else fallback_call_id(index)
