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
from fncore.middleware._memo import begins, prefix

__all__ = [
    "Conversation",
    "Conversations",
    "Generations",
    "Memo",
    "Owner",
    "Spread",
    "Uses",
    "holds",
    "size",
]

_K = TypeVar("_K")
_V = TypeVar("_V")

Uses: TypeAlias = tuple[tuple[str, str], ...]
"""The ``(placeholder, value)`` pairs a redacted form relies on (most rely on none)."""

Owner: TypeAlias = str | dict[str, str] | None
"""Whose pseudonyms: a session's id, or the reply's own pseudonyms (compared by identity)."""

Spread: TypeAlias = tuple[tuple[str, str, int], ...]
"""A conversation's uses: each pair once, with the index of the first message using it."""


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
        found = self._young.pop(key, None)
        if found is not None:
            self._young_weight -= found[1]
        elif self._old:
            found = self._old.pop(key, None)
            if found is not None:
                self._old_weight -= found[1]
        self._keep(key, (value, weight))

    def drop(self, key: _K, value: _V) -> None:
        """Forget ``key`` if it holds ``value`` (that very object)."""
        for generation in (self._young, self._old):
            found = generation.get(key)
            if found is not None and found[0] is value:
                self.pop(key)
                return

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


class Conversation:
    """A request's messages, their redacted forms, and what those rely on.

    Args:
        inputs: The messages.
        outputs: Their redacted forms (``inputs`` itself if none changed).
        changed: The index of the first message whose redacted form differs.
        uses: The placeholders the redacted forms rely on.
        owner: Whose placeholders (``None`` without any).
        weight: The characters of the messages' text.
    """

    __slots__ = ("changed", "inputs", "outputs", "owner", "uses", "weight")

    def __init__(
        self,
        inputs: tuple[Message, ...],
        outputs: tuple[Message, ...],
        changed: int,
        uses: Spread,
        owner: Owner,
        weight: int,
    ) -> None:
        self.inputs = inputs
        self.outputs = outputs
        self.changed = changed
        self.uses = uses
        self.owner = owner
        self.weight = weight

    def reach(self, length: int, owner: Owner, pseudonyms: dict[str, str] | None) -> int:
        """How many of its first ``length`` messages a run of ``owner`` may reuse."""
        mine = self.owner is owner or (type(owner) is str and self.owner == owner)
        for placeholder, value, at in self.uses:
            if at >= length:
                break
            if not mine or pseudonyms is None or pseudonyms.get(placeholder) != value:
                return at
        return length

    def start(self, length: int) -> tuple[Spread, int]:
        """The uses and the weight of its first ``length`` messages."""
        inputs = self.inputs
        if length == len(inputs):
            return self.uses, self.weight
        uses = tuple([use for use in self.uses if use[2] < length])
        return uses, self.weight - sum([size(m) for m in inputs[length:]])


_REACH = 8
"""How many of a request's last messages may have ended an earlier request (a request
continues the last one by a round's or a turn's messages: a call, its results, an answer)."""
_BRANCHES = 4
"""How many conversations begun with one message are kept (the latest first)."""


