"""Ownership: what an agent, a registry or a container made, and so must close.

One mechanism for all three. An owner keeps what it made in an `Owned`; closing the owner
closes each of those things once, the last made first. A container adopts what the registries
it builds own, so a store two of them share is closed once when the container shuts down.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Protocol, TypeVar, final, runtime_checkable

_T = TypeVar("_T")


@runtime_checkable
class SupportsAclose(Protocol):
    """Anything holding what must be released: ``await thing.aclose()`` releases it."""

    def aclose(self) -> Awaitable[None]:
        """Release what it holds (connections, processes)."""
        ...


class _Owner(Protocol):
    @property
    def resources(self) -> tuple[Any, ...]: ...


_O = TypeVar("_O", bound=_Owner)


@final
class Owned:
    """What an owner made and must close: each thing once, the last made first.

    Example:
        >>> import asyncio
        >>> class Pool:
        ...     async def aclose(self) -> None:
        ...         print("closed")
        >>> owned = Owned()
        >>> pool = owned.keep(Pool())
        >>> asyncio.run(owned.close())
        closed
    """

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: list[SupportsAclose] = []

    @property
    def items(self) -> tuple[SupportsAclose, ...]:
        """What `close` will close, in the order it was added."""
        return tuple(self._items)

    def add(self, item: object) -> None:
        """Close ``item`` (if it has ``aclose``) when the owner closes, once."""
        if isinstance(item, SupportsAclose) and all(i is not item for i in self._items):
            self._items.append(item)

    def adopt(self, owner: _O) -> _O:
        """`add` what ``owner`` (a `Registry`, say) owns, so one shared by two is closed once."""
        for resource in owner.resources:
            self.add(resource)
        return owner

    def keep(self, item: _T) -> _T:
        """`add` ``item`` and return it."""
        self.add(item)
        return item

    async def close(self) -> None:
        """Close everything added, last first, and forget it."""
        items, self._items = self._items, []
        for item in reversed(items):
            await item.aclose()
