"""`guard`: input, output and tool guardrails, blocking and parallel streaming, config."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from helpers import config_error, configured, outcome_of
from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Result, Success

from fncore import (
    Agent,
    Message,
    MiddlewareError,
    ModelError,
    ModelRequest,
    ModelResponse,
    Registry,
    ToolCallContext,
    load_container,
)
from fncore.core import ModelStreamItem
from fncore.events import GuardTripped, RunCompleted, StreamEvent, TextDelta
from fncore.middleware import (
    Allow,
    Block,
    GuardBlocked,
    GuardCheck,
    Reject,
    Rewrite,
    ToolVerdict,
    Verdict,
    guard,
)
from fncore.testing import ScriptedModel, TestModel, tool_calls

MODES = pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def agent_with(registry: Registry, model: Any = None, **options: Any) -> Agent:
    """An agent over ``model`` (a TestModel, which echoes the user) with ``registry``."""
    return Agent(model if model is not None else TestModel(), registry=registry, **options)


async def events_of(agent: Agent, prompt: str) -> list[StreamEvent]:
    """Every event of streaming ``prompt``."""
    return [event async for event in agent.stream(prompt)]


def text_of(events: list[StreamEvent]) -> str:
    """The streamed text."""
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def blocked_on(outcome: Any, stage: str) -> GuardBlocked:
    """The GuardBlocked error ``outcome`` failed with, at ``stage``."""
    error = outcome.failure()
    assert isinstance(error, GuardBlocked)
    assert (error.stage, error.middleware) == (stage, "guard")
    return error


@MODES
async def test_a_denied_input_blocks_the_run_before_any_model_call(stream: bool) -> None:
    """A deny pattern in the user's message: GuardBlocked at input, the model never asked."""
    model = TestModel()
    agent = agent_with(guard(deny=[r"\bpassword\b"]), model)
    error = blocked_on(await outcome_of(agent, "my PASSWORD is 1234", streaming=stream), "input")
    assert error.reason == r"the text matches the denied pattern /\bpassword\b/"
    assert error.position == "run"
    assert str(error).startswith("run middleware 'guard': the input guardrail blocked the run")
    assert model.requests == []


async def test_a_blocked_stream_says_so_with_an_event() -> None:
    """Streaming, a block is announced by GuardTripped before the final RunCompleted."""
    events = await events_of(agent_with(guard(deny=["password"])), "password?")
    assert events[0] == GuardTripped(
        "guard", "input", "the text matches the denied pattern /password/"
    )
    assert isinstance(events[-1], RunCompleted)
    assert len(events) == 2


@MODES
async def test_allowed_text_passes_unchanged(stream: bool) -> None:
    """Nothing denied: the run's answer is the model's, streamed in full."""
    agent = agent_with(guard(deny=["password"]))
    outcome = await outcome_of(agent, "hello there, how are you today?", streaming=stream)
    assert outcome.unwrap().output == "hello there, how are you today?"


async def test_an_input_rewrite_is_what_the_model_sees() -> None:
    """An input guardrail's Rewrite replaces the user's message in the request."""

    def polite(check: GuardCheck) -> Verdict:
        return Rewrite(check.text.replace("stupid", "silly"))

    model = TestModel()
    outcome = await agent_with(guard(input_guards=[polite]), model).run("a stupid question")
    assert model.requests[0].messages[-1].text == "a silly question"
    assert outcome.unwrap().output == "a silly question"


@MODES
async def test_terminate_on_block_ends_the_run_with_the_message(stream: bool) -> None:
    """on_block="terminate": the run succeeds, terminated, with the configured message."""
    agent = agent_with(guard(deny=["secret"], on_block="terminate", message="No."))
    result = (await outcome_of(agent, "tell me the secret", streaming=stream)).unwrap()
    assert (result.output, result.stop_reason) == ("No.", "terminated")


@MODES
async def test_a_blocked_output_fails_the_run(stream: bool) -> None:
    """An output guardrail that blocks the model's text: GuardBlocked at output."""
    agent = agent_with(guard(deny=["forbidden"]), ScriptedModel(["this is forbidden text"]))
    error = blocked_on(await outcome_of(agent, "hi", streaming=stream), "output")
    assert error.position == "model_call"


