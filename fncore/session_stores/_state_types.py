"""The dataclasses stored state may hold: an allow-list, so stored data never chooses code.

Session state and paused runs' checkpoints are written as JSON, a dataclass in them by its
name (``module:qualname``) and its fields. Reading one back builds only a class registered
here, and imports nothing: a record that names any other class does not decode. fncore's own
value types (messages and their parts, usage, tool choices, decisions, requests, results,
and the built-ins' records) are registered when fncore is imported; applications register
theirs with `register_state_type`.
"""

from __future__ import annotations

import dataclasses
from typing import TypeVar

from fncore.core import (
    Approve,
    DataPart,
    Edit,
    Message,
    ModelSettings,
    Paused,
    PendingRequest,
    ReasoningPart,
    RegistrationError,
    Reject,
    RequireTool,
    Respond,
    RunResult,
    TextPart,
    ToolCallPart,
    ToolResult,
    ToolResultPart,
    Usage,
)

_C = TypeVar("_C", bound=type)

_REGISTERED: dict[type, None] = {}
"""The registered classes, in the order they were registered."""
_BY_NAME: dict[str, type] = {}
"""An index by name, rebuilt when a name is missing from it: a class's name is read when it
is used, since fncore renames its public classes (``fncore:Message``) after registering."""


def _name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def register_state_type(cls: _C) -> _C:
    """Allow instances of the dataclass ``cls`` in session state and paused runs' state.

    A stored dataclass is read back only if its class was registered, so call this (or use it
    as a class decorator) in the module that defines the class, which must be imported before
    a session holding one is loaded. Registering a class again changes nothing; a class of
    the same ``module:qualname`` (a reloaded module's) replaces the one registered before.

    Returns:
        ``cls`` itself.

    Raises:
        RegistrationError: if ``cls`` is not a dataclass, or is defined inside a function
            (its name would not find it again).

    Example:
        >>> import dataclasses
        >>> @register_state_type
        ... @dataclasses.dataclass(frozen=True)
        ... class Seen:
        ...     topic: str
        >>> Seen("tea")
        Seen(topic='tea')
    """
    given: object = cls  # checked: untyped callers may pass anything
    if not (isinstance(given, type) and dataclasses.is_dataclass(given)):
        msg = f"register_state_type takes a dataclass, not {cls!r}"
        raise RegistrationError(msg)
    if "<locals>" in cls.__qualname__:
        msg = (
            f"{cls.__qualname__} is defined inside a function: define it at module level "
            "to keep it in stored state"
        )
        raise RegistrationError(msg)
    name = _name(cls)
    for other in [c for c in _REGISTERED if c is not cls and _name(c) == name]:
        del _REGISTERED[other]
    _REGISTERED[cls] = None
    _BY_NAME.clear()
    return cls


def state_type_name(cls: type) -> str | None:
    """The name a stored record gives the registered class ``cls``; ``None`` if unregistered."""
    return _name(cls) if cls in _REGISTERED else None


def state_type(name: str) -> type | None:
    """The registered class a stored record's ``name`` stands for, or ``None``."""
    found = _BY_NAME.get(name)
    if found is None:
        _BY_NAME.update((_name(c), c) for c in _REGISTERED)
        found = _BY_NAME.get(name)
    return found


for _own in (
    Message,
    TextPart,
    DataPart,
    ReasoningPart,
    ToolCallPart,
    ToolResultPart,
    ToolResult,
    Usage,
    ModelSettings,
    RequireTool,
    Approve,
    Edit,
    Reject,
    Respond,
    PendingRequest,
    Paused,
    RunResult,
):
    register_state_type(_own)
