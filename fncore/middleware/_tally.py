"""Token counts that `compact` remembers, so that a round counts only what is new.

Before each round `compact` needs the tokens of the whole history, the system prompt and
the tool definitions. Counting them again every round made its cost grow with the
conversation; a `Tally` remembers, for one token counter:

* each message's count, by the message's identity (see ``fncore.middleware._memo``): a
  changed message is a new object, counted afresh;
* each tool definition's count, the same way;
* each system prompt's count, by its text;
* the totals of the last histories it counted, each by its last message and its length,
  the most recently used kept longest (an agent serving many sessions at once finds each
  session's history again when its next turn comes). A history that only grew since one
  of them (the next round, the next turn of a session) is found by looking back over its
  newest messages, checked message by message against the remembered one (a comparison
  in C that stops at the first difference: identical messages compare in a few
  nanoseconds), and costs the new messages' counts on top. Two histories are kept per
  conversation: the latest turn's start (the history its first request went on from,
  kept for the turn asked again from there) and the latest history grown from it (the
  last round's). The one a history replaces is forgotten at once, so that no long tuple of
  a round gone by is kept alive (a garbage collection would walk it); a turn asked from
  further back is counted from the nearest history kept, or message by message.

Every memo is bounded: past its size it forgets its older half. What is forgotten is only
counted again, and a history whose total was forgotten counts only its messages whose
counts were forgotten too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from itertools import compress
from operator import itemgetter, not_
from typing import TypeAlias, TypeVar

from fncore.core import Message, ToolSpec
from fncore.middleware._compaction import TokenCounter
from fncore.middleware._memo import ByIdentity, begins, prefix, put

_T = TypeVar("_T")

MESSAGES = 20_000
"""How many messages' counts a tally remembers at most."""

HISTORIES = 1_024
"""How many histories' totals a tally remembers at most (a turn remembers up to four: two
requests, each with the history before its last message)."""

DEFINITIONS = 1_024
"""How many tool definitions' and system prompts' counts a tally remembers, each at most."""

FEW = 8
"""Up to this many items are looked up one by one (a miss in the C loop raises, which costs
more than the loop saves on a few)."""

GROWTH = 64
"""How many new messages a history may have over a remembered one and still go on from it."""

_count_of = itemgetter(1)

_Key: TypeAlias = tuple[int, int]
"""A history's key: the ``id`` of its last message, and its length."""


def definition(spec: ToolSpec) -> Message:
    """A tool definition as the system message its tokens are counted as.

    Example:
        >>> print(definition(ToolSpec("add", "Add two numbers.", {"type": "object"})).text)
        add: Add two numbers.
        {"type":"object"}
    """
    schema = json.dumps(dict(spec.parameters), separators=(",", ":"), default=str)
    return Message.system(f"{spec.name}: {spec.description}\n{schema}")


def _total(memo: ByIdentity[_T, int], items: Sequence[_T]) -> int:
    """The counts of ``items`` added up (in C, but for the items not remembered)."""
    if len(items) <= FEW:
        return sum(map(memo, items))
    entries = memo.entries
    try:
        return sum(map(_count_of, map(entries.__getitem__, map(id, items))))
    except KeyError:  # some are new: the others still add up in C
        found = list(map(entries.get, map(id, items)))
        known: int = sum(map(_count_of, filter(None, found)))
        return known + sum(map(memo, compress(items, map(not_, found))))


class Tally:
    """The token counts of one counter: per message, tool definition, prompt and history."""

    __slots__ = (
        "_histories",
        "_latest",
        "_messages",
        "_prompts",
        "_size",
        "_tools",
        "_toolsets",
        "count",
    )

    def __init__(
        self, count: TokenCounter, *, messages: int = MESSAGES, histories: int = HISTORIES
    ) -> None:
        self.count = count
        """The counter every remembered count comes from."""
        self._messages: ByIdentity[Message, int] = ByIdentity(lambda m: count((m,)), messages)
        self._tools: ByIdentity[ToolSpec, int] = ByIdentity(
            lambda s: count((definition(s),)), DEFINITIONS
        )
        self._toolsets: ByIdentity[tuple[ToolSpec, ...], int] = ByIdentity(
            lambda specs: _total(self._tools, specs), DEFINITIONS
        )
        self._prompts: dict[str, int] = {}
        self._histories: dict[_Key, tuple[tuple[Message, ...], int, _Key | None]] = {}
        """``(id(last message), length)``: the history, its tokens, and the turn's start it
        grew from (``None``: it is one)."""
        self._latest: dict[_Key, _Key] = {}
        """A turn's start: the latest history grown from it (the only one kept)."""
        self._size = histories

    @property
    def remembered(self) -> tuple[int, int]:
        """How many messages' counts and how many histories' totals are remembered."""
        return len(self._messages), len(self._histories)

    def messages(self, messages: Sequence[Message]) -> int:
        """The tokens of ``messages``, each counted once as a message of its own."""
        return _total(self._messages, messages)

    def tools(self, specs: tuple[ToolSpec, ...]) -> int:
        """The tokens of the tool definitions ``specs`` (see `definition`)."""
        return self._toolsets(specs)

    def prompt(self, instructions: str) -> int:
        """The tokens of the system prompt ``instructions``, as one system message."""
        if not instructions:
            return 0
        tokens = self._prompts.get(instructions)
        if tokens is None:
            tokens = self.count((Message.system(instructions),))
            put(self._prompts, instructions, tokens, DEFINITIONS)
        return tokens

    def history(self, messages: tuple[Message, ...]) -> int:
        """The tokens of ``messages``: a remembered total and what was added since, if any."""
        size = len(messages)
        if not size:
            return 0
        histories = self._histories
        for end in range(size, max(size - GROWTH, 0), -1):
            key = (id(messages[end - 1]), end)
            entry = histories.get(key)
            if entry is None:
                continue
            known, tokens, start = entry
            if end == size:
                if known is messages or known == messages:
                    del histories[key]  # used again: put back, to be forgotten last
                    histories[key] = entry
                    return tokens
            elif begins(messages, known):
                del histories[key]  # put back if kept, to be forgotten last
                if start is None:  # a turn's start: kept for the turns asked from it
                    histories[key] = entry
                    start = key
                elif messages[-1].role == "user":  # a new turn: where it went on from is
                    histories[key] = (known, tokens, None)  # its start, replacing the last
                    self._latest.pop(start, None)
                    histories.pop(start, None)
                    start = key
                total = tokens + _total(self._messages, messages[end:])
                break
        else:
            total = _total(self._messages, messages)
            start = None
            if size > 1:  # and the history before its last message: a turn tried again, or
                # asked anew from the same point, is found from there
                before = prefix(messages, size - 1)  # the same tuple as other memos keep
                start = (id(before[-1]), size - 1)
                tokens = total - self._messages(messages[-1])
                put(histories, start, (before, tokens, None), self._size)
        key = (id(messages[-1]), size)
        put(histories, key, (messages, total, start), self._size)
        if start is not None:  # the history it replaces as the latest grown from its start
            # (a round gone on from, a turn asked anew) is forgotten: found as the start
            # and its few new messages, it does not keep a long tuple alive meanwhile
            replaced = self._latest.pop(start, None)
            if replaced is not None and replaced != key:
                histories.pop(replaced, None)
            put(self._latest, start, key, self._size)
        return total
