"""The step boundary of a durable run (`fncore.runtime.Steps`), with a recording `Steps`.

`Recorder` below implements the protocol as a durable engine does: it numbers the steps in
the order they start (or at the slot `reserve` drew), runs each step once, pickles what it
returned, and, given the record of an earlier execution, returns the record instead of
running a step again. A nested step (a step started inside another) is a plain call, as
DBOS makes it.
"""

from __future__ import annotations

import asyncio
import contextvars
import pickle
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import pytest
from returns.result import Failure, Success

from fncore import (
    Agent,
    Approve,
    ConfigError,
    InMemorySessionStore,
    Message,
    ModelCallContext,
    ModelCallNext,
    ModelRequest,
    ModelResponse,
    Outcome,
    RegistrationError,
    Registry,
    RunContext,
    RunInfo,
    RunNext,
    RunResult,
    ToolCallPart,
    load_container,
)
from fncore.errors import CheckpointBusy, SessionConflict
from fncore.events import RunEnd, ToolEnd
from fncore.middleware import approve, build_middleware
from fncore.runtime import Steps
from fncore.testing import FunctionModel, tool_calls

_T = TypeVar("_T")
_inside: contextvars.ContextVar[bool] = contextvars.ContextVar("inside", default=False)


class Crash(BaseException):
    """A process dying mid-run, as the run sees it: nothing after it is recorded."""


@dataclass
class Recorder:
    """A `Steps` that records every step's pickled value, and replays a given record."""

    record: dict[int, tuple[str, bytes]] = field(default_factory=dict)
    """Step id -> (name, pickled value): what completed, in this execution or before."""
    crash_after: str | None = None
    """The name of a step whose value is lost: the process dies just after it ran."""
    next_id: int = 1
    ran: list[str] = field(default_factory=list)
    """The steps this execution ran (not replayed), in the order they completed."""
    started: dict[int, str] = field(default_factory=dict)
    """Every step this execution reached, by id."""

    def reserve(self, count: int) -> Sequence[object]:
        ids = list(range(self.next_id, self.next_id + count))
        self.next_id += count
        return ids

    async def step(
        self, name: str, thunk: Callable[[], Awaitable[_T]], slot: object | None = None
    ) -> _T:
        if _inside.get():  # a step inside a step: a plain call
            return await thunk()
        if slot is None:
            step_id, self.next_id = self.next_id, self.next_id + 1
        else:
            assert isinstance(slot, int)
            step_id = slot
        self.started[step_id] = name
        if step_id in self.record:
            recorded, data = self.record[step_id]
            assert recorded == name, f"step {step_id} was {recorded!r}, now {name!r}"
            replayed: _T = pickle.loads(data)
            return replayed
        token = _inside.set(True)
        try:
            value = await thunk()
        finally:
            _inside.reset(token)
        if name == self.crash_after:
            raise Crash(name)
        data = pickle.dumps(value)
        assert pickle.loads(data) == value  # the value survives the round trip
        self.record[step_id] = (name, data)
        self.ran.append(name)
        return value

    def names(self) -> list[str]:
        """The recorded steps' names, by step id."""
        return [self.record[i][0] for i in sorted(self.record)]

    def values(self) -> list[object]:
        """The recorded steps' values, by step id."""
        return [pickle.loads(self.record[i][1]) for i in sorted(self.record)]

    def again(self, crash_after: str | None = None) -> Recorder:
        """A new execution of the same run, from this one's record."""
        return Recorder(dict(self.record), crash_after)


def _check(steps: Steps) -> Steps:
    return steps  # Recorder implements the protocol (checked by mypy at the call sites)


