"""Fold a position's middleware into one handler, once, when the stack is built.

Each middleware becomes one layer. The layer catches what the user function raises and
turns it into a `MiddlewareError` value for the layer outside it, and checks what it
returned: a ``Success`` of the position's value type, or a ``Failure`` of a `Terminate` or
an `AgentError`. Anything else becomes a `MiddlewareError` naming the middleware, the
position, what it returned and what it should have. The checks are type identity, so they
cost a few nanoseconds. ``asyncio.CancelledError`` is not an ``Exception`` and propagates.

A built-in that makes these checks itself (`checks_itself`) is folded without that layer
around it: its layer is the function itself, with the next layer bound as its
``call_next``, one coroutine and one call a layer less.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from types import CodeType, FunctionType
from typing import Any, TypeVar

from returns.result import Failure, Success

from fncore.core._errors import AgentError, MiddlewareError
from fncore.core._outcomes import Halt, Outcome, Terminate
from fncore.core._pause import Pause
from fncore.core._position_names import Position
from fncore.core._positions import POSITIONS
from fncore.core._tools import ToolResult

_C = TypeVar("_C")
_T = TypeVar("_T")
_F = TypeVar("_F", bound=Callable[..., Awaitable[Any]])

Handler = Callable[[_C], Awaitable[Outcome[_T]]]
"""A folded position: context in, outcome out."""
Layer = Callable[[_C, Handler[_C, _T]], Awaitable[Outcome[_T]]]
"""One onion middleware with its injected dependencies already bound."""
Step = Callable[[_C, _T], Awaitable[Outcome[_T]]]
"""One transformer with its dependencies already bound."""
Accepts = Callable[[_C, object], bool]
"""A deeper check of a ``Success`` value that passed the type check (context, value)."""

_HALTS = (Terminate, Pause, AgentError)


def short_repr(value: object, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters; never raises."""
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


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


def wrong_value(position: Position, name: str, value: object) -> Failure[Halt]:
    """The error value for middleware ``name`` returning ``value``: not its position's outcome."""
    info = POSITIONS[position]
    must = (
        f"a {position} middleware returns {info.returns}, Failure(Terminate(...)), "
        "Failure(Pause(...)) or Failure(AgentError)"
    )
    cls = type(value)
    if cls is Failure:
        got = f"Failure({short_repr(value.failure())})"  # type: ignore[attr-defined]
        hint = "a Failure carries Terminate(...) or an AgentError such as MiddlewareError(...)"
    elif cls is Success:
        inner = value.unwrap()  # type: ignore[attr-defined]
        got = f"Success({short_repr(inner)})"
        hint = (
            f"wrap the text: Success(ToolResult({short_repr(inner, 20)}))"
            if info.value is ToolResult and isinstance(inner, str)
            else f"a {type(inner).__name__} is not what this position carries"
        )
    elif value is None:
        got, hint = "None, not a Result", "did it forget `return await call_next(ctx)`?"
    else:
        got, hint = f"{cls.__name__} {short_repr(value)}, not a Result", "wrap it in Success(...)"
    return Failure(
        MiddlewareError(
            message=f"returned {got}; {hint}; {must}", position=position, middleware=name
        )
    )


def _checked_failure(position: Position, name: str, out: Any) -> Outcome[Any]:
    """``out`` if it is a ``Failure`` of a halt, else the error for returning it."""
    if type(out) is Failure and isinstance(out.failure(), _HALTS):
        return out
    return wrong_value(position, name, out)


_CHECKS_ITSELF = "__fncore_checks_itself__"
"""The attribute `checks_itself` marks a function with: the position and name it checks for."""


def checks_itself(position: Position, name: str) -> Callable[[_F], _F]:
    """Mark an onion middleware (fncore's own) that makes its layer's checks itself.

    The marked function promises what a layer's guard would otherwise make sure of: it
    turns any ``Exception`` raised while it runs (its ``call_next`` included) into
    ``raised(position, name, exc)``, and it returns only outcomes of ``position`` (a
    ``Success`` of its value type, or a ``Failure`` of a `Terminate`, a `Pause` or an
    `AgentError`). Folded at ``position`` under ``name``, it is called straight, with no
    guard around it (and, a plain function or a ``partial`` of one, with no call of its
    own: its copy with ``call_next`` bound is the layer); registered anywhere else or
    under another name, or at a position whose values get a further check
    (``compress_context``), it is guarded as any middleware (the error values it makes
    itself still name ``name``).

    Args:
        position: Where the function is registered.
        name: The name it is registered under.

    Returns:
        A decorator returning the function itself, marked.
    """

    def mark(fn: _F) -> _F:
        setattr(fn, _CHECKS_ITSELF, (position, name))
        return fn

    return mark


# Each layer's guard: one of these two functions, given globals of its own (`_layer`).
_GUARDS = """
async def checked(ctx):
    try:
        out = await fn(ctx, inner)
    except Exception as exc:
        return raised(position, name, exc)
    try:
        if out._inner_value.__class__ is expected and out.__class__ is Success:
            return out
    except AttributeError:
        pass
    return checked_failure(position, name, out)

async def accepted(ctx):
    try:
        out = await fn(ctx, inner)
    except Exception as exc:
        return raised(position, name, exc)
    if type(out) is Success:
        value = out.unwrap()
        if type(value) is expected and check(ctx, value):
            return out
        return wrong_value(position, name, out)
    return checked_failure(position, name, out)
"""
_templates: dict[str, Any] = {}
exec(_GUARDS, _templates)
_CHECKED: CodeType = _templates["checked"].__code__
_ACCEPTED: CodeType = _templates["accepted"].__code__

