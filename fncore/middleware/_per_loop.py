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

    __slots__ = ("_loops",)

    def __init__(self) -> None:
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, _V]] = (
            weakref.WeakKeyDictionary()
        )

    def here(self) -> dict[str, _V]:
        """The table of the running loop (made empty on first use)."""
        loop = asyncio.get_running_loop()
        table = self._loops.get(loop)
        if table is None:
            table = self._loops[loop] = {}
        return table
