"""Fold a position's middleware into one handler, once, when the stack is built.

Each middleware becomes one layer; the layer catches what the user function raises and
turns it into a `MiddlewareError` value for the layer outside it, and checks that it
returned a ``Result``. ``asyncio.CancelledError`` is not an ``Exception`` and propagates.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from returns.result import Failure, Success

from fncore.core._errors import MiddlewareError, Position
from fncore.core._outcomes import Halt, Outcome

_C = TypeVar("_C")
_T = TypeVar("_T")

Handler = Callable[[_C], Awaitable[Outcome[_T]]]
"""A folded position: context in, outcome out."""
Layer = Callable[[_C, Handler[_C, _T]], Awaitable[Outcome[_T]]]
"""One onion middleware with its injected dependencies already bound."""
Step = Callable[[_C, _T], Awaitable[Outcome[_T]]]
"""One transformer with its dependencies already bound."""


def raised(position: Position, name: str, exc: Exception) -> Failure[Halt]:
    """The error value for an exception raised by middleware ``name``."""
    return Failure(
        MiddlewareError(
            message=f"raised {type(exc).__name__}: {exc}",
            position=position,
            middleware=name,
            exception_type=type(exc).__name__,
        )
    )


def not_a_result(position: Position, name: str, value: object) -> Failure[Halt]:
    """The error value for middleware ``name`` returning ``value`` instead of a Result."""
    hint = (
        "did it forget `return await call_next(ctx)`?"
        if value is None
        else "wrap it as Success(...) or Failure(...)"
    )
    return Failure(
        MiddlewareError(
            message=f"returned {type(value).__name__}, not a Result; {hint}",
            position=position,
            middleware=name,
        )
    )


def _layer(
    position: Position, name: str, fn: Layer[_C, _T], inner: Handler[_C, _T]
) -> Handler[_C, _T]:
    async def handle(ctx: _C) -> Outcome[_T]:
        try:
            out = await fn(ctx, inner)
        except Exception as exc:
            return raised(position, name, exc)
        cls = type(out)
        if cls is Success or cls is Failure:
            return out
        return not_a_result(position, name, out)

    handle.__qualname__ = f"{position}:{name}"
    return handle


def fold_onion(
    position: Position,
    layers: Sequence[tuple[str, Layer[_C, _T]]],
    innermost: Handler[_C, _T],
) -> Handler[_C, _T]:
    """Wrap ``innermost`` in ``layers``; the first layer is the outermost.

    With no layers the result is ``innermost`` itself: an empty position costs nothing.

    Example:
        >>> import asyncio
        >>> from returns.result import Success
        >>> async def op(x): return Success(x + 1)
        >>> async def double(x, call_next): return (await call_next(x)).map(lambda v: v * 2)
        >>> asyncio.run(fold_onion("run", [("double", double)], op)(1))
        <Success: 4>
    """
    handler = innermost
    for name, fn in reversed(layers):
        handler = _layer(position, name, fn, handler)
    return handler


def chain_steps(
    position: Position, steps: Sequence[tuple[str, Step[_C, _T]]]
) -> Callable[[_C, _T], Awaitable[Outcome[_T]]] | None:
    """Chain transformers left to right; each gets the previous one's output.

    Returns ``None`` when there are no steps, so callers skip the position entirely.
    """
    if not steps:
        return None
    frozen = tuple(steps)

    async def run(ctx: _C, value: _T) -> Outcome[_T]:
        for name, fn in frozen:
            try:
                out: Any = await fn(ctx, value)
            except Exception as exc:
                return raised(position, name, exc)
            cls = type(out)
            if cls is Success:
                value = out.unwrap()
            elif cls is Failure:
                return out  # type: ignore[no-any-return]
            else:
                return not_a_result(position, name, out)
        return Success(value)

    return run
