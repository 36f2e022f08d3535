"""Where each built-in stands in the onion, relative to the other built-ins present.

Outermost first. Every built-in registers with ``soft=True`` hints from `place`, so the
order holds whichever built-ins an agent has and whatever order they were listed in, and a
missing one is simply skipped. Why this order is the "Ordering the built-ins" page.
"""

from __future__ import annotations

from typing import TypedDict

ORDER: tuple[str, ...] = (
    "trace",
    "approve",
    "redact_pii",
    "guard",
    "select_tools",
    "cache",
    "limit_calls",
    "budget",
    "fallback",
    "repair_history",
    "retry",
    "retry_tools",
    "rate_limit",
    "cache_prompt",
    "patch_tool_calls",
    "timeout",
    "emulate_tools",
    "compact",
    "instructions",
)
"""The built-ins by their place, outermost first."""


class Place(TypedDict):
    """Keyword arguments for ``Registry.on`` that put a built-in in its place."""

    before: list[str]
    after: list[str]
    soft: bool


def place(name: str) -> Place:
    """The soft ``before``/``after`` hints that put built-in ``name`` in its place.

    Example:
        >>> place("fallback")["after"][-3:]
        ['cache', 'limit_calls', 'budget']
    """
    index = ORDER.index(name)
    return {"before": list(ORDER[index + 1 :]), "after": list(ORDER[:index]), "soft": True}
