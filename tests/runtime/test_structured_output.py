"""Typed structured output: strategies, retries, errors, streaming, sessions, pausing."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel, Field
from returns.result import Failure, Success
from typing_extensions import TypedDict

from fncore import (
    Agent,
    Approve,
    ConfigError,
    ModelRequest,
    RegistrationError,
    Registry,
    RunContext,
    RunNext,
    Terminate,
    ToolCallContext,
    ToolCallNext,
    ToolResult,
    load_container,
)
from fncore.core import Outcome, RunResult
from fncore.errors import OutputMissing, OutputValidationFailed
from fncore.events import RunCompleted, TextDelta
from fncore.middleware import approve
from fncore.testing import FunctionModel, ScriptedModel, TestModel, tool_calls


class Weather(BaseModel):
    """The weather in a city."""

    city: str
    celsius: float = Field(description="Degrees Celsius")


@dataclass
class Point:
    x: int
    y: int


class Person(TypedDict):
    name: str
    age: int


def lookup(city: str) -> str:
    """Look the weather up."""
    return f"{city}: 21 C"


@pytest.mark.parametrize("strategy", ["native", "tool"])
@pytest.mark.parametrize(
    ("output_type", "expected"),
    [
        (Weather, Weather(city="Oslo 3", celsius=3.0)),
        (Point, Point(3, 3)),
        (Person, {"name": "Oslo 3", "age": 3}),
        (int, 3),
        (list[int], []),
        (bool, False),
    ],
)
async def test_test_model_gives_each_kind_of_type(
    output_type: Any, expected: object, strategy: Any
) -> None:
    """TestModel answers with a value valid for the schema, by either strategy."""
    agent = Agent(
        TestModel(), registry=Registry(), output_type=output_type, output_strategy=strategy
    )
    result = (await agent.run("Oslo 3")).unwrap()
    assert result.output == expected
    assert result.stop_reason == "completed"


async def test_native_strategy_sends_the_schema_on_each_request() -> None:
    """``native``: requests carry an object schema (primitives wrapped); no extra tool."""
    model = TestModel()
    agent = Agent(model, registry=Registry(), output_type=Weather, output_strategy="native")
    await agent.run("Oslo")
    request = model.requests[-1]
    assert request.output_schema is not None
    assert request.output_schema.name == "Weather"
    assert request.output_schema.description == "The weather in a city."
    assert request.output_schema.schema["required"] == ["city", "celsius"]
    assert request.tools == ()
    number = TestModel()
    await Agent(number, registry=Registry(), output_type=int).run("7")
    wrapped = number.requests[-1].output_schema
    assert wrapped is not None
    assert wrapped.schema["properties"]["response"]["type"] == "integer"
    assert wrapped.schema["required"] == ["response"]


async def test_tool_strategy_offers_final_result_after_the_other_tools() -> None:
    """``tool``: a final_result tool is offered; the other tools run first; the pair is closed."""
    model = TestModel()
    agent = Agent(
        model, registry=Registry(), tools=[lookup], output_type=Weather, output_strategy="tool"
    )
    result = (await agent.run("Oslo")).unwrap()
    assert [t.name for t in model.requests[0].tools] == ["lookup", "final_result"]
    assert model.requests[0].output_schema is None
    assert result.output == Weather(city="Oslo", celsius=0.0)
    assert [m.role for m in result.messages] == ["assistant", "tool", "assistant", "tool"]
    closing = result.messages[-1].tool_results[0]
    assert (closing.name, closing.is_error) == ("final_result", False)


async def test_str_agents_send_no_schema_and_no_tool() -> None:
    """Without output_type nothing changes: no schema, no final_result, text output."""
    model = TestModel()
    result = (await Agent(model, registry=Registry()).run("hi")).unwrap()
    assert result.output == "hi"
    assert model.requests[-1].output_schema is None
    assert Agent(model, registry=Registry(), output_type=str).tools == {}


async def test_auto_picks_tool_for_a_model_without_native_output() -> None:
    """``auto``: native when the model says it has it (fncore's models do), else the tool."""

    class Plain:
        name = "plain"

        def __init__(self) -> None:
            self.inner = TestModel()

        async def request(self, request: ModelRequest) -> Any:
            return await self.inner.request(request)

        def stream(self, request: ModelRequest) -> Any:
            return self.inner.stream(request)

    plain = Plain()
    result = (await Agent(plain, registry=Registry(), output_type=Weather).run("x")).unwrap()
    assert result.output.city == "x"
    assert plain.inner.requests[0].tools[0].name == "final_result"
    native = TestModel()
    await Agent(native, registry=Registry(), output_type=Weather).run("x")
    assert native.requests[0].output_schema is not None


async def test_invalid_text_goes_back_with_the_errors_then_succeeds() -> None:
    """A text answer that does not validate returns to the model with pydantic's errors."""
    model = ScriptedModel(['{"city": "Oslo"}', '```json\n{"city": "Oslo", "celsius": 4}\n```'])
    agent = Agent(model, registry=Registry(), output_type=Weather)
    result = (await agent.run("weather?")).unwrap()
    assert result.output == Weather(city="Oslo", celsius=4)
    retry = model.requests[1].messages[-1]
    assert retry.role == "user"
    assert "celsius: Field required" in retry.text
    assert result.rounds == 2
    assert [m.role for m in result.messages] == ["assistant", "user", "assistant"]


async def test_retries_spent_is_a_typed_error_with_the_raw_answer() -> None:
    """After output_retries failed retries the run fails with OutputValidationFailed."""
    model = ScriptedModel(["not json", '{"city": 1}'])
    agent = Agent(model, registry=Registry(), output_type=Weather, output_retries=1)
    error = (await agent.run("weather?")).failure()
    assert isinstance(error, OutputValidationFailed)
    assert error.raw == '{"city": 1}'
    assert "city: Input should be a valid string" in error.errors
    assert error.attempts == 2
    assert "after 2 tries" in error.message
    assert [m.role for m in error.messages] == ["assistant", "user", "assistant"]
    assert error.usage.requests == 2
    none = Agent(ScriptedModel(["nope"]), registry=Registry(), output_type=int, output_retries=0)
    assert isinstance((await none.run("n")).failure(), OutputValidationFailed)


async def test_tool_strategy_retries_text_answers_and_bad_arguments() -> None:
    """``tool``: text is refused, bad final_result arguments get an error result; then done."""
    model = ScriptedModel(
        [
            "It is sunny.",
            tool_calls(("final_result", {"city": "Oslo"})),
            tool_calls(("final_result", {"city": "Oslo", "celsius": 5})),
        ]
    )
    agent = Agent(
        model, registry=Registry(), output_type=Weather, output_strategy="tool", output_retries=2
    )
    result = (await agent.run("weather?")).unwrap()
    assert result.output == Weather(city="Oslo", celsius=5)
    assert "call the final_result tool" in model.requests[1].messages[-1].text
    bad = model.requests[2].messages[-1].tool_results[0]
    assert bad.is_error
    assert "celsius: Field required" in bad.content
    failing = ScriptedModel([tool_calls(("final_result", {"city": "Oslo"}))])
    agent = Agent(
        failing, registry=Registry(), output_type=Weather, output_strategy="tool", output_retries=0
    )
    error = (await agent.run("w")).failure()
    assert isinstance(error, OutputValidationFailed)
    assert [m.role for m in error.messages] == ["assistant", "tool"]  # every call answered


async def test_final_result_with_other_calls_ends_the_run_without_running_them() -> None:
    """Calls beside a valid final_result are answered as not run; the tools never run."""
    ran: list[str] = []

    def side(note: str) -> str:
        """A side effect."""
        ran.append(note)
        return note

    reply = tool_calls(("side", {"note": "x"}), ("final_result", {"city": "Oslo", "celsius": 1}))
    agent = Agent(
        ScriptedModel([reply]),
        registry=Registry(),
        tools=[side],
        output_type=Weather,
        output_strategy="tool",
    )
    result = (await agent.run("w")).unwrap()
    assert ran == []
    results = result.messages[-1].tool_results
    assert [(r.name, r.is_error) for r in results] == [("side", True), ("final_result", False)]
    assert "Not run" in results[0].content


async def test_streaming_streams_text_and_ends_with_the_typed_result() -> None:
    """Text deltas stream as usual; RunCompleted carries the validated value."""
    agent = Agent(TestModel(chunk=4), registry=Registry(), output_type=Weather)
    events = [e async for e in agent.stream("Rome 30")]
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert json.loads(text) == {"city": "Rome 30", "celsius": 30.0}
    last = events[-1]
    assert isinstance(last, RunCompleted)
    assert last.outcome.unwrap().output == Weather(city="Rome 30", celsius=30.0)
    again = (
        await Agent(
            ScriptedModel(["{}", '{"city": "Rome", "celsius": 2}']),
            registry=Registry(),
            output_type=Weather,
        )
        .stream("r")
        .result()
    )
    assert again.unwrap().output.celsius == 2


async def test_stream_fails_like_run_when_retries_are_spent() -> None:
    """A streamed run's RunCompleted holds the same OutputValidationFailed."""
    agent = Agent(ScriptedModel(["x", "y"]), registry=Registry(), output_type=Weather)
    outcome = await agent.stream("w").result()
    assert isinstance(outcome.failure(), OutputValidationFailed)


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"output_type": type("Opaque", (), {})}, "cannot be described as a JSON schema"),
        ({"output_type": Weather, "output_strategy": "json"}, "output_strategy must be one of"),
        ({"output_type": Weather, "output_retries": -1}, "output_retries must be"),
        ({"output_retries": "2"}, "output_retries must be"),
    ],
)
def test_bad_output_options_are_registration_errors(options: Any, fragment: str) -> None:
    """A type pydantic cannot describe, or a bad strategy or retry count, fails at build."""
    with pytest.raises(RegistrationError, match=fragment):
        Agent(TestModel(), registry=Registry(), **options)


