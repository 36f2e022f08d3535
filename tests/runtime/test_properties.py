"""Property tests: the promises hold under random faults everywhere.

Random model replies (ids unique, reused every round, duplicated or empty), random tools
(raising, hanging, cancelling themselves, returning what cannot become text) and one
middleware per position that passes, raises, terminates, fails, short-circuits, returns a
wrong value, or raises a BaseException. Whatever happens:

* every request the model receives, every saved session and every transcript handed out
  keeps the pairing providers enforce;
* ``run`` returns a ``Result`` (or raises the BaseException itself, unwrapped), and a
  failed or interrupted run leaves the session exactly as it was.
"""

from __future__ import annotations

import asyncio
import json
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
    SessionUpdate,
    Terminate,
    TextPart,
    Tool,
    ToolCallPart,
    ToolResult,
    ToolResultPart,
)
from fncore.core import check_pairing
from fncore.testing import FunctionModel

POSITIONS = ("run", "reasoning", "model_call", "tool_call", "compress_context", "system_prompt")
ACTIONS = ("pass", "raise", "terminate", "error", "short", "wrong", "base")
SESSION_ID = "s1"
HISTORY = (
    Message.user("earlier question"),
    Message("assistant", (ToolCallPart("call_0", "ok", '{"x": 1}'),)),
    Message("tool", (ToolResultPart("call_0", "ok", "1"),)),
    Message.assistant("earlier answer"),
)


class Interrupted(BaseException):
    """A BaseException that is not an Exception, like KeyboardInterrupt, for the tests."""


def pairing_problems(messages: tuple[Message, ...] | list[Message]) -> list[str]:
    """Every problem with providers' rule, by position (an independent oracle).

    Each assistant turn's calls (unique, non-empty ids) are each answered exactly once, after
    the turn and before the next assistant turn.
    """
    problems: list[str] = []
    waiting: set[str] = set()
    for i, m in enumerate(messages):
        if m.role == "assistant":
            problems.extend(f"call {cid} unanswered before message {i}" for cid in waiting)
            waiting = set()
            for p in m.parts:
                if type(p) is ToolCallPart:
                    if not p.id or p.id in waiting:
                        problems.append(f"message {i}: bad or repeated id {p.id!r}")
                    waiting.add(p.id)
                elif type(p) is ToolResultPart:
                    problems.append(f"message {i}: result in an assistant message")
        else:
            for p in m.parts:
                if type(p) is ToolResultPart:
                    if p.call_id in waiting:
                        waiting.discard(p.call_id)
                    else:
                        problems.append(f"message {i}: result {p.call_id} answers no open call")
    problems.extend(f"call {cid} unanswered at the end" for cid in waiting)
    return problems


# -- scenario strategies -----------------------------------------------------------------

