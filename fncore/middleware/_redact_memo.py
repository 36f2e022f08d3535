"""What `redact_pii` remembers: the texts and conversations it has already redacted.

A conversation grows by a message or two a round, and every request carries all of it, so
without a memo each round rescans every message. `Memo` keeps two bounded maps, both for
what goes to the model (the ``inward`` pass; what comes back is new every time):

- **texts**, by content: a text (a message's text, a tool result, the system prompt) to its
  redacted form. A tool result is scanned at ``tool_call`` and found here when the next
  request carries it; a changed text is another key, so it is scanned again.
- **conversations**: for the last message of each request redacted, the request's
  messages and their redacted forms. A later request that starts with those messages (a
  tuple comparison, which takes each message that is the same object at once and compares
  the others by content) reuses them and redacts only the messages after them. The key is
  the message's ``id``, and the entry holds that message, so no other object can have its
  ``id`` while the entry lives.

A redacted form depends on the text and the configuration (a memo belongs to one
configured `redact_pii`), except under ``pseudonymize``: a placeholder is the session's
name for a value. So an entry that used placeholders records them (``uses``) and whose they
are (``owner``: the session's id, or the reply's own pseudonyms without a session); it is
only used by the same owner, and only while its pseudonyms still stand for those values, so
the result is always what a fresh scan of the run would give.

Both maps are bounded by the characters they hold, in two generations (see `Generations`).
"""

from __future__ import annotations

from typing import Generic, TypeAlias, TypeVar

from fncore.core import Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart

__all__ = ["Conversation", "Generations", "Memo", "Owner", "Uses", "holds", "size"]

_K = TypeVar("_K")
_V = TypeVar("_V")

Uses: TypeAlias = tuple[tuple[str, str], ...]
"""The ``(placeholder, value)`` pairs a redacted form relies on (most rely on none)."""

Owner: TypeAlias = str | dict[str, str] | None
"""Whose pseudonyms: a session's id, or the reply's own pseudonyms (compared by identity)."""

Conversation: TypeAlias = tuple[tuple[Message, ...], tuple[Message, ...], Uses, Owner, int]
"""A request's messages, their redacted forms, its uses, their owner and its characters."""


class Generations(Generic[_K, _V]):
    """A map that holds at most ``limit`` in weight (characters), dropping the least used.

    New entries go to the young generation; when it holds half the limit it becomes the
    old one, and the old one is dropped. An entry found in the old generation moves back to
    the young one, so what is used every round stays. A hit in the young generation costs
    one dict lookup, with no bookkeeping; an entry heavier than half the limit is not kept.
    """

    __slots__ = ("_half", "_old", "_old_weight", "_young", "_young_weight")

    def __init__(self, limit: int) -> None:
        self._half = limit // 2
        self._young: dict[_K, tuple[_V, int]] = {}
        self._old: dict[_K, tuple[_V, int]] = {}
        self._young_weight = 0
        self._old_weight = 0

    @property
    def weight(self) -> int:
        """The weight of every entry held."""
        return self._young_weight + self._old_weight

    def __len__(self) -> int:
        return len(self._young) + len(self._old)

    def get(self, key: _K) -> _V | None:
        """The value under ``key``, if held."""
        found = self._young.get(key)
        if found is None:
            found = self._old.pop(key, None)
            if found is None:
                return None
            self._old_weight -= found[1]
            self._keep(key, found)
        return found[0]

    def put(self, key: _K, value: _V, weight: int) -> None:
        """Hold ``value`` under ``key``, if it weighs at most half the limit."""
        if weight > self._half:
            return
        self.pop(key)
        self._keep(key, (value, weight))

    def pop(self, key: _K) -> None:
        """Forget ``key``."""
        for generation in (self._young, self._old):
            found = generation.pop(key, None)
            if found is not None:
                if generation is self._young:
                    self._young_weight -= found[1]
                else:
                    self._old_weight -= found[1]

    def _keep(self, key: _K, entry: tuple[_V, int]) -> None:
        if self._young_weight + entry[1] > self._half:
            self._old, self._young = self._young, {}
            self._old_weight, self._young_weight = self._young_weight, 0
        self._young[key] = entry
        self._young_weight += entry[1]


class Memo:
    """The texts and conversations one configured `redact_pii` has redacted inward.

    Args:
        limit: The characters each map holds at most (the texts' originals, and the
            conversations' messages).
    """

    __slots__ = ("conversations", "texts")

    def __init__(self, limit: int) -> None:
        self.texts: Generations[str, tuple[str, Uses, Owner]] = Generations(limit)
        self.conversations: Generations[int, Conversation] = Generations(limit)


def holds(uses: Uses, owner: Owner, current: Owner, pseudonyms: dict[str, str] | None) -> bool:
    """Whether an entry with ``uses`` made for ``owner`` is the current run's own result.

    An entry with no placeholders is anyone's; one with placeholders only its owner's, and
    only while each still stands for the same value.
    """
    if not uses:
        return True
    if owner is not current and not (type(owner) is str and owner == current):
        return False
    return pseudonyms is not None and all(pseudonyms.get(p) == v for p, v in uses)


def size(message: Message) -> int:
    """The characters of a message's text (its weight in the memo)."""
    total = 0
    for part in message.parts:
        kind = type(part)
        if kind is TextPart or kind is ReasoningPart:
            total += len(part.text)  # type: ignore[union-attr]
        elif kind is ToolResultPart:
            total += len(part.content)  # type: ignore[union-attr]
        elif kind is ToolCallPart:
            total += len(part.arguments)  # type: ignore[union-attr]
    return total + 1
