"""What a successful run returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, Literal, TypeAlias, final

from returns.result import Result
from typing_extensions import TypeVar

from fncore.core._errors import AgentError
from fncore.core._messages import Message, ToolCallPart
from fncore.core._pause import Paused
from fncore.core._usage import Usage
from fncore.core._value import value

__all__ = ["RunOutcome", "RunResult", "StopReason"]

_OutputT = TypeVar("_OutputT", default=str)

StopReason: TypeAlias = Literal[
    "completed", "tool_required", "terminated", "awaiting_tools", "paused"
]
"""``completed``: the model answered with text. ``tool_required``: ``tool_choice`` was
``required`` and the calls ran. ``terminated``: a middleware returned ``Terminate``.
``awaiting_tools``: the model asked for tools and automatic invocation is off
(``LoopSettings(enabled=False)``); the last message holds the calls, unexecuted.
``paused``: a middleware paused the run for a human (`Paused` says what for); resume it
with ``Agent.resume``."""


@final
@value
@dataclass(frozen=True, slots=True)
class RunResult(Generic[_OutputT]):
    """The final result of a run: ``RunResult[T]`` for an agent with ``output_type=T``.

    Example:
        >>> RunResult(output="5", messages=(Message.assistant("5"),)).output
        '5'
    """

    output: _OutputT
    """The final answer: its text (the termination text when terminated), or, for an
    agent with an ``output_type``, the validated value of that type."""
    messages: tuple[Message, ...]
    """The messages this run added after the input, tool calls and results included."""
    usage: Usage = Usage()
    """Tokens spent over every round."""
    rounds: int = 0
    """How many model rounds ran."""
    stop_reason: StopReason = "completed"
    """Why the run stopped."""
    paused: Paused | None = None
    """With ``stop_reason == "paused"``: the checkpoint to resume from and what it waits
    for; otherwise ``None``."""
    _open: tuple[ToolCallPart, ...] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    """The calls `messages` leave unanswered, when the agent loop that made them vouched
    for their pairing (`fncore.core._turn.vouch`); ``None``: not known, so a commit scans
    them. Not an argument, so ``dataclasses.replace`` (a middleware's change) drops it."""


RunOutcome: TypeAlias = Result[RunResult[_OutputT], AgentError]
"""What ``Agent.run`` returns: ``Success(RunResult)`` or ``Failure(AgentError)``;
``RunOutcome[T]`` for an ``Agent[T]`` (bare, ``T`` is ``str``). Match on
``cases(outcome)`` to narrow it with exact types."""
