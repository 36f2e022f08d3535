from fncore.core import (
    DataPart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

CALL_A = ToolCallPart("a", "add", '{"a": 1, "b": 2}')
CALL_B = ToolCallPart("b", "mul", '{"a": 3}')
RESULT_A = ToolResultPart("a", "add", "3")


def test_constructors_set_role_and_single_text_part() -> None:
    """Message.system/user/assistant build one TextPart with the matching role."""
    for build, role in (
        (Message.system, "system"),
        (Message.user, "user"),
        (Message.assistant, "assistant"),
    ):
        message = build("hi")
        assert message.role == role
        assert message.parts == (TextPart("hi"),)


def test_text_concatenates_only_text_parts() -> None:
    """.text joins the TextParts in order and ignores reasoning, calls, results and data."""
    message = Message(
        "assistant",
        (
            ReasoningPart("thinking"),
            TextPart("Hello, "),
            CALL_A,
            DataPart(b"\x89PNG", "image/png"),
            TextPart("world"),
        ),
    )
    assert message.text == "Hello, world"


def test_text_is_empty_without_text_parts() -> None:
    """.text is the empty string for a message holding only tool calls."""
    assert Message("assistant", (CALL_A,)).text == ""


def test_tool_calls_and_results_keep_order() -> None:
    """.tool_calls and .tool_results return only their kind of part, in message order."""
    message = Message("assistant", (TextPart("x"), CALL_B, CALL_A))
    assert message.tool_calls == (CALL_B, CALL_A)
    assert message.tool_results == ()
    results = Message("tool", (ToolResultPart("b", "mul", "9"), RESULT_A))
    assert results.tool_results == (ToolResultPart("b", "mul", "9"), RESULT_A)
    assert results.tool_calls == ()


def test_parsed_arguments_parses_valid_json() -> None:
    """parsed_arguments returns the decoded JSON object."""
    assert CALL_A.parsed_arguments() == {"a": 1, "b": 2}


def test_parsed_arguments_returns_none_on_bad_json() -> None:
    """parsed_arguments returns None instead of raising when the JSON is malformed."""
    assert ToolCallPart("c", "add", '{"a": 1,').parsed_arguments() is None
    assert ToolCallPart("c", "add", "not json").parsed_arguments() is None


def test_parsed_arguments_treats_empty_string_as_empty_object() -> None:
    """An empty arguments string parses as an empty object, the default too."""
    assert ToolCallPart("c", "noop", "").parsed_arguments() == {}
    assert ToolCallPart("c", "noop").parsed_arguments() == {}
