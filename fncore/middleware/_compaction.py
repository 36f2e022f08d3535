"""The pure part of `compact`: groups, token counts, and the two strategies without a model.

A history is cut into *groups*: a message that is not a tool message starts a group, and
the tool messages after it (the results of its calls) belong to it. Every rewrite here
keeps or drops whole groups, or changes only the content of tool results, so an assistant
turn is never parted from its results and the tool-call pairing holds.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

from fncore.core import (
    DataPart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from fncore.middleware._memo import ByIdentity

TokenCounter = Callable[[Sequence[Message]], int]
"""Counts the tokens of some messages (a system prompt is counted as a system message)."""

Group = tuple[Message, ...]
"""One message that is not a tool message, with the tool messages that follow it."""

Cleared = tuple[int, Message]
"""How many results of a tool message count, and the message with some of them cleared."""

CLEARED = 4_096
"""How many tool messages' cleared forms `ClearToolResults` remembers at most."""

DATA_TOKENS = 1_000
"""What the approximate counter charges for a `DataPart` (an image, a file)."""

MESSAGE_TOKENS = 4
"""What the approximate counter charges for each message on top of its content."""

SUMMARY_HEADER = "[Summary of the earlier conversation]"
"""The first line of a summary message: it marks the message as a summary, so the next
compaction folds it into the new summary instead of summarising a summary as talk."""


def _chars(message: Message) -> int:
    total = 0
    for part in message.parts:
        kind = type(part)
        if kind is TextPart or kind is ReasoningPart:
            total += len(part.text)  # type: ignore[union-attr]
        elif kind is ToolCallPart:
            total += len(part.name) + len(part.arguments)  # type: ignore[union-attr]
        elif kind is ToolResultPart:
            total += len(part.name) + len(part.content)  # type: ignore[union-attr]
        elif kind is DataPart:
            total += 4 * DATA_TOKENS
    return total


