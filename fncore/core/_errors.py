"""Typed error values.

Errors inside fncore are values, carried in ``Failure(...)``; nothing in the core raises for
an expected outcome. Every error says what failed, where, and what to do about it::

    AgentError                      base: message, position, middleware
    ├── MiddlewareError             a middleware, tool source or transformer raised or misbehaved
    ├── ModelError                  the model call failed
    │   └── (provider errors)       adapters add authentication, rate limit, timeout, ...
    ├── LoopError                   the agent loop stopped; carries the transcript so far
    │   ├── MaxIterationsReached    every allowed round ended in tool calls
    │   ├── TooManyToolErrors       too many rounds in a row had a failing tool call
    │   └── UnknownToolCalled       the model called a tool that does not exist
    │                               (only with ``terminate_on_unknown_calls=True``)
    └── InvalidHistory              the messages break the tool-call/result pairing

Registration mistakes are not values: they raise `RegistrationError` when the stack is built,
because they are programming errors to fix before anything runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

if TYPE_CHECKING:
    from fncore.core._messages import Message

Position: TypeAlias = Literal[
    "run", "reasoning", "model_call", "tool_call", "compress_context", "system_prompt"
]
"""Where a middleware stands; see the concepts page for what each wraps."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentError:
    """Base of every error value.

    Example:
        >>> err = MiddlewareError(message="boom", position="model_call", middleware="log")
        >>> str(err)
        "model_call middleware 'log': boom"
    """

    message: str
    """What went wrong and what to do about it."""
    position: Position | None = None
    """The position where it happened, if any."""
    middleware: str | None = None
    """The name of the middleware that failed, if one did."""

    def __str__(self) -> str:
        where = ""
        if self.position and self.middleware:
            where = f"{self.position} middleware {self.middleware!r}: "
        elif self.position:
            where = f"{self.position}: "
        return f"{where}{self.message}"


@dataclass(frozen=True, slots=True, kw_only=True)
class MiddlewareError(AgentError):
    """User code at a position raised, or returned something that is not a ``Result``."""

    exception_type: str = ""
    """The class name of the exception raised, if one was."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelError(AgentError):
    """The model call failed. Provider adapters subclass this with specific kinds."""

    retryable: bool = False
    """Whether the same request may succeed if sent again."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopError(AgentError):
    """The agent loop stopped before an answer."""

    messages: tuple[Message, ...] = ()
    """The transcript up to the stop; every tool call in it has its result."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MaxIterationsReached(LoopError):
    """Every allowed round ended in tool calls; raise ``max_iterations`` or narrow the task."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TooManyToolErrors(LoopError):
    """Too many consecutive rounds had a failing tool call."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UnknownToolCalled(LoopError):
    """The model called a tool that is not offered (with ``terminate_on_unknown_calls``)."""

    tool_name: str = ""
    """The name the model used."""


@dataclass(frozen=True, slots=True, kw_only=True)
class InvalidHistory(AgentError):
    """The conversation breaks the rule that every tool call has exactly one result."""


class RegistrationError(Exception):
    """A middleware, hook or tool was registered wrongly; the message says what to change."""
