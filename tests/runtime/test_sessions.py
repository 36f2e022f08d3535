"""Sessions: history and state carried across runs, untouched by failed runs."""

from __future__ import annotations

from returns.result import Failure, Success
from support import add

from fncore import (
    Agent,
    AgentError,
    InMemorySessionStore,
    Message,
    ModelCallContext,
    ModelCallNext,
    ModelError,
    ModelResponse,
    Outcome,
    Registry,
    RunContext,
    RunNext,
    RunResult,
    Session,
    StateKey,
)
from fncore.testing import ScriptedModel, TestModel, tool_calls

TURNS = StateKey("turns", default=lambda: 0)


def counting_registry(seen: list[int]) -> Registry:
    """A registry whose run middleware counts turns in the run state."""
    registry = Registry()

    @registry.on("run")
    async def count(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        turns = ctx.run.state.get(TURNS) + 1
        ctx.run.state.set(TURNS, turns)
        seen.append(turns)
        return await call_next(ctx)

    return registry


async def test_session_continues_history_across_runs() -> None:
    """The second run's request holds the first run's whole exchange, tool calls included."""
    model = TestModel()
    store = InMemorySessionStore()
    agent = Agent(model, registry=Registry(), tools=[add], sessions=store)
    first = (await agent.run("add 1 2", session_id="s")).unwrap()
    assert first.output == "add: 3"
    second = (await agent.run("and again 5 6", session_id="s")).unwrap()
    assert second.output == "add: 11"
    later = model.requests[2].messages
    assert later[: 1 + len(first.messages)] == (Message.user("add 1 2"), *first.messages)
    assert later[-1] == Message.user("and again 5 6")
    saved = await store.load("s")
    assert saved is not None
    assert saved.messages == (
        Message.user("add 1 2"),
        *first.messages,
        Message.user("and again 5 6"),
        *second.messages,
    )


async def test_sessions_are_separate_by_id() -> None:
    """Two session ids keep two separate histories; no id keeps none."""
    model = TestModel()
    agent = Agent(model, registry=Registry(), sessions=InMemorySessionStore())
    await agent.run("for a", session_id="a")
    await agent.run("for b", session_id="b")
    await agent.run("no session")
    await agent.run("a again", session_id="a")
    assert [len(r.messages) for r in model.requests] == [1, 1, 1, 3]
    assert model.requests[3].messages[0] == Message.user("for a")


async def test_state_persists_across_runs_in_a_session() -> None:
    """A StateKey value set in one run is there in the next run of the same session."""
    seen: list[int] = []
    store = InMemorySessionStore()
    agent = Agent(TestModel(), registry=counting_registry(seen), sessions=store)
    for _ in range(3):
        await agent.run("hi", session_id="s")
    await agent.run("hi", session_id="other")
    await agent.run("hi")
    assert seen == [1, 2, 3, 1, 1]
    saved = await store.load("s")
    assert saved is not None
    assert saved.state["turns"] == 3


async def test_failed_run_leaves_the_session_unchanged() -> None:
    """A run that fails saves neither its messages nor its state changes."""
    seen: list[int] = []
    store = InMemorySessionStore()
    model = ScriptedModel(
        ["first answer", tool_calls(("add", {"a": 1, "b": 1})), ModelError(message="down")]
    )
    agent = Agent(model, registry=counting_registry(seen), tools=[add], sessions=store)
    assert isinstance(await agent.run("one", session_id="s"), Success)
    before = await store.load("s")
    failed = await agent.run("two", session_id="s")
    assert isinstance(failed, Failure)
    assert await store.load("s") == before
    assert before is not None
    assert before.state == {"turns": 1}
    assert before.messages == (Message.user("one"), Message.assistant("first answer"))


async def test_terminated_run_is_saved_to_the_session() -> None:
    """A run a middleware terminates succeeds, so its session is saved with the output."""
    registry = Registry()

    @registry.on("model_call")
    async def block(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        from fncore import Terminate

        return Failure(Terminate("blocked"))

    store = InMemorySessionStore()
    agent = Agent(TestModel(), registry=registry, sessions=store)
    result = (await agent.run("hi", session_id="s")).unwrap()
    assert result.stop_reason == "terminated"
    saved = await store.load("s")
    assert saved is not None
    assert saved.messages == (Message.user("hi"), Message.assistant("blocked"))


async def test_preloaded_session_history_reaches_the_model() -> None:
    """A session saved beforehand is prepended, and its state restored."""
    store = InMemorySessionStore()
    await store.save("s", Session((Message.user("old"), Message.assistant("reply")), {"turns": 9}))
    seen: list[int] = []
    model = TestModel()
    agent = Agent(model, registry=counting_registry(seen), sessions=store)
    await agent.run("new", session_id="s")
    assert model.requests[0].messages == (
        Message.user("old"),
        Message.assistant("reply"),
        Message.user("new"),
    )
    assert seen == [10]


class FailingStore:
    """A session store whose load or save raises."""

    def __init__(self, *, fail_load: bool, fail_save: bool) -> None:
        self.fail_load = fail_load
        self.fail_save = fail_save

    async def load(self, session_id: str) -> Session | None:
        """Load, or raise."""
        if self.fail_load:
            msg = "database unreachable"
            raise ConnectionError(msg)
        return None

    async def save(self, session_id: str, session: Session) -> None:
        """Save, or raise."""
        if self.fail_save:
            msg = "disk full"
            raise OSError(msg)


async def test_failing_store_load_is_a_failure_value() -> None:
    """A store whose load raises makes run() return Failure(AgentError), not raise."""
    model = TestModel()
    agent = Agent(
        model, registry=Registry(), sessions=FailingStore(fail_load=True, fail_save=False)
    )
    out = await agent.run("hi", session_id="s")
    assert isinstance(out, Failure)
    error = out.failure()
    assert type(error) is AgentError
    assert "load" in error.message
    assert "database unreachable" in error.message
    assert model.requests == []


async def test_failing_store_save_is_a_failure_value() -> None:
    """A store whose save raises makes run() and stream() return Failure(AgentError)."""
    agent = Agent(
        TestModel(), registry=Registry(), sessions=FailingStore(fail_load=False, fail_save=True)
    )
    out = await agent.run("hi", session_id="s")
    assert isinstance(out, Failure)
    assert "save" in out.failure().message
    assert "disk full" in out.failure().message
    streamed = await agent.stream("hi", session_id="s").result()
    assert streamed == out


async def test_failing_store_is_not_touched_without_a_session_id() -> None:
    """Runs without a session id never call the store."""
    agent = Agent(
        TestModel(), registry=Registry(), sessions=FailingStore(fail_load=True, fail_save=True)
    )
    assert (await agent.run("hi")).unwrap().output == "hi"


async def test_failed_run_mutating_state_in_place_leaves_the_session_unchanged() -> None:
    """A failed run that appends to a list in state does not change the stored session."""
    log_key = StateKey("log", default=list)
    registry = Registry()

    @registry.on("run")
    async def log(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        ctx.run.state.get(log_key).append(ctx.messages[-1].text)
        return await call_next(ctx)

    store = InMemorySessionStore()
    model = ScriptedModel(["fine", ModelError(message="down")])
    agent = Agent(model, registry=registry, sessions=store)
    assert isinstance(await agent.run("one", session_id="s"), Success)
    assert isinstance(await agent.run("two", session_id="s"), Failure)
    saved = await store.load("s")
    assert saved is not None
    assert saved.state["log"] == ["one"]
