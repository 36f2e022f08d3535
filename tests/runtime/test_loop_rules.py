"""The agent loop's rules, observed through the real `Agent` with offline models."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Callable
from typing import Any

import pytest
from returns.result import Failure, Success
from support import add, mul, run_ok

from fncore import (
    Agent,
    CompressContext,
    CompressNext,
    InvalidHistory,
    LoopSettings,
    Message,
    ModelRequest,
    ModelResponse,
    Outcome,
    Registry,
    RequireTool,
    Tool,
    ToolCallContext,
    ToolCallNext,
    ToolCallPart,
    ToolResult,
    ToolResultPart,
    Usage,
    current_metadata,
)
from fncore.core import check_pairing
from fncore.errors import MaxIterationsReached, TooManyToolErrors, UnknownToolCalled
from fncore.events import Compaction
from fncore.runtime._model_call import sent
from fncore.testing import FunctionModel, ScriptedModel, TestModel, tool_calls


def failure_of(outcome: Any) -> Any:
    """The error of a failed run."""
    assert isinstance(outcome, Failure), outcome
    return outcome.failure()


def last_tool_results(request: ModelRequest) -> tuple[ToolResultPart, ...]:
    """The tool results in the last message of a request."""
    assert request.messages[-1].role == "tool"
    return request.messages[-1].tool_results


def fresh_call(request: ModelRequest, name: str, arguments: str = "{}") -> Message:
    """A tool call whose id is unique within the conversation."""
    return Message("assistant", (ToolCallPart(f"c{len(request.messages)}", name, arguments),))


# -- tool_choice -----------------------------------------------------------------------


async def test_tool_choice_required_runs_calls_and_stops() -> None:
    """tool_choice='required': run the calls, return calls + results, no further model call."""
    model = TestModel()
    agent = Agent(model, registry=Registry(), tools=[add, mul])
    result = run_ok(await agent.run("use 2 and 5", tool_choice="required"))
    assert len(model.requests) == 1
    assert model.requests[0].tool_choice == "required"
    assert result.stop_reason == "tool_required"
    assert [m.role for m in result.messages] == ["assistant", "tool"]
    assert [p.content for p in result.messages[1].tool_results] == ["7", "10"]
    assert result.output == "7\n10"
    assert result.rounds == 1


async def test_agent_default_tool_choice_required() -> None:
    """Agent(tool_choice='required') applies to every run unless the run overrides it."""
    model = TestModel()
    agent = Agent(model, registry=Registry(), tools=[add], tool_choice="required")
    assert run_ok(await agent.run("2 3")).stop_reason == "tool_required"
    assert run_ok(await agent.run("2 3", tool_choice="auto")).stop_reason == "completed"


async def test_require_tool_forces_the_named_tool() -> None:
    """RequireTool('mul') offers the choice to the model and stops after the call."""
    model = TestModel()
    agent = Agent(model, registry=Registry(), tools=[add, mul])
    result = run_ok(await agent.run("4 and 6", tool_choice=RequireTool("mul")))
    assert len(model.requests) == 1
    assert model.requests[0].tool_choice == RequireTool("mul")
    assert [c.name for c in result.messages[0].tool_calls] == ["mul"]
    assert (result.output, result.stop_reason) == ("24", "tool_required")


async def test_tool_choice_none_answers_in_text() -> None:
    """tool_choice='none': the model is told so and answers without calling tools."""
    model = TestModel()
    agent = Agent(model, registry=Registry(), tools=[add])
    result = run_ok(await agent.run("just talk", tool_choice="none"))
    assert model.requests[0].tool_choice == "none"
    assert (result.output, result.stop_reason) == ("just talk", "completed")
    assert len(model.requests) == 1


async def test_tool_choice_none_rejects_calls_a_model_makes_anyway() -> None:
    """Calls made despite tool_choice='none' are not run; the model gets an error result."""
    ran: list[int] = []

    def counted(a: int) -> int:
        """Count."""
        ran.append(a)
        return a

    model = ScriptedModel([tool_calls(("counted", {"a": 1})), "fine, in text"])
    agent = Agent(model, registry=Registry(), tools=[counted])
    result = run_ok(await agent.run("go", tool_choice="none"))
    assert ran == []
    (part,) = last_tool_results(model.requests[1])
    assert part.is_error
    assert "tool_choice='none'" in part.content
    assert result.output == "fine, in text"


# -- limits -------------------------------------------------------------------------------


async def test_max_iterations_reached() -> None:
    """A model that always calls a tool hits max_iterations after exactly that many calls."""
    model = FunctionModel(lambda r: fresh_call(r, "add", '{"a":1,"b":1}'))
    settings = LoopSettings(max_iterations=3)
    agent = Agent(model, registry=Registry(), tools=[add], settings=settings)
    error = failure_of(await agent.run("loop forever"))
    assert isinstance(error, MaxIterationsReached)
    assert len(model.requests) == 3
    assert [m.role for m in error.messages] == ["assistant", "tool"] * 3
    assert check_pairing(error.messages) is None
    assert "max_iterations" in error.message


async def test_max_iterations_allows_the_final_answer_in_the_last_round() -> None:
    """A text answer in round max_iterations is a success, not MaxIterationsReached."""
    model = ScriptedModel([tool_calls(("add", {"a": 1, "b": 1})), "two"])
    agent = Agent(model, registry=Registry(), tools=[add], settings=LoopSettings(max_iterations=2))
    result = run_ok(await agent.run("go"))
    assert (result.output, result.rounds) == ("two", 2)


async def test_consecutive_tool_errors_stop_the_run() -> None:
    """A tool failing in 3 rounds in a row ends the run with TooManyToolErrors."""

    def broken(x: int) -> int:
        """Always fail."""
        raise RuntimeError("nope")

    model = FunctionModel(lambda r: fresh_call(r, "broken", '{"x":1}'))
    agent = Agent(model, registry=Registry(), tools=[broken])
    error = failure_of(await agent.run("go"))
    assert isinstance(error, TooManyToolErrors)
    assert len(model.requests) == 3
    assert [m.role for m in error.messages] == ["assistant", "tool"] * 3
    assert all(p.is_error for m in error.messages[1::2] for p in m.tool_results)
    assert check_pairing(error.messages) is None


async def test_a_success_resets_the_consecutive_error_count() -> None:
    """fail, fail, ok, fail, fail, answer: never three failing rounds in a row, so it succeeds."""
    outcomes = iter([False, False, True, False, False])

    def sometimes(x: int) -> int:
        """Fail unless told otherwise."""
        if not next(outcomes):
            raise RuntimeError("flaky")
        return x

    def script(request: ModelRequest) -> Message | str:
        if len(model.requests) <= 5:
            return fresh_call(request, "sometimes", '{"x":1}')
        return "finally"

    model = FunctionModel(script)
    agent = Agent(model, registry=Registry(), tools=[sometimes])
    result = run_ok(await agent.run("go"))
    assert result.output == "finally"
    assert len(model.requests) == 6
    errors = [m.tool_results[0].is_error for m in result.messages if m.role == "tool"]
    assert errors == [True, True, False, True, True]


async def test_consecutive_error_limit_is_configurable() -> None:
    """max_consecutive_errors_per_request=1 stops at the first failing round."""

    def broken(x: int) -> int:
        """Always fail."""
        raise RuntimeError("nope")

    model = FunctionModel(lambda r: fresh_call(r, "broken", '{"x":1}'))
    settings = LoopSettings(max_consecutive_errors_per_request=1)
    agent = Agent(model, registry=Registry(), tools=[broken], settings=settings)
    assert isinstance(failure_of(await agent.run("go")), TooManyToolErrors)
    assert len(model.requests) == 1


# -- unknown tools and invalid arguments -------------------------------------------------


async def test_unknown_tool_is_reported_to_the_model_which_recovers() -> None:
    """An unknown tool becomes an error result listing the tools; the model can then answer."""
    model = ScriptedModel([tool_calls(("nope", {})), "recovered"])
    agent = Agent(model, registry=Registry(), tools=[add, mul])
    result = run_ok(await agent.run("go"))
    (part,) = last_tool_results(model.requests[1])
    assert part.is_error
    assert part.content.startswith("Unknown tool 'nope'")
    assert "add, mul" in part.content
    assert result.output == "recovered"


async def test_terminate_on_unknown_calls() -> None:
    """terminate_on_unknown_calls=True: Failure(UnknownToolCalled) with a paired transcript."""
    model = ScriptedModel([tool_calls(("add", {"a": 1, "b": 2}), ("nope", {})), "never"])
    settings = LoopSettings(terminate_on_unknown_calls=True)
    agent = Agent(model, registry=Registry(), tools=[add], settings=settings)
    error = failure_of(await agent.run("go"))
    assert isinstance(error, UnknownToolCalled)
    assert error.tool_name == "nope"
    assert len(model.requests) == 1
    assert check_pairing(error.messages) is None
    assert [p.call_id for p in error.messages[-1].tool_results] == ["call_0", "call_1"]


async def test_malformed_json_arguments_are_sent_back_as_a_validation_message() -> None:
    """Invalid JSON arguments are not run; the model's next request holds the validation error."""
    ran: list[int] = []

    def counted(a: int) -> int:
        """Count."""
        ran.append(a)
        return a

    bad = Message("assistant", (ToolCallPart("c1", "counted", '{"a": 1'),))
    model = ScriptedModel([bad, tool_calls(("counted", {"a": 5})), "done"])
    agent = Agent(model, registry=Registry(), tools=[counted])
    result = run_ok(await agent.run("go"))
    (part,) = model.requests[1].messages[-1].tool_results
    assert part.call_id == "c1"
    assert part.is_error
    assert part.content.startswith("Invalid arguments for tool 'counted'")
    assert ran == [5]
    assert result.output == "done"


