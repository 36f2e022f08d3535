"""Outcomes: how a middleware continues, terminates or fails."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeAlias, TypeVar, cast, final

from returns.result import Failure, Result, Success

from fncore.core._errors import AgentError
from fncore.core._pause import Pause

__all__ = ["Halt", "Outcome", "Terminate", "cases", "recover"]

_T = TypeVar("_T")
_V = TypeVar("_V")
_E = TypeVar("_E")


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


Halt: TypeAlias = Terminate | Pause | AgentError
"""What a ``Failure`` carries: a termination, a pause for a human, or an error value."""

Outcome: TypeAlias = Result[_T, Halt]
"""The return type of every handler: ``Success(value)``, or ``Failure(Terminate | Pause |
AgentError)``."""


async def recover(
    outcome: Outcome[_T], handler: Callable[[AgentError], Awaitable[Outcome[_T]]]
) -> Outcome[_T]:
    """Await ``handler(error)`` when ``outcome`` failed with an error; pass anything else on.

    The async counterpart of ``outcome.lash(...)`` that leaves a `Terminate` (and a
    `Pause`) alone, so a retry or fallback never undoes a deliberate stop. Chain it to
    retry more than once.

    Example:
        >>> import asyncio
        >>> from returns.result import Failure, Success
        >>> async def again(error: AgentError) -> Outcome[int]:
        ...     return Success(2)
        >>> asyncio.run(recover(Failure(AgentError(message="down")), again))
        <Success: 2>
        >>> asyncio.run(recover(Failure(Terminate("stop")), again))
        <Failure: Terminate(output='stop')>
    """
    if type(outcome) is Failure:
        halt = outcome.failure()
        if isinstance(halt, AgentError):
            return await handler(halt)
    return outcome


def cases(outcome: Result[_V, _E], /) -> Success[_V] | Failure[_E]:
    """``outcome`` itself, typed as the union mypy needs to narrow it exactly.

    A ``Result[V, E]`` is always a ``Success`` or a ``Failure``, but mypy narrows
    ``case Success(x)`` or ``isinstance(outcome, Success)`` on a ``Result`` to
    ``Success[Any]``: it fills a class pattern's type arguments with ``Any`` instead of
    taking them from the subject. On ``Success[V] | Failure[E]`` each branch keeps its
    type: ``case Success(x)`` gives ``x: V``, ``case Failure(e)`` gives ``e: E``, and a
    ``match`` with both cases is exhaustive. Match on ``cases(outcome)``; keep chaining
    (``.map``, ``.bind``, ``.lash``) on the ``Result`` itself. Nothing is copied.

    Example:
        >>> from returns.result import Success
        >>> match cases(Success(2)):
        ...     case Success(number):
        ...         number + 1
        ...     case Failure(error):
        ...         raise error
        3
    """
    # returns has exactly these two subclasses of Result, and both are final.
    return cast("Success[_V] | Failure[_E]", outcome)