class Conversations:
    """Conversations redacted, found by their last message and by their first.

    By the last: a request that goes on from an earlier one (the next round, the next turn)
    holds that one's last message among its own last few. A conversation is found that way
    while it is one of the latest `_BRANCHES` begun with its first message, or a turn's
    start. By the first: a request that shares a start with an earlier one but goes another
    way (a turn tried again, a history cut back) shares its first message; the longest
    shared start is then found by comparing slices, halving the difference. Both hold the
    message of their key.
    """

    __slots__ = ("_by_first", "_by_last")

    def __init__(self, limit: int) -> None:
        self._by_last: Generations[int, Conversation] = Generations(limit)
        self._by_first: Generations[int, tuple[Conversation, ...]] = Generations(limit)

    @property
    def weight(self) -> int:
        """The characters held, counted once by each of the two ways to find them."""
        return self._by_last.weight + self._by_first.weight

    def find(
        self, messages: tuple[Message, ...], owner: Owner, pseudonyms: dict[str, str] | None
    ) -> tuple[Conversation | None, int]:
        """The conversation sharing the longest usable start with ``messages``, and its length."""
        count = len(messages)
        for index in range(count - 1, max(count - 1 - _REACH, -1), -1):
            known = self._by_last.get(id(messages[index]))
            if (
                known is not None
                and len(known.inputs) == index + 1
                and known.reach(index + 1, owner, pseudonyms) == index + 1
                and begins(messages, known.inputs)
            ):
                return known, index + 1
        best, longest = None, 0
        for known in self._by_first.get(id(messages[0])) or ():
            inputs = known.inputs
            if longest:  # it must share one more message than the best so far to beat it
                if longest >= len(inputs):
                    continue
                mine, theirs = messages[longest], inputs[longest]
                if mine is not theirs and mine != theirs:
                    continue
            shared = known.reach(_shared(messages, inputs), owner, pseudonyms)
            if shared > longest:
                best, longest = known, shared
        return best, longest

    def keep(self, new: Conversation, found: Conversation | None, length: int) -> None:
        """Remember ``new``, which went on from ``length`` messages of ``found``.

        A conversation that ends with a user's message and parted from ``found`` (a turn
        asked anew: tried again, or cut back to) is also remembered without that message,
        by its message before: the next time that turn is asked anew, it is found there
        among the request's last messages, as a round finds the last one, not by halving.
        """
        messages = new.inputs
        before = len(messages) - 1
        asked = before > 0 and messages[-1].role == "user"
        whole = found is not None and length == len(found.inputs)  # ``new`` holds it all
        anew = asked and whole and length == before  # it went on from what it asks after
        if whole and not anew and found is not None:
            self._by_last.pop(id(found.inputs[-1]))
        self._by_last.put(id(messages[-1]), new, new.weight)
        if asked and found is not None and not whole:
            uses, weight = new.start(before)
            inputs = prefix(messages, before)  # the same tuple as other memos keep
            outputs = inputs if new.changed >= before else prefix(new.outputs, before)
            owner = new.owner if uses else None
            start = Conversation(inputs, outputs, min(new.changed, before), uses, owner, weight)
            self._by_last.put(id(inputs[-1]), start, weight)
        key = id(messages[0])
        branches = self._by_first.get(key) or ()
        kept = (new, *[c for c in branches if not (whole and c is found)])
        for dropped in kept[_BRANCHES:]:  # found no more by its last message either: no
            self._by_last.drop(id(dropped.inputs[-1]), dropped)  # long tuple kept for it
        kept = kept[:_BRANCHES]
        self._by_first.put(key, kept, sum([c.weight for c in kept]))


def _shared(a: tuple[Message, ...], b: tuple[Message, ...]) -> int:
    """How many messages ``a`` and ``b`` share from the start (their first is the same).

    A request most often differs from an earlier one in its last few messages: those are
    stepped over from the end, then one comparison of slices (in C, taking a message that
    is the same object at once) confirms the rest, or halving the difference finds where
    they part.
    """
    high = min(len(a), len(b))
    low = 1  # a[:low] == b[:low]
    probe = high  # each message from ``probe`` to ``high - 1`` differs
    while probe > low and high - probe < _REACH:
        before, after = a[probe - 1], b[probe - 1]
        if before is after or before == after:
            break
        probe -= 1
    if a[:probe] == b[:probe]:
        return probe
    high = probe  # a[:high] != b[:high]
    while high - low > 1:
        middle = (low + high) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle
    return low


class Memo:
    """The texts and conversations one configured `redact_pii` has redacted inward.

    Args:
        limit: The characters each map holds at most (the texts' originals, and the
            conversations' messages).
    """

    __slots__ = ("conversations", "texts")

    def __init__(self, limit: int) -> None:
        self.texts: Generations[str, tuple[str | None, Uses, Owner]] = Generations(limit)
        """Each text to its redacted form (``None``: unchanged), uses and their owner."""
        self.conversations = Conversations(limit)


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