async def test_schema_invalid_arguments_are_sent_back() -> None:
    """Arguments of the wrong type name the bad field in the message the model gets."""
    model = ScriptedModel([tool_calls(("add", {"a": "one", "b": 2})), "done"])
    agent = Agent(model, registry=Registry(), tools=[add])
    run_ok(await agent.run("go"))
    (part,) = last_tool_results(model.requests[1])
    assert part.is_error
    assert "a:" in part.content
    assert "matching its schema" in part.content


# -- concurrency and timeouts ----------------------------------------------------------------


async def test_concurrent_calls_keep_call_order_and_overlap() -> None:
    """Calls of one response overlap, and results stay in call order though the first is slowest."""
    running = 0
    peak = 0
    finished: list[str] = []
    others_done = asyncio.Event()

    async def work(label: str) -> str:
        """Return the label; the first call ("a") only once the others have finished."""
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        if label == "a":
            await others_done.wait()
        else:
            await asyncio.sleep(0)
        running -= 1
        finished.append(label)
        if {"b", "c"} <= set(finished):
            others_done.set()
        return label

    calls = tool_calls(
        ("work", {"label": "a"}),
        ("work", {"label": "b"}),
        ("work", {"label": "c"}),
    )
    model = ScriptedModel([calls, "done"])
    agent = Agent(model, registry=Registry(), tools=[work])
    result = run_ok(await agent.run("go"))
    assert peak == 3
    assert finished[-1] == "a"
    parts = last_tool_results(model.requests[1])
    assert [(p.call_id, p.content) for p in parts] == [
        ("call_0", "a"),
        ("call_1", "b"),
        ("call_2", "c"),
    ]
    assert result.messages[1].tool_results == parts


