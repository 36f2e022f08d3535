"""Property tests: the tool-call/result pairing invariant under random failures everywhere."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from returns.result import Failure, Success

from fncore import (
    Agent,
    AgentError,
    InMemorySessionStore,
    LoopError,
    LoopSettings,
    Message,
    ModelError,
    ModelRequest,
    ModelResponse,
    Registry,
    RunResult,
    Session,
    Terminate,
    TextPart,
    Tool,
    ToolCallPart,
    ToolResult,
    ToolResultPart,
)
from fncore.core import unanswered_calls
from fncore.testing import FunctionModel

POSITIONS = ("run", "reasoning", "model_call", "tool_call", "compress_context", "system_prompt")
ACTIONS = ("pass", "raise", "terminate", "error", "short")
SESSION_ID = "s1"
HISTORY = (
    Message.user("earlier question"),
    Message("assistant", (ToolCallPart("h_0", "ok", '{"x": 1}'),)),
    Message("tool", (ToolResultPart("h_0", "ok", "1"),)),
    Message.assistant("earlier answer"),
)


def pairing_problems(messages: tuple[Message, ...] | list[Message]) -> list[str]:
    """Every call has exactly one result and every result answers a call seen before it."""
    problems: list[str] = []
    seen_calls: set[str] = set()
    results: Counter[str] = Counter()
    for m in messages:
        for p in m.parts:
            if type(p) is ToolCallPart:
                seen_calls.add(p.id)
            elif type(p) is ToolResultPart:
                if p.call_id not in seen_calls:
                    problems.append(f"result {p.call_id} has no earlier call")
                results[p.call_id] += 1
    problems.extend(f"call {c.id} unanswered" for c in unanswered_calls(messages))
    problems.extend(f"call {cid} answered {n} times" for cid, n in results.items() if n > 1)
    return problems


# -- scenario strategies -----------------------------------------------------------------

call_names = st.sampled_from(["ok", "flaky", "hang", "nope"])
call_args = st.one_of(
    st.integers(min_value=0, max_value=30).map(lambda x: json.dumps({"x": x})),
    st.sampled_from(['{"x": ', "not json", '{"y": 1}', '{"x": "seven"}']),
)
reply = st.one_of(
    st.text(alphabet="abc ", max_size=6).map(lambda t: ("text", t)),
    st.lists(st.tuples(call_names, call_args), min_size=1, max_size=3).map(
        lambda calls: ("calls", calls)
    ),
    st.just(("error", None)),
)


@dataclass(frozen=True)
class Plan:
    """What one middleware does: pass through, or act on its ``at``-th call."""

    action: str
    at: int


plans = st.builds(
    Plan,
    st.sampled_from(("pass",) * 6 + ACTIONS),
    st.integers(min_value=0, max_value=3),
)


@dataclass(frozen=True)
class Scenario:
    """One random run: model replies, middleware plans, loop settings, run options."""

    replies: list[tuple[str, Any]]
    middleware: dict[str, Plan]
    max_iterations: int
    max_errors: int
    terminate_on_unknown: bool
    max_concurrent_tools: int
    tool_choice: str
    streaming: bool
    with_session: bool


scenarios = st.builds(
    Scenario,
    replies=st.lists(reply, max_size=6),
    middleware=st.fixed_dictionaries(dict.fromkeys(POSITIONS, plans)),
    max_iterations=st.integers(min_value=1, max_value=5),
    max_errors=st.integers(min_value=1, max_value=3),
    terminate_on_unknown=st.booleans(),
    max_concurrent_tools=st.integers(min_value=1, max_value=3),
    tool_choice=st.sampled_from(["auto", "auto", "required", "none"]),
    streaming=st.booleans(),
    with_session=st.booleans(),
)


# -- the system under test, built from a scenario ------------------------------------------


def ok(x: int) -> int:
    """Return x."""
    return x


async def flaky(x: int) -> int:
    """Raise, sleep briefly or return, depending on x."""
    if x % 3 == 0:
        msg = f"flaky failed on {x}"
        raise RuntimeError(msg)
    if x % 3 == 1:
        await asyncio.sleep(0.001)
    return x


async def hang(x: int) -> int:
    """Sleep longer than the tool's timeout."""
    await asyncio.sleep(0.05)
    return x


