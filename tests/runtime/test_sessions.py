"""Sessions: history and state carried across runs, committed whole or not at all."""

from __future__ import annotations

import asyncio
import dataclasses
import threading

import pytest
from returns.result import Failure, Success
from support import add, run_ok

from fncore import (
    Agent,
    InMemorySessionStore,
    InvalidHistory,
    LoopSettings,
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
    SessionError,
    SessionUpdate,
    StateKey,
    Terminate,
    ToolCallPart,
    ToolResultPart,
)
from fncore.errors import SessionConflict
from fncore.events import RunEnd
from fncore.testing import FunctionModel, ScriptedModel, TestModel, tool_calls

TURNS = StateKey("turns", default=lambda: 0)


def counting_registry(seen: list[tuple[int, int]]) -> Registry:
    """A registry whose run middleware counts turns in both state scopes."""
    registry = Registry()

    @registry.on("run")
    async def count(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        reply = ctx.run.state.get(TURNS) + 1
        ctx.run.state.set(TURNS, reply)
        session = ctx.run.session_state.get(TURNS) + 1
        ctx.run.session_state.set(TURNS, session)
        seen.append((reply, session))
        return await call_next(ctx)

    return registry


async def preload(store: InMemorySessionStore, session_id: str, *messages: Message) -> Session:
    """Commit ``messages`` as a new session and return it."""
    saved = await store.commit(SessionUpdate(session_id, 0, 0, messages, {"turns": 9}))
    assert saved is not None
    return saved


async def test_session_continues_history_across_runs() -> None:
    """The second run's request holds the first run's whole exchange, tool calls included."""
    model = TestModel()
    store = InMemorySessionStore()
    agent = Agent(model, registry=Registry(), tools=[add], sessions=store)
    first = run_ok(await agent.run("add 1 2", session_id="s"))
    assert first.output == "add: 3"
    second = run_ok(await agent.run("and again 5 6", session_id="s"))
    assert second.output == "add: 11"
    later = model.requests[2].messages
    assert later[: 1 + len(first.messages)] == (Message.user("add 1 2"), *first.messages)
    assert later[-1] == Message.user("and again 5 6")
    saved = await store.load("s")
    assert saved is not None
    assert saved.version == 2
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


async def test_reply_state_is_fresh_and_session_state_persists() -> None:
    """ctx.run.state starts anew each run; ctx.run.session_state carries over in a session."""
    seen: list[tuple[int, int]] = []
    store = InMemorySessionStore()
    agent = Agent(TestModel(), registry=counting_registry(seen), sessions=store)
    for _ in range(3):
        await agent.run("hi", session_id="s")
    await agent.run("hi", session_id="other")
    await agent.run("hi")
    assert seen == [(1, 1), (1, 2), (1, 3), (1, 1), (1, 1)]
    saved = await store.load("s")
    assert saved is not None
    assert saved.state == {"turns": 3}


async def test_failed_run_leaves_the_session_unchanged() -> None:
    """A run that fails commits neither its messages nor its state changes."""
    seen: list[tuple[int, int]] = []
    store = InMemorySessionStore()
    model = ScriptedModel(
        ["first answer", tool_calls(("add", {"a": 1, "b": 1})), ModelError(message="down")]
    )
    agent = Agent(model, registry=counting_registry(seen), tools=[add], sessions=store)
    assert isinstance(await agent.run("one", session_id="s"), Success)
    before = await store.load("s")
    failed = await agent.run("two", session_id="s")
    assert isinstance(failed, Failure)
    assert await store.load("s") is before
    assert before is not None
    assert (before.state, before.version) == ({"turns": 1}, 1)
    assert before.messages == (Message.user("one"), Message.assistant("first answer"))


async def test_terminated_run_is_committed_to_the_session() -> None:
    """A run a middleware terminates succeeds, so its session is committed with the output."""
    registry = Registry()

    @registry.on("model_call")
    async def block(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        return Failure(Terminate("blocked"))

    store = InMemorySessionStore()
    agent = Agent(TestModel(), registry=registry, sessions=store)
    result = run_ok(await agent.run("hi", session_id="s"))
    assert result.stop_reason == "terminated"
    saved = await store.load("s")
    assert saved is not None
    assert saved.messages == (Message.user("hi"), Message.assistant("blocked"))


async def test_preloaded_session_history_reaches_the_model() -> None:
    """A session committed beforehand is prepended, and its state restored."""
    store = InMemorySessionStore()
    await preload(store, "s", Message.user("old"), Message.assistant("reply"))
    seen: list[tuple[int, int]] = []
    model = TestModel()
    agent = Agent(model, registry=counting_registry(seen), sessions=store)
    await agent.run("new", session_id="s")
    assert model.requests[0].messages == (
        Message.user("old"),
        Message.assistant("reply"),
        Message.user("new"),
    )
    assert seen == [(1, 10)]


async def test_concurrent_runs_on_one_session_conflict_instead_of_losing_a_turn() -> None:
    """Two runs load version 1; the first to commit wins, the other gets SessionConflict."""
    store = InMemorySessionStore()
    await preload(store, "s", Message.user("start"), Message.assistant("ok"))
    gate = asyncio.Event()
    waiting: list[object] = []
    both_loaded = asyncio.Event()

    async def slow(request: object) -> str:
        waiting.append(request)
        if len(waiting) == 2:
            both_loaded.set()
        await gate.wait()
        return "answer"

    agent = Agent(FunctionModel(slow), registry=Registry(), sessions=store)
    first = asyncio.ensure_future(agent.run("one", session_id="s"))
    second = asyncio.ensure_future(agent.run("two", session_id="s"))
    await both_loaded.wait()
    gate.set()
    outcomes = [await first, await second]
    assert isinstance(outcomes[0], Success)
    conflict = outcomes[1].failure()
    assert isinstance(conflict, SessionConflict)
    assert (conflict.session_id, conflict.version) == ("s", 1)
    assert "run the turn again" in conflict.message
    saved = await store.load("s")
    assert saved is not None
    assert saved.version == 2
    assert [m.text for m in saved.messages] == ["start", "ok", "one", "answer"]
    retried = await agent.run("two", session_id="s")  # the documented retry: run it again
    assert isinstance(retried, Success)
    saved = await store.load("s")
    assert saved is not None
    assert saved.version == 3
    assert [m.text for m in saved.messages][-2:] == ["two", "answer"]


async def test_a_run_middleware_result_with_an_unanswered_call_is_not_saved() -> None:
    """A transcript that breaks pairing fails the run and never reaches the store."""
    registry = Registry()

    @registry.on("run")
    async def bad(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        dangling = Message("assistant", (ToolCallPart("x", "add", "{}"),))
        return Success(RunResult("?", (dangling,)))

    store = InMemorySessionStore()
    agent = Agent(TestModel(), registry=registry, sessions=store)
    out = await agent.run("hi", session_id="s")
    error = out.failure()
    assert isinstance(error, InvalidHistory)
    assert "not saved" in error.message
    assert "add (x)" in error.message
    assert await store.load("s") is None
    assert isinstance(await Agent(TestModel(), sessions=store).run("hi", session_id="s"), Success)


async def test_an_invalid_stored_history_fails_before_any_model_call() -> None:
    """A session whose history breaks pairing is an InvalidHistory naming the session."""
    store = InMemorySessionStore()
    call = Message("assistant", (ToolCallPart("x", "add", "{}"),))
    await preload(store, "s", Message.user("hi"), call, Message.assistant("no result"))
    model = TestModel()
    agent = Agent(model, registry=Registry(), sessions=store)
    error = (await agent.run("again", session_id="s")).failure()
    assert isinstance(error, InvalidHistory)
    assert error.message.startswith("session 's': message 2: an assistant turn starts")
    await preload(store, "t", Message.user("hi"), call)  # a valid history, waiting for results
    error = (await agent.run("no results here", session_id="t")).failure()
    assert isinstance(error, InvalidHistory)
    assert error.message.startswith("tool calls without a result: add (x)")
    assert model.requests == []


async def test_a_session_history_is_scanned_once() -> None:
    """The pairing scan of a stored history is remembered on the session it came from."""
    store = InMemorySessionStore()
    agent = Agent(TestModel(), registry=Registry(), tools=[add], sessions=store)
    run_ok(await agent.run("add 1 2", session_id="s"))
    saved = await store.load("s")
    assert saved is not None
    assert saved._pending == ()  # known from the commit: the next run does not scan it again


async def test_a_fresh_loop_vouches_for_its_transcript_and_the_commit_trusts_only_that() -> None:
    """The loop's own messages are not scanned again at the commit; anything else still is."""
    store = InMemorySessionStore()
    agent = Agent(TestModel(), registry=Registry(), tools=[add], sessions=store)
    done = run_ok(await agent.run("add 1 2", session_id="s"))
    assert done._open == ()  # vouched for by the loop that made it
    saved = await store.load("s")
    assert saved is not None
    assert [m.role for m in saved.messages] == ["user", "assistant", "tool", "assistant"]
    assert saved._pending == ()
    odd = Message("assistant", (ToolResultPart("c9", "add", "3"),))  # not a valid response
    refusing = Agent(ScriptedModel([odd]), registry=Registry(), sessions=store)
    error = (await refusing.run("again", session_id="s")).failure()
    assert isinstance(error, InvalidHistory)
    assert "a tool result is inside an assistant message" in error.message
    assert await store.load("s") == saved


async def test_awaiting_tools_is_committed_and_the_next_run_answers_the_calls() -> None:
    """With enabled=False the calls are saved unanswered; the next run's results continue."""
    store = InMemorySessionStore()
    model = TestModel()
    agent = Agent(
        model,
        registry=Registry(),
        tools=[add],
        settings=LoopSettings(enabled=False),
        sessions=store,
    )
    paused = run_ok(await agent.run("add 2 3", session_id="s"))
    assert paused.stop_reason == "awaiting_tools"
    (call,) = paused.messages[-1].tool_calls
    answer = Message("tool", (ToolResultPart(call.id, call.name, "5"),))
    done = run_ok(await agent.run(answer, session_id="s"))
    assert (done.output, done.stop_reason) == ("add: 5", "completed")
    saved = await store.load("s")
    assert saved is not None
    assert [m.role for m in saved.messages] == ["user", "assistant", "tool", "assistant"]


async def test_a_run_middleware_can_move_the_run_to_another_session() -> None:
    """Replacing ctx.session continues (and commits to) that session, with its state."""
    store = InMemorySessionStore()
    await preload(store, "main", Message.user("main chat"), Message.assistant("ok"))
    seen: list[tuple[int, int]] = []
    registry = counting_registry(seen)

    @registry.on("run")
    async def fork(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        if ctx.run.metadata.get("fork") and ctx.session is not None:
            forked = Session("branch", ctx.session.messages, {"turns": 100})
            return await call_next(dataclasses.replace(ctx, session=forked))
        return await call_next(ctx)

    model = TestModel()
    agent = Agent(model, registry=registry, sessions=store)
    run_ok(await agent.run("side question", session_id="main", metadata={"fork": True}))
    assert [m.text for m in model.requests[0].messages] == ["main chat", "ok", "side question"]
    main = await store.load("main")
    branch = await store.load("branch")
    assert main is not None
    assert main.version == 1
    assert branch is not None
    assert branch.version == 1
    assert [m.text for m in branch.messages] == [
        "main chat",
        "ok",
        "side question",
        "side question",
    ]
    assert branch.state == {"turns": 100}  # the branch's own state, not main's (10)


class OddStore:
    """A session store that misbehaves in one of several ways."""

    def __init__(self, how: str) -> None:
        self.how = how
        self.inner = InMemorySessionStore()

    async def load(self, session_id: str) -> Session | None:
        """Load, or misbehave."""
        if self.how == "load raises":
            msg = "database unreachable"
            raise ConnectionError(msg)
        if self.how == "load returns junk":
            return ["not", "a", "session"]  # type: ignore[return-value]
        return await self.inner.load(session_id)

    async def commit(self, update: SessionUpdate) -> Session | None:
        """Commit, or misbehave."""
        if self.how == "commit raises":
            msg = "disk full"
            raise OSError(msg)
        if self.how == "commit returns junk":
            return True  # type: ignore[return-value]
        return await self.inner.commit(update)


async def test_a_misbehaving_store_gives_a_session_error_naming_it() -> None:
    """Raising or returning the wrong type, on load or commit: a SessionError, never a raise."""
    cases = {
        "load raises": "database unreachable",
        "load returns junk": "OddStore returned ['not', 'a', 'session'] from load('s')",
        "commit raises": "could not commit session 's': OSError: disk full",
        "commit returns junk": "OddStore returned True from commit()",
    }
    for how, words in cases.items():
        model = TestModel()
        agent = Agent(model, registry=Registry(), sessions=OddStore(how))
        out = await agent.run("hi", session_id="s")
        error = out.failure()
        assert isinstance(error, SessionError), how
        assert words in error.message, (how, error.message)
        assert error.session_id == "s"
        assert await agent.stream("hi", session_id="s").result() == out
        assert len(model.requests) == (0 if how.startswith("load") else 2)


class StateStore:
    """A user's store whose sessions come back with ``state`` as given."""

    def __init__(self, state: object) -> None:
        self.state = state
        self.commits = 0

    async def load(self, session_id: str) -> Session | None:
        """A session holding the state it was given."""
        return Session(session_id, (), self.state)  # type: ignore[arg-type]

    async def commit(self, update: SessionUpdate) -> Session | None:
        """Count the commit and take it."""
        self.commits += 1
        return update.apply(None)


@pytest.mark.parametrize(
    ("state", "words"),
    [
        (["a", "b"], "StateStore returned session 's' with a state that is ['a', 'b'] (list)"),
        ("ab", "StateStore returned session 's' with a state that is 'ab' (str)"),
        ({"lock": threading.Lock()}, "holds state 'lock' that cannot be copied into the run"),
    ],
    ids=["list", "str", "a lock"],
)
async def test_a_stored_state_that_is_not_a_mapping_of_copyable_values_is_a_session_error(
    state: object, words: str
) -> None:
    """State a store gives back as a list, a string or with an uncopyable value: SessionError."""
    model, store = TestModel(), StateStore(state)
    agent = Agent(model, registry=Registry(), sessions=store)
    out = await agent.run("hi", session_id="s")
    error = out.failure()
    assert type(error) is SessionError
    assert words in error.message
    assert error.message.endswith("nothing ran")
    assert await agent.stream("hi", session_id="s").result() == out
    assert (model.requests, store.commits) == ([], 0)


async def test_a_run_middleware_moving_to_a_session_with_bad_state_is_a_session_error() -> None:
    """A session a run middleware switches to is checked as a loaded one is."""
    registry = Registry()

    @registry.on("run")
    async def move(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        odd = Session("other", (), ["x"])  # type: ignore[arg-type]
        return await call_next(dataclasses.replace(ctx, session=odd))

    model = TestModel()
    out = await Agent(model, registry=registry).run("hi")
    error = out.failure()
    assert type(error) is SessionError
    assert "a run middleware returned session 'other' with a state" in error.message
    assert model.requests == []


class OldStore:
    """A user's store written to the protocol before ``commit``: ``load`` and ``save``."""

    def __init__(self) -> None:
        self.loads = 0

    async def load(self, session_id: str) -> Session | None:
        """Nothing stored yet."""
        self.loads += 1
        return None

    async def save(self, session: Session) -> None:
        """The old way to store a session."""


async def test_a_store_without_commit_is_a_session_error_before_the_model_answers() -> None:
    """A store without commit fails the run before anything runs, not after the answer."""
    model, store = TestModel(), OldStore()
    agent = Agent(model, registry=Registry(), sessions=store)  # type: ignore[arg-type]
    out = await agent.run("hi", session_id="s")
    error = out.failure()
    assert type(error) is SessionError
    assert "session store OldStore has no commit(update) method" in error.message
    assert error.session_id == "s"
    assert await agent.stream("hi", session_id="s").result() == out
    assert (model.requests, store.loads) == ([], 0)


async def test_a_run_middleware_moving_to_a_session_of_a_store_without_commit() -> None:
    """Moved into a session by a run middleware, a store without commit fails at the commit."""
    registry = Registry()

    @registry.on("run")
    async def move(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        return await call_next(dataclasses.replace(ctx, session=Session("other")))

    agent = Agent(TestModel(), registry=registry, sessions=OldStore())  # type: ignore[arg-type]
    error = (await agent.run("hi")).failure()
    assert type(error) is SessionError
    assert "has no commit(update) method" in error.message
    assert error.message.endswith("the session is unchanged")


class SyncStore:
    """A user's store whose ``commit`` is a plain function that raises at once."""

    async def load(self, session_id: str) -> Session | None:
        """Nothing stored yet."""
        return None

    def commit(self, update: SessionUpdate) -> Session | None:
        """Refuse, before any await."""
        msg = "read-only replica"
        raise PermissionError(msg)


async def test_a_commit_that_raises_before_awaiting_is_a_session_error() -> None:
    """commit() raising when called, not when awaited, is a SessionError too."""
    agent = Agent(TestModel(), registry=Registry(), sessions=SyncStore())  # type: ignore[arg-type]
    error = (await agent.run("hi", session_id="s")).failure()
    assert type(error) is SessionError
    assert "could not commit session 's': PermissionError: read-only replica" in error.message


class FutureStore:
    """A user's store whose ``commit`` returns an awaitable that is not a coroutine."""

    def __init__(self) -> None:
        self.inner = InMemorySessionStore()

    async def load(self, session_id: str) -> Session | None:
        """What the inner store holds."""
        return await self.inner.load(session_id)

    def commit(self, update: SessionUpdate) -> asyncio.Future[Session | None]:
        """The inner store's commit, as a task."""
        return asyncio.ensure_future(self.inner.commit(update))


async def test_a_commit_that_returns_another_awaitable_is_awaited() -> None:
    """commit() may return any awaitable, not only a coroutine; the turn is committed."""
    store = FutureStore()
    agent = Agent(TestModel(), registry=Registry(), sessions=store)  # type: ignore[arg-type]
    assert run_ok(await agent.run("hi", session_id="s")).output == "hi"
    saved = await store.inner.load("s")
    assert saved is not None
    assert [m.text for m in saved.messages] == ["hi", "hi"]


class NotAwaitableStore(SyncStore):
    """A user's store whose ``commit`` returns what cannot be awaited."""

    def commit(self, update: SessionUpdate) -> Session | None:
        """A plain value, not an awaitable."""
        return update.apply(None)


async def test_a_commit_that_returns_no_awaitable_is_a_session_error() -> None:
    """commit() returning something that cannot be awaited is a SessionError naming it."""
    agent = Agent(TestModel(), registry=Registry(), sessions=NotAwaitableStore())  # type: ignore[arg-type]
    error = (await agent.run("hi", session_id="s")).failure()
    assert type(error) is SessionError
    assert "could not commit session 's': TypeError" in error.message


async def test_a_store_is_not_touched_without_a_session_id() -> None:
    """Runs without a session id never call the store."""
    agent = Agent(TestModel(), registry=Registry(), sessions=OddStore("load raises"))
    assert run_ok(await agent.run("hi")).output == "hi"


async def test_failed_run_mutating_state_in_place_leaves_the_session_unchanged() -> None:
    """A failed run that appends to a list in session state does not change the stored one."""
    log_key = StateKey("log", default=list)
    registry = Registry()

    @registry.on("run")
    async def log(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        ctx.run.session_state.get(log_key).append(ctx.messages[-1].text)
        return await call_next(ctx)

    store = InMemorySessionStore()
    model = ScriptedModel(["fine", ModelError(message="down")])
    agent = Agent(model, registry=registry, sessions=store)
    assert isinstance(await agent.run("one", session_id="s"), Success)
    assert isinstance(await agent.run("two", session_id="s"), Failure)
    saved = await store.load("s")
    assert saved is not None
    assert saved.state["log"] == ["one"]


# -- the commit point -----------------------------------------------------------------------


async def test_cancelled_before_the_commit_saves_nothing() -> None:
    """A cancellation during the model call raises CancelledError and commits nothing."""
    store = InMemorySessionStore()
    started = asyncio.Event()

    async def hang(request: object) -> str:
        started.set()
        await asyncio.sleep(10)
        return "never"

    agent = Agent(FunctionModel(hang), registry=Registry(), sessions=store)
    task = asyncio.ensure_future(agent.run("hi", session_id="s"))
    await started.wait()
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    else:
        raise AssertionError("the run should have been cancelled")
    assert await store.load("s") is None


async def test_cancelled_after_the_commit_returns_the_committed_outcome() -> None:
    """A cancellation during a slow run_end hook does not hide that the turn was committed."""
    store = InMemorySessionStore()
    registry = Registry()
    in_hook = asyncio.Event()

    @registry.hook("run_end", timeout=5)
    async def slow(event: RunEnd) -> None:
        in_hook.set()
        await asyncio.sleep(5)

    agent = Agent(TestModel(), registry=registry, sessions=store)
    task = asyncio.ensure_future(agent.run("hi", session_id="s"))
    await in_hook.wait()
    task.cancel()
    outcome = await task  # no CancelledError: the turn is committed, so run() says so
    assert run_ok(outcome).output == "hi"
    saved = await store.load("s")
    assert saved is not None
    assert saved.version == 1
    assert not task.cancelled()


class SlowStore:
    """A store whose commit waits (like a database round trip), then succeeds or conflicts."""

    def __init__(self, *, conflict: bool = False) -> None:
        self.inner = InMemorySessionStore()
        self.conflict = conflict
        self.committing = asyncio.Event()
        self.finished = 0

    async def load(self, session_id: str) -> Session | None:
        """Load from memory."""
        return await self.inner.load(session_id)

    async def commit(self, update: SessionUpdate) -> Session | None:
        """Wait, then commit (or report a conflict)."""
        self.committing.set()
        await asyncio.sleep(0.05)
        self.finished += 1
        if self.conflict:
            return None
        return await self.inner.commit(update)


async def test_a_commit_in_progress_finishes_and_the_outcome_says_it_was_committed() -> None:
    """Cancelled while the store commits: the commit completes and the run returns Success."""
    store = SlowStore()
    agent = Agent(TestModel(), registry=Registry(), sessions=store)
    task = asyncio.ensure_future(agent.run("hi", session_id="s"))
    await store.committing.wait()
    task.cancel()
    outcome = await task
    assert isinstance(outcome, Success)
    assert store.finished == 1
    saved = await store.load("s")
    assert saved is not None
    assert saved.version == 1


async def test_a_commit_that_did_not_apply_lets_the_cancellation_through() -> None:
    """Cancelled while a commit runs that then conflicts: CancelledError, nothing saved."""
    store = SlowStore(conflict=True)
    agent = Agent(TestModel(), registry=Registry(), sessions=store)
    task = asyncio.ensure_future(agent.run("hi", session_id="s"))
    await store.committing.wait()
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    else:
        raise AssertionError("a commit that did not apply must not hide the cancellation")
    assert store.finished == 1
    assert await store.load("s") is None


async def test_the_in_memory_store_deletes_a_session() -> None:
    """delete() forgets a session (True), and says False when there was none."""
    store = InMemorySessionStore()
    await preload(store, "s", Message.user("hi"))
    assert await store.delete("s") is True
    assert await store.load("s") is None
    assert await store.delete("s") is False