@dataclass
class Counted:
    """Tools and a model that count their calls (a side effect, as a durable run sees it)."""

    calls: list[str] = field(default_factory=list)
    crash_on: str | None = None
    """``name:n``: the n-th call of tool ``name`` crashes the process once."""
    requests: int = 0

    def add(self, a: int, b: int) -> int:
        """Add two numbers."""
        self._called("add")
        return a + b

    async def mul(self, a: int, b: int) -> int:
        """Multiply two numbers."""
        self._called("mul")
        return a * b

    def _called(self, name: str) -> None:
        self.calls.append(name)
        if f"{name}:{self.calls.count(name)}" == self.crash_on:
            self.crash_on = None
            raise Crash(name)

    def model(self) -> FunctionModel:
        """Three rounds: add and mul at once, then add again, then the answer."""

        def reply(request: ModelRequest) -> str | Message:
            self.requests += 1
            last_user = max(i for i, m in enumerate(request.messages) if m.role == "user")
            tool_messages = [m for m in request.messages[last_user:] if m.role == "tool"]
            if not tool_messages:
                return tool_calls(("add", {"a": 1, "b": 2}), ("mul", {"a": 3, "b": 4}))
            if len(tool_messages) == 1:
                return tool_calls(ToolCallPart("c3", "add", '{"a": 5, "b": 6}'))
            results = [p.content for m in tool_messages for p in m.parts if hasattr(p, "content")]
            return "results: " + ", ".join(str(r) for r in results)

        return FunctionModel(reply)


def _agent(counted: Counted, registry: Registry | None = None, **kwargs: Any) -> Agent:
    return Agent(
        counted.model(),
        tools=[counted.add, counted.mul],
        registry=registry or Registry(),
        **kwargs,
    )


async def _run(
    agent: Agent, steps: Recorder | None, *, session_id: str | None = None, run_id: str = "wf-1"
) -> Outcome[RunResult]:
    runner = agent._runner
    return await runner.start(
        "compute", None, session_id, None, None, None, steps=steps, run_id=run_id
    )


# -- names, order, replay ---------------------------------------------------------------------


async def test_steps_are_named_and_numbered_in_the_order_they_start() -> None:
    counted = Counted()
    store = InMemorySessionStore()
    steps = Recorder()
    outcome = await _run(_agent(counted, sessions=store), steps, session_id="s")
    assert isinstance(outcome, Success), outcome
    assert steps.names() == [
        "session.load",
        "model_call:1",
        "tool:add:call_0",
        "tool:mul:call_1",
        "model_call:2",
        "tool:add:c3",
        "model_call:3",
        "session.commit",
    ]
    assert outcome.unwrap().output == "results: 3, 12, 11"


