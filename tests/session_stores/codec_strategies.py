"""What stores keep: hypothesis strategies of it, `canon` to compare it, a checkpoint.

Shared by the codec tests of messages, state and checkpoints, and the checkpoint contract.
"""

from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import Any

from hypothesis import strategies as st

from fncore import (
    Checkpoint,
    DataPart,
    Message,
    PendingRequest,
    ReasoningPart,
    ResumePoint,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    register_state_type,
)

text = st.text()  # every code point, lone surrogates and NUL included
maybe_text = st.none() | text

calls = st.builds(ToolCallPart, text, text, text)
results = st.builds(ToolResultPart, text, text, text, st.booleans())
parts = st.one_of(
    st.builds(TextPart, text),
    st.builds(ReasoningPart, text, maybe_text, maybe_text),
    calls,
    results,
    st.builds(lambda data, media: DataPart(data, media), st.binary(), text),
)
"""Every kind of `Part`."""

messages = st.builds(
    Message,
    st.sampled_from(["system", "user", "assistant", "tool"]),
    st.lists(parts, max_size=5).map(tuple),
    st.booleans(),
)


@register_state_type
@dataclasses.dataclass(frozen=True)
class Point:
    """A module-level dataclass, as session state may hold."""

    x: float
    label: str = ""


@register_state_type
@dataclasses.dataclass
class Box:
    """A mutable dataclass holding other values."""

    items: list[Any]
    point: Point | None = None


hashable = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | text | st.binary(),
    lambda inner: st.lists(inner, max_size=3).map(tuple) | st.frozensets(inner, max_size=3),
    max_leaves=6,
)
values = st.recursive(
    hashable | st.builds(Point, st.floats(), text),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=4).map(tuple)
        | st.dictionaries(text, inner, max_size=4)
        | st.dictionaries(hashable, inner, max_size=3)
        | st.sets(hashable, max_size=3)
        | st.builds(Box, st.lists(inner, max_size=3), st.none() | st.builds(Point, st.floats()))
    ),
    max_leaves=12,
)
"""Every kind of value session state may hold, nested."""


def canon(value: object) -> object:
    """``value`` as nested tuples tagged with each type's name, comparable with ``==``.

    Floats compare by ``repr`` (NaN equals NaN, -0.0 differs from 0.0); sets by the sorted
    forms of their members, whatever order they iterate in. A read-only mapping (as stores
    hand out) compares as the dict it shows.
    """
    kind = type(value)
    if kind is float:
        return ("float", repr(value))
    if kind is list or kind is tuple:
        return (kind.__name__, tuple(canon(v) for v in value))  # type: ignore[attr-defined]
    if kind is dict or kind is MappingProxyType:
        items: dict[Any, Any] = value  # type: ignore[assignment]
        return ("dict", tuple((canon(k), canon(v)) for k, v in items.items()))
    if kind is set or kind is frozenset:
        members: Any = value
        return (kind.__name__, tuple(sorted(repr(canon(v)) for v in members)))
    if dataclasses.is_dataclass(value):
        fields = dataclasses.fields(value)
        return (kind.__qualname__, tuple((f.name, canon(getattr(value, f.name))) for f in fields))
    return (kind.__name__, value)


def a_checkpoint(**changes: Any) -> Checkpoint:
    """A checkpoint of a run paused on one tool call (``changes`` replace its fields)."""
    call = ToolCallPart("call_1", "add", '{"a":1}')
    turn = Message("assistant", (call,))
    fields: dict[str, Any] = {
        "id": "cp",
        "run_id": "run-1",
        "agent": "agent",
        "config": "c0nf",
        "created": 1.0,
        "expires": 2.0,
        "session_id": "s",
        "session_version": 0,
        "input": (Message.user("hi"),),
        "point": ResumePoint((Message.user("hi"), turn), (turn,), 1, calls=((call, None),)),
        "requests": (PendingRequest("call_1", "add", {"a": 1}),),
        "state": {"calls": [1]},
    }
    fields.update(changes)
    return Checkpoint(**fields)