async def test_max_concurrent_tools_bound() -> None:
    """No more than max_concurrent_tools calls run at once."""
    running = 0
    peak = 0

    async def work(n: int) -> int:
        """Sleep briefly."""
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1
        return n

    calls = tool_calls(*[("work", {"n": i}) for i in range(6)])
    model = ScriptedModel([calls, "done"])
    settings = LoopSettings(max_concurrent_tools=2)
    agent = Agent(model, registry=Registry(), tools=[work], settings=settings)
    run_ok(await agent.run("go"))
    assert peak == 2
    assert [p.content for p in last_tool_results(model.requests[1])] == [str(i) for i in range(6)]


async def test_tool_timeout_from_settings() -> None:
    """LoopSettings(tool_timeout=...) turns a slow tool into an error result that says so."""

    async def sleepy() -> str:
        """Wait for something that never comes."""
        await asyncio.Event().wait()
        return "woke"

    model = ScriptedModel([tool_calls(("sleepy", {})), "gave up"])
    settings = LoopSettings(tool_timeout=0.05)
    agent = Agent(model, registry=Registry(), tools=[sleepy], settings=settings)
    result = run_ok(await agent.run("go"))
    (part,) = last_tool_results(model.requests[1])
    assert part.is_error
    assert "timed out" in part.content
    assert "0.05" in part.content
    assert result.output == "gave up"


