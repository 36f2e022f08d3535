"""Offline models: TestModel, FunctionModel and ScriptedModel, plain and streamed."""

from __future__ import annotations

import enum
from typing import Literal

import pytest
from pydantic import BaseModel
from returns.result import Failure, Success
from support import add

from fncore import (
    Message,
    ModelError,
    ModelRequest,
    ModelResponse,
    ReasoningPart,
    RequireTool,
    TextPart,
    Tool,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from fncore.core import ResponseAssembler
from fncore.testing import FunctionModel, ScriptedModel, TestModel, tool_calls


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    x: float
    y: float


def describe(
    name: str,
    ratio: float,
    flag: bool,
    tags: list[str],
    colour: Colour,
    mode: Literal["fast", "slow"],
    where: Point,
    maybe: int | None,
    limit: int = 10,
) -> str:
    """A tool with one parameter of every common kind."""
    return name


def no_args() -> str:
    """A tool with no parameters."""
    return "done"


TOOLS = [Tool.from_function(f) for f in (add, describe, no_args)]


def request(
    *messages: Message, tools: list[Tool] | None = None, tool_choice: object = "auto"
) -> ModelRequest:
    """A request offering ``tools`` (all of TOOLS by default)."""
    specs = tuple(t.spec for t in (TOOLS if tools is None else tools))
    return ModelRequest(messages, "", specs, tool_choice)  # type: ignore[arg-type]


async def assembled(model: object, req: ModelRequest) -> ModelResponse | ModelError:
    """Stream ``req`` and assemble its deltas, checking the stream's final item matches."""
    assembler = ResponseAssembler()
    final: object = None
    async for item in model.stream(req):  # type: ignore[attr-defined]
        if isinstance(item, ModelResponse | ModelError):
            final = item
            break
        assembler.add(item)
    if isinstance(final, ModelError):
        return final
    assert isinstance(final, ModelResponse)
    built = assembler.finish(final.finish_reason, final.model_name)
    assert built == final
    return built


# -- TestModel -----------------------------------------------------------------------------


async def test_test_model_calls_every_offered_tool_once_with_valid_arguments() -> None:
    """TestModel's first reply calls each tool once, with arguments each tool validates."""
    model = TestModel()
    response = (await model.request(request(Message.user("use 3 and 4 please")))).unwrap()
    calls = response.tool_calls
    assert [c.name for c in calls] == ["add", "describe", "no_args"]
    assert len({c.id for c in calls}) == 3
    assert response.finish_reason == "tool_calls"
    by_name = {t.name: t for t in TOOLS}
    for call in calls:
        checked = by_name[call.name].validate(call.arguments)
        assert isinstance(checked, Success), checked
    add_args = by_name["add"].validate(calls[0].arguments).unwrap()
    assert (add_args.a, add_args.b) == (3, 4)  # type: ignore[attr-defined]


async def test_test_model_answers_from_tool_results() -> None:
    """Once every tool has a result, TestModel answers 'name: content; ...'."""
    model = TestModel()
    first = (await model.request(request(Message.user("add 1 2"), tools=TOOLS[:1]))).unwrap()
    call = first.tool_calls[0]
    second = (
        await model.request(
            request(
                Message.user("add 1 2"),
                first.message,
                Message("tool", (ToolResultPart(call.id, "add", "3"),)),
                tools=TOOLS[:1],
            )
        )
    ).unwrap()
    assert second.text == "add: 3"
    assert second.tool_calls == ()
    assert second.finish_reason == "stop"
    assert len(model.requests) == 2


async def test_test_model_without_tools_echoes_the_user() -> None:
    """With no tools offered, TestModel echoes the last user message."""
    model = TestModel(name="echoer")
    response = (await model.request(request(Message.user("hello there"), tools=[]))).unwrap()
    assert response.text == "hello there"
    assert response.model_name == "echoer"
    assert response.usage.requests == 1


async def test_test_model_respects_tool_choice_none() -> None:
    """With tool_choice='none', TestModel answers in text and calls nothing."""
    model = TestModel()
    response = (await model.request(request(Message.user("hi"), tool_choice="none"))).unwrap()
    assert response.tool_calls == ()
    assert response.text == "hi"


async def test_test_model_respects_require_tool() -> None:
    """With RequireTool('add'), TestModel calls only add, even if it called it before."""
    model = TestModel()
    req = request(Message.user("2 and 5"), tool_choice=RequireTool("add"))
    response = (await model.request(req)).unwrap()
    assert [c.name for c in response.tool_calls] == ["add"]
    call = response.tool_calls[0]
    again = request(
        Message.user("2 and 5"),
        response.message,
        Message("tool", (ToolResultPart(call.id, "add", "7"),)),
        tool_choice=RequireTool("add"),
    )
    assert [c.name for c in (await model.request(again)).unwrap().tool_calls] == ["add"]


async def test_test_model_required_calls_every_tool() -> None:
    """With tool_choice='required', TestModel calls every offered tool."""
    model = TestModel()
    response = (await model.request(request(Message.user("x"), tool_choice="required"))).unwrap()
    assert [c.name for c in response.tool_calls] == ["add", "describe", "no_args"]


@pytest.mark.parametrize("chunk", [1, 3, 8, 1000])
async def test_test_model_stream_assembles_to_the_request_response(chunk: int) -> None:
    """TestModel's stream deltas assemble into exactly what request() returns."""
    for req in (
        request(Message.user("use 3 and 4 please")),
        request(Message.user("just text"), tools=[]),
    ):
        expected = (await TestModel(chunk=chunk).request(req)).unwrap()
        assert await assembled(TestModel(chunk=chunk), req) == expected


# -- FunctionModel -------------------------------------------------------------------------


async def test_function_model_sync_function() -> None:
    """A sync function's text reply becomes a stop response; the request is recorded."""
    model = FunctionModel(lambda req: f"{len(req.messages)} message(s)", name="fn")
    req = request(Message.user("a"), Message.assistant("b"), Message.user("c"))
    response = (await model.request(req)).unwrap()
    assert response.text == "3 message(s)"
    assert response.finish_reason == "stop"
    assert response.model_name == "fn"
    assert model.requests == [req]


async def test_function_model_async_function_returning_calls() -> None:
    """An async function's tool-call message becomes a tool_calls response."""

    async def fn(req: ModelRequest) -> Message:
        return tool_calls(("add", {"a": 1, "b": 2}))

    response = (await FunctionModel(fn).request(request(Message.user("go")))).unwrap()
    assert response.finish_reason == "tool_calls"
    assert response.tool_calls == (ToolCallPart("call_0", "add", '{"a":1,"b":2}'),)


async def test_function_model_returns_a_full_response_unchanged() -> None:
    """A ModelResponse returned by the function passes through as is."""
    given = ModelResponse(Message.assistant("x"), Usage(1, 2), "length", "custom")
    assert (await FunctionModel(lambda req: given).request(request())).unwrap() is given


async def test_function_model_error() -> None:
    """A ModelError returned by the function is a Failure, streamed too."""
    error = ModelError(message="rate limited", retryable=True)
    model = FunctionModel(lambda req: error)
    assert await model.request(request(Message.user("x"))) == Failure(error)
    assert await assembled(model, request(Message.user("x"))) == error
    assert len(model.requests) == 2


async def test_function_model_stream_assembles_to_the_request_response() -> None:
    """FunctionModel's deltas (reasoning, text, calls) assemble into the request response."""
    message = Message(
        "assistant",
        (
            ReasoningPart("thinking about it"),
            TextPart("here is the plan"),
            ToolCallPart("c1", "add", '{"a": 10, "b": 20}'),
            ToolCallPart("c2", "no_args", "{}"),
        ),
    )
    model = FunctionModel(lambda req: message, chunk=5)
    req = request(Message.user("x"))
    expected = (await model.request(req)).unwrap()
    assert await assembled(model, req) == expected
    assert expected.message == message


# -- ScriptedModel -------------------------------------------------------------------------


async def test_scripted_model_replays_in_order() -> None:
    """ScriptedModel answers with its replies in order and counts what remains."""
    model = ScriptedModel(["one", tool_calls(("add", {"a": 1, "b": 1})), "three"])
    req = request(Message.user("x"))
    assert model.remaining == 3
    assert (await model.request(req)).unwrap().text == "one"
    assert (await model.request(req)).unwrap().tool_calls[0].name == "add"
    assert model.remaining == 1
    assert (await model.request(req)).unwrap().text == "three"
    assert model.remaining == 0


async def test_scripted_model_exhaustion_is_a_model_error() -> None:
    """Asking a ScriptedModel for more replies than scripted is a ModelError saying so."""
    model = ScriptedModel(["only"], name="script")
    req = request(Message.user("x"))
    await model.request(req)
    out = await model.request(req)
    assert isinstance(out, Failure)
    error = out.failure()
    assert isinstance(error, ModelError)
    assert "no reply left for request 2" in error.message
    streamed = await assembled(model, req)
    assert isinstance(streamed, ModelError)
    assert "request 3" in streamed.message


async def test_scripted_model_stream_assembles_to_the_request_response() -> None:
    """ScriptedModel's streamed replies assemble into the same responses as request()."""
    script = [
        "a reply long enough to be cut into several chunks",
        tool_calls(("add", {"a": 1, "b": 2}), ("no_args", {})),
        ModelResponse(Message.assistant("given"), Usage(3, 4, requests=1), "stop", "m"),
    ]
    req = request(Message.user("x"))
    plain = ScriptedModel(script, chunk=4)
    streamed = ScriptedModel(script, chunk=4)
    for _ in script:
        expected = (await plain.request(req)).unwrap()
        assert await assembled(streamed, req) == expected
