"""Bounded memos of what is worked out from immutable objects, kept by the objects' identity.

Hashing a message costs about as much as working something out from it, so `compact`
remembers by ``id`` instead. An ``id`` is only unique among live objects, so each entry
holds its object: while it is remembered the object stays alive and no other object can
take its ``id``. The objects are immutable (frozen dataclasses), so an object that changed
is a new object, worked out afresh.

`begins` answers the question every history memo asks of a request: does it go on from a
history remembered? Several memos ask it of the same two tuples in one round (`compact`'s
and `rate_limit`'s counts, `redact_pii`'s conversations); the first pays the comparison,
the others a lookup. So that they do ask it of the same tuples, a memo that keeps a start
of a request takes it from `prefix` (the same tuple for every memo that asks for it), and a
memo that makes a history by adding messages to one (`redact_pii`'s redacted request)
makes it with `joined`, which notes the answer: no memo compares them again.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import islice
from typing import Generic, TypeVar

_T = TypeVar("_T")
_K = TypeVar("_K")
_V = TypeVar("_V")


def make_room(memo: dict[_K, _V], size: int) -> None:
    """Forget the older half of ``memo`` (the first put, or put back) if it holds ``size``."""
    if len(memo) >= size:
        for old in list(islice(memo, max(len(memo) // 2, 1))):
            memo.pop(old, None)


def put(memo: dict[_K, _V], key: _K, value: _V, size: int) -> None:
    """Set ``memo[key]``, first forgetting the older half of ``memo`` if it holds ``size``."""
    make_room(memo, size)
    memo[key] = value


class ByIdentity(Generic[_T, _V]):
    """``work(item)`` for each item, remembered by the item's identity, at most ``size``."""

    __slots__ = ("_size", "_work", "entries")

    def __init__(self, work: Callable[[_T], _V], size: int) -> None:
        self._work = work
        self._size = size
        self.entries: dict[int, tuple[_T, _V]] = {}
        """``id(item)``: ``(item, work(item))``."""

    def __len__(self) -> int:
        return len(self.entries)

    def __call__(self, item: _T) -> _V:
        """``work(item)``, remembered."""
        entry = self.entries.get(id(item))
        if entry is not None:  # it holds the only live object with this id: ``item``
            return entry[1]
        done = self._work(item)
        put(self.entries, id(item), (item, done), self._size)
        return done


STARTS = 16
"""How many answers of `begins` are remembered (only the ones that say yes; the memos of one
request ask within its round, and each entry keeps two histories alive until forgotten)."""

_starts: dict[tuple[int, int], tuple[tuple[object, ...], tuple[object, ...]]] = {}


def begins(items: tuple[_T, ...], start: tuple[_T, ...]) -> bool:
    """Whether ``items`` begins with ``start`` (``items[:len(start)] == start``), remembered.

    Comparing a long history to a remembered one copies it first (a slice); a yes is kept
    for the two tuples, which the entry holds (so their ids stay theirs), and the memos
    asking again of the same two get it at the cost of a lookup. Tuples compare their items
    by identity, then by value, as ``==`` does; the items are immutable values.

    Example:
        >>> history = (1, 2, 3)
        >>> begins((*history, 4), history), begins((1, 5, 3, 4), history)
        (True, False)
    """
    size = len(start)
    if size >= len(items):
        return size == len(items) and (items is start or items == start)
    key = (id(items), id(start))
    if key in _starts:
        return True
    if items[:size] != start:
        return False
    put(_starts, key, (items, start), STARTS)
    return True


PREFIXES = 8
"""How many starts `prefix` remembers (the latest; one request's memos ask within a round)."""

_prefixes: dict[tuple[int, int], tuple[tuple[object, ...], tuple[object, ...]]] = {}


def prefix(items: tuple[_T, ...], size: int) -> tuple[_T, ...]:
    """``items[:size]``: the same tuple for each memo that asks for it of the same ``items``.

    Memos that each keep the history before a request's last message keep one tuple, so
    that `begins` compares a later request to it once for all of them. The entry holds
    ``items`` (so its id stays its own) and the start.

    Example:
        >>> items = (1, 2, 3)
        >>> prefix(items, 2), prefix(items, 2) is prefix(items, 2)
        ((1, 2), True)
    """
    if size >= len(items):
        return items
    key = (id(items), size)
    found = _prefixes.get(key)
    if found is not None:
        return found[1]  # type: ignore[return-value]  # made of ``items`` as it holds
    start = items[:size]
    put(_prefixes, key, (items, start), PREFIXES)
    return start


def joined(start: tuple[_T, ...], more: tuple[_T, ...]) -> tuple[_T, ...]:
    """``start + more``, noted to begin with ``start`` (`begins` of the two needs no compare).

    Example:
        >>> history = (1, 2)
        >>> longer = joined(history, (3,))
        >>> longer, begins(longer, history)
        ((1, 2, 3), True)
    """
    items = start + more
    if start and more:
        put(_starts, (id(items), id(start)), (items, start), STARTS)
    return items