async def test_a_tools_own_timeout_wins_over_the_settings() -> None:
    """Tool.from_function(timeout=...) overrides LoopSettings.tool_timeout."""

    async def sleepy() -> str:
        """Wait for something that never comes."""
        await asyncio.Event().wait()
        return "woke"

    tool = Tool.from_function(sleepy, timeout=0.05)
    model = ScriptedModel([tool_calls(("sleepy", {})), "gave up"])
    settings = LoopSettings(tool_timeout=30)
    agent = Agent(model, registry=Registry(), tools=[tool], settings=settings)
    run_ok(await agent.run("go"))
    (part,) = last_tool_results(model.requests[1])
    assert part.is_error
    assert "timed out after 0.05s" in part.content


async def test_sync_tools_run_in_worker_threads_and_overlap() -> None:
    """Blocking sync tools run off the event loop, at the same time, seeing the run's metadata."""
    seen: list[tuple[str, object]] = []
    both_running = threading.Barrier(2, timeout=60)

    def blocking(label: str) -> str:
        """Wait, blocking this thread, until the other call is running too."""
        both_running.wait()  # raises BrokenBarrierError if the calls ran one after the other
        seen.append((threading.current_thread().name, current_metadata().get("user")))
        return label

    loop_thread = threading.current_thread().name
    model = ScriptedModel(
        [tool_calls(("blocking", {"label": "a"}), ("blocking", {"label": "b"})), "done"]
    )
    agent = Agent(model, registry=Registry(), tools=[blocking])
    run_ok(await agent.run("go", metadata={"user": "u1"}))
    assert [p.content for p in last_tool_results(model.requests[1])] == ["a", "b"]
    assert [user for _, user in seen] == ["u1", "u1"]
    assert all(name != loop_thread for name, _ in seen)


async def test_a_sync_tool_that_overruns_its_timeout_is_abandoned() -> None:
    """A sync tool slower than its timeout gives a timed-out result; the run goes on."""
    release = threading.Event()

    def stuck() -> str:
        """Block until the run is over."""
        release.wait()
        return "late"

    tool = Tool.from_function(stuck, timeout=0.05)
    model = ScriptedModel([tool_calls(("stuck", {})), "moved on"])
    try:
        result = run_ok(await Agent(model, registry=Registry(), tools=[tool]).run("go"))
    finally:
        release.set()
    (part,) = last_tool_results(model.requests[1])
    assert part.is_error
    assert "timed out after 0.05s" in part.content
    assert result.output == "moved on"


async def test_inline_sync_tools_run_on_the_event_loop_thread() -> None:
    """inline=True calls a quick sync function directly, on the loop's own thread."""
    threads: list[str] = []

    def quick(a: int) -> int:
        """Return ``a`` after noting the thread."""
        threads.append(threading.current_thread().name)
        return a

    registry = Registry()
    registry.tool(inline=True)(quick)
    model = ScriptedModel([tool_calls(("quick", {"a": 7})), "ok"])
    run_ok(await Agent(model, registry=registry).run("go"))
    assert threads == [threading.current_thread().name]
    assert last_tool_results(model.requests[1])[0].content == "7"


class _Point:
    """A value that ``json.dumps`` cannot serialise: its text is its ``str``."""

    def __str__(self) -> str:
        return "(1, 2)"


class _Unprintable:
    """A value that turns into no text at all."""

    def __str__(self) -> str:
        raise RuntimeError("no text")


class _Count(int):
    """An ``int`` subclass, serialised as ``json.dumps`` serialises it."""


def _raises() -> str:
    raise ValueError("boom")


_INLINE_RETURNS: list[Callable[[], object]] = [
    lambda: "text",
    lambda: 7,
    lambda: 2.5,
    lambda: True,
    lambda: None,
    lambda: {"sum": 3},
    lambda: [1, "a"],
    lambda: _Count(4),
    lambda: _Point(),
    lambda: _Unprintable(),
    lambda: ToolResult("its own", True),
    _raises,
]