@MODES
async def test_an_output_rewrite_is_the_answer(stream: bool) -> None:
    """An output Rewrite replaces the response's text, streamed or not."""

    def redact(check: GuardCheck) -> Verdict:
        return Rewrite(check.text.replace("1234", "****")) if "1234" in check.text else Allow()

    agent = agent_with(guard(output_guards=[redact], window=1000), ScriptedModel(["pin 1234 ok"]))
    if stream:
        events = await events_of(agent, "hi")
        assert text_of(events) == "pin **** ok"
        last = events[-1]
        assert isinstance(last, RunCompleted)
        assert last.outcome.unwrap().output == "pin **** ok"
    else:
        assert (await agent.run("hi")).unwrap().output == "pin **** ok"


SAFE = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ", max_size=60)


@settings(max_examples=150, deadline=None)
@given(
    before=SAFE,
    after=SAFE,
    window=st.integers(1, 80),
    chunk=st.integers(1, 12),
    pauses=st.integers(0, 3),
)
def test_blocking_mode_never_streams_text_it_blocks(
    before: str, after: str, window: int, chunk: int, pauses: int
) -> None:
    """Over window and chunk sizes, the stream never holds "secret": only allowed prefixes."""

    async def slow_deny(check: GuardCheck) -> Verdict:
        for _ in range(pauses):
            await asyncio.sleep(0)
        return Block("secret") if "secret" in check.text else Allow()

    text = f"{before}secret{after}"
    model = ScriptedModel([text], chunk=chunk)
    agent = agent_with(guard(output_guards=[slow_deny], window=window), model)
    events = asyncio.run(events_of(agent, "hi"))
    shown = text_of(events)
    assert "secret" not in shown
    assert text.startswith(shown)
    assert events[-2] == GuardTripped("guard", "output", "secret")
    last = events[-1]
    assert isinstance(last, RunCompleted)
    assert isinstance(last.outcome.failure(), GuardBlocked)


@settings(max_examples=60, deadline=None)
@given(text=SAFE, window=st.integers(1, 80), chunk=st.integers(1, 12))
def test_blocking_mode_streams_allowed_text_whole_and_in_order(
    text: str, window: int, chunk: int
) -> None:
    """Text that passes arrives in full, in order, as the model streamed it."""
    agent = agent_with(guard(deny=["secret"], window=window), ScriptedModel([text], chunk=chunk))
    events = asyncio.run(events_of(agent, "hi"))
    assert text_of(events) == text
    last = events[-1]
    assert isinstance(last, RunCompleted)
    assert last.outcome.unwrap().output == text


async def test_blocking_mode_releases_a_checked_prefix_before_the_answer_ends() -> None:
    """With a window of 5, the first five characters reach the consumer mid-answer."""
    seen = asyncio.Event()

    class Waiting:
        """Streams one chunk, then waits until the consumer has seen text."""

        name = "waiting"

        async def request(self, request: ModelRequest) -> Result[ModelResponse, ModelError]:
            return Success(ModelResponse(Message.assistant("hello world")))

        async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamItem]:
            yield TextDelta("hello")
            await asyncio.wait_for(seen.wait(), 10)
            yield TextDelta(" world")
            yield ModelResponse(Message.assistant("hello world"))

    agent = agent_with(guard(deny=["secret"], window=5), Waiting())
    shown: list[str] = []
    async for event in agent.stream("hi"):
        if isinstance(event, TextDelta):
            shown.append(event.text)
            seen.set()
    assert shown == ["hello", " world"]


async def test_the_seconds_window_releases_text_that_waited() -> None:
    """With a huge character window, window_seconds still releases a waiting chunk."""
    seen = asyncio.Event()

    class Waiting:
        """Streams one chunk, then waits until the consumer has seen it."""

        name = "waiting"

        async def request(self, request: ModelRequest) -> Result[ModelResponse, ModelError]:
            return Success(ModelResponse(Message.assistant("hi")))

        async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamItem]:
            yield TextDelta("hi")
            await asyncio.wait_for(seen.wait(), 10)
            yield ModelResponse(Message.assistant("hi"))

    agent = agent_with(guard(deny=["x"], window=10_000, window_seconds=0.01), Waiting())
    async for event in agent.stream("hi"):
        if isinstance(event, TextDelta):
            seen.set()
    assert seen.is_set()


