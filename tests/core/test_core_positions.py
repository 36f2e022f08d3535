"""The table of positions: the typed names and `Registry.on`'s overloads follow it."""

from __future__ import annotations

import types
import typing
from typing import Any, get_args

import pytest

from fncore.core import Position, _position_names, _registry
from fncore.core._positions import POSITIONS


def test_the_table_describes_exactly_the_typed_names() -> None:
    """`Position` lists the table's positions, in its order, and each has its constant."""
    assert get_args(Position) == tuple(POSITIONS)
    constants = {
        value
        for name, value in vars(_position_names).items()
        if name.isupper() and isinstance(value, str)
    }
    assert constants == set(POSITIONS)
    assert all(info.name == name for name, info in POSITIONS.items())


def _on_overloads() -> list[Any]:
    """The overloads of `Registry.on`, looked up where they were defined.

    fncore's ``__init__`` sets public objects' ``__module__`` to ``fncore``, and
    `typing.get_overloads` looks functions up by module and qualified name.
    """
    defined = types.SimpleNamespace(__module__=_registry.__name__, __qualname__="Registry.on")
    found = typing.get_overloads(defined)  # type: ignore[arg-type]
    assert found, "no overloads found for Registry.on"
    return found


def _overloads() -> list[dict[str, Any]]:
    """The type hints of each overload of `Registry.on`."""
    return [typing.get_type_hints(o, globalns=vars(_registry)) for o in _on_overloads()]


def test_on_has_one_overload_per_position_in_table_order() -> None:
    """An overload for each position of the table, and for nothing else."""
    names = [get_args(hints["position"]) for hints in _overloads()]
    assert names == [(name,) for name in POSITIONS]


@pytest.mark.parametrize("position", list(POSITIONS))
def test_each_overload_takes_the_position_s_context(position: Position) -> None:
    """An overload's middleware type takes the table's context and returns its value type."""
    (hints,) = [h for h in _overloads() if get_args(h["position"]) == (position,)]
    (bound_to,) = {arg.__bound__ for arg in get_args(hints["return"])[0]}
    params, returns = get_args(bound_to)
    info = POSITIONS[position]
    assert params[0] is info.context
    (outcome,) = get_args(returns)[2:]
    success = get_args(outcome)[0]
    assert (typing.get_origin(success) or success) is info.value


@pytest.mark.parametrize(
    ("position", "tools"), [(name, info.per_tool) for name, info in POSITIONS.items()]
)
def test_only_the_per_tool_position_takes_tools_in_its_overload(
    position: Position, tools: bool
) -> None:
    """``tools=`` is offered by the overload of the position that filters on tools."""
    (overload,) = [
        o
        for o, h in zip(_on_overloads(), _overloads(), strict=True)
        if get_args(h["position"]) == (position,)
    ]
    assert ("tools" in overload.__code__.co_varnames) is tools