def make_model(replies: list[tuple[str, Any]]) -> FunctionModel:
    """A model that plays ``replies`` in order (then answers text), with unique call ids."""

    def respond(request: ModelRequest) -> str | Message | ModelError:
        index = len(model.requests) - 1
        if index >= len(replies):
            return "final answer"
        kind, value = replies[index]
        if kind == "text":
            return value
        if kind == "error":
            return ModelError(message="the model is down")
        return Message(
            "assistant",
            tuple(
                ToolCallPart(f"m{index}_{i}", name, args) for i, (name, args) in enumerate(value)
            ),
        )

    model = FunctionModel(respond)
    return model


def short_response(n: int, with_calls: bool) -> ModelResponse:
    """A short-circuit response: text, or one call to ``ok`` with an id no model uses."""
    if with_calls:
        return ModelResponse(
            Message("assistant", (ToolCallPart(f"sc_{n}", "ok", '{"x": 2}'),)), finish_reason="stop"
        )
    return ModelResponse(Message.assistant("short-circuited"))


def build_registry(plans_by_position: dict[str, Plan]) -> Registry:
    """A registry with one middleware per position, each following its plan."""
    registry = Registry()
    counts: Counter[str] = Counter()

    def acting(position: str) -> str | None:
        plan = plans_by_position[position]
        n = counts[position]
        counts[position] += 1
        return plan.action if plan.action != "pass" and n == plan.at else None

    def halt(action: str, position: str) -> Any:
        if action == "raise":
            msg = f"{position} exploded"
            raise RuntimeError(msg)
        if action == "terminate":
            return Failure(Terminate(f"terminated at {position}"))
        return Failure(AgentError(message=f"refused at {position}", position=position))  # type: ignore[arg-type]

    @registry.on("run")
    async def run_mw(ctx: Any, call_next: Any) -> Any:
        action = acting("run")
        if action is None:
            return await call_next(ctx)
        if action == "short":
            return Success(RunResult("short", (Message.assistant("short"),)))
        return halt(action, "run")

    @registry.on("reasoning")
    async def reasoning_mw(ctx: Any, call_next: Any) -> Any:
        n = counts["reasoning"]
        action = acting("reasoning")
        if action is None:
            return await call_next(ctx)
        if action == "short":
            return Success(short_response(n, with_calls=n % 2 == 0))
        return halt(action, "reasoning")

    @registry.on("model_call")
    async def model_call_mw(ctx: Any, call_next: Any) -> Any:
        n = counts["model_call"]
        action = acting("model_call")
        if action is None:
            return (await call_next(ctx)).map(lambda r: r)
        if action == "short":
            return Success(short_response(100 + n, with_calls=n % 2 == 1))
        return halt(action, "model_call")

    @registry.on("tool_call")
    async def tool_call_mw(ctx: Any, call_next: Any) -> Any:
        action = acting("tool_call")
        if action is None:
            return await call_next(ctx)
        if action == "short":
            return Success(ToolResult("cached"))
        return halt(action, "tool_call")

    @registry.on("compress_context")
    async def compress_mw(ctx: Any, call_next: Any) -> Any:
        action = acting("compress_context")
        if action is None:
            return await call_next(ctx)
        if action == "short":
            messages = ctx.messages
            last_user = max(i for i, m in enumerate(messages) if m.role == "user")
            return Success(messages[last_user:])
        return halt(action, "compress_context")

    @registry.on("system_prompt")
    async def prompt_mw(ctx: Any, prompt: str) -> Any:
        action = acting("system_prompt")
        if action is None:
            return Success(prompt)
        if action == "short":
            return Success("a different prompt")
        return halt(action, "system_prompt")

    return registry


