"""The guardrails' vocabulary: verdicts, what a guardrail is given, the error of a block."""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias, TypeVar, final

from returns.result import Failure

from fncore.core import (
    AgentError,
    Emit,
    GuardTripped,
    Message,
    Position,
    RunInfo,
    Terminate,
    TextPart,
    ToolCallContext,
)
from fncore.middleware._imports import import_function

_T = TypeVar("_T")

Stage: TypeAlias = Literal["input", "output", "tool"]
"""What a guardrail checks: the user's input, the model's output, or a tool call."""

MESSAGE = "Sorry, I can't help with that."
"""The output of a blocked run with ``on_block="terminate"``, by default."""


@final
@dataclass(frozen=True, slots=True)
class Allow:
    """A guardrail's verdict: let it through unchanged.

    Example:
        >>> Allow()
        Allow()
    """


@final
@dataclass(frozen=True, slots=True)
class Block:
    """A guardrail's verdict: stop the run.

    Example:
        >>> Block("mentions a competitor").reason
        'mentions a competitor'
    """

    reason: str
    """Why: carried by `GuardBlocked` and `GuardTripped`."""


@final
@dataclass(frozen=True, slots=True)
class Rewrite:
    """A guardrail's verdict on a text: go on with this text instead.

    Example:
        >>> Rewrite("[redacted]").text
        '[redacted]'
    """

    text: str
    """The text that replaces the one checked."""


@final
@dataclass(frozen=True, slots=True)
class Reject:
    """A tool guardrail's verdict: do not run the tool; the model gets this error result.

    Example:
        >>> Reject("Deleting files is not allowed.").message
        'Deleting files is not allowed.'
    """

    message: str
    """The error result the model sees instead of the tool's."""


Verdict: TypeAlias = Allow | Block | Rewrite
"""What a text guardrail answers."""

ToolVerdict: TypeAlias = Allow | Reject | Block
"""What a tool guardrail answers."""


@final
@dataclass(frozen=True, slots=True)
class GuardCheck:
    """What a text guardrail is given.

    Example:
        >>> def no_shouting(check: GuardCheck) -> Verdict:
        ...     return Block("shouting") if check.text.isupper() else Allow()
    """

    text: str
    """The text to judge: one user message, or the model's text so far (a prefix while
    streaming, then the whole response)."""
    stage: Literal["input", "output"]
    """Whether ``text`` is the user's input or the model's output."""
    run: RunInfo
    """The run, for its metadata, and to call a moderation model:
    ``await check.run.call_model(request, by="guard")``."""


Guardrail: TypeAlias = Callable[[GuardCheck], Verdict | Awaitable[Verdict]]
"""A text guardrail: a function (sync or async) of a `GuardCheck`."""

ToolGuardrail: TypeAlias = Callable[[ToolCallContext], ToolVerdict | Awaitable[ToolVerdict]]
"""A tool guardrail: a function (sync or async) of the tool call's context."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GuardBlocked(AgentError):
    """A guardrail blocked the run (``guard`` with ``on_block="error"``).

    Example:
        >>> GuardBlocked(message="blocked", stage="input", reason="banned word").reason
        'banned word'
    """

    stage: Stage = "output"
    """What was blocked: the user's input, the model's output, or a tool call."""
    reason: str = ""
    """The guardrail's reason."""


def functions(given: Sequence[_T | str]) -> list[_T]:
    """The guardrails ``given``, names imported."""
    return [import_function(g, "guardrail") if isinstance(g, str) else g for g in given]  # type: ignore[misc]


def denied(patterns: Sequence[str]) -> Guardrail:
    r"""A guardrail blocking any text in which one of ``patterns`` is found.

    The patterns are regular expressions, matched case-insensitively anywhere in the text
    (``\bword\b`` for a whole word; `re.escape` a literal).

    Raises:
        ValueError: for a pattern that is not a valid regular expression.

    Example:
        >>> from fncore import RunInfo, State
        >>> check = denied(["pass(word)?"])
        >>> check(GuardCheck("my Password is x", "input", RunInfo("r", {}, State())))
        Block(reason='the text matches the denied pattern /pass(word)?/')
    """
    compiled: list[tuple[str, re.Pattern[str]]] = []
    for pattern in patterns:
        try:
            compiled.append((pattern, re.compile(pattern, re.IGNORECASE)))
        except re.error as exc:
            msg = f"deny: {pattern!r} is not a regular expression: {exc}"
            raise ValueError(msg) from None

    def deny(check: GuardCheck) -> Verdict:
        for pattern, regex in compiled:
            if regex.search(check.text):
                return Block(f"the text matches the denied pattern /{pattern}/")
        return Allow()

    return deny


async def answer(verdict: object, who: object) -> object:
    """``verdict`` awaited if it must be; raises TypeError if it is not a verdict."""
    if inspect.isawaitable(verdict):
        verdict = await verdict
    if not isinstance(verdict, (Allow, Block, Rewrite, Reject)):
        name = getattr(who, "__qualname__", repr(who))
        msg = (
            f"guardrail {name} returned {type(verdict).__name__}; return Allow(), "
            "Block(reason) or Rewrite(text) (tool guardrails: Reject(message))"
        )
        raise TypeError(msg)
    return verdict


async def judge(guards: Sequence[Guardrail], check: GuardCheck) -> Verdict:
    """Every guardrail's verdict on ``check``, in order: the first `Block`, else the text.

    A `Rewrite` passes the new text to the next guardrail; the answer is then ``Rewrite``
    of the last text (``Allow`` if no guardrail changed it).

    Raises:
        TypeError: if a guardrail answers something that is not a text verdict.
    """
    text = check.text
    for guard_fn in guards:
        verdict = await answer(guard_fn(dataclasses.replace(check, text=text)), guard_fn)
        if isinstance(verdict, Block):
            return verdict
        if isinstance(verdict, Rewrite):
            text = verdict.text
        elif not isinstance(verdict, Allow):
            msg = f"a text guardrail answered {type(verdict).__name__}: use Block to refuse"
            raise TypeError(msg)
    return Allow() if text == check.text else Rewrite(text)


def with_text(message: Message, text: str) -> Message:
    """``message`` with its text parts replaced by one holding ``text``, other parts kept."""
    others = tuple(p for p in message.parts if type(p) is not TextPart)
    return dataclasses.replace(message, parts=(TextPart(text), *others))


@dataclass(frozen=True, slots=True)
class Policy:
    """How one ``guard`` instance ends a blocked run."""

    name: str
    on_block: Literal["error", "terminate"]
    message: str

    def blocked(
        self, run: RunInfo, stage: Stage, reason: str, position: Position, emit: Emit | None
    ) -> Failure[Terminate | AgentError]:
        """Announce the block on the stream (if any), then the failure ``on_block`` says."""
        if emit is not None:
            emit(GuardTripped(self.name, stage, reason))
        if self.on_block == "terminate":
            return Failure(Terminate(self.message))
        return Failure(
            GuardBlocked(
                message=f"the {stage} guardrail blocked the run: {reason}",
                position=position,
                middleware=self.name,
                stage=stage,
                reason=reason,
            )
        )