async def test_run_middleware_see_text_and_their_changes_are_checked() -> None:
    """``run`` middleware see the JSON text; what they return is validated again."""
    registry = Registry()
    seen: list[object] = []

    @registry.on("run")
    async def spoil(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        outcome = await call_next(ctx)
        seen.append(outcome.unwrap().output)
        return outcome.map(lambda r: RunResult("oops", r.messages, r.usage, r.rounds))

    agent = Agent(TestModel(), registry=registry, output_type=Weather)
    error = (await agent.run("Oslo")).failure()
    assert seen == ['{"city":"Oslo","celsius":0.0}']
    assert isinstance(error, OutputValidationFailed)
    assert (error.position, error.raw) == ("run", "oops")


async def test_terminated_runs_give_a_value_only_if_the_text_is_one() -> None:
    """A termination whose text fits is the output; otherwise OutputMissing says why."""
    for text, ok in (('{"x": 1, "y": 2}', True), ("blocked", False)):
        registry = Registry()

        @registry.on("run")
        async def stop(ctx: RunContext, call_next: RunNext, text: str = text) -> Outcome[RunResult]:
            return Failure(Terminate(text))

        outcome = await Agent(TestModel(), registry=registry, output_type=Point).run("p")
        if ok:
            assert outcome.unwrap().output == Point(1, 2)
        else:
            error = outcome.failure()
            assert isinstance(error, OutputMissing)
            assert (error.stop_reason, error.output) == ("terminated", "blocked")


async def test_paused_typed_run_resumes_to_a_typed_result() -> None:
    """A pause is OutputMissing carrying the checkpoint; resuming gives the typed output."""
    registry = Registry()
    registry.include(approve())
    agent = Agent(TestModel(), registry=registry, tools=[lookup], output_type=Weather)
    error = (await agent.run("Oslo")).failure()
    assert isinstance(error, OutputMissing)
    assert error.stop_reason == "paused"
    assert error.paused is not None
    resumed = await agent.resume(error.paused.checkpoint_id, Approve())
    assert resumed.unwrap().output == Weather(city="Oslo", celsius=0.0)


async def test_sessions_keep_a_valid_history_across_typed_turns() -> None:
    """Typed turns commit a paired history; the next turn continues it."""
    agent = Agent(TestModel(), registry=Registry(), output_type=Weather, output_strategy="tool")
    first = await agent.run("Oslo", session_id="s")
    second = await agent.run("Bergen", session_id="s")
    assert first.unwrap().output.city == "Oslo"
    assert second.unwrap().output.city == "Bergen"
    session = await agent.sessions.load("s")
    assert session is not None
    assert len(session.messages) == 6


async def test_tool_call_middleware_do_not_see_final_result() -> None:
    """final_result is no tool the agent runs: tool_call middleware never wrap it."""
    registry = Registry()
    wrapped: list[str] = []

    @registry.on("tool_call")
    async def log(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        wrapped.append(ctx.tool.name)
        return await call_next(ctx)

    agent = Agent(
        TestModel(), registry=registry, tools=[lookup], output_type=Weather, output_strategy="tool"
    )
    assert (await agent.run("Oslo")).unwrap().output.city == "Oslo"
    assert wrapped == ["lookup"]


async def test_function_model_returns_what_the_function_gives() -> None:
    """FunctionModel's text is the answer, checked against the schema it was sent."""

    def answer(request: ModelRequest) -> str:
        assert request.output_schema is not None
        return json.dumps({"name": "Ada", "age": 36})

    agent = Agent(FunctionModel(answer), registry=Registry(), output_type=Person)
    assert (await agent.run("who")).unwrap().output == {"name": "Ada", "age": 36}


async def test_container_agent_takes_output_type_and_configured_strategy() -> None:
    """container.agent(output_type=T) is an Agent[T]; [agent] sets strategy and retries."""
    container = load_container(
        overrides={"agent": {"output_strategy": "tool", "output_retries": 0}}, environ={}
    )
    agent = container.agent(output_type=Weather)
    result = (await agent.run("Oslo")).unwrap()
    assert result.output == Weather(city="Oslo", celsius=0.0)
    assert result.messages[0].tool_calls[0].name == "final_result"
    failing = container.agent(output_type=Weather, model=ScriptedModel(["no"]))
    error = (await failing.run("x")).failure()
    assert isinstance(error, OutputValidationFailed)
    assert error.attempts == 1
    plain = container.agent()
    assert isinstance(await plain.run("hi"), Success)
    await container.shutdown()


def test_cache_keys_tell_typed_requests_from_text_ones() -> None:
    """The cache built-in's request key covers the output schema."""
    from fncore.core import OutputSchema
    from fncore.middleware._cache_json import request_key

    plain = ModelRequest(())
    typed = ModelRequest((), output_schema=OutputSchema("W", {"type": "object"}))
    assert request_key(plain, "m") != request_key(typed, "m")


@pytest.mark.parametrize(
    ("section", "key"),
    [({"output_strategy": "json"}, "output_strategy"), ({"output_retries": -1}, "output_retries")],
)
def test_bad_output_settings_are_one_config_error(section: dict[str, object], key: str) -> None:
    """A wrong ``[agent]`` output setting is a ConfigError naming the key."""
    with pytest.raises(ConfigError, match=f"config key 'agent.{key}'"):
        load_container(overrides={"agent": section}, environ={})
