"""Bounded memos of what is worked out from immutable objects, kept by the objects' identity.

Hashing a message costs about as much as working something out from it, so `compact`
remembers by ``id`` instead. An ``id`` is only unique among live objects, so each entry
holds its object: while it is remembered the object stays alive and no other object can
take its ``id``. The objects are immutable (frozen dataclasses), so an object that changed
is a new object, worked out afresh.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

_T = TypeVar("_T")
_K = TypeVar("_K")
_V = TypeVar("_V")


def put(memo: dict[_K, _V], key: _K, value: _V, size: int) -> None:
    """Set ``memo[key]``, first forgetting the older half of ``memo`` if it holds ``size``."""
    if len(memo) >= size:
        kept = list(memo.items())[(len(memo) + 1) // 2 :]
        memo.clear()
        memo.update(kept)
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