async def test_parallel_mode_streams_at_once_and_stops_with_an_event() -> None:
    """Parallel: text flows before the check; a trip ends the stream with GuardTripped."""
    text = "one two three secret four five six seven eight nine ten"
    agent = agent_with(
        guard(deny=["secret"], mode="parallel", window=1), ScriptedModel([text], chunk=4)
    )
    events = await events_of(agent, "hi")
    tripped = [i for i, e in enumerate(events) if isinstance(e, GuardTripped)]
    assert len(tripped) == 1
    assert events[tripped[0]] == GuardTripped(
        "guard", "output", "the text matches the denied pattern /secret/"
    )
    assert all(not isinstance(e, TextDelta) for e in events[tripped[0] :])
    assert text.startswith(text_of(events))
    assert "secret" in text_of(events) or len(text_of(events)) >= len("one two three")
    last = events[-1]
    assert isinstance(last, RunCompleted)
    assert isinstance(last.outcome.failure(), GuardBlocked)


@MODES
async def test_a_guardrail_that_raises_fails_the_run_closed(stream: bool) -> None:
    """A raising output guardrail: MiddlewareError naming the guard, nothing let through."""

    def broken(check: GuardCheck) -> Verdict:
        raise RuntimeError("moderation down")

    agent = agent_with(guard(output_guards=[broken], window=3), ScriptedModel(["a long answer"]))
    if stream:
        events = await events_of(agent, "hi")
        assert text_of(events) == ""
        last = events[-1]
        assert isinstance(last, RunCompleted)
        error = last.outcome.failure()
    else:
        error = (await agent.run("hi")).failure()
    assert isinstance(error, MiddlewareError)
    assert error.middleware == "guard"
    assert "moderation down" in error.message


@MODES
async def test_a_guardrail_answering_nonsense_is_an_error(stream: bool) -> None:
    """A guardrail returning something that is not a verdict fails the run."""

    def sloppy(check: GuardCheck) -> Verdict:
        return True  # type: ignore[return-value]

    outcome = await outcome_of(agent_with(guard(output_guards=[sloppy])), "hi", streaming=stream)
    error = outcome.failure()
    assert isinstance(error, MiddlewareError)
    assert "returned bool" in error.message


@MODES
async def test_an_async_guardrail_may_ask_a_moderation_model(stream: bool) -> None:
    """An async guardrail calls a model through call_model(by="guard"); no recursion."""
    moderator = ScriptedModel(["SAFE", "UNSAFE"])

    async def moderated(check: GuardCheck) -> Verdict:
        request = ModelRequest((Message.user(check.text),))
        answer = (await check.run.call_model(request, model=moderator, by="guard")).unwrap()
        return Block("flagged") if answer.text == "UNSAFE" else Allow()

    agent = agent_with(guard(input_guards=[moderated], output_guards=[moderated], window=10_000))
    error = blocked_on(await outcome_of(agent, "hello", streaming=stream), "output")
    assert error.reason == "flagged"
    assert moderator.remaining == 0


def test_tool_guards_reject_with_a_result_the_model_sees() -> None:
    """Reject: the tool does not run; the model gets the error result and answers."""

    def small(ctx: ToolCallContext) -> ToolVerdict:
        return Reject("Too big.") if ctx.arg("a", int) > 100 else Allow()

    agent = agent_with(guard(tool_guards={"add": [small]}), tools=[add])
    result = asyncio.run(agent.run("500 and 1")).unwrap()
    assert "add: Too big." in result.output
    assert asyncio.run(agent.run("5 and 1")).unwrap().output == "add: 6"


@MODES
async def test_a_tool_guard_block_ends_the_run(stream: bool) -> None:
    """Block from a tool guardrail ("*": every tool): GuardBlocked at tool."""

    async def never(ctx: ToolCallContext) -> ToolVerdict:
        return Block(f"{ctx.tool.name} is off")

    model = ScriptedModel([tool_calls(("add", {"a": 1, "b": 2})), "done"])
    agent = agent_with(guard(tool_guards={"*": [never]}), model, tools=[add])
    error = blocked_on(await outcome_of(agent, "hi", streaming=stream), "tool")
    assert error.reason == "add is off"


