"""Objects bound to an event loop (futures, semaphores), kept per loop by the built-ins.

A registry outlives event loops (a container serves one ``asyncio.run`` after another, a
test suite a loop per test), while asyncio's futures and semaphores belong to the loop they
were made in. What a built-in keeps for in-process coordination therefore lives in a table
per running loop, dropped with the loop.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Generic, TypeVar

_V = TypeVar("_V")


class PerLoop(Generic[_V]):
    """Tables by key, one per running event loop.

    Example:
        >>> async def main() -> bool:
        ...     tables: PerLoop[int] = PerLoop()
        ...     tables.here()["a"] = 1
        ...     return tables.here() == {"a": 1}
        >>> asyncio.run(main())
        True
    """

    __slots__ = ("_last", "_loops")

    def __init__(self) -> None:
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, _V]] = (
            weakref.WeakKeyDictionary()
        )
        # the loop asked for last, and its table: a weak reference's call is cheaper than
        # the weak dictionary's lookup, which makes a new weak reference each time
        self._last: tuple[weakref.ref[asyncio.AbstractEventLoop], dict[str, _V]] | None = None

    def here(self) -> dict[str, _V]:
        """The table of the running loop (made empty on first use)."""
        loop = asyncio.get_running_loop()
        last = self._last
        if last is not None and last[0]() is loop:
            return last[1]
        table = self._loops.get(loop)
        if table is None:
            table = self._loops[loop] = {}
        self._last = (weakref.ref(loop), table)
        return table
