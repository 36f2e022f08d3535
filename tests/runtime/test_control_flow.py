"""Control flow through the real `Agent`: the seeds' tables, written the fncore way.

Each test builds its own `Registry()` and drives the agent with an offline model, so
what is asserted is what a user of `Agent.run` observes.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from returns.result import Failure, Success
from support import add, run_ok

from fncore import (
    Agent,
    CompressContext,
    CompressNext,
    LoopSettings,
    Message,
    MiddlewareError,
    ModelCallContext,
    ModelCallNext,
    ModelError,
    ModelRequest,
    ModelResponse,
    Outcome,
    Position,
    ReasoningContext,
    ReasoningNext,
    Registry,
    RunContext,
    RunNext,
    RunResult,
    SystemPromptContext,
    Terminate,
    Tool,
    ToolCallContext,
    ToolCallNext,
    ToolCallPart,
    ToolResult,
    ToolResultPart,
)
from fncore.core import check_pairing
from fncore.testing import FunctionModel, ScriptedModel, TestModel, tool_calls

ONIONS: tuple[Position, ...] = ("run", "reasoning", "model_call", "tool_call", "compress_context")


def last_tool_results(request: ModelRequest) -> tuple[ToolResultPart, ...]:
    """The tool results of the last message of a request."""
    return request.messages[-1].tool_results


# -- onion order and transformer chaining ----------------------------------------------


def _tracer(log: list[str], label: str) -> Callable[[Any, Any], Any]:
    async def mw(ctx: Any, call_next: Any) -> Any:
        log.append(f"{label} pre")
        out = await call_next(ctx)
        log.append(f"{label} post")
        return out

    return mw


def _wrapped(inner: list[str]) -> list[str]:
    return ["A pre", "B pre", *inner, "B post", "A post"]


_EXPECTED_ORDER: dict[Position, list[str]] = {
    "run": _wrapped(["model", "tool", "model"]),
    "reasoning": [*_wrapped(["model"]), "tool", *_wrapped(["model"])],
    "model_call": [*_wrapped(["model"]), "tool", *_wrapped(["model"])],
    "tool_call": ["model", *_wrapped(["tool"]), "model"],
    "compress_context": [*_wrapped([]), "model", "tool", *_wrapped([]), "model"],
}


@pytest.mark.parametrize("position", ONIONS)
async def test_onion_order_first_registered_is_outermost(position: Position) -> None:
    """At every onion position: A pre -> B pre -> operation -> B post -> A post."""
    log: list[str] = []
    registry = Registry()
    registry.on(position, name="A")(_tracer(log, "A"))
    registry.on(position, name="B")(_tracer(log, "B"))
    replies = iter([tool_calls(("traced_add", {"a": 1, "b": 2})), Message.assistant("done")])

    def model_fn(request: ModelRequest) -> Message:
        log.append("model")
        return next(replies)

    def traced_add(a: int, b: int) -> int:
        """Add, logging."""
        log.append("tool")
        return a + b

    agent = Agent(FunctionModel(model_fn), registry=registry, tools=[traced_add])
    result = run_ok(await agent.run("go"))
    assert result.output == "done"
    assert log == _EXPECTED_ORDER[position]


async def test_system_prompt_transformers_chain_left_to_right() -> None:
    """Transformers run in registration order, each on the previous output, every round."""
    registry = Registry()
    seen: list[str] = []

    @registry.on("system_prompt")
    async def first(ctx: SystemPromptContext, prompt: str) -> Outcome[str]:
        seen.append(prompt)
        return Success(f"{prompt} +first(r{ctx.round})")

    @registry.on("system_prompt")
    async def second(ctx: SystemPromptContext, prompt: str) -> Outcome[str]:
        seen.append(prompt)
        return Success(f"{prompt} +second")

    model = ScriptedModel([tool_calls(("add", {"a": 1, "b": 2})), "done"])
    agent = Agent(model, registry=registry, tools=[add], instructions="base")
    run_ok(await agent.run("go"))
    assert [r.instructions for r in model.requests] == [
        "base +first(r1) +second",
        "base +first(r2) +second",
    ]
    assert seen == ["base", "base +first(r1)", "base", "base +first(r2)"]


async def test_without_transformers_the_model_gets_the_instructions() -> None:
    """With no system_prompt middleware the model receives Agent(instructions=...) as is."""
    model = TestModel()
    agent = Agent(model, registry=Registry(), instructions="You are terse.")
    run_ok(await agent.run("hi"))
    assert model.requests[0].instructions == "You are terse."


async def test_order_hint_outermost_overrides_registration_order() -> None:
    """order='outermost' on a later registration puts it outside an earlier one."""
    log: list[str] = []
    registry = Registry()
    registry.on("model_call", name="A")(_tracer(log, "A"))
    registry.on("model_call", name="B", order="outermost")(_tracer(log, "B"))
    agent = Agent(TestModel(), registry=registry)
    run_ok(await agent.run("hi"))
    assert log == ["B pre", "A pre", "A post", "B post"]


async def test_patch_malformed_tool_call_arguments_after_the_model() -> None:
    """A model_call middleware repairs malformed arguments before the loop sees them (Synwire)."""
    registry = Registry()

    def patch(response: ModelResponse) -> ModelResponse:
        parts = tuple(
            dataclasses.replace(p, arguments=p.arguments + "}")
            if isinstance(p, ToolCallPart) and p.parsed_arguments() is None
            else p
            for p in response.message.parts
        )
        return dataclasses.replace(response, message=Message("assistant", parts))

    @registry.on("model_call")
    async def patch_calls(
        ctx: ModelCallContext, call_next: ModelCallNext
    ) -> Outcome[ModelResponse]:
        return (await call_next(ctx)).map(patch)

    broken = Message("assistant", (ToolCallPart("c1", "add", '{"a": 1, "b": 2'),))
    model = ScriptedModel([broken, "done"])
    agent = Agent(model, registry=registry, tools=[add])
    result = run_ok(await agent.run("go"))
    assert last_tool_results(model.requests[1]) == (ToolResultPart("c1", "add", "3"),)
    assert result.messages[0].tool_calls[0].arguments == '{"a": 1, "b": 2}'


async def test_tool_emulator_answers_calls_with_another_model() -> None:
    """A tool_call middleware can answer a call from an emulator model instead (LangChain)."""
    registry = Registry()
    ran: list[str] = []
    emulator = FunctionModel(lambda r: f"emulated {r.messages[0].text}", name="emulator")

    def weather(city: str) -> str:
        """Get the weather."""
        ran.append(city)
        return "real"

    @registry.on("tool_call")
    async def emulate(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        prompt = f"{ctx.tool.name}({ctx.call.arguments})"
        out = await emulator.request(ModelRequest((Message.user(prompt),)))
        return out.map(lambda r: ToolResult(r.text))

    model = ScriptedModel([tool_calls(("weather", {"city": "Oslo"})), "done"])
    agent = Agent(model, registry=registry, tools=[weather])
    run_ok(await agent.run("go"))
    assert ran == []
    (part,) = last_tool_results(model.requests[1])
    assert part.content == 'emulated weather({"city":"Oslo"})'


# -- short-circuit without call_next ------------------------------------------------------


async def test_model_call_cache_short_circuits_the_model() -> None:
    """A cache returning Success(ModelResponse) skips the model; upstream post-processing runs."""
    registry = Registry()
    cache: dict[str, ModelResponse] = {}

    @registry.on("model_call")
    async def shout(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        out = await call_next(ctx)
        return out.map(lambda r: dataclasses.replace(r, message=Message.assistant(r.text.upper())))

    @registry.on("model_call")
    async def cached(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        key = ctx.request.messages[-1].text
        if key in cache:
            return Success(cache[key])
        out = await call_next(ctx)
        if isinstance(out, Success):
            cache[key] = out.unwrap()
        return out

    model = TestModel()
    agent = Agent(model, registry=registry)
    first = run_ok(await agent.run("hello"))
    assert first.output == "HELLO"
    assert len(model.requests) == 1
    second = run_ok(await agent.run("hello"))
    assert second.output == "HELLO"
    assert len(model.requests) == 1, "the cached call must not reach the model"


async def test_tool_call_cache_short_circuits_the_tool() -> None:
    """A tool_call cache returning Success(ToolResult) skips the tool; the model sees it."""
    registry = Registry()
    runs: list[tuple[int, int]] = []

    def slow_add(a: int, b: int) -> int:
        """Add."""
        runs.append((a, b))
        return a + b

    @registry.on("tool_call")
    async def cache(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        if ctx.call.name == "slow_add":
            return Success(ToolResult("cached 42"))
        return await call_next(ctx)

    model = ScriptedModel([tool_calls(("slow_add", {"a": 1, "b": 2})), "done"])
    agent = Agent(model, registry=registry, tools=[slow_add])
    result = run_ok(await agent.run("go"))
    assert runs == []
    assert last_tool_results(model.requests[1]) == (
        ToolResultPart("call_0", "slow_add", "cached 42"),
    )
    assert result.output == "done"


# -- the Microsoft Agent Framework exit table -----------------------------------------------

_SHORT: dict[Position, Callable[[Any], Any]] = {
    "run": lambda ctx: Success(RunResult("short", (Message.assistant("short"),))),
    "reasoning": lambda ctx: Success(ModelResponse(Message.assistant("short"))),
    "model_call": lambda ctx: Success(ModelResponse(Message.assistant("short"))),
    "tool_call": lambda ctx: Success(ToolResult("short")),
}

# exit kind -> (B calls call_next?, upstream `.map` post-processing runs?)
_EXITS: dict[str, tuple[bool, bool]] = {
    "return_after_call_next": (True, True),
    "return_without_call_next": (False, True),
    "terminate_after_call_next": (True, False),
    "terminate_without_call_next": (False, False),
    "raise_after_call_next": (True, False),
    "raise_without_call_next": (False, False),
}


@pytest.mark.parametrize("position", list(_SHORT))
@pytest.mark.parametrize("exit_kind", list(_EXITS))
async def test_exit_table(position: Position, exit_kind: str) -> None:
    """Every row of the MAF exit table, at every onion position that has an operation."""
    log: list[str] = []
    tool_runs: list[int] = []
    calls_next, post_runs = _EXITS[exit_kind]

    def counted_add(a: int, b: int) -> int:
        """Add."""
        tool_runs.append(a + b)
        return a + b

    def after(value: Any) -> Any:
        log.append("A after")
        return value

    async def outer(ctx: Any, call_next: Any) -> Any:
        log.append("A before")
        out = await call_next(ctx)
        log.append(f"A received {type(out).__name__}")
        return out.map(after)

    async def inner(ctx: Any, call_next: Any) -> Any:
        log.append("B before")
        if calls_next:
            out = await call_next(ctx)
        if exit_kind.startswith("terminate"):
            return Failure(Terminate("stopped by B"))
        if exit_kind.startswith("raise"):
            raise ValueError("B is unhappy")
        return out if calls_next else _SHORT[position](ctx)

    registry = Registry()
    registry.on(position, name="A")(outer)
    registry.on(position, name="B")(inner)
    model = ScriptedModel([tool_calls(("counted_add", {"a": 1, "b": 2})), "done"])
    agent = Agent(model, registry=registry, tools=[counted_add])
    outcome = await agent.run("go")

    assert log[:2] == ["A before", "B before"]
    assert ("A after" in log) is post_runs
    # upstream always receives the outcome, even when its `.map` is skipped
    received = "A received Success" if post_runs else "A received Failure"
    assert received in log
    # the actual operation runs exactly when B calls call_next
    op_ran = bool(tool_runs) if position == "tool_call" else bool(model.requests)
    assert op_ran is calls_next

    if exit_kind.startswith("raise"):
        assert isinstance(outcome, Failure)
        error = outcome.failure()
        assert isinstance(error, MiddlewareError)
        assert (error.position, error.middleware, error.exception_type) == (
            position,
            "B",
            "ValueError",
        )
        assert "B is unhappy" in str(error)
    elif exit_kind.startswith("terminate"):
        result = run_ok(outcome)
        assert (result.output, result.stop_reason) == ("stopped by B", "terminated")
    else:
        result = run_ok(outcome)
        assert result.stop_reason == "completed"
        if exit_kind == "return_after_call_next" or position == "tool_call":
            assert result.output == "done"
        else:
            assert result.output == "short"


# -- terminate from each position --------------------------------------------------------


async def _terminate(ctx: Any, call_next: Any) -> Outcome[Any]:
    return Failure(Terminate("halted here"))


async def _terminate_prompt(ctx: SystemPromptContext, prompt: str) -> Outcome[str]:
    return Failure(Terminate("halted here"))


@pytest.mark.parametrize(
    "position", ["run", "reasoning", "model_call", "tool_call", "compress_context", "system_prompt"]
)
async def test_terminate_from_each_position(position: Position) -> None:
    """Failure(Terminate) anywhere ends the run as a success, with no further model call."""
    registry = Registry()
    fn: Any = _terminate_prompt if position == "system_prompt" else _terminate
    registry.on(position, name="stop")(fn)
    model = ScriptedModel([tool_calls(("add", {"a": 1, "b": 2})), "never"])
    agent = Agent(model, registry=registry, tools=[add])
    result = run_ok(await agent.run("go"))
    assert result.stop_reason == "terminated"
    assert result.output == "halted here"
    # only tool_call comes after a model call; everything else stops before the model
    assert len(model.requests) == (1 if position == "tool_call" else 0)
    assert result.messages[-1] == Message.assistant("halted here")
    assert check_pairing(result.messages) is None


async def test_terminate_from_tool_call_records_the_call_result() -> None:
    """The terminated call gets the termination text as its result, and the run ends there."""
    registry = Registry()

    @registry.on("tool_call")
    async def block(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        return Failure(Terminate("blocked by policy"))

    calls = tool_calls(("add", {"a": 1, "b": 2}))
    model = ScriptedModel([calls, "never"])
    agent = Agent(model, registry=registry, tools=[add])
    result = run_ok(await agent.run("go"))
    assert len(model.requests) == 1
    assert result.messages == (
        calls,
        Message("tool", (ToolResultPart("call_0", "add", "blocked by policy"),)),
        Message.assistant("blocked by policy"),
    )
    assert result.rounds == 1


async def test_terminate_one_of_several_concurrent_calls_still_answers_all() -> None:
    """When one of several calls terminates, the others still run and every call has a result."""
    registry = Registry()
    ran: list[str] = []

    def note(text: str) -> str:
        """Record text."""
        ran.append(text)
        return f"noted {text}"

    @registry.on("tool_call")
    async def block_second(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        if ctx.call.id == "call_1":
            return Failure(Terminate("enough"))
        return await call_next(ctx)

    calls = tool_calls(("note", {"text": "x"}), ("note", {"text": "y"}), ("note", {"text": "z"}))
    model = ScriptedModel([calls, "never"])
    agent = Agent(model, registry=registry, tools=[note])
    result = run_ok(await agent.run("go"))
    assert len(model.requests) == 1
    assert sorted(ran) == ["x", "z"]
    assert result.messages[1].tool_results == (
        ToolResultPart("call_0", "note", "noted x"),
        ToolResultPart("call_1", "note", "enough"),
        ToolResultPart("call_2", "note", "noted z"),
    )
    assert (result.output, result.stop_reason) == ("enough", "terminated")


async def test_terminate_in_a_later_round_keeps_the_transcript() -> None:
    """Terminating at model_call in round 2 keeps round 1's calls and results in messages."""
    registry = Registry()

    @registry.on("model_call")
    async def budget(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        if len(ctx.request.messages) > 1:
            return Failure(Terminate("budget exhausted"))
        return await call_next(ctx)

    model = ScriptedModel([tool_calls(("add", {"a": 1, "b": 2})), "never"])
    agent = Agent(model, registry=registry, tools=[add])
    result = run_ok(await agent.run("go"))
    assert len(model.requests) == 1
    assert [m.role for m in result.messages] == ["assistant", "tool", "assistant"]
    assert result.messages[1].tool_results[0].content == "3"
    assert result.rounds == 2
    assert result.stop_reason == "terminated"


# -- errors as values and recovery ---------------------------------------------------------


async def _raise(ctx: Any, call_next: Any) -> Any:
    raise RuntimeError("kaboom")


async def _raise_prompt(ctx: SystemPromptContext, prompt: str) -> Outcome[str]:
    raise RuntimeError("kaboom")


@pytest.mark.parametrize(
    "position", ["run", "reasoning", "model_call", "tool_call", "compress_context", "system_prompt"]
)
async def test_raising_middleware_becomes_middleware_error(position: Position) -> None:
    """An exception in middleware is a Failure(MiddlewareError) naming it and its position."""
    registry = Registry()
    fn: Any = _raise_prompt if position == "system_prompt" else _raise
    registry.on(position, name="exploder")(fn)
    model = ScriptedModel([tool_calls(("add", {"a": 1, "b": 2})), "done"])
    agent = Agent(model, registry=registry, tools=[add])
    outcome = await agent.run("go")
    assert isinstance(outcome, Failure)
    error = outcome.failure()
    assert isinstance(error, MiddlewareError)
    assert error.position == position
    assert error.middleware == "exploder"
    assert error.exception_type == "RuntimeError"
    assert str(error).startswith(f"{position} middleware 'exploder':")
    assert "kaboom" in str(error)


async def test_middleware_forgetting_to_return_is_an_error_value() -> None:
    """A middleware returning None (not a Result) is a MiddlewareError that says why."""
    registry = Registry()

    @registry.on("model_call")
    async def forgetful(ctx: ModelCallContext, call_next: ModelCallNext) -> Any:
        await call_next(ctx)

    agent = Agent(TestModel(), registry=registry)
    outcome = await agent.run("hi")
    assert isinstance(outcome, Failure)
    error = outcome.failure()
    assert isinstance(error, MiddlewareError)
    assert error.middleware == "forgetful"
    assert "call_next" in error.message


@pytest.mark.parametrize("detailed", [False, True])
async def test_raising_tool_becomes_an_error_result_the_model_sees(detailed: bool) -> None:
    """A raising tool is an error tool result; include_detailed_errors adds the exception text."""

    def explode(x: int) -> int:
        """Fail."""
        raise ValueError("secret internals")

    model = ScriptedModel([tool_calls(("explode", {"x": 1})), "recovered"])
    settings = LoopSettings(include_detailed_errors=detailed)
    agent = Agent(model, registry=Registry(), tools=[explode], settings=settings)
    result = run_ok(await agent.run("go"))
    assert result.output == "recovered"
    (part,) = last_tool_results(model.requests[1])
    assert part.is_error
    assert part.content.startswith("Tool 'explode' failed")
    if detailed:
        assert "ValueError: secret internals" in part.content
    else:
        assert "secret" not in part.content
        assert "ValueError" not in part.content


@pytest.mark.parametrize("is_async", [False, True])
@pytest.mark.parametrize("tool_timeout", [None, 30.0])
async def test_tool_raising_timeout_error_is_a_failure_not_a_timeout(
    is_async: bool, tool_timeout: float | None
) -> None:
    """A tool's own TimeoutError is reported as the tool failing, not as a fncore timeout."""

    def fetch(url: str) -> str:
        """Fetch a URL."""
        raise TimeoutError("upstream took too long")

    async def afetch(url: str) -> str:
        """Fetch a URL."""
        raise TimeoutError("upstream took too long")

    tool = Tool.from_function(afetch if is_async else fetch, name="fetch")
    model = ScriptedModel([tool_calls(("fetch", {"url": "x"})), "ok"])
    settings = LoopSettings(include_detailed_errors=True, tool_timeout=tool_timeout)
    agent = Agent(model, registry=Registry(), tools=[tool], settings=settings)
    run_ok(await agent.run("go"))
    (part,) = last_tool_results(model.requests[1])
    assert part.is_error
    assert part.content == "Tool 'fetch' failed: TimeoutError: upstream took too long."


async def test_unhandled_model_error_is_returned() -> None:
    """A model returning ModelError with no recovery ends the run as Failure(ModelError)."""
    model = FunctionModel(lambda r: ModelError(message="overloaded", retryable=True))
    agent = Agent(model, registry=Registry())
    outcome = await agent.run("hi")
    assert isinstance(outcome, Failure)
    error = outcome.failure()
    assert isinstance(error, ModelError)
    assert error.message == "overloaded"


async def test_raising_model_becomes_model_error() -> None:
    """A model whose request raises is a Failure(ModelError), not an exception."""

    def broken(request: ModelRequest) -> str:
        raise ConnectionError("socket closed")

    agent = Agent(FunctionModel(broken), registry=Registry())
    outcome = await agent.run("hi")
    assert isinstance(outcome, Failure)
    error = outcome.failure()
    assert isinstance(error, ModelError)
    assert "ConnectionError: socket closed" in error.message


async def test_retry_middleware_recalls_call_next_after_model_error() -> None:
    """A retry middleware that calls call_next again recovers from a failing model."""
    registry = Registry()
    attempts: list[int] = []

    @registry.on("model_call")
    async def retry(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        out = await call_next(ctx)
        for attempt in range(2):
            if not (isinstance(out, Failure) and isinstance(out.failure(), ModelError)):
                break
            attempts.append(attempt)
            out = await call_next(ctx)
        return out

    def flaky(request: ModelRequest) -> str | ModelError:
        if len(model.requests) == 1:
            return ModelError(message="rate limited", retryable=True)
        return "second time lucky"

    model = FunctionModel(flaky)
    agent = Agent(model, registry=registry)
    result = run_ok(await agent.run("hi"))
    assert result.output == "second time lucky"
    assert attempts == [0]
    assert len(model.requests) == 2


async def test_lash_recovers_from_model_error_with_a_fallback_value() -> None:
    """`.lash` turns a ModelError into a fallback response; other errors pass through."""
    registry = Registry()

    def fallback(error: Any) -> Outcome[ModelResponse]:
        if isinstance(error, ModelError):
            return Success(ModelResponse(Message.assistant("fallback answer")))
        return Failure(error)

    @registry.on("model_call")
    async def rescue(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        return (await call_next(ctx)).lash(fallback)

    model = FunctionModel(lambda r: ModelError(message="down"))
    agent = Agent(model, registry=registry)
    result = run_ok(await agent.run("hi"))
    assert result.output == "fallback answer"
    assert len(model.requests) == 1


async def test_lash_recovers_from_an_inner_middleware_exception() -> None:
    """An outer `.lash` sees an inner middleware's exception as a MiddlewareError value."""
    registry = Registry()
    seen: list[Any] = []

    def recover(error: Any) -> Outcome[ModelResponse]:
        seen.append(error)
        return Success(ModelResponse(Message.assistant("recovered")))

    @registry.on("model_call")
    async def outer(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        return (await call_next(ctx)).lash(recover)

    @registry.on("model_call")
    async def inner(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        raise KeyError("missing")

    model = TestModel()
    agent = Agent(model, registry=registry)
    result = run_ok(await agent.run("hi"))
    assert result.output == "recovered"
    assert model.requests == []
    (error,) = seen
    assert isinstance(error, MiddlewareError)
    assert (error.middleware, error.exception_type) == ("inner", "KeyError")


async def test_model_fallback_middleware_routes_to_another_model() -> None:
    """A fallback middleware re-sends the request to another model via replace(ctx, model=...)."""
    registry = Registry()
    backup = FunctionModel(lambda r: "from backup", name="backup")

    @registry.on("model_call")
    async def fall_back(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        out = await call_next(ctx)
        if isinstance(out, Failure) and isinstance(out.failure(), ModelError):
            return await call_next(dataclasses.replace(ctx, model=backup))
        return out

    primary = FunctionModel(lambda r: ModelError(message="primary down"), name="primary")
    agent = Agent(primary, registry=registry, instructions="be nice")
    result = run_ok(await agent.run("hi"))
    assert result.output == "from backup"
    assert len(primary.requests) == 1
    assert len(backup.requests) == 1
    assert backup.requests[0] == primary.requests[0]


async def test_scaling_middleware_modifies_tool_arguments() -> None:
    """A tool_call middleware doubles an argument with replace(ctx, args=...) (LangChain)."""
    registry = Registry()
    received: list[int] = []

    def scale(value: int) -> int:
        """Return the value."""
        received.append(value)
        return value

    @registry.on("tool_call")
    async def scaling(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        value = getattr(ctx.args, "value", None)
        if isinstance(value, int):
            args = ctx.tool.args_model.model_validate({"value": value * 2})
            ctx = dataclasses.replace(ctx, args=args)
        return await call_next(ctx)

    calls = tool_calls(("scale", {"value": 21}))
    model = ScriptedModel([calls, "done"])
    agent = Agent(model, registry=registry, tools=[scale])
    result = run_ok(await agent.run("go"))
    assert received == [42]
    assert last_tool_results(model.requests[1])[0].content == "42"
    # the model's own call is recorded unchanged
    assert result.messages[0] == calls


async def test_retry_tool_call_until_success() -> None:
    """A tool_call retry middleware re-calls call_next while the result is an error (LangChain)."""
    registry = Registry()
    attempts: list[int] = []

    def flaky(n: int) -> int:
        """Fail twice, then succeed."""
        attempts.append(n)
        if len(attempts) < 3:
            raise RuntimeError("transient")
        return n

    @registry.on("tool_call")
    async def retry(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        out = await call_next(ctx)
        for _ in range(3):
            if not (isinstance(out, Success) and out.unwrap().is_error):
                break
            out = await call_next(ctx)
        return out

    model = ScriptedModel([tool_calls(("flaky", {"n": 7})), "done"])
    agent = Agent(model, registry=registry, tools=[flaky])
    run_ok(await agent.run("go"))
    assert attempts == [7, 7, 7]
    assert last_tool_results(model.requests[1]) == (ToolResultPart("call_0", "flaky", "7"),)


async def test_run_middleware_modifies_input_and_final_response() -> None:
    """A run middleware can change the input messages and post-process the final result."""
    registry = Registry()

    @registry.on("run")
    async def frame(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        ctx = dataclasses.replace(ctx, messages=(*ctx.messages, Message.user("and more")))
        out = await call_next(ctx)
        return out.map(lambda r: dataclasses.replace(r, output=f"[{r.output}]"))

    model = TestModel()
    agent = Agent(model, registry=registry)
    result = run_ok(await agent.run("hi"))
    assert result.output == "[and more]"
    assert [m.text for m in model.requests[0].messages] == ["hi", "and more"]


async def test_reasoning_middleware_changes_tool_choice_and_tools() -> None:
    """A reasoning middleware narrows the offered tools and the tool choice of a round."""
    registry = Registry()

    def mul(a: int, b: int) -> int:
        """Multiply."""
        return a * b

    @registry.on("reasoning")
    async def narrow(ctx: ReasoningContext, call_next: ReasoningNext) -> Outcome[ModelResponse]:
        tools = tuple(t for t in ctx.tools if t.name == "mul")
        return await call_next(dataclasses.replace(ctx, tools=tools, tool_choice="none"))

    model = TestModel()
    agent = Agent(model, registry=registry, tools=[add, mul])
    run_ok(await agent.run("2 3"))
    (request,) = model.requests
    assert [t.name for t in request.tools] == ["mul"]
    assert request.tool_choice == "none"


async def test_compress_context_middleware_can_be_a_no_op() -> None:
    """A compress_context middleware that passes through leaves the history intact."""
    registry = Registry()
    sizes: list[int] = []

    @registry.on("compress_context")
    async def observe(
        ctx: CompressContext, call_next: CompressNext
    ) -> Outcome[tuple[Message, ...]]:
        sizes.append(len(ctx.messages))
        return await call_next(ctx)

    model = ScriptedModel([tool_calls(("add", {"a": 1, "b": 2})), "done"])
    agent = Agent(model, registry=registry, tools=[add])
    run_ok(await agent.run("go"))
    assert sizes == [1, 3]
    assert len(model.requests[1].messages) == 3


# -- nothing escapes run(), cancellation does -------------------------------------------------


async def test_exceptions_everywhere_still_return_a_value() -> None:
    """Raising middleware, tool and hook together: run() returns a value and never raises."""
    registry = Registry()

    def explode() -> str:
        """Fail."""
        raise OSError("disk on fire")

    @registry.hook("tool_end")
    async def noisy(event: object) -> None:
        raise ValueError("hook broke")

    @registry.on("run")
    async def wrapper(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        out = await call_next(ctx)
        if isinstance(out, Success):
            raise LookupError("post-processing broke")
        return out

    model = ScriptedModel([tool_calls(("explode", {})), "done"])
    agent = Agent(model, registry=registry, tools=[explode])
    outcome = await agent.run("go")
    assert isinstance(outcome, Failure)
    error = outcome.failure()
    assert isinstance(error, MiddlewareError)
    assert (error.position, error.middleware, error.exception_type) == (
        "run",
        "wrapper",
        "LookupError",
    )


@pytest.mark.parametrize("n_calls", [1, 2])
async def test_cancellation_propagates_from_a_slow_tool(n_calls: int) -> None:
    """Cancelling the run task during a slow tool raises CancelledError and cancels the tool."""
    started = asyncio.Event()
    cancelled: list[str] = []

    async def slow(tag: str) -> str:
        """Take forever."""
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(tag)
            raise
        return tag

    calls = tool_calls(*[("slow", {"tag": f"t{i}"}) for i in range(n_calls)])
    model = ScriptedModel([calls, "never"])
    agent = Agent(model, registry=Registry(), tools=[slow])
    task = asyncio.create_task(agent.run("go"))
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sorted(cancelled) == [f"t{i}" for i in range(n_calls)]
    assert len(model.requests) == 1


async def test_an_error_outranks_a_termination_in_the_same_round() -> None:
    """If one concurrent call terminates and another's middleware fails, the run fails."""
    registry = Registry()

    @registry.on("tool_call")
    async def mixed(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        if ctx.call.id == "call_0":
            return Failure(Terminate("stop"))
        raise RuntimeError("broken guard")

    model = ScriptedModel([tool_calls(("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4}))])
    agent = Agent(model, registry=registry, tools=[add])
    outcome = await agent.run("go")
    assert isinstance(outcome, Failure)
    error = outcome.failure()
    assert isinstance(error, MiddlewareError)
    assert (error.middleware, error.position) == ("mixed", "tool_call")
    assert len(model.requests) == 1


@pytest.mark.parametrize("streaming", [False, True])
async def test_a_middleware_calls_the_model_through_the_model_call_onion(streaming: bool) -> None:
    """ctx.run.call_model passes model_call middleware, streams nothing, checks pairing."""
    registry = Registry()
    seen: list[str] = []
    callers: list[str | None] = []

    @registry.on("model_call")
    async def count(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        seen.append(ctx.request.messages[-1].text)
        callers.append(ctx.run.calling)
        return await call_next(ctx)

    @registry.on("reasoning")
    async def with_summary(
        ctx: ReasoningContext, call_next: ReasoningNext
    ) -> Outcome[ModelResponse]:
        summary = await ctx.run.call_model(
            ModelRequest((Message.user("summarise"),)), by="summariser"
        )
        broken = await ctx.run.call_model(
            ModelRequest((Message("assistant", (ToolCallPart("x", "add"),)),))
        )
        assert type(broken.failure()).__name__ == "InvalidHistory"
        text = summary.unwrap().text
        return await call_next(dataclasses.replace(ctx, messages=(Message.user(text),)))

    agent = Agent(TestModel(), registry=registry)
    if streaming:
        events = [e async for e in agent.stream("hello")]
        texts = [e.text for e in events if type(e).__name__ == "TextDelta"]
        assert "".join(texts) == "summarise"  # only the run's own answer streams
        result = run_ok(events[-1].outcome)  # type: ignore[union-attr]
    else:
        result = run_ok(await agent.run("hello"))
    # the middleware saw all three requests; the unpaired one never reached the model
    assert seen == ["summarise", "", "summarise"]
    assert callers == ["summariser", "middleware", None]  # whose call it is
    assert result.output == "summarise"
