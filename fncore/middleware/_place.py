"""Where each built-in stands in the onion, relative to the other built-ins present.

Outermost first. Every built-in registers with the hints from `place`, which name the other
built-ins and find them by what they are (``Registry.on(..., builtin=...)``), never by
name: the order holds whichever built-ins an agent has, whatever they are called and
whatever order they were listed in, a missing one is simply skipped, and a middleware of
yours named like a built-in is not taken for it. Why this order is the "Ordering the
built-ins" page.
"""

from __future__ import annotations

from typing import TypedDict

__all__ = ["ORDER", "place"]

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
    builtin: str


def place(name: str) -> Place:
    """The ``before``/``after`` hints that put built-in ``name`` in its place, and its identity.

    Example:
        >>> where = place("fallback")
        >>> where["after"][-3:], where["builtin"]
        (['cache', 'limit_calls', 'budget'], 'fallback')
    """
    index = ORDER.index(name)
    return {"before": list(ORDER[index + 1 :]), "after": list(ORDER[:index]), "builtin": name}