@pytest.mark.parametrize("returns", _INLINE_RETURNS)
@pytest.mark.parametrize("detailed", [False, True])
async def test_an_inline_tool_answers_the_same_with_or_without_a_tool_call_middleware(
    returns: Callable[[], object], detailed: bool
) -> None:
    """The bare loop's direct call of an inline tool gives the result the onion's path gives."""

    def value() -> object:
        """Return the value under test."""
        return returns()

    async def passthrough(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        return await call_next(ctx)

    results = []
    for layered in (False, True):
        registry = Registry()
        if layered:
            registry.on("tool_call")(passthrough)
        model = ScriptedModel([tool_calls(("value", {})), "ok"])
        tool = Tool.from_function(value, inline=True)
        settings = LoopSettings(include_detailed_errors=detailed)
        agent = Agent(model, registry=registry, tools=[tool], settings=settings)
        run_ok(await agent.run("go"))
        results.append(last_tool_results(model.requests[1]))
    assert results[0] == results[1]


# -- history pairing ---------------------------------------------------------------------------


async def test_history_with_a_dangling_tool_call_is_invalid() -> None:
    """Input holding a tool call without its result fails before any model call."""
    model = TestModel()
    agent = Agent(model, registry=Registry(), tools=[add])
    prompt = [Message.user("hi"), tool_calls(("add", {"a": 1, "b": 2})), Message.user("again")]
    error = failure_of(await agent.run(prompt))
    assert isinstance(error, InvalidHistory)
    assert "add (call_0)" in error.message
    assert model.requests == []


async def test_history_with_paired_calls_is_accepted() -> None:
    """Input with every tool call answered runs normally and is sent to the model."""
    model = TestModel()
    agent = Agent(model, registry=Registry())
    prompt = [
        Message.user("earlier"),
        tool_calls(("add", {"a": 1, "b": 2})),
        Message("tool", (ToolResultPart("call_0", "add", "3"),)),
        Message.user("now"),
    ]
    assert run_ok(await agent.run(prompt)).output == "now"
    assert model.requests[0].messages == tuple(prompt)


async def test_compression_that_drops_a_tool_result_is_invalid() -> None:
    """A compress_context middleware that orphans a tool call fails the run with InvalidHistory."""
    registry = Registry()

    @registry.on("compress_context")
    async def drop_results(
        ctx: CompressContext, call_next: CompressNext
    ) -> Outcome[tuple[Message, ...]]:
        kept = tuple(m for m in ctx.messages if m.role != "tool")
        return await call_next(dataclasses.replace(ctx, messages=kept))

    model = ScriptedModel([tool_calls(("add", {"a": 1, "b": 2})), "never"])
    agent = Agent(model, registry=registry, tools=[add])
    error = failure_of(await agent.run("go"))
    assert isinstance(error, InvalidHistory)
    assert len(model.requests) == 1


async def test_compression_that_summarises_is_what_the_model_sees() -> None:
    """A summarising compress_context replaces the history and fires the compaction hook."""
    registry = Registry()
    compactions: list[Compaction] = []
    summary = (Message.user("summary: 1 + 2 = 3"),)

    @registry.on("compress_context")
    async def summarise(
        ctx: CompressContext, call_next: CompressNext
    ) -> Outcome[tuple[Message, ...]]:
        if len(ctx.messages) > 2:
            return Success(summary)
        return await call_next(ctx)

    @registry.hook("compaction")
    async def on_compaction(event: Compaction) -> None:
        compactions.append(event)

    model = ScriptedModel([tool_calls(("add", {"a": 1, "b": 2})), "3"])
    agent = Agent(model, registry=registry, tools=[add])
    result = run_ok(await agent.run("what is 1 + 2"))
    assert model.requests[1].messages == summary
    (event,) = compactions
    assert event.after == summary
    assert [m.role for m in event.before] == ["user", "assistant", "tool"]
    # the run's own transcript is unaffected by compaction
    assert [m.role for m in result.messages] == ["assistant", "tool", "assistant"]
    assert result.output == "3"


@pytest.mark.parametrize("max_iterations", [0, -1])
def test_loop_settings_reject_nonsense(max_iterations: int) -> None:
    """LoopSettings refuses a max_iterations below 1 at construction."""
    with pytest.raises(ValueError, match="max_iterations"):
        LoopSettings(max_iterations=max_iterations)


def test_what_was_sent_is_noted_on_a_copy_that_keeps_every_field() -> None:
    """The innermost end notes the request on a new response, every other field kept."""
    answer = ModelResponse(
        Message.assistant("5"), Usage(input_tokens=3, output_tokens=1), "length", "m-1"
    )
    request = ModelRequest((Message.user("2 + 3?"),))
    noted = sent(Success(answer), request).unwrap()
    assert noted is not answer
    assert answer._sent is None
    assert noted._sent is request
    for field in dataclasses.fields(ModelResponse):
        if field.compare:
            assert getattr(noted, field.name) == getattr(answer, field.name), field.name