async def play(scenario: Scenario) -> None:
    """Run one scenario and check every invariant."""
    model = make_model(scenario.replies)
    store = InMemorySessionStore()
    before = Session(HISTORY, {"k": 1})
    await store.save(SESSION_ID, before)
    agent = Agent(
        model,
        registry=build_registry(scenario.middleware),
        tools=[ok, flaky, Tool.from_function(hang, timeout=0.005)],
        settings=LoopSettings(
            max_iterations=scenario.max_iterations,
            max_consecutive_errors_per_request=scenario.max_errors,
            terminate_on_unknown_calls=scenario.terminate_on_unknown,
            max_concurrent_tools=scenario.max_concurrent_tools,
        ),
        sessions=store,
    )
    session_id = SESSION_ID if scenario.with_session else None
    prompt = Message.user("go 3 4")
    choice: Any = scenario.tool_choice
    if scenario.streaming:
        stream = agent.stream(prompt, session_id=session_id, tool_choice=choice)
        events = [event async for event in stream]
        outcome = await stream.result()
        assert type(events[-1]).__name__ == "RunCompleted"
    else:
        outcome = await agent.run(prompt, session_id=session_id, tool_choice=choice)

    for request in model.requests:
        assert unanswered_calls(request.messages) == ()
        assert pairing_problems(request.messages) == []

    inputs = (*HISTORY, prompt) if session_id else (prompt,)
    saved = await store.load(SESSION_ID)
    event(
        f"stop: {outcome.unwrap().stop_reason}"
        if isinstance(outcome, Success)
        else f"error: {type(outcome.failure()).__name__}"
    )
    if isinstance(outcome, Success):
        result: RunResult = outcome.unwrap()
        assert unanswered_calls((*inputs, *result.messages)) == ()
        assert pairing_problems((*inputs, *result.messages)) == []
        if session_id:
            assert saved is not None
            assert saved.messages == (*inputs, *result.messages)
            assert pairing_problems(saved.messages) == []
        else:
            assert saved == before
    else:
        assert isinstance(outcome, Failure)
        error = outcome.failure()
        assert isinstance(error, AgentError)
        if isinstance(error, LoopError):
            assert unanswered_calls(error.messages) == ()
            assert pairing_problems(error.messages) == []
        assert saved == before


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(scenarios)
def test_every_tool_call_gets_exactly_one_result_under_random_failures(
    scenario: Scenario,
) -> None:
    """Random replies, tools and middleware failures never break call/result pairing."""
    asyncio.run(play(scenario))


@settings(max_examples=60, deadline=None)
@given(scenarios)
def test_streamed_and_plain_runs_agree_under_random_failures(scenario: Scenario) -> None:
    """A streamed run ends with the same outcome as a plain run of the same scenario."""

    async def both() -> None:
        plain = dict(scenario.__dict__, streaming=False, with_session=False)
        streamed = dict(plain, streaming=True)
        outcomes = []
        for variant in (plain, streamed):
            s = Scenario(**variant)
            agent = Agent(
                make_model(s.replies),
                registry=build_registry(s.middleware),
                tools=[ok, flaky, Tool.from_function(hang, timeout=0.005)],
                settings=LoopSettings(
                    max_iterations=s.max_iterations,
                    max_consecutive_errors_per_request=s.max_errors,
                    terminate_on_unknown_calls=s.terminate_on_unknown,
                    max_concurrent_tools=s.max_concurrent_tools,
                ),
            )
            choice: Any = s.tool_choice
            if s.streaming:
                outcomes.append(await agent.stream("go 3 4", tool_choice=choice).result())
            else:
                outcomes.append(await agent.run("go 3 4", tool_choice=choice))
        assert outcomes[0] == outcomes[1]

    asyncio.run(both())


def test_pairing_problems_detects_each_kind_of_break() -> None:
    """The checker used above reports unanswered, duplicated and orphan results."""
    call = Message("assistant", (ToolCallPart("a", "ok"),))
    result = Message("tool", (ToolResultPart("a", "ok", "1"),))
    assert pairing_problems([call, result]) == []
    assert pairing_problems([call]) == ["call a unanswered"]
    assert pairing_problems([call, result, result]) == ["call a answered 2 times"]
    assert pairing_problems([result, call]) == ["result a has no earlier call"]
    assert pairing_problems([Message("user", (TextPart("hi"),))]) == []
