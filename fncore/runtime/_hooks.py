"""Dispatch lifecycle events to hooks, each under a timeout."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from fncore.core import HookEvent

logger = logging.getLogger("fncore")

HookEntry = tuple[str, Callable[[Any], Awaitable[None]], float]


async def notify(entries: tuple[HookEntry, ...], event: HookEvent) -> None:
    """Run every hook for ``event`` in turn; a slow or failing hook is skipped with a warning.

    Hooks observe only, so nothing they do (or fail to do) changes the run.
    """
    for name, fn, timeout in entries:
        try:
            async with asyncio.timeout(timeout):
                await fn(event)
        except TimeoutError:
            logger.warning(
                "hook %r skipped: it took longer than %ss on %s",
                name,
                timeout,
                type(event).__name__,
            )
        except Exception as exc:
            logger.warning(
                "hook %r failed on %s and was skipped: %s: %s",
                name,
                type(event).__name__,
                type(exc).__name__,
                exc,
            )
