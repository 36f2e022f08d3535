"""Pausing a run for a human and resuming it: the approve built-in, decisions, exactly once."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path

import pytest
from returns.result import Failure, Success
from support import run_ok

from fncore import (
    Agent,
    Approve,
    Edit,
    InMemorySessionStore,
    Message,
    MiddlewareError,
    ModelCallContext,
    ModelCallNext,
    ModelRequest,
    ModelResponse,
    Outcome,
    Pause,
    PendingRequest,
    Registry,
    Reject,
    Respond,
    RunContext,
    RunNext,
    RunResult,
    SessionUpdate,
    SqliteSessionStore,
    StateKey,
    ToolCallContext,
    ToolCallNext,
    ToolResult,
    ToolResultPart,
)
from fncore.errors import (
    CallLimitExceeded,
    CheckpointBusy,
    CheckpointExpired,
    CheckpointMismatch,
    CheckpointNotFound,
    DecisionConflict,
    DecisionMissing,
    DecisionNotAllowed,
    SessionConflict,
    UnknownRequest,
)
from fncore.events import RoundFinished, RunCompleted, RunPaused, ToolResultReady
from fncore.middleware import approve, limit_calls
from fncore.testing import FunctionModel, tool_calls

SPENT = StateKey("spent", default=lambda: 0)


class Files:
    """Tools with side effects that a test can count."""

    def __init__(self) -> None:
        self.deleted: list[str] = []
        self.read: list[str] = []

    def delete_file(self, path: str) -> str:
        """Delete a file."""
        self.deleted.append(path)
        return f"deleted {path}"

    def read_file(self, path: str) -> str:
        """Read a file."""
        self.read.append(path)
        return f"contents of {path}"


def planner(*calls: tuple[str, Mapping[str, object]]) -> FunctionModel:
    """A model that asks for ``calls`` once, then answers with every result it got."""

    def reply(request: ModelRequest) -> str | Message:
        if request.messages[-1].role == "tool":
            return " | ".join(
                f"{p.name}: {p.content}"
                for m in request.messages
                if m.role == "tool"
                for p in m.parts
                if isinstance(p, ToolResultPart)
            )
        return tool_calls(*calls)

    return FunctionModel(reply)


def agent_for(
    files: Files,
    *calls: tuple[str, Mapping[str, object]],
    sessions: object | None = None,
    **approval: object,
) -> Agent:
    registry = Registry()
    registry.include(approve(**approval))  # type: ignore[arg-type]
    return Agent(
        planner(*calls),
        registry=registry,
        tools=[files.delete_file, files.read_file],
        sessions=sessions,  # type: ignore[arg-type]
    )


async def paused(agent: Agent, prompt: str = "tidy up", **kwargs: object) -> RunResult:
    result = run_ok(await agent.run(prompt, **kwargs))  # type: ignore[arg-type]
    assert result.stop_reason == "paused", result
    assert result.paused is not None
    return result


DELETE: tuple[str, Mapping[str, object]] = ("delete_file", {"path": "a.txt"})
READ: tuple[str, Mapping[str, object]] = ("read_file", {"path": "b.txt"})


async def test_a_call_that_needs_approval_pauses_and_others_run() -> None:
    files = Files()
    agent = agent_for(files, DELETE, READ, tools=["delete_file"])
    result = await paused(agent)
    assert result.output == ""
    assert files.deleted == []
    assert files.read == ["b.txt"]
    assert result.paused is not None
    (request,) = result.paused.requests
    assert request == PendingRequest(
        "call_0",
        "delete_file",
        {"path": "a.txt"},
        'Run delete_file with {"path": "a.txt"}?',
        ("approve", "edit", "reject", "respond"),
        "approve",
    )
    assert result.messages[-1].tool_calls  # the pending assistant turn
    done = run_ok(await agent.resume(result.paused.checkpoint_id, Approve()))
    assert files.deleted == ["a.txt"]
    assert files.read == ["b.txt"]
    assert done.stop_reason == "completed"
    assert done.output == "delete_file: deleted a.txt | read_file: contents of b.txt"


@pytest.mark.parametrize(
    ("decision", "deleted", "content", "is_error"),
    [
        (Approve(), ["a.txt"], "deleted a.txt", False),
        (Reject(), [], "The user rejected this tool call.", True),
        (Reject("not that one"), [], "not that one", True),
        (Respond("a.txt is already gone"), [], "a.txt is already gone", False),
    ],
)
async def test_each_decision_gives_its_result(
    decision: Approve | Reject | Respond, deleted: list[str], content: str, is_error: bool
) -> None:
    files = Files()
    agent = agent_for(files, DELETE)
    result = await paused(agent)
    assert result.paused is not None
    done = run_ok(await agent.resume(result.paused.checkpoint_id, {"call_0": decision}))
    assert files.deleted == deleted
    (answer,) = next(m for m in done.messages if m.role == "tool").parts
    assert answer == ToolResultPart("call_0", "delete_file", content, is_error)


async def test_an_edit_runs_the_new_arguments_and_tells_the_model() -> None:
    files = Files()
    agent = agent_for(files, DELETE)
    result = await paused(agent)
    assert result.paused is not None
    done = run_ok(await agent.resume(result.paused.checkpoint_id, Edit({"path": "old/a.txt"})))
    assert files.deleted == ["old/a.txt"]
    content = done.messages[1].parts[0].content  # type: ignore[union-attr]
    assert content.startswith("[A human edited this call before it ran")
    assert '{"path": "old/a.txt"}' in content
    assert content.endswith("deleted old/a.txt")


async def test_resuming_twice_runs_the_tool_once_and_returns_the_same_outcome() -> None:
    files = Files()
    agent = agent_for(files, DELETE, sessions=InMemorySessionStore())
    result = await paused(agent, session_id="s")
    assert result.paused is not None
    checkpoint = result.paused.checkpoint_id
    first = await agent.resume(checkpoint, Approve())
    again = await agent.resume(checkpoint, {"call_0": Approve()})
    assert again == first
    assert files.deleted == ["a.txt"]
    session = await agent.sessions.load("s")
    assert session is not None
    assert session.version == 1
    other = await agent.resume(checkpoint, Reject())
    assert isinstance(other, Failure)
    assert isinstance(other.failure(), DecisionConflict)


async def test_batch_mode_asks_for_every_call_at_once() -> None:
    files = Files()
    second = ("delete_file", {"path": "c.txt"})
    agent = agent_for(files, DELETE, second)
    result = await paused(agent)
    assert result.paused is not None
    assert [r.call_id for r in result.paused.requests] == ["call_0", "call_1"]
    decisions = {"call_0": Approve(), "call_1": Reject()}
    run_ok(await agent.resume(result.paused.checkpoint_id, decisions))
    assert files.deleted == ["a.txt"]


async def test_per_call_mode_asks_for_one_call_at_a_time() -> None:
    files = Files()
    second = ("delete_file", {"path": "c.txt"})
    agent = agent_for(files, DELETE, second, READ, mode="per_call", tools=["delete_file"])
    first = await paused(agent)
    assert first.paused is not None
    assert [r.call_id for r in first.paused.requests] == ["call_0"]
    assert files.read == ["b.txt"]
    then = run_ok(await agent.resume(first.paused.checkpoint_id, Approve()))
    assert then.stop_reason == "paused"
    assert then.paused is not None
    assert [r.call_id for r in then.paused.requests] == ["call_1"]
    assert files.deleted == ["a.txt"]
    done = run_ok(await agent.resume(then.paused.checkpoint_id, Approve()))
    assert files.deleted == ["a.txt", "c.txt"]
    assert files.read == ["b.txt"]
    assert done.output.count("deleted") == 2
    # The first checkpoint's outcome is the second pause, still.
    assert await agent.resume(first.paused.checkpoint_id, Approve()) == Success(then)


async def test_when_and_allowed_decisions() -> None:
    files = Files()
    agent = agent_for(
        files,
        DELETE,
        ("delete_file", {"path": "tmp/x"}),
        when=lambda ctx: not ctx.arg("path", str).startswith("tmp/"),
        decisions=["approve", "reject"],
    )
    result = await paused(agent)
    assert result.paused is not None
    assert files.deleted == ["tmp/x"]
    (request,) = result.paused.requests
    assert request.allowed == ("approve", "reject")
    refused = await agent.resume(result.paused.checkpoint_id, Respond("no"))
    assert isinstance(refused, Failure)
    error = refused.failure()
    assert isinstance(error, DecisionNotAllowed)
    assert error.call_id == "call_0"
    assert error.message == "call 'call_0' allows approve, reject, not respond"
    run_ok(await agent.resume(result.paused.checkpoint_id, Approve()))  # nothing was used up


async def test_bad_decisions_are_typed_errors_and_consume_nothing() -> None:
    files = Files()
    agent = agent_for(files, DELETE, ("delete_file", {"path": "c.txt"}))
    result = await paused(agent)
    assert result.paused is not None
    cid = result.paused.checkpoint_id
    unknown = (await agent.resume(cid, {"call_9": Approve()})).failure()
    assert isinstance(unknown, UnknownRequest)
    assert unknown.call_id == "call_9"
    assert "waits for: 'call_0', 'call_1'" in unknown.message
    missing = (await agent.resume(cid, {"call_0": Approve()})).failure()
    assert isinstance(missing, DecisionMissing)
    assert missing.call_id == "call_1"
    bad_edit = (await agent.resume(cid, Edit({"path": 3, "extra": 1}))).failure()
    assert isinstance(bad_edit, DecisionNotAllowed)
    assert "do not fit tool 'delete_file'" in bad_edit.message
    not_a_decision = (await agent.resume(cid, {"call_0": "yes", "call_1": Approve()})).failure()  # type: ignore[dict-item]
    assert isinstance(not_a_decision, DecisionNotAllowed)
    assert files.deleted == []
    run_ok(await agent.resume(cid, Approve()))
    assert sorted(files.deleted) == ["a.txt", "c.txt"]  # the two calls run concurrently


async def test_unknown_expired_and_mismatched_checkpoints() -> None:
    files = Files()
    store = InMemorySessionStore()
    agent = agent_for(files, DELETE, sessions=store)
    missing = (await agent.resume("nope", Approve())).failure()
    assert isinstance(missing, CheckpointNotFound)
    assert missing.checkpoint_id == "nope"
    result = await paused(agent)
    assert result.paused is not None
    cid = result.paused.checkpoint_id
    changed = Registry()
    changed.include(approve())
    changed.include(limit_calls())
    other = Agent(planner(DELETE), registry=changed, tools=[files.delete_file], sessions=store)
    mismatch = (await other.resume(cid, Approve())).failure()
    assert isinstance(mismatch, CheckpointMismatch)
    registry = Registry()
    registry.include(approve())
    short = Agent(
        planner(DELETE),
        registry=registry,
        tools=[files.delete_file, files.read_file],
        sessions=store,
        checkpoint_ttl=1e-6,  # expired by the time it is resumed
    )
    stale = await paused(short)
    assert stale.paused is not None
    expired = (await short.resume(stale.paused.checkpoint_id, Approve())).failure()
    assert isinstance(expired, CheckpointExpired)
    assert files.deleted == []


async def test_streaming_pauses_with_an_event_and_resumes_streaming() -> None:
    files = Files()
    agent = agent_for(files, DELETE)
    events = [e async for e in agent.stream("tidy up")]
    assert isinstance(events[-2], RunPaused)
    assert isinstance(events[-1], RunCompleted)
    outcome = events[-1].outcome
    assert isinstance(outcome, Success)
    assert outcome.unwrap().paused == events[-2].paused
    cid = events[-2].paused.checkpoint_id
    resumed = [e async for e in agent.resume_stream(cid, Approve())]
    assert isinstance(resumed[0], ToolResultReady)
    assert resumed[0].result.content == "deleted a.txt"
    assert any(isinstance(e, RoundFinished) for e in resumed)
    final = resumed[-1]
    assert isinstance(final, RunCompleted)
    assert run_ok(final.outcome).output == "delete_file: deleted a.txt"


async def test_the_session_is_committed_only_when_the_resumed_reply_ends() -> None:
    files = Files()
    store = InMemorySessionStore()
    agent = agent_for(files, DELETE, sessions=store)
    result = await paused(agent, session_id="s")
    assert await store.load("s") is None  # nothing committed at the pause
    assert result.paused is not None
    done = run_ok(await agent.resume(result.paused.checkpoint_id, Approve()))
    session = await store.load("s")
    assert session is not None
    assert session.version == 1
    assert session.messages == (Message.user("tidy up"), *done.messages)


async def test_a_session_that_moved_on_refuses_the_resume_before_anything_runs() -> None:
    files = Files()
    store = InMemorySessionStore()
    agent = agent_for(files, DELETE, sessions=store)
    result = await paused(agent, session_id="s")
    assert result.paused is not None
    await store.commit(SessionUpdate("s", 0, 0, (Message.user("meanwhile"),)))
    refused = (await agent.resume(result.paused.checkpoint_id, Approve())).failure()
    assert isinstance(refused, SessionConflict)
    assert "moved on since the run paused" in refused.message
    assert files.deleted == []


async def test_reply_state_and_limits_hold_across_the_pauses() -> None:
    files = Files()
    registry = Registry()
    registry.include(approve(mode="per_call"))
    registry.include(limit_calls(tool_calls_per_reply=2, exit="error"))
    seen: list[int] = []

    @registry.on("run")
    async def spend(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        ctx.run.state.set(SPENT, ctx.run.state.get(SPENT) + 1)
        seen.append(ctx.run.state.get(SPENT))
        return await call_next(ctx)

    model = planner(DELETE, ("delete_file", {"path": "c.txt"}), ("delete_file", {"path": "d"}))
    agent = Agent(model, registry=registry, tools=[files.delete_file])
    outcome = await agent.run("tidy up")
    for _ in range(3):
        result = run_ok(outcome)
        assert result.paused is not None
        outcome = await agent.resume(result.paused.checkpoint_id, Approve())
    # limit_calls counts a call once it may run, in reply state kept across the pauses.
    assert files.deleted == ["a.txt", "c.txt"]
    assert isinstance(outcome.failure(), CallLimitExceeded)
    assert seen == [1, 2, 3, 4]


async def test_a_failed_resumed_reply_keeps_the_decision_and_the_tool_results() -> None:
    files = Files()
    store = InMemorySessionStore()
    failures = [True]

    def reply(request: ModelRequest) -> str | Message:
        if request.messages[-1].role != "tool":
            return tool_calls(DELETE)
        if failures:
            failures.pop()
            from fncore.errors import ProviderUnavailable

            return ProviderUnavailable(message="down", provider="test")  # type: ignore[return-value]
        return "finished"

    registry = Registry()
    registry.include(approve())
    agent = Agent(
        FunctionModel(reply), registry=registry, tools=[files.delete_file], sessions=store
    )
    result = await paused(agent, session_id="s")
    assert result.paused is not None
    cid = result.paused.checkpoint_id
    failed = await agent.resume(cid, Approve())
    assert isinstance(failed, Failure)
    assert files.deleted == ["a.txt"]
    assert await store.load("s") is None
    conflict = (await agent.resume(cid, Reject())).failure()
    assert isinstance(conflict, DecisionConflict)  # the decision was taken and recorded
    done = run_ok(await agent.resume(cid, Approve()))
    assert done.output == "finished"
    assert files.deleted == ["a.txt"]
    session = await store.load("s")
    assert session is not None
    assert session.version == 1


async def test_a_resume_under_way_makes_another_busy() -> None:
    store = InMemorySessionStore()
    started = asyncio.Event()
    release = asyncio.Event()
    runs: list[str] = []

    async def slow_delete(path: str) -> str:
        """Delete a file, slowly."""
        runs.append(path)
        started.set()
        await release.wait()
        return "deleted"

    registry = Registry()
    registry.include(approve())
    agent = Agent(planner(DELETE), registry=registry, tools=[slow_delete], sessions=store)
    model = planner(("slow_delete", {"path": "a.txt"}))
    agent = Agent(model, registry=registry, tools=[slow_delete], sessions=store)
    result = await paused(agent)
    assert result.paused is not None
    cid = result.paused.checkpoint_id
    first = asyncio.ensure_future(agent.resume(cid, Approve()))
    await started.wait()
    busy = (await agent.resume(cid, Approve())).failure()
    assert isinstance(busy, CheckpointBusy)
    release.set()
    done = await first
    assert await agent.resume(cid, Approve()) == done
    assert runs == ["a.txt"]


async def test_a_cancelled_resume_frees_the_checkpoint() -> None:
    store = InMemorySessionStore()
    gate = asyncio.Event()
    runs: list[str] = []

    async def slow_delete(path: str) -> str:
        """Delete a file, slowly."""
        runs.append(path)
        if len(runs) == 1:
            gate.set()
            await asyncio.sleep(60)
        return "deleted"

    registry = Registry()
    registry.include(approve())
    model = planner(("slow_delete", {"path": "a.txt"}))
    agent = Agent(model, registry=registry, tools=[slow_delete], sessions=store)
    result = await paused(agent)
    assert result.paused is not None
    cid = result.paused.checkpoint_id
    task = asyncio.ensure_future(agent.resume(cid, Approve()))
    await gate.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    done = run_ok(await agent.resume(cid, Approve()))  # not busy: the claim was given up
    assert done.output == "slow_delete: deleted"
    assert runs == ["a.txt", "a.txt"]


async def test_a_pause_inside_a_round_restarts_the_round() -> None:
    asked: list[str | None] = []
    registry = Registry()

    @registry.on("model_call")
    async def ask_first(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        answer = ctx.run.decision("city")
        asked.append(None if answer is None else answer.message)  # type: ignore[union-attr]
        if answer is None:
            question = PendingRequest("city", None, {}, "Which city?", ("respond",), "ask")
            return Failure(Pause((question,)))
        note = Message.user(f"The user's city: {answer.message}")  # type: ignore[union-attr]
        request = ctx.request
        return await call_next(
            ModelCallContext(
                ctx.run,
                ModelRequest((*request.messages, note), request.instructions, request.tools),
                ctx.model,
            )
        )

    model = FunctionModel(lambda request: request.messages[-1].text.upper())
    agent = Agent(model, registry=registry)
    result = await paused(agent, "weather?")
    assert result.paused is not None
    assert result.rounds == 1
    assert result.messages == ()
    (question,) = result.paused.requests
    assert question.tool is None
    assert question.allowed == ("respond",)
    wrong = (await agent.resume(result.paused.checkpoint_id, Approve())).failure()
    assert isinstance(wrong, DecisionNotAllowed)
    done = run_ok(await agent.resume(result.paused.checkpoint_id, Respond("Oslo")))
    assert done.output == "THE USER'S CITY: OSLO"
    assert asked == [None, "Oslo"]


async def test_a_custom_tool_call_middleware_can_ask_a_question() -> None:
    registry = Registry()

    @registry.on("tool_call")
    async def confirm(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        answer = ctx.run.decision(ctx.call.id)
        if answer is None:
            ask = PendingRequest(ctx.call.id, ctx.tool.name, {}, "Which folder?", ("respond",))
            return Failure(Pause((ask,)))
        return await call_next(ctx.with_args(path=f"{answer.message}/{ctx.arg('path', str)}"))  # type: ignore[union-attr]

    files = Files()
    agent = Agent(planner(DELETE), registry=registry, tools=[files.delete_file])
    result = await paused(agent)
    assert result.paused is not None
    run_ok(await agent.resume(result.paused.checkpoint_id, Respond("tmp")))
    assert files.deleted == ["tmp/a.txt"]


async def test_a_run_middleware_cannot_pause() -> None:
    registry = Registry()

    @registry.on("run")
    async def pausing(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        return Failure(Pause((PendingRequest("x", None, {}),)))

    agent = Agent(planner(DELETE), registry=registry)
    error = (await agent.run("hi")).failure()
    assert isinstance(error, MiddlewareError)
    assert error.position == "run"
    assert "cannot" in error.message


async def test_a_store_without_checkpoints_cannot_pause() -> None:
    class Plain:
        """A session store that keeps no checkpoints."""

        async def load(self, session_id: str) -> None:
            return None

        async def commit(self, update: SessionUpdate) -> None:
            return None

    files = Files()
    agent = agent_for(files, DELETE, sessions=Plain())
    error = (await agent.run("tidy up")).failure()
    assert "keeps no checkpoints" in error.message
    missing = (await agent.resume("x", Approve())).failure()
    assert "keeps no checkpoints" in missing.message


async def test_a_checkpoint_survives_a_new_agent_on_the_same_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    files = Files()
    store = SqliteSessionStore(path)
    first = agent_for(files, DELETE, READ, sessions=store, tools=["delete_file"])
    result = await paused(first, session_id="s")
    await store.aclose()
    assert result.paused is not None
    again = SqliteSessionStore(path)  # a fresh process would open the file like this
    later = agent_for(files, DELETE, READ, sessions=again, tools=["delete_file"])
    done = run_ok(await later.resume(result.paused.checkpoint_id, Approve()))
    assert files.deleted == ["a.txt"]
    assert files.read == ["b.txt"]
    session = await again.load("s")
    assert session is not None
    assert session.messages[-1] == done.messages[-1]
    assert json.loads(session.messages[1].parts[0].arguments) == {"path": "a.txt"}  # type: ignore[union-attr]
    await again.aclose()