def _watching(seen: list[RunInfo]) -> Registry:
    """A registry whose ``run`` middleware keeps each run's `RunInfo` in ``seen``."""
    registry = Registry()

    @registry.on("run")
    async def look(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        seen.append(ctx.run)
        return await call_next(ctx)

    return registry


async def test_the_run_id_is_the_one_given() -> None:
    seen: list[RunInfo] = []
    await _run(_agent(Counted(), _watching(seen)), Recorder(), run_id="workflow-7")
    assert [run.run_id for run in seen] == ["workflow-7"]


async def test_a_replay_returns_the_record_and_runs_nothing_again() -> None:
    counted = Counted()
    agent = _agent(counted, sessions=InMemorySessionStore())
    first = Recorder()
    done = await _run(agent, first, session_id="s")
    calls, requests = list(counted.calls), counted.requests
    replay = first.again()
    again = await _run(agent, replay, session_id="s")
    assert replay.ran == []
    assert counted.calls == calls
    assert counted.requests == requests
    assert again.unwrap().messages == done.unwrap().messages
    assert again.unwrap().output == done.unwrap().output


async def test_concurrent_tool_calls_get_slots_in_call_order_whatever_ends_first() -> None:
    mul_done = asyncio.Event()
    registry = Registry()

    async def slow(a: int) -> int:
        """Waits for the other call."""
        await mul_done.wait()
        return a

    async def fast(a: int) -> int:
        """Ends first."""
        mul_done.set()
        return a

    def reply(request: ModelRequest) -> str | Message:
        if request.messages[-1].role == "tool":
            return "done"
        return tool_calls(("slow", {"a": 1}), ("fast", {"a": 2}))

    agent = Agent(FunctionModel(reply), tools=[slow, fast], registry=registry)
    steps = Recorder()
    assert isinstance(await _run(agent, steps), Success)
    assert steps.ran[1:3] == ["tool:fast:call_1", "tool:slow:call_0"]  # as they ended
    assert steps.names() == ["model_call:1", "tool:slow:call_0", "tool:fast:call_1", "model_call:2"]


# -- a crash, then a replay ------------------------------------------------------------------


@pytest.mark.parametrize("crash_on", ["add:1", "mul:1", "add:2"])
async def test_a_run_crashed_at_a_tool_and_replayed_ends_as_an_uninterrupted_one(
    crash_on: str,
) -> None:
    plain = Counted()
    whole = await _run(_agent(plain, sessions=InMemorySessionStore()), None, session_id="s")

    counted = Counted(crash_on=crash_on)
    store = InMemorySessionStore()
    agent = _agent(counted, sessions=store)
    first = Recorder()
    with pytest.raises(Crash):
        await _run(agent, first, session_id="s")
    assert await store.load("s") is None  # nothing committed
    before = list(counted.calls)
    replay = first.again()
    outcome = await _run(agent, replay, session_id="s")
    assert outcome.unwrap().messages == whole.unwrap().messages
    crashed = crash_on.split(":")[0]
    # what completed before the crash does not run again; the crashed call does
    assert sorted(counted.calls) == sorted([*before, crashed, *plain.calls[len(before) :]])
    assert counted.requests == plain.requests + 0  # no answered round is sent again
    session = await store.load("s")
    assert session is not None
    assert session.messages[1:] == whole.unwrap().messages


async def test_every_recorded_value_pickles_and_holds_no_request() -> None:
    registry = Registry()

    @registry.on("model_call")
    async def forced(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        # a changed tool choice: the response then says which request it answered
        request = ctx.request
        if request.tool_choice == "auto" and request.messages[-1].role == "user":
            request = replace(request, tool_choice="required")
        return await call_next(replace(ctx, request=request))

    counted = Counted()
    steps = Recorder()
    agent = _agent(counted, registry, sessions=InMemorySessionStore())
    done = await _run(agent, steps, session_id="s")
    assert isinstance(done, Success)
    for value in steps.values():
        if isinstance(value, tuple) and isinstance(value[0], Success):
            response = value[0].unwrap()
            if isinstance(response, ModelResponse):
                assert response._sent is None
    assert steps.values()[1][1] == "required"  # the tool choice sent, kept
    replay = steps.again()
    assert (await _run(agent, replay, session_id="s")).unwrap().messages == done.unwrap().messages


async def test_a_failed_model_call_is_recorded_and_replayed_as_its_error() -> None:
    def broken(request: ModelRequest) -> str:
        raise ConnectionError("no route")

    agent = Agent(FunctionModel(broken), registry=Registry())
    steps = Recorder()
    failed = await _run(agent, steps)
    assert steps.names() == ["model_call:1"]
    (recorded,) = steps.values()
    assert recorded == (failed, None)
    assert await _run(agent, steps.again()) == failed


# -- middleware's own model calls, hooks, pauses -----------------------------------------------


async def test_a_middleware_model_call_is_a_step_named_by_its_caller() -> None:
    registry = Registry()

    @registry.on("run")
    async def summarise(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        await ctx.run.call_model(ModelRequest((Message.user("sum up"),)), by="summary")
        return await call_next(ctx)

    steps = Recorder()
    await _run(_agent(Counted(), registry), steps)
    assert steps.names()[0] == "model_call:by:summary"


async def test_a_hook_registered_as_a_step_runs_once_and_not_on_replay() -> None:
    registry = Registry()
    ended: list[str] = []
    observed: list[str] = []

    @registry.hook("tool_end", step=True)
    async def audit(event: ToolEnd) -> None:
        ended.append(event.call.id)

    @registry.hook("run_end", step=True)
    async def bill(event: RunEnd) -> None:
        observed.append(event.run.run_id)

    agent = _agent(Counted(), registry)
    steps = Recorder()
    await _run(agent, steps)
    assert steps.names() == [
        "model_call:1",
        "tool:add:call_0",
        "tool_end:audit",
        "tool:mul:call_1",
        "tool_end:audit",
        "model_call:2",
        "tool:add:c3",
        "tool_end:audit",
        "model_call:3",
        "run_end:bill",
    ]
    assert sorted(ended) == ["c3", "call_0", "call_1"]
    await _run(agent, steps.again())
    assert sorted(ended) == ["c3", "call_0", "call_1"]
    assert observed == ["wf-1"]
    await _run(agent, None)  # outside a durable run the flag changes nothing
    assert len(ended) == 6


def test_step_is_refused_at_middleware_positions() -> None:
    registry = Registry()
    for position in ("model_call", "run", "tool_call", "reasoning"):
        with pytest.raises(RegistrationError, match="step=True applies to hooks only"):

            @registry.on(position, step=True)  # type: ignore[call-overload, misc]
            async def mw(ctx: object, call_next: object) -> object:
                return None


async def test_a_pause_saves_its_checkpoint_as_a_step() -> None:
    registry = Registry()
    registry.include(approve(["mul"]))
    counted = Counted()
    store = InMemorySessionStore()
    agent = _agent(counted, registry, sessions=store)
    steps = Recorder()
    paused = (await _run(agent, steps, session_id="s")).unwrap()
    assert paused.stop_reason == "paused"
    assert steps.names() == [
        "session.load",
        "model_call:1",
        "tool:add:call_0",
        "tool:mul:call_1",
        "checkpoint.save",
    ]
    assert paused.paused is not None
    replay = steps.again()
    again = (await _run(agent, replay, session_id="s")).unwrap()
    assert replay.ran == []
    assert again.paused is not None
    assert again.paused.checkpoint_id == paused.paused.checkpoint_id


async def test_a_resumed_run_is_durable_too() -> None:
    registry = Registry()
    registry.include(approve(["mul"]))
    counted = Counted()
    store = InMemorySessionStore()
    agent = _agent(counted, registry, sessions=store)
    paused = (await _run(agent, Recorder(), session_id="s")).unwrap()
    assert paused.paused is not None
    checkpoint = paused.paused.checkpoint_id
    steps = Recorder()
    outcome = await agent._runner.go_on(
        checkpoint, Approve(), None, None, steps=steps, run_id="wf-2"
    )
    assert outcome.unwrap().output == "results: 3, 12, 11"
    assert steps.names() == [
        "session.load",
        "tool:mul:call_1",
        "model_call:2",
        "tool:add:c3",
        "model_call:3",
        "session.commit",
    ]
    assert counted.calls == ["add", "mul", "add"]


async def test_a_resume_that_crashed_holds_its_claim_when_replayed() -> None:
    registry = Registry()
    registry.include(approve(["mul"]))
    counted = Counted(crash_on="mul:1")
    store = InMemorySessionStore()
    agent = _agent(counted, registry, sessions=store)
    paused = (await _run(agent, Recorder(), session_id="s")).unwrap()
    assert paused.paused is not None
    checkpoint = paused.paused.checkpoint_id
    first = Recorder()
    with pytest.raises(Crash):
        await agent._runner.go_on(checkpoint, Approve(), None, None, steps=first, run_id="r")
    # a process killed there leaves its claim (this one let it go on the way out): as it was
    now = time.time()
    assert await store.claim_checkpoint(checkpoint, "r", now + 3600, now) is not None
    busy = await agent.resume(checkpoint, Approve())  # another caller: the claim holds
    assert isinstance(busy, Failure)
    assert isinstance(busy.failure(), CheckpointBusy)
    replay = first.again()
    outcome = await agent._runner.go_on(checkpoint, Approve(), None, None, steps=replay, run_id="r")
    assert outcome.unwrap().output == "results: 3, 12, 11"
    assert counted.calls == ["add", "mul", "mul", "add"]


# -- the commit -------------------------------------------------------------------------------


async def _crashed(crash_after: str) -> tuple[Agent, InMemorySessionStore, Recorder]:
    """An agent, its store and the record of a run on session ``s`` that died after a step."""
    store = InMemorySessionStore()
    agent = _agent(Counted(), sessions=store)
    first = Recorder(crash_after=crash_after)
    with pytest.raises(Crash):
        await _run(agent, first, session_id="s")
    return agent, store, first


async def test_a_commit_that_landed_before_the_crash_succeeds_when_replayed() -> None:
    agent, store, first = await _crashed("session.commit")
    committed = await store.load("s")
    assert committed is not None
    replay = first.again()
    outcome = await _run(agent, replay, session_id="s")
    assert isinstance(outcome, Success), outcome
    assert replay.ran == ["session.commit"]
    assert await store.load("s") == committed  # the turn is there once


async def test_a_replayed_commit_to_a_session_that_moved_on_is_a_conflict() -> None:
    agent, _, first = await _crashed("model_call:3")
    assert isinstance(await _run(agent, None, session_id="s"), Success)  # another run
    outcome = await _run(agent, first.again(), session_id="s")
    assert isinstance(outcome, Failure)
    assert isinstance(outcome.failure(), SessionConflict)


# -- what is not a step ----------------------------------------------------------------------


async def test_a_sub_agent_runs_inside_its_parents_tool_step() -> None:
    seen: list[object] = []
    child_registry = Registry()

    @child_registry.on("model_call")
    async def look(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        seen.append(ctx.run._steps)
        return await call_next(ctx)

    child = Agent(FunctionModel(lambda _: "child says hi"), name="helper", registry=child_registry)

    def reply(request: ModelRequest) -> str | Message:
        if request.messages[-1].role == "tool":
            return "done"
        return tool_calls(("helper", {"prompt": "hi"}))

    parent = Agent(FunctionModel(reply), tools=[child.as_tool()], registry=Registry())
    steps = Recorder()
    assert isinstance(await _run(parent, steps), Success)
    assert seen == [None]
    assert steps.names() == ["model_call:1", "tool:helper:call_0", "model_call:2"]


async def test_without_steps_a_run_has_none() -> None:
    seen: list[RunInfo] = []
    await _agent(Counted(), _watching(seen)).run("compute")
    assert [run._steps for run in seen] == [None]


# -- [[middleware]] step = true ----------------------------------------------------------------

AUDITED: list[str] = []


def audited() -> Registry:
    """A middleware factory whose registry holds one hook."""
    registry = Registry()

    @registry.hook("tool_end")
    async def audit(event: ToolEnd) -> None:
        AUDITED.append(event.call.id)

    return registry


def retried() -> Registry:
    """A middleware factory whose registry holds a middleware."""
    registry = Registry()

    @registry.on("model_call")
    async def again(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        return await call_next(ctx)

    return registry


@pytest.fixture
def on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Put this folder on sys.path, so this module's factories import by module path."""
    monkeypatch.syspath_prepend(str(Path(__file__).parent))


@pytest.mark.usefixtures("on_path")
async def test_an_entry_with_step_true_makes_its_hooks_steps() -> None:
    container = load_container(
        overrides={"middleware": [{"use": f"{__name__}:audited", "step": True}]}, environ={}
    )
    registry = container.registry()
    assert [h.step for h in registry.hooks] == [True]
    agent = _agent(Counted(), registry)
    steps = Recorder()
    await _run(agent, steps)
    assert "tool_end:audit" in steps.names()


@pytest.mark.usefixtures("on_path")
@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"use": f"{__name__}:retried", "step": True}, "step=True applies to hooks only"),
        ({"use": f"{__name__}:audited", "step": "maybe"}, "step"),
        ({"use": "retry", "step": True}, "step=True applies to hooks only"),
    ],
)
def test_an_entry_with_step_true_must_register_only_hooks(
    entry: dict[str, object], problem: str
) -> None:
    with pytest.raises(ConfigError, match=problem):
        load_container(overrides={"middleware": [entry]}, environ={}).registry()


@pytest.mark.usefixtures("on_path")
def test_an_entry_built_without_settings_checks_its_step_too() -> None:
    entry = {"use": f"{__name__}:audited", "step": "yes"}
    with pytest.raises(ConfigError, match="step must be true or false, not 'yes'"):
        build_middleware([entry], lambda name: Counted().model())
