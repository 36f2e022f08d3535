"""Checks of settings values shared by the places that take them.

A time in seconds (a timeout, a time to live, a lease, a period) is checked here and
nowhere else: `timeout_problem` for values given in code, `Seconds` for pydantic fields and
validated parameters (configuration, ``[[middleware]]`` entries, the built-ins' factories).
Where zero seconds is allowed too: `ttl_problem` and `SomeSeconds`.
"""

from __future__ import annotations

import contextlib
import math
from typing import Annotated, TypeAlias

from pydantic import BeforeValidator, Field


def seconds_problem(value: object) -> str | None:
    """Why ``value`` is not a positive, finite number of seconds, or ``None`` if it is.

    Example:
        >>> seconds_problem(float("inf"))
        'must be a positive, finite number of seconds, not inf'
        >>> seconds_problem(True)
        'must be a positive, finite number of seconds, not True'
        >>> seconds_problem(0.5) is None
        True
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        return f"must be a positive, finite number of seconds, not {value!r}"
    return None


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
    problem = seconds_problem(value)
    return None if problem is None else f"{name} {problem}"


def ttl_problem(value: object, name: str) -> str | None:
    """Why ``value`` is not zero or more seconds, finite, for ``name``; ``None`` if it is.

    Example:
        >>> ttl_problem(-1, "tools_ttl")
        'tools_ttl must be zero or more seconds, finite, not -1'
        >>> ttl_problem(0, "tools_ttl") is None
        True
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
    ):
        return f"{name} must be zero or more seconds, finite, not {value!r}"
    return None


def _seconds(value: object) -> object:
    """`Seconds`' check; text (an environment variable's value) is read as a number first."""
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = float(value)
    problem = seconds_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


Seconds: TypeAlias = Annotated[float, BeforeValidator(_seconds)]
"""A positive, finite number of seconds, as a pydantic field or a validated parameter."""

SomeSeconds: TypeAlias = Annotated[float, Field(ge=0, allow_inf_nan=False)]
"""Zero or more seconds, finite, as a pydantic field or a validated parameter."""