# The layer of a middleware that checks itself: a plain call, which returns its coroutine.
_STRAIGHT = """
def straight(ctx):
    return fn(ctx, inner)
"""
exec(_STRAIGHT, _templates)
_CALLED: CodeType = _templates["straight"].__code__


_STARRED = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS


def _with_call_next(fn: Layer[_C, _T], inner: Handler[_C, _T]) -> Handler[_C, _T] | None:
    """``fn`` with ``inner`` as its ``call_next``: the layer, with no frame of its own.

    A copy of ``fn``'s function whose last parameter defaults to ``inner`` (taken through
    the ``partial`` ``fn`` may be, binding the leading ones), so that calling it with the
    context alone calls ``fn(ctx, inner)`` with no call in between. ``None`` when ``fn`` is
    not a function of just those positional parameters, with no defaults: its layer then
    makes the call (`_CALLED`).
    """
    func: Any = fn
    bound: tuple[Any, ...] = ()
    if type(fn) is partial and not fn.keywords:
        func, bound = fn.func, fn.args
    if type(func) is not FunctionType:
        return None
    code = func.__code__
    if (
        code.co_argcount != len(bound) + 2
        or code.co_kwonlyargcount
        or code.co_flags & _STARRED
        or func.__defaults__
        or func.__kwdefaults__
    ):
        return None
    copy = FunctionType(code, func.__globals__, func.__name__, (inner,), func.__closure__)
    copy.__qualname__ = func.__qualname__
    return partial(copy, *bound) if bound else copy


def _layer(
    position: Position,
    name: str,
    fn: Layer[_C, _T],
    inner: Handler[_C, _T],
    expected: type,
    accepts: Accepts[_C] | None,
) -> Handler[_C, _T]:
    # The hottest code in fncore, run once per layer per call, and the one place for
    # its three tricks; each pays by the figures below (10-layer onions, the variants
    # interleaved in one process, Python 3.11; a bare closure layer costs ~75-90 ns):
    # * the common case, a type check alone, reads ``_inner_value``, where returns keeps
    #   a container's value (a test pins that it stays there), not ``unwrap()``: 14 ns a
    #   layer less. A value without the attribute is rare, and raising AttributeError is
    #   then cheaper than testing for it every time;
    # * each layer gets a code object of its own: CPython specialises attribute access
    #   per code object, and one shared by every position would see a different value
    #   type at each (RunResult, ModelResponse, ToolResult) and stay unspecialised: 6 ns;
    # * what a layer needs (its middleware, the next layer, the expected type, its name)
    #   are the globals of its function, not a closure's cells: the coroutine's frame is
    #   smaller and nothing is copied into it per call: 190 against 170-174 ns a layer.
    namespace: dict[str, Any] = {"fn": fn, "inner": inner}
    if accepts is None and getattr(fn, _CHECKS_ITSELF, None) == (position, name):
        # no guard: the middleware is its own (see `checks_itself`)
        bound = _with_call_next(fn, inner)
        if bound is not None:
            return bound
        code = _CALLED
    else:
        namespace.update(
            expected=expected,
            check=accepts,
            position=position,
            name=name,
            Success=Success,
            raised=raised,
            wrong_value=wrong_value,
            checked_failure=_checked_failure,
        )
        code = _CHECKED if accepts is None else _ACCEPTED
    handle = FunctionType(code.replace(), namespace, f"{position}:{name}")
    handle.__qualname__ = f"{position}:{name}"
    return handle


def fold_onion(
    position: Position,
    layers: Sequence[tuple[str, Layer[_C, _T]]],
    innermost: Handler[_C, _T],
    expected: type,
    accepts: Accepts[_C] | None = None,
) -> Handler[_C, _T]:
    """Wrap ``innermost`` in ``layers``; the first layer is the outermost.

    With no layers the result is ``innermost`` itself: an empty position costs nothing.

    Args:
        position: Where the layers stand, for error values.
        layers: ``(name, middleware)`` pairs, outermost first.
        innermost: The operation the onion wraps.
        expected: The exact type a ``Success`` must carry.
        accepts: A further check of that value, if its type is not enough.

    Example:
        >>> import asyncio
        >>> from returns.result import Success
        >>> async def op(x): return Success(x + 1)
        >>> async def double(x, call_next): return (await call_next(x)).map(lambda v: v * 2)
        >>> asyncio.run(fold_onion("run", [("double", double)], op, int)(1))
        <Success: 4>
    """
    handler = innermost
    for name, fn in reversed(layers):
        handler = _layer(position, name, fn, handler, expected, accepts)
    return handler


def chain_steps(
    position: Position, steps: Sequence[tuple[str, Step[_C, str]]]
) -> Callable[[_C, str], Awaitable[Outcome[str]]] | None:
    """Chain text transformers left to right; each gets the previous one's output.

    Returns ``None`` when there are no steps, so callers skip the position entirely.
    """
    if not steps:
        return None
    frozen = tuple(steps)

    async def run(ctx: _C, value: str) -> Outcome[str]:
        for name, fn in frozen:
            try:
                out: Any = await fn(ctx, value)
            except Exception as exc:
                return raised(position, name, exc)
            cls = type(out)
            if cls is Success and isinstance(text := out.unwrap(), str):
                value = text
            elif cls is Failure and isinstance(out.failure(), _HALTS):
                return out  # type: ignore[no-any-return]
            else:
                return wrong_value(position, name, out)
        return Success(value)

    return run
