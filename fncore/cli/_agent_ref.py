"""Your agent, named ``module:attr`` (``--agent``, ``[agent] ref``), as ``uvicorn app:app`` does.

`load_agent` imports ``module`` with the current directory importable, follows ``attr``
(dotted: ``module:holder.agent``) and takes it as it is when it is an `Agent`, or calls it
when it is a function of no arguments that returns one (and awaits it when it is async).
Whatever goes wrong is a value, `AgentRefError`, whose message is one line: the command
line prints it, and ``serve`` and ``chat`` will too.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, final

from returns.result import Failure, Result, Success

from fncore import Agent

Problem: TypeAlias = Literal["syntax", "module", "import", "attribute", "type", "factory"]
"""What went wrong: a ref not written ``module:attr``, a module that does not exist, a
module that raised while importing, a missing attribute, something that is not an agent,
or a factory that raised."""


@final
@dataclass(frozen=True, slots=True)
class AgentRefError:
    """Why ``ref`` gives no agent; ``message`` is one line naming the ref and what to do."""

    ref: str
    """The ref as given."""
    problem: Problem
    """What went wrong."""
    message: str
    """One line, for a person."""

    def __str__(self) -> str:
        return self.message


def _what(value: object) -> str:
    """``value`` described for an error: its type and its name, or a short repr."""
    name = getattr(value, "__qualname__", None)
    if isinstance(name, str):
        return f"{'class' if inspect.isclass(value) else type(value).__name__} {name!r}"
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f"{type(value).__name__} {shown}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _import(ref: str, module_name: str) -> Result[Any, AgentRefError]:
    problem: Exception
    cwd = os.getcwd()
    if cwd not in sys.path:  # like ``uvicorn app:app``: modules next to you import
        sys.path.insert(0, cwd)
    try:
        return Success(importlib.import_module(module_name))
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing == module_name or module_name.startswith(missing + "."):
            msg = (
                f"agent {ref!r}: no module named {missing!r} "
                "(looked in the current directory and sys.path)"
            )
            return Failure(AgentRefError(ref, "module", msg))
        problem = exc
    except Exception as exc:  # the user's module raised: say so, whatever it was
        problem = exc
    detail = _one_line(f"{type(problem).__name__}: {problem}")
    msg = f"agent {ref!r}: importing {module_name!r} failed: {detail}"
    return Failure(AgentRefError(ref, "import", msg))


def _attribute(ref: str, module: Any, module_name: str, path: str) -> Result[Any, AgentRefError]:
    found = module
    for part in path.split("."):
        if not hasattr(found, part):
            where = module_name if found is module else f"{type(found).__name__} {path!r}"
            msg = f"agent {ref!r}: {where} has no attribute {part!r}"
            return Failure(AgentRefError(ref, "attribute", msg))
        found = getattr(found, part)
    return Success(found)


async def _call(ref: str, factory: Any) -> Result[Agent[Any], AgentRefError]:
    try:
        inspect.signature(factory).bind()
    except TypeError:
        msg = f"agent {ref!r}: {_what(factory)} needs arguments; give a function of none"
        return Failure(AgentRefError(ref, "type", msg))
    except ValueError:  # a builtin without a signature: call it and see
        pass
    try:
        made = factory()
        if inspect.isawaitable(made):
            made = await made
    except Exception as exc:  # the factory raised: one line, no traceback
        detail = _one_line(f"{type(exc).__name__}: {exc}")
        msg = f"agent {ref!r}: the factory raised {detail}"
        return Failure(AgentRefError(ref, "factory", msg))
    if not isinstance(made, Agent):
        msg = f"agent {ref!r}: the factory returned {_what(made)}, not an Agent"
        return Failure(AgentRefError(ref, "type", msg))
    return Success(made)


async def load_agent(ref: str) -> Result[Agent[Any], AgentRefError]:
    """The agent ``ref`` names: ``module:attr``, an `Agent` or a function that returns one.

    The current directory is put first on ``sys.path`` (as ``uvicorn app:app`` does), so a
    module next to you imports. ``attr`` may be dotted (``module:holder.agent``). A
    function is called with no arguments, and awaited when it is async.

    Args:
        ref: ``module:attr``, e.g. ``myapp.agents:support``.

    Returns:
        ``Success(agent)``, or ``Failure(AgentRefError)`` whose message is one line: a ref
        without a colon, a module that does not exist, a module that raised while
        importing (its error, even an ``ImportError`` of its own), a missing attribute,
        something that is neither an agent nor a function, or a factory that raised or
        returned something else.

    Example:
        >>> import asyncio
        >>> print(asyncio.run(load_agent("no_colon")).failure())
        agent ref 'no_colon' must be written 'module:attr', e.g. 'myapp:agent'
    """
    module_name, _, path = ref.partition(":")
    if not module_name.strip() or not path.strip():
        msg = f"agent ref {ref!r} must be written 'module:attr', e.g. 'myapp:agent'"
        return Failure(AgentRefError(ref, "syntax", msg))
    module = _import(ref, module_name)
    if isinstance(module, Failure):
        return module
    found = _attribute(ref, module.unwrap(), module_name, path)
    if isinstance(found, Failure):
        return found
    value = found.unwrap()
    if isinstance(value, Agent):
        return Success(value)
    if not callable(value):
        msg = f"agent {ref!r} is {_what(value)}, not an Agent or a function that returns one"
        return Failure(AgentRefError(ref, "type", msg))
    return await _call(ref, value)