def approximate_tokens(messages: Sequence[Message]) -> int:
    """Count tokens the quick way: a quarter of the characters, plus 4 per message.

    Characters are those of text, reasoning text, tool names, call arguments and result
    contents, rounded up per message; an image or file counts as 1,000 tokens. It needs no
    network and no tokenizer, and is close enough for English prose (about 4 characters a
    token) to decide when to compact.

    Example:
        >>> approximate_tokens([Message.user("What is 2 + 3?")])
        8
    """
    return sum(MESSAGE_TOKENS + -(-_chars(m) // 4) for m in messages)


def groups(messages: Sequence[Message]) -> list[Group]:
    """``messages`` cut into groups: each non-tool message with the tool messages after it.

    Example:
        >>> call = Message("assistant", (ToolCallPart("c1", "add"),))
        >>> result = Message("tool", (ToolResultPart("c1", "add", "3"),))
        >>> [len(g) for g in groups([Message.user("hi"), call, result, Message.user("ok")])]
        [1, 2, 1]
    """
    found: list[list[Message]] = []
    for message in messages:
        if message.role == "tool" and found:
            found[-1].append(message)
        else:
            found.append([message])
    return [tuple(g) for g in found]


def group_end(messages: Sequence[Message], start: int) -> int:
    """Where the group that starts at ``start`` ends: after the tool messages that follow it."""
    end = start + 1
    size = len(messages)
    while end < size and messages[end].role == "tool":
        end += 1
    return end


def is_summary_at(messages: Sequence[Message], index: int) -> bool:
    """Whether a group that is a summary message this built-in wrote starts at ``index``."""
    if index >= len(messages):
        return False
    first = messages[index]
    return (
        first.role == "user"
        and group_end(messages, index) == index + 1
        and first.text.startswith(SUMMARY_HEADER)
    )


def head_end(messages: Sequence[Message], keep_first: bool) -> int:
    """Where the leading groups that always stay end: system messages, the first user message.

    The first user message stays only with ``keep_first`` and only if it comes right after
    the leading system messages (it usually states the task), and is not a summary.
    """
    index = 0
    size = len(messages)
    while index < size and messages[index].role == "system":
        index = group_end(messages, index)
    if (
        keep_first
        and index < size
        and messages[index].role == "user"
        and not is_summary_at(messages, index)
    ):
        index = group_end(messages, index)
    return index


def last_groups(messages: Sequence[Message], stop: int, keep: int) -> list[int]:
    """Where each of the last ``keep`` groups at or after ``stop`` starts, oldest first.

    Found from the end, so a long history costs no more than its last groups; ``stop`` must
    be where a group starts (or the end).
    """
    starts: list[int] = []
    index = len(messages) - 1
    while index >= stop and len(starts) < keep:
        if index == 0 or messages[index].role != "tool":
            starts.append(index)
        index -= 1
    starts.reverse()
    return starts


def window(
    messages: tuple[Message, ...],
    head: int,
    keep: int,
    measure: Callable[[Sequence[Message]], int] | None,
    fits: Callable[[int, int], bool],
    fixed: int = 0,
) -> tuple[Message, ...]:
    """The first ``head`` messages and at most ``keep`` recent groups, fewer while over.

    Only the groups that may stay are looked at (and measured), so the cost does not grow
    with what is dropped.

    Args:
        messages: The history.
        head: How many leading messages always stay (whole groups).
        keep: How many recent groups to keep at most.
        measure: Counts the tokens of some messages; ``None``: tokens do not matter.
        fits: Whether a history of (messages, tokens) is under the trigger.
        fixed: Tokens that stay whatever is dropped (the system prompt, the tools).
    """
    starts = last_groups(messages, head, keep)
    if not starts:
        return messages
    ends = [*starts[1:], len(messages)]
    if measure is None:
        sizes = [0] * len(starts)
        total = 0
    else:
        sizes = [measure(messages[s:e]) for s, e in zip(starts, ends, strict=True)]
        total = fixed + measure(messages[:head]) + sum(sizes)
    count = head + len(messages) - starts[0]
    at = 0
    while at < len(starts) - 1 and not fits(count, total):
        count -= ends[at] - starts[at]
        total -= sizes[at]
        at += 1
    first = starts[at]
    return messages if first == head else messages[:head] + messages[first:]


def clear_results(
    message: Message, keep: int, placeholder: str, exclude: frozenset[str]
) -> Cleared:
    """How many results of a tool message count, and the message with all but ``keep`` cleared.

    Results are counted from the last; those of the tools in ``exclude`` are neither
    cleared nor counted, and a result already cleared stays as it is (then, and when
    nothing is to be cleared, ``message`` itself comes back).
    """
    parts = message.parts
    counted = 0
    changed: list[Part] | None = None
    for at in range(len(parts) - 1, -1, -1):
        part = parts[at]
        if type(part) is not ToolResultPart or part.name in exclude:
            continue
        counted += 1
        if counted > keep and part.content != placeholder:
            if changed is None:
                changed = list(parts)
            changed[at] = ToolResultPart(part.call_id, part.name, placeholder)
    if changed is None:
        return counted, message
    return counted, Message("tool", tuple(changed), message.cache)


class ClearToolResults:
    """The ``clear_tool_results`` strategy, remembering each tool message's cleared form.

    A tool message whose results are all to be cleared is cleared once: the next compaction
    of a history holding it (each request, in ``request`` mode) reuses the cleared message.
    """

    __slots__ = ("_cleared", "exclude", "placeholder")

    def __init__(self, placeholder: str, exclude: frozenset[str], size: int = CLEARED) -> None:
        self.placeholder = placeholder
        self.exclude = exclude
        self._cleared: ByIdentity[Message, Cleared] = ByIdentity(
            lambda m: clear_results(m, 0, placeholder, exclude), size
        )

    @property
    def remembered(self) -> int:
        """How many tool messages' cleared forms are remembered."""
        return len(self._cleared)

    def __call__(self, messages: tuple[Message, ...], keep: int) -> tuple[Message, ...]:
        """``messages`` with the content of all but the last ``keep`` tool results replaced.

        The call ids and tool names stay, so the pairing holds.
        """
        seen = 0
        out: list[Message] | None = None
        cleared = self._cleared
        for index in range(len(messages) - 1, -1, -1):
            message = messages[index]
            if message.role != "tool":
                continue
            if seen >= keep:
                counted, new = cleared(message)
            else:
                counted, new = clear_results(message, keep - seen, self.placeholder, self.exclude)
            if new is not message:
                if out is None:
                    out = list(messages)
                out[index] = new
            seen += counted
        return messages if out is None else tuple(out)


def transcript(messages: Sequence[Message]) -> str:
    """``messages`` as plain text for a summary request: one line (or block) per part."""
    lines: list[str] = []
    for message in messages:
        for part in message.parts:
            kind = type(part)
            if kind is TextPart:
                lines.append(f"{message.role}: {part.text}")  # type: ignore[union-attr]
            elif kind is ToolCallPart:
                lines.append(f"{message.role} called {part.name}({part.arguments})")  # type: ignore[union-attr]
            elif kind is ToolResultPart:
                lines.append(f"{part.name} returned: {part.content}")  # type: ignore[union-attr]
            elif kind is DataPart:
                lines.append(f"{message.role}: [{part.media_type} attachment]")  # type: ignore[union-attr]
    return "\n".join(lines)


def digest(previous: str, messages: Sequence[Message]) -> str:
    """A fingerprint of the messages fingerprinted by ``previous`` followed by ``messages``.

    Chained message by message, so ``digest(digest("", a), b) == digest("", [*a, *b])``.
    """
    current = previous
    for message in messages:
        h = hashlib.blake2b(current.encode(), digest_size=16)
        h.update(repr(message).encode())
        current = h.hexdigest()
    return current