async def test_a_tool_guard_for_another_tool_leaves_this_one_alone() -> None:
    """Tool guards are matched by name at each call: another tool's guard never runs."""
    never = guard(tool_guards={"delete_everything": [lambda ctx: Block("no")]})
    assert (await agent_with(never, tools=[add]).run("1 and 2")).unwrap().output == "add: 3"


@pytest.mark.parametrize(
    "options",
    [{}, {"input_guards": [], "output_guards": []}, {"tool_guards": {"add": []}}],
    ids=["nothing", "empty lists", "a tool with no guardrail"],
)
def test_a_guard_with_nothing_to_check_is_refused(options: dict[str, Any]) -> None:
    """No guardrail and no deny: it would do nothing, so it is refused, in code and config."""
    with pytest.raises(ValueError, match="guard has nothing to check"):
        guard(**options)
    assert "guard has nothing to check" in config_error({"use": "guard", **options})


async def test_sub_calls_of_other_built_ins_are_not_checked() -> None:
    """Output guardrails skip call_model calls (ctx.run.calling is set)."""
    registry = Registry()
    registry.include(guard(deny=["secret"]))

    @registry.on("run")
    async def ask(ctx: Any, call_next: Any) -> Any:
        request = ModelRequest((Message.user("a secret"),))
        inner = await ctx.run.call_model(request, model=TestModel(), by="summary")
        assert inner.unwrap().text == "a secret"
        return await call_next(ctx)

    assert (await agent_with(registry).run("fine")).unwrap().output == "fine"


def test_deny_from_configuration() -> None:
    """A deny list in configuration blocks without code."""
    agent = configured({"use": "guard", "deny": ["password"], "on_block": "terminate"}).agent()
    result = asyncio.run(agent.run("my password")).unwrap()
    assert (result.output, result.stop_reason) == ("Sorry, I can't help with that.", "terminated")


async def test_configuration_from_a_toml_file(tmp_path: Path) -> None:
    """Guardrails named by module path in a TOML file, tool guards included."""
    path = tmp_path / "fncore.toml"
    path.write_text(
        '[[middleware]]\nuse = "guard"\ninput_guards = ["guard_functions:no_shouting"]\n'
        'output_guards = ["guard_functions:polite"]\n'
        '[middleware.tool_guards]\nadd = ["guard_functions:small_numbers"]\n'
    )
    container = load_container(path, environ={})
    agent = container.agent()
    blocked_on(await agent.run("HELLO"), "input")
    assert (await agent.run("a stupid one")).unwrap().output == "a silly one"
    with_tools = container.agent(tools=[add])
    assert "Numbers above 100" in (await with_tools.run("500 and 1")).unwrap().output


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"use": "guard", "deny": ["("]}, "is not a regular expression"),
        ({"use": "guard", "input_guards": ["nowhere"]}, "'package.module:function'"),
        ({"use": "guard", "input_guards": ["no_such_module:f"]}, "cannot import"),
        ({"use": "guard", "input_guards": ["guard_functions:NOT_A_FUNCTION"]}, "not a function"),
        ({"use": "guard", "window": 0}, "greater than or equal to 1"),
        ({"use": "guard", "mode": "eventually"}, "parameter 'mode'"),
    ],
)
def test_configuration_errors_are_one_line(entry: dict[str, Any], words: str) -> None:
    """Bad patterns, guardrail names and values: one ConfigError line naming the entry."""
    assert words in config_error(entry)


async def test_many_concurrent_streams_each_get_their_own_verdict() -> None:
    """1,000 concurrent streamed runs through one guard: each blocked or passed on its own."""
    agent = agent_with(guard(deny=["secret"], window=4))

    async def one(i: int) -> bool:
        prompt = f"run {i} secret" if i % 2 else f"run {i} fine"
        events = await events_of(agent, prompt)
        assert "secret" not in text_of(events)
        last = events[-1]
        assert isinstance(last, RunCompleted)
        return isinstance(last.outcome, Success)

    passed = await asyncio.gather(*(one(i) for i in range(1000)))
    assert sum(passed) == 500
