"""`ToolCallContext.with_args`: the typed form (the tool's function, then its arguments)."""

import pytest
from pydantic import ValidationError

from fncore.core import Tool, ToolCallContext, ToolCallPart


async def search(query: str, limit: int = 5) -> list[str]:
    """Search the docs."""
    return [query] * limit


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Counter:
    """A tool that is a bound method."""

    def bump(self, by: int) -> int:
        """Bump by ``by``."""
        return by


def context(tool: Tool, arguments: str) -> ToolCallContext:
    """A context for one call of ``tool`` with ``arguments`` (JSON), as the agent makes it."""
    args = tool.check(arguments)
    assert not isinstance(args, str), args
    return ToolCallContext(None, ToolCallPart("c1", tool.name), tool, args)  # type: ignore[arg-type]


def test_the_typed_form_changes_the_given_arguments_and_keeps_the_others() -> None:
    """with_args(search, query=...) changes the query; the limit the model chose stays."""
    ctx = context(Tool.from_function(search), '{"query": "x", "limit": 2}')
    changed = ctx.with_args(search, query="y")
    assert (changed.arg("query", str), changed.arg("limit", int)) == ("y", 2)
    assert (ctx.arg("query", str), ctx.arg("limit", int)) == ("x", 2)  # the original is kept


def test_the_typed_form_binds_positional_arguments_by_the_signature() -> None:
    """with_args(add, 3, b=4) is read as a call to add would be."""
    ctx = context(Tool.from_function(add), '{"a": 1, "b": 2}')
    changed = ctx.with_args(add, 3, b=4)
    assert (changed.arg("a", int), changed.arg("b", int)) == (3, 4)


def test_the_typed_form_refuses_another_tools_function() -> None:
    """Arguments for add on a call to search are a ValueError naming both and the fix."""
    ctx = context(Tool.from_function(search), '{"query": "x"}')
    with pytest.raises(ValueError, match=r"'add'.*tool 'search'.*tools=\[") as info:
        ctx.with_args(add, a=1, b=2)
    assert "pass the function that tool was made from" in str(info.value)


def test_the_typed_form_accepts_a_bound_method_fetched_again() -> None:
    """A tool made from a bound method matches the same method fetched again (equal, not same)."""
    counter = Counter()
    ctx = context(Tool.from_function(counter.bump), '{"by": 1}')
    assert ctx.with_args(counter.bump, by=7).arg("by", int) == 7


def test_the_typed_form_still_validates_against_the_schema() -> None:
    """A value mypy would reject, passed anyway, fails the tool's validation at run time."""
    ctx = context(Tool.from_function(add), '{"a": 1, "b": 2}')
    with pytest.raises(ValidationError):
        ctx.with_args(add, a="many", b=2)  # type: ignore[call-overload]


def test_arguments_without_the_function_are_a_type_error() -> None:
    """Positional arguments need the tool's function first: a TypeError that says so."""
    ctx = context(Tool.from_function(add), '{"a": 1, "b": 2}')
    with pytest.raises(TypeError, match="takes the tool's function first"):
        ctx.with_args(None, 1)  # type: ignore[call-overload]
