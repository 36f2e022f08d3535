from typing import Any

import pytest
from pydantic import BaseModel
from returns.result import Failure, Success

from fncore.core import RegistrationError, Tool, ToolResult, to_content


def add(a: int, b: int = 2) -> int:
    """Add two integers.

    A longer paragraph about adding.

    Args:
        a: The first addend.
        b (int): The second addend,
            which defaults to two.

    Returns:
        The sum of both.
    """
    return a + b


async def search(query: str, limit: int = 5) -> list[str]:
    """Search the docs."""
    return [query] * limit


class Point(BaseModel):
    x: int
    y: int


def test_from_function_uses_name_summary_and_required_fields() -> None:
    """from_function takes the function's name, its docstring summary and its required params."""
    tool = Tool.from_function(add)
    assert tool.name == "add"
    assert tool.spec.name == "add"
    assert tool.spec.description == "Add two integers.\n\nA longer paragraph about adding."
    assert tool.spec.parameters["required"] == ["a"]
    assert tool.spec.parameters["type"] == "object"
    assert "title" not in tool.spec.parameters
    assert tool.is_async is False


def test_from_function_describes_params_from_args_section() -> None:
    """The Google-style Args section becomes each property's description, continuations joined."""
    props: Any = Tool.from_function(add).spec.parameters["properties"]
    assert props["a"]["description"] == "The first addend."
    assert props["b"]["description"] == "The second addend, which defaults to two."
    assert props["b"]["default"] == 2
    assert props["a"]["type"] == "integer"


def test_returns_section_does_not_leak_into_description() -> None:
    """Text after Args (a Returns section) is not appended to the tool description."""
    description = Tool.from_function(add).spec.description
    assert "sum of both" not in description
    assert "Returns" not in description


def test_from_function_overrides_and_async() -> None:
    """name=, description= and timeout= override the defaults; async tools are detected."""
    tool = Tool.from_function(search, name="find", description="Find pages.", timeout=1.5)
    assert (tool.name, tool.spec.description, tool.timeout) == ("find", "Find pages.", 1.5)
    assert tool.is_async is True
    assert tool.spec.parameters["required"] == ["query"]
    assert repr(tool) == "Tool('find')"


def test_strict_only_when_every_field_is_required() -> None:
    """spec.strict is True only when no parameter has a default."""

    def both(a: int, b: str) -> str:
        return f"{a}{b}"

    assert Tool.from_function(both).spec.strict is True
    assert Tool.from_function(add).spec.strict is False


def test_no_docstring_gives_empty_description() -> None:
    """A function without a docstring yields an empty description and no param docs."""

    def bare(x: int) -> int:
        return x

    tool = Tool.from_function(bare)
    assert tool.spec.description == ""
    props: Any = tool.spec.parameters["properties"]
    assert "description" not in props["x"]


def test_unannotated_parameter_is_rejected_naming_tool_and_param() -> None:
    """A parameter without annotation raises RegistrationError naming the tool and parameter."""

    def lookup(key, default: str = "") -> str:  # type: ignore[no-untyped-def]
        return default

    with pytest.raises(RegistrationError, match=r"tool 'lookup': parameter 'key'.*annotat"):
        Tool.from_function(lookup)


@pytest.mark.parametrize("kind", ["args", "kwargs"])
def test_var_parameters_are_rejected(kind: str) -> None:
    """*args or **kwargs raise RegistrationError naming the tool and parameter."""

    def star(*args: int) -> int:
        return sum(args)

    def starstar(**kwargs: int) -> int:
        return sum(kwargs.values())

    fn = star if kind == "args" else starstar
    with pytest.raises(RegistrationError, match=rf"tool '{fn.__name__}': parameter '{kind}'"):
        Tool.from_function(fn)


def test_invalid_tool_name_is_rejected() -> None:
    """A name with spaces is refused with a message quoting it."""
    with pytest.raises(RegistrationError, match="'my tool'"):
        Tool.from_function(add, name="my tool")


def test_validate_success_returns_model_and_keywords() -> None:
    """validate() returns the parsed arguments, defaults filled, usable as keywords."""
    tool = Tool.from_function(add)
    checked = tool.validate('{"a": 5}')
    assert isinstance(checked, Success)
    args = checked.unwrap()
    assert dict(tool.keywords(args)) == {"a": 5, "b": 2}
    assert tool.function(**tool.keywords(args)) == 7


def test_validate_empty_arguments_means_empty_object() -> None:
    """An empty arguments string validates as {} (fine for a tool without parameters)."""

    def ping() -> str:
        return "pong"

    assert isinstance(Tool.from_function(ping).validate(""), Success)


def _failure_text(tool: Tool, arguments: str) -> str:
    checked = tool.validate(arguments)
    assert isinstance(checked, Failure)
    text = checked.failure()
    assert isinstance(text, str)
    return text


def test_validate_invalid_json_is_a_failure_naming_tool() -> None:
    """Malformed JSON gives a Failure message naming the tool and asking to call again."""
    text = _failure_text(Tool.from_function(add), '{"a": ')
    assert text.startswith("Invalid arguments for tool 'add':")
    assert "arguments:" in text
    assert "Call it again" in text


def test_validate_wrong_type_names_the_field() -> None:
    """A value of the wrong type fails with a message naming the tool and the field."""
    text = _failure_text(Tool.from_function(add), '{"a": "five"}')
    assert "'add'" in text
    assert "a:" in text


def test_validate_missing_field_names_it() -> None:
    """A missing required field fails with a message naming the field."""
    text = _failure_text(Tool.from_function(add), '{"b": 1}')
    assert "a: Field required" in text


def test_validate_extra_field_is_rejected() -> None:
    """Unexpected arguments are refused (extra='forbid') and named in the message."""
    text = _failure_text(Tool.from_function(add), '{"a": 1, "c": 3}')
    assert "'add'" in text
    assert "c:" in text


def test_validate_non_object_json_fails() -> None:
    """A JSON array instead of an object is a failure, not an exception."""
    _failure_text(Tool.from_function(add), "[1, 2]")


def test_tool_result_defaults_to_success() -> None:
    """ToolResult is not an error unless said so."""
    assert ToolResult("5").is_error is False
    assert ToolResult("bad", is_error=True).is_error is True


def test_to_content_passes_strings_through() -> None:
    """A string result is used as is, not JSON-quoted."""
    assert to_content("plain text") == "plain text"


def test_to_content_dumps_pydantic_models_as_json() -> None:
    """A pydantic model becomes its JSON."""
    assert to_content(Point(x=1, y=2)) == '{"x":1,"y":2}'


def test_to_content_dumps_dicts_lists_and_numbers_as_json() -> None:
    """Dicts, lists, numbers, None and bools go through json.dumps."""
    assert to_content({"sum": 5, "ok": True}) == '{"sum": 5, "ok": true}'
    assert to_content([1, "a"]) == '[1, "a"]'
    assert to_content(5) == "5"
    assert to_content(None) == "null"


def test_to_content_falls_back_to_str_for_unserialisable() -> None:
    """Objects json cannot encode use str(): nested via default=str, circular via str()."""

    class Thing:
        def __str__(self) -> str:
            return "a thing"

    assert to_content({"t": Thing()}) == '{"t": "a thing"}'
    circular: dict[str, object] = {}
    circular["self"] = circular
    assert to_content(circular) == "{'self': {...}}"
