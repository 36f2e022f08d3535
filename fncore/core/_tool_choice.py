"""Tool choice: whether, and which, tools the model may or must call in a round.

Its own module, below the model interface, so the pause records (which keep a round's tool
choice) need not import the model interface and its errors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias, final

__all__ = [
    "RequireTool",
    "ToolChoice",
]


@final
@dataclass(frozen=True, slots=True)
class RequireTool:
    """Tool choice that forces a call to one named tool.

    Example:
        >>> RequireTool("get_weather").name
        'get_weather'
    """

    name: str
    """The tool the model must call."""


ToolChoice: TypeAlias = Literal["auto", "none", "required"] | RequireTool
"""``auto``: loop until a text answer. ``none``: no tools. ``required`` (or a named tool): run
the calls, then return the calls and their results with no further model call."""
