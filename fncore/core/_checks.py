"""Checks of settings values shared by the places that take them."""

from __future__ import annotations

import math


def timeout_problem(value: object, name: str) -> str | None:
    """Why ``value`` is not a valid timeout for ``name``, or ``None`` if it is.

    A timeout is a positive, finite number of seconds; ``None`` (no limit) is checked by
    the caller where it is allowed.

    Example:
        >>> timeout_problem(float("nan"), "tool_timeout")
        'tool_timeout must be a positive, finite number of seconds, not nan'
        >>> timeout_problem(2.5, "tool_timeout") is None
        True
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        return f"{name} must be a positive, finite number of seconds, not {value!r}"
    return None
