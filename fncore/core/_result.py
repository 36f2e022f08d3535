"""What a successful run returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias, final

from fncore.core._messages import Message
from fncore.core._usage import Usage
from fncore.core._value import value

StopReason: TypeAlias = Literal["completed", "tool_required", "terminated"]
"""``completed``: the model answered with text. ``tool_required``: ``tool_choice`` was
``required`` and the calls ran. ``terminated``: a middleware returned ``Terminate``."""


@final
@value
@dataclass(frozen=True, slots=True)
class RunResult:
    """The final result of a run.

    Example:
        >>> RunResult(output="5", messages=(Message.assistant("5"),)).output
        '5'
    """

    output: str
    """The final answer's text (the termination text when terminated)."""
    messages: tuple[Message, ...]
    """The messages this run added after the input, tool calls and results included."""
    usage: Usage = Usage()
    """Tokens spent over every round."""
    rounds: int = 0
    """How many model rounds ran."""
    stop_reason: StopReason = "completed"
    """Why the run stopped."""
