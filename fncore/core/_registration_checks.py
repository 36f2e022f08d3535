"""Checks of what is registered: a function's signature, and what ``step=True`` applies to."""

from __future__ import annotations

import inspect
from collections.abc import Callable

from fncore.core._errors import RegistrationError
from fncore.core._position_names import MODEL_CALL, TOOL_CALL

__all__: list[str] = []


def not_a_step(position: str) -> str:
    """Why a middleware at ``position`` cannot be registered with ``step=True``."""
    kind = (
        f"each pass through {position!r} is one step of a durable run already"
        if position in (MODEL_CALL, TOOL_CALL)
        else f"{position!r} runs again when a durable run is replayed, deciding the same "
        "from the recorded steps"
    )
    return (
        f"step=True applies to hooks only (run_start, run_end, round_start, tool_start, "
        f"tool_end, compaction, error, subagent_start, subagent_end), not to {position!r}: "
        f"{kind}; make an observer with effects a hook: @hook(event, step=True)"
    )


def _name_of(fn: Callable[..., object]) -> str:
    return getattr(fn, "__name__", None) or type(fn).__name__


def check_signature(
    fn: Callable[..., object], required: int, what: str, shape: str, *, is_async: bool = True
) -> None:
    """Raise `RegistrationError` unless ``fn`` is async and takes ``required`` arguments.

    Any further parameter must have a default: it is resolved from the container at build
    time (``Provide["name"]``) or left at its default.
    """
    name = _name_of(fn)
    if is_async and not inspect.iscoroutinefunction(fn):
        msg = f"{what} {name!r} must be an async function: write `async def {name}{shape}`"
        raise RegistrationError(msg)
    if not is_async and inspect.iscoroutinefunction(fn):
        msg = f"{what} {name!r} must be a plain function, not async: write `def {name}{shape}`"
        raise RegistrationError(msg)
    params = list(inspect.signature(fn).parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    no_default = [
        p
        for p in params
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if len(positional) < required or len(no_default) != required:
        got = ", ".join(p.name for p in params) or "nothing"
        msg = (
            f"{what} {name!r} takes ({got}) but must take exactly {required} argument(s): "
            f"`async def {name}{shape}`; give any extra parameter a default such as "
            '`Provide["name"]` to have it injected from the container'
        )
        raise RegistrationError(msg)
