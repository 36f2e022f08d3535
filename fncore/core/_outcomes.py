"""Outcomes: how a middleware continues, terminates or fails."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias, TypeVar, final

from returns.result import Result

from fncore.core._errors import AgentError

_T = TypeVar("_T")


@final
@dataclass(frozen=True, slots=True)
class Terminate:
    """Stop the agent loop with this output: no further model call, tool round or layer.

    Return ``Failure(Terminate(...))`` from any position. Upstream middleware still receive it
    (so tracing sees how the run ended), but post-processing written as ``.map(...)`` is
    skipped. The run then succeeds with ``stop_reason == "terminated"`` and ``output`` set to
    this text. From ``tool_call`` the text is also that call's result.

    Example:
        >>> from returns.result import Failure
        >>> Failure(Terminate("blocked by policy")).failure().output
        'blocked by policy'
    """

    output: str
    """The final answer the run ends with."""


Halt: TypeAlias = Terminate | AgentError
"""What a ``Failure`` carries: a termination or an error value."""

Outcome: TypeAlias = Result[_T, Halt]
"""The return type of every handler: ``Success(value)``, or ``Failure(Terminate | AgentError)``."""