call_names = st.sampled_from(["ok", "flaky", "hang", "nope", "odd"])
call_args = st.one_of(
    st.integers(min_value=0, max_value=30).map(lambda x: json.dumps({"x": x})),
    st.sampled_from(['{"x": ', "not json", '{"y": 1}', '{"x": "seven"}']),
)
id_styles = st.sampled_from(["unique", "reused", "duplicate", "empty"])
reply = st.one_of(
    st.text(alphabet="abc ", max_size=6).map(lambda t: ("text", t)),
    st.tuples(st.lists(st.tuples(call_names, call_args), min_size=1, max_size=3), id_styles).map(
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
    st.sampled_from(("pass",) * 8 + ACTIONS),
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
    """Raise, cancel itself spuriously, sleep briefly or return, depending on x."""
    if x % 4 == 0:
        msg = f"flaky failed on {x}"
        raise RuntimeError(msg)
    if x % 4 == 1:
        raise asyncio.CancelledError  # nobody cancelled the run: a failing tool, not a cancel
    if x % 4 == 2:
        await asyncio.sleep(0.001)
    return x


async def hang(x: int) -> int:
    """Wait for something that never comes: the tool's timeout always runs out."""
    await asyncio.Event().wait()
    return x


class Unprintable:
    """A value whose text conversion raises."""

    def __str__(self) -> str:
        msg = "no text for you"
        raise ValueError(msg)


def odd(x: int) -> object:
    """Return a value that cannot be turned into text, or a deeply nested list."""
    if x % 2:
        return Unprintable()
    nested: list[object] = []
    for _ in range(5_000):
        nested = [nested]
    return nested


def make_model(replies: list[tuple[str, Any]]) -> FunctionModel:
    """A model that plays ``replies`` in order (then answers text), ids in the given style."""

    def respond(request: ModelRequest) -> str | Message | ModelError:
        index = len(model.requests) - 1
        if index >= len(replies):
            return "final answer"
        kind, value = replies[index]
        if kind == "text":
            return value
        if kind == "error":
            return ModelError(message="the model is down")
        calls, style = value
        ids = {
            "unique": [f"m{index}_{i}" for i in range(len(calls))],
            "reused": [f"call_{i}" for i in range(len(calls))],
            "duplicate": ["dup"] * len(calls),
            "empty": [""] * len(calls),
        }[style]
        return Message(
            "assistant",
            tuple(ToolCallPart(ids[i], name, args) for i, (name, args) in enumerate(calls)),
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


WRONG: dict[str, tuple[Any, ...]] = {
    "run": (Success(None), Success("done"), Failure("no"), 42),
    "reasoning": (Success(None), Success("81"), Failure("no"), None),
    "model_call": (Success(None), Success("81"), Failure(3), object()),
    "tool_call": (Success("81"), Success(None), Failure("no"), "81"),
    "compress_context": (Success("history"), Success((1, 2)), Failure("no"), None),
    "system_prompt": (Success(None), Success(5), Failure("no"), "prompt"),
}


def build_registry(plans_by_position: dict[str, Plan]) -> Registry:
    """A registry with one middleware per position, each following its plan."""
    registry = Registry()
    counts: dict[str, int] = dict.fromkeys(POSITIONS, 0)

    def acting(position: str) -> str | None:
        plan = plans_by_position[position]
        n = counts[position]
        counts[position] += 1
        return plan.action if plan.action != "pass" and n == plan.at else None

    def halt(action: str, position: str) -> Any:
        if action == "raise":
            msg = f"{position} exploded"
            raise RuntimeError(msg)
        if action == "base":
            raise Interrupted(position)
        if action == "terminate":
            return Failure(Terminate(f"terminated at {position}"))
        if action == "wrong":
            return WRONG[position][plans_by_position[position].at]
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


def make_agent(scenario: Scenario, store: Any, model: FunctionModel) -> Agent:
    """The agent of one scenario."""
    return Agent(
        model,
        registry=build_registry(scenario.middleware),
        tools=[ok, flaky, odd, Tool.from_function(hang, timeout=0.005)],
        settings=LoopSettings(
            max_iterations=scenario.max_iterations,
            max_consecutive_errors_per_request=scenario.max_errors,
            terminate_on_unknown_calls=scenario.terminate_on_unknown,
            max_concurrent_tools=scenario.max_concurrent_tools,
        ),
        sessions=store,
    )


class CheckingStore:
    """An in-memory store that checks the pairing of every session it commits."""

    def __init__(self) -> None:
        self.inner = InMemorySessionStore()
        self.problems: list[str] = []

    async def load(self, session_id: str) -> Session | None:
        """Load from memory."""
        return await self.inner.load(session_id)

    async def commit(self, update: SessionUpdate) -> Session | None:
        """Commit to memory, recording any pairing problem of the session it becomes."""
        saved = await self.inner.commit(update)
        if saved is not None:
            self.problems.extend(pairing_problems(saved.messages))
        return saved


async def play(scenario: Scenario) -> None:
    """Run one scenario and check every invariant."""
    model = make_model(scenario.replies)
    store = CheckingStore()
    before = await store.commit(SessionUpdate(SESSION_ID, 0, 0, HISTORY, {"k": 1}))
    agent = make_agent(scenario, store, model)
    session_id = SESSION_ID if scenario.with_session else None
    prompt = Message.user("go 3 4")
    choice: Any = scenario.tool_choice
    interrupted = False
    try:
        if scenario.streaming:
            stream = agent.stream(prompt, session_id=session_id, tool_choice=choice)
            events = [event async for event in stream]
            outcome = await stream.result()
            assert type(events[-1]).__name__ == "RunCompleted"
        else:
            outcome = await agent.run(prompt, session_id=session_id, tool_choice=choice)
    except Interrupted:
        interrupted = True

    for request in model.requests:
        assert pairing_problems(request.messages) == []
        assert check_pairing(request.messages) is None
    assert store.problems == []

    inputs = (*HISTORY, prompt) if session_id else (prompt,)
    saved = await store.load(SESSION_ID)
    if interrupted:
        event("interrupted")
        assert saved is before
        return
    event(
        f"stop: {outcome.unwrap().stop_reason}"
        if isinstance(outcome, Success)
        else f"error: {type(outcome.failure()).__name__}"
    )
    if isinstance(outcome, Success):
        result: RunResult = outcome.unwrap()
        assert pairing_problems((*inputs, *result.messages)) == []
        if session_id:
            assert saved is not None
            assert saved.messages == (*inputs, *result.messages)
            assert saved.version == 2
        else:
            assert saved is before
    else:
        assert isinstance(outcome, Failure)
        error = outcome.failure()
        assert isinstance(error, AgentError)
        if isinstance(error, LoopError):
            assert pairing_problems(error.messages) == []
        assert saved is before


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(scenarios)
def test_every_promise_holds_under_random_faults(scenario: Scenario) -> None:
    """Random replies, ids, tools and middleware faults never break pairing or sessions."""
    asyncio.run(play(scenario))


@settings(max_examples=60, deadline=None)
@given(scenarios)
def test_streamed_and_plain_runs_agree_under_random_faults(scenario: Scenario) -> None:
    """A streamed run ends with the same outcome (or the same interruption) as a plain run."""

    async def both() -> None:
        outcomes: list[object] = []
        for streaming in (False, True):
            agent = make_agent(scenario, InMemorySessionStore(), make_model(scenario.replies))
            choice: Any = scenario.tool_choice
            try:
                if streaming:
                    outcomes.append(await agent.stream("go 3 4", tool_choice=choice).result())
                else:
                    outcomes.append(await agent.run("go 3 4", tool_choice=choice))
            except Interrupted as exc:
                outcomes.append(("interrupted", str(exc)))
        assert outcomes[0] == outcomes[1]

    asyncio.run(both())


def test_pairing_problems_detects_each_kind_of_break() -> None:
    """The oracle used above reports unanswered, duplicated, dangling and orphan results."""
    call = Message("assistant", (ToolCallPart("a", "ok"),))
    result = Message("tool", (ToolResultPart("a", "ok", "1"),))
    assert pairing_problems([call, result]) == []
    assert pairing_problems([call, result, call, result]) == []  # ids reused across turns
    assert pairing_problems([call]) == ["call a unanswered at the end"]
    assert pairing_problems([call, result, result]) == ["message 2: result a answers no open call"]
    assert pairing_problems([result, call, result]) == ["message 0: result a answers no open call"]
    assert pairing_problems([call, call, result]) == ["call a unanswered before message 1"]
    assert pairing_problems([Message("user", (TextPart("hi"),))]) == []
