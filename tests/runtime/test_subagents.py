"""Agents as tools: each point of the inheritance rule, streaming, pausing, hooks, cycles."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path

from otel_support import Otel
from returns.result import Failure
from support import run_ok

from fncore import (
    Agent,
    AgentError,
    Approve,
    Message,
    ModelCallContext,
    ModelCallNext,
    ModelError,
    ModelRequest,
    ModelResponse,
    Outcome,
    Registry,
    RunOutcome,
    SqliteSessionStore,
    ToolCallContext,
    ToolCallNext,
    ToolResult,
    ToolResultPart,
    Usage,
)
from fncore.errors import CallLimitExceeded, SubagentCycle, SubagentDepthExceeded
from fncore.events import SubagentEnd, SubagentEvent, SubagentStart, TextDelta
from fncore.middleware import approve, limit_calls
from fncore.testing import FunctionModel, tool_calls


def lead_model(tool: str = "researcher", prompt: str = "find x") -> FunctionModel:
    """Calls ``tool`` once, then answers with what it got."""

    def reply(request: ModelRequest) -> str | Message:
        last = request.messages[-1]
        if last.role == "tool":
            part = last.parts[0]
            assert isinstance(part, ToolResultPart)
            return f"lead got: {part.content}"
        return tool_calls((tool, {"prompt": prompt}))

    return FunctionModel(reply)


def child_model() -> FunctionModel:
    return FunctionModel(lambda request: f"child answer to {request.messages[-1].text}")


def counting(seen: list[ModelCallContext]) -> Registry:
    registry = Registry()

    @registry.on("model_call")
    async def count(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        seen.append(ctx)
        return await call_next(ctx)

    return registry


async def test_the_child_answers_the_call_with_its_own_stack() -> None:
    """The child's output is the tool result; each agent's middleware see its own calls."""
    parent_calls: list[ModelCallContext] = []
    child_calls: list[ModelCallContext] = []
    child = Agent(child_model(), registry=counting(child_calls), name="researcher")
    tool = child.as_tool(description="Researches things.")
    parent = Agent(lead_model(), registry=counting(parent_calls), tools=[tool], name="lead")
    result = run_ok(await parent.run("go"))
    assert result.output == "lead got: child answer to find x"
    assert len(parent_calls) == 2
    assert len(child_calls) == 1
    assert [c.run.agent for c in child_calls] == ["researcher"]
    assert parent.tools["researcher"].source == "sub-agent researcher"
    assert tool.spec.description == "Researches things."
    assert tool.spec.parameters["required"] == ["prompt"]


async def test_the_parents_tool_call_middleware_wrap_the_child() -> None:
    """A parent ``tool_call`` middleware changes the child's prompt and sees its result."""
    seen: list[str] = []
    registry = Registry()

    @registry.on("tool_call")
    async def reword(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        out = await call_next(ctx.with_args(prompt="find y"))
        seen.append(out.unwrap().content)
        return out

    child = Agent(child_model(), registry=Registry(), name="researcher")
    parent = Agent(lead_model(), registry=registry, tools=[child.as_tool()])
    result = run_ok(await parent.run("go"))
    assert seen == ["child answer to find y"]
    assert result.output == "lead got: child answer to find y"


async def test_metadata_and_trace_context_propagate() -> None:
    """The child's run has the parent's metadata; its spans nest under the parent's tool span."""
    otel = Otel()
    child_registry = otel.registry()
    metadata: list[object] = []

    @child_registry.on("model_call")
    async def look(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        metadata.append(dict(ctx.run.metadata))
        return await call_next(ctx)

    child = Agent(child_model(), registry=child_registry, name="researcher")
    parent = Agent(lead_model(), registry=otel.registry(), tools=[child.as_tool()], name="lead")
    run_ok(await parent.run("go", metadata={"tenant": "t1"}))
    assert metadata == [{"tenant": "t1"}]
    spans = otel.spans()
    tool_span = next(s for s in spans if s.name == "execute_tool researcher")
    child_root = next(s for s in spans if s.name == "invoke_agent researcher")
    assert child_root.parent is not None
    assert child_root.parent.span_id == tool_span.context.span_id
    assert child_root.context.trace_id == tool_span.context.trace_id


async def test_the_childs_usage_rolls_up() -> None:
    """The parent's usage is its own plus the child's."""
    child = Agent(child_model(), registry=Registry(), name="researcher")
    alone = run_ok(await child.run("find x")).usage
    parent_model = lead_model()
    parent = Agent(parent_model, registry=Registry(), tools=[child.as_tool()])
    plain = Agent(lead_model(), registry=Registry(), tools=[_fixed("researcher")])
    total = run_ok(await parent.run("go")).usage
    own = run_ok(await plain.run("go")).usage
    assert alone.requests == 1
    assert total == own + alone


def _fixed(name: str) -> object:
    from fncore import Tool

    async def researcher(prompt: str) -> str:
        """Stand-in with the same answer."""
        return f"child answer to {prompt}"

    return Tool.from_function(researcher, name=name)


def limited() -> Registry:
    registry = Registry()
    registry.include(limit_calls(model_calls_per_reply=2, exit="error"))
    return registry


async def test_the_child_draws_on_the_parents_limits_unless_told_not_to() -> None:
    """With shared limits, parent and child count model calls together; opting out splits them."""
    child = Agent(child_model(), registry=limited(), name="researcher")
    parent = Agent(lead_model(), registry=limited(), tools=[child.as_tool()])
    outcome = await parent.run("go")
    assert isinstance(outcome, Failure)
    assert isinstance(outcome.failure(), CallLimitExceeded)
    apart = Agent(lead_model(), registry=limited(), tools=[child.as_tool(share_limits=False)])
    assert run_ok(await apart.run("go")).output == "lead got: child answer to find x"


async def test_the_childs_events_surface_tagged_in_the_parents_stream() -> None:
    """Every child event reaches the parent's consumer inside a `SubagentEvent`."""
    child = Agent(child_model(), registry=Registry(), name="researcher")
    parent = Agent(lead_model("ask"), registry=Registry(), tools=[child.as_tool(name="ask")])
    stream = parent.stream("go")
    events = [event async for event in stream]
    tagged = [e for e in events if isinstance(e, SubagentEvent)]
    assert tagged
    assert {e.agent for e in tagged} == {"ask"}
    text = "".join(e.event.text for e in tagged if isinstance(e.event, TextDelta))
    assert text == "child answer to find x"
    assert run_ok(await stream.result()).output == "lead got: child answer to find x"


class Files:
    def __init__(self) -> None:
        self.deleted: list[str] = []

    def delete_file(self, path: str) -> str:
        """Delete a file."""
        self.deleted.append(path)
        return f"deleted {path}"


def deleter(files: Files, sessions: object = None) -> Agent:
    def reply(request: ModelRequest) -> str | Message:
        last = request.messages[-1]
        if last.role == "tool":
            return f"cleaner: {last.parts[0].content}"  # type: ignore[union-attr]
        return tool_calls(("delete_file", {"path": "a.txt"}))

    registry = Registry()
    registry.include(approve())
    return Agent(
        FunctionModel(reply),
        registry=registry,
        tools=[files.delete_file],
        name="cleaner",
        sessions=sessions,  # type: ignore[arg-type]
    )


async def test_a_child_that_pauses_pauses_the_parent_and_resumes_with_it() -> None:
    """The child's request surfaces in the parent's Paused; resuming the parent resumes it."""
    files = Files()
    child = deleter(files)
    parent = Agent(lead_model("cleaner"), registry=Registry(), tools=[child.as_tool()])
    paused = run_ok(await parent.run("go"))
    assert paused.stop_reason == "paused"
    assert paused.paused is not None
    [request] = paused.paused.requests
    assert request.call_id == "call_0/call_0"
    assert request.tool == "delete_file"
    assert files.deleted == []
    done = run_ok(await parent.resume(paused.paused.checkpoint_id, {request.call_id: Approve()}))
    assert files.deleted == ["a.txt"]
    assert done.output == "lead got: cleaner: deleted a.txt"
    again = run_ok(await parent.resume(paused.paused.checkpoint_id, Approve()))
    assert again.output == done.output
    assert files.deleted == ["a.txt"]


async def test_a_paused_tree_resumes_in_another_process(tmp_path: Path) -> None:
    """Agents built the same way on the same stores resume the parent and the child."""
    files = Files()

    def build() -> Agent:
        child = deleter(files, SqliteSessionStore(tmp_path / "child.db"))
        return Agent(
            lead_model("cleaner"),
            registry=Registry(),
            tools=[child.as_tool()],
            sessions=SqliteSessionStore(tmp_path / "parent.db"),
        )

    first = build()
    paused = run_ok(await first.run("go")).paused
    assert paused is not None
    second = build()
    done = run_ok(await second.resume(paused.checkpoint_id, Approve()))
    assert done.output == "lead got: cleaner: deleted a.txt"
    assert files.deleted == ["a.txt"]


async def test_subagent_start_and_end_are_hook_events() -> None:
    """The parent's hooks see each sub-agent start and end."""
    seen: list[object] = []
    registry = Registry()

    @registry.hook("subagent_start")
    async def started(event: SubagentStart) -> None:
        seen.append(("start", event.agent, event.prompt, event.run.agent))

    @registry.hook("subagent_end")
    async def ended(event: SubagentEnd) -> None:
        seen.append(("end", event.agent, run_ok(event.outcome).output))

    child = Agent(child_model(), registry=Registry(), name="researcher")
    parent = Agent(lead_model(), registry=registry, tools=[child.as_tool()], name="lead")
    run_ok(await parent.run("go"))
    assert seen == [
        ("start", "researcher", "find x", "lead"),
        ("end", "researcher", "child answer to find x"),
    ]


async def test_cancelling_the_parent_cancels_the_child() -> None:
    """The child's tool is cancelled with the parent's run."""
    started = asyncio.Event()
    cancelled: list[bool] = []

    async def wait_forever() -> str:
        """Wait."""
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "never"

    child = Agent(
        FunctionModel(lambda r: tool_calls(("wait_forever", {}))),
        registry=Registry(),
        tools=[wait_forever],
        name="researcher",
    )
    parent = Agent(lead_model(), registry=Registry(), tools=[child.as_tool()])
    task = asyncio.ensure_future(parent.run("go"))
    await started.wait()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert cancelled == [True]


async def test_a_failing_or_timed_out_child_is_an_error_result() -> None:
    """The child's failure, or its timeout, is an error result the parent's model sees."""
    broken = Agent(
        FunctionModel(lambda r: ModelError(message="model down")),
        registry=Registry(),
        name="researcher",
    )
    parent = Agent(lead_model(), registry=Registry(), tools=[broken.as_tool()])
    result = run_ok(await parent.run("go"))
    assert result.output.startswith("lead got: Sub-agent 'researcher' failed: ")
    assert "model down" in result.output

    async def slow(request: ModelRequest) -> str:
        await asyncio.Event().wait()
        return "never"

    stuck = Agent(FunctionModel(slow), registry=Registry(), name="researcher")
    parent = Agent(lead_model(), registry=Registry(), tools=[stuck.as_tool(timeout=0.05)])
    result = run_ok(await parent.run("go"))
    assert result.output == "lead got: Tool 'researcher' timed out after 0.05s."


async def test_a_cycle_is_a_typed_error() -> None:
    """A calls B calls A: the second call of B fails A's inner run with `SubagentCycle`."""
    inner: list[RunOutcome] = []

    async def ask_a(prompt: str) -> str:
        """Ask A."""
        outcome = await a.run(prompt)
        inner.append(outcome)
        return "done"

    b = Agent(
        FunctionModel(
            lambda r: (
                "b done"
                if r.messages[-1].role == "tool"
                else tool_calls(("ask_a", {"prompt": "again"}))
            )
        ),
        registry=Registry(),
        tools=[ask_a],
        name="b",
    )
    b_model = lead_model("b")
    a = Agent(b_model, registry=Registry(), tools=[b.as_tool()], name="a")
    ask_a_prompt = run_ok(await a.run("go"))
    assert ask_a_prompt.output == "lead got: b done"
    [nested] = inner
    assert isinstance(nested, Failure)
    error = nested.failure()
    assert isinstance(error, SubagentCycle)
    assert error.chain == ("a", "b", "a", "b")
    assert "a -> b -> a -> b" in error.message


async def test_too_deep_a_chain_is_a_typed_error() -> None:
    """A sub-agent called deeper than its max_depth fails the whole run."""
    c = Agent(child_model(), registry=Registry(), name="c")
    b = Agent(lead_model("c"), registry=Registry(), tools=[c.as_tool(max_depth=1)], name="b")
    a = Agent(lead_model("b"), registry=Registry(), tools=[b.as_tool()], name="a")
    outcome = await a.run("go")
    assert isinstance(outcome, Failure)
    error: AgentError = outcome.failure()
    assert isinstance(error, SubagentDepthExceeded)
    assert error.chain == ("a", "b", "c")
    assert error.max_depth == 1
    assert run_ok(await b.run("go")).output == "lead got: child answer to find x"


async def test_called_directly_the_tool_function_runs_the_agent() -> None:
    """The tool's function, called by hand, answers with the agent's output."""
    tool = Agent(child_model(), registry=Registry(), name="researcher").as_tool()
    assert await tool.function(prompt="hi") == "child answer to hi"  # type: ignore[misc]


def test_usage_type_is_exported() -> None:
    """Usage adds up (used by the roll-up)."""
    assert Usage(requests=1) + Usage(requests=2) == Usage(requests=3)


def test_bad_as_tool_arguments_are_registration_errors() -> None:
    """A bad name, max_depth or timeout fails at build with a message saying what to fix."""
    import pytest

    from fncore import RegistrationError

    agent = Agent(child_model(), registry=Registry(), name="researcher")
    with pytest.raises(RegistrationError, match="not valid"):
        agent.as_tool(name="bad name!")
    with pytest.raises(RegistrationError, match="max_depth"):
        agent.as_tool(max_depth=0)
    with pytest.raises(RegistrationError, match="timeout"):
        agent.as_tool(timeout=-1)


async def test_a_failing_agent_called_directly_raises() -> None:
    """The tool's function, called by hand on a failing agent, raises its error."""
    import pytest

    broken = Agent(
        FunctionModel(lambda r: ModelError(message="model down")), registry=Registry()
    ).as_tool(name="broken")
    with pytest.raises(RuntimeError, match="model down"):
        await broken.function(prompt="hi")  # type: ignore[misc]


async def test_a_streamed_child_pause_surfaces_and_resumes_streaming() -> None:
    """The child's RunPaused reaches the stream tagged; a streamed resume finishes both."""
    from fncore.events import RunPaused

    files = Files()
    parent = Agent(lead_model("cleaner"), registry=Registry(), tools=[deleter(files).as_tool()])
    stream = parent.stream("go")
    events = [event async for event in stream]
    child_paused = [
        e for e in events if isinstance(e, SubagentEvent) and isinstance(e.event, RunPaused)
    ]
    assert [e.agent for e in child_paused] == ["cleaner"]
    paused = run_ok(await stream.result()).paused
    assert paused is not None
    resumed = parent.resume_stream(paused.checkpoint_id, Approve())
    seen = [event async for event in resumed]
    assert any(isinstance(e, SubagentEvent) for e in seen)
    assert run_ok(await resumed.result()).output == "lead got: cleaner: deleted a.txt"
    assert files.deleted == ["a.txt"]


async def test_a_child_with_a_typed_output_answers_with_json() -> None:
    """A child's typed output reaches the caller as its JSON text."""
    from pydantic import BaseModel

    class Finding(BaseModel):
        topic: str
        score: int

    child = Agent(
        FunctionModel(lambda request: '{"topic": "x", "score": 3}'),
        registry=Registry(),
        name="researcher",
        output_type=Finding,
    )
    lead = Agent(lead_model(), registry=Registry(), tools=[child.as_tool()])
    done = run_ok(await lead.run("go"))
    assert done.output.startswith("lead got: ")
    assert json.loads(done.output.removeprefix("lead got: ")) == {"topic": "x", "score": 3}
