"""A durable run stopped mid-step (as by a kill) and recovered replays what it recorded.

The tool raises `SimulatedCrash` (a BaseException, as SIGKILL would stop the process: the
step is not recorded, the run stays PENDING); DBOS then runs the workflow again
(``DBOS.resume_workflow_async``), which replays the recorded steps: no completed model call
or tool call runs again, and the transcript is the one of an uninterrupted run.
"""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from dbos import DBOS
from engine_support import SimulatedCrash, Work, durable_settings
from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Success

from fncore import (
    InMemorySessionStore,
    ModelResponse,
    Outcome,
    ReasoningContext,
    ReasoningNext,
    Registry,
    RunOutcome,
)
from fncore.durable import DurableRunInfo, DurableRuntime
from fncore.events import ToolEnd
from fncore.middleware import compact, instructions


async def _recover(run_id: str) -> RunOutcome:
    handle = await DBOS.resume_workflow_async(run_id)
    outcome: RunOutcome = await handle.get_result()
    return outcome


async def test_a_run_stopped_inside_a_tool_is_recovered_without_repeating_steps(
    tmp_path: Path,
) -> None:
    """Recorded steps replay; the interrupted tool runs again; the session gets one turn."""
    work = Work(rounds=2, width=2, crash_at="c1_0")
    sessions = InMemorySessionStore()
    agent = work.agent(sessions=sessions)
    reference = await Work(rounds=2, width=2).agent().run("go")
    async with DurableRuntime([agent], durable_settings(tmp_path)) as durable:
        with pytest.raises(SimulatedCrash):
            await durable.run(agent, "go", session_id="s1", run_id="r1")
        stopped = await durable.show("r1")
        recovered = await _recover("r1")
        shown = await durable.show("r1")
    assert isinstance(stopped, DurableRunInfo)
    assert stopped.status == "PENDING"
    completed = [s.name for s in stopped.steps if s.ok]
    assert completed[:5] == [
        "session.load",
        "model_call:1",
        "tool:work:c0_0",
        "tool:work:c0_1",
        "model_call:2",
    ]
    assert "tool:work:c1_0" not in completed
    assert isinstance(recovered, Success)
    assert recovered.unwrap().messages == reference.unwrap().messages
    assert work.model_calls == [0, 1, 2]  # each round's request was sent once
    for name in completed:  # what completed before the crash did not run again
        if name.startswith("tool:"):
            assert work.tool_calls.count(name.removeprefix("tool:work:")) == 1
    assert work.tool_calls.count("c1_0") == 2  # interrupted: it runs again
    assert isinstance(shown, DurableRunInfo)
    assert shown.status == "SUCCESS"
    session = await sessions.load("s1")
    assert [m.role for m in session.messages].count("user") == 1


@dataclass(frozen=True)
class Stack:
    """A stack of deterministic built-ins (they run again on replay, and decide the same)."""

    instructions: str
    template: bool
    window: int | None
    clear_results: bool
    narrow: bool

    def registry(self) -> Registry:
        registry = Registry()
        if self.template:
            registry.include(instructions(template="You help {user}."))
        if self.window is not None:
            strategies = ["clear_tool_results", "window"] if self.clear_results else ["window"]
            registry.include(
                compact(
                    strategies=strategies, max_messages=self.window, keep=2, keep_tool_results=1
                )
            )
        if self.narrow:

            @registry.on("reasoning")
            async def narrow(
                ctx: ReasoningContext, call_next: ReasoningNext
            ) -> Outcome[ModelResponse]:
                tools = tuple(t for t in ctx.tools if t.name == "work")
                return await call_next(replace(ctx, tools=tools))

        return registry


def spare() -> str:
    """A tool the reasoning filter takes away."""
    return "spare"


stacks = st.builds(
    Stack,
    instructions=st.sampled_from(["", "Be brief."]),
    template=st.booleans(),
    window=st.one_of(st.none(), st.integers(min_value=3, max_value=6)),
    clear_results=st.booleans(),
    narrow=st.booleans(),
)


async def _crash_and_recover(
    folder: Path, stack: Stack, rounds: int, width: int, crash_at: str
) -> None:
    metadata = {"user": "ada"}
    plain = Work(rounds=rounds, width=width)
    reference = await plain.agent(
        stack.registry(), tools=[spare], instructions=stack.instructions
    ).run("go", metadata=metadata)
    work = Work(rounds=rounds, width=width, crash_at=crash_at)
    agent = work.agent(stack.registry(), tools=[spare], instructions=stack.instructions)
    async with DurableRuntime([agent], durable_settings(folder)) as durable:
        with pytest.raises(SimulatedCrash):
            await durable.run(agent, "go", metadata=metadata, run_id="r")
        stopped = await durable.show("r")
        recovered = await _recover("r")
    assert isinstance(stopped, DurableRunInfo)
    assert recovered.unwrap().messages == reference.unwrap().messages
    assert recovered.unwrap().output == reference.unwrap().output
    assert len(work.model_calls) == len(plain.model_calls)  # no answered call sent again
    for step in stopped.steps:
        if step.ok and step.name.startswith("tool:"):
            assert work.tool_calls.count(step.name.removeprefix("tool:work:")) == 1


@settings(max_examples=6, deadline=None)
@given(stack=stacks, plan=st.tuples(st.integers(1, 3), st.integers(1, 3)), data=st.data())
def test_a_recovered_run_gives_the_transcript_of_an_uninterrupted_one(
    stack: Stack, plan: tuple[int, int], data: st.DataObject
) -> None:
    """Whatever the deterministic stack and the step the run stops at, replay is exact."""
    rounds, width = plan
    at_round = data.draw(st.integers(0, rounds - 1), label="round")
    at_call = data.draw(st.integers(0, width - 1), label="call")
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(
            _crash_and_recover(Path(folder), stack, rounds, width, f"c{at_round}_{at_call}")
        )


async def test_a_worker_restarted_with_its_id_recovers_its_runs_at_launch(tmp_path: Path) -> None:
    """Launch recovers this executor's pending runs; `wait_idle` returns once they ended."""
    settings = durable_settings(tmp_path)
    work = Work(rounds=1, width=1, crash_at="c0_0")
    agent = work.agent()
    async with DurableRuntime([agent], settings) as durable:
        with pytest.raises(SimulatedCrash):
            await durable.run(agent, "go", run_id="mine")
    async with DurableRuntime([agent], settings) as durable:
        await durable.wait_idle()
        shown = await durable.show("mine")
    assert isinstance(shown, DurableRunInfo)
    assert (shown.status, shown.output) == (
        "SUCCESS",
        "done after 1 rounds; saw 1 tool messages and 1 tools; prompt=''",
    )
    assert work.model_calls == [0, 1]
    assert work.tool_calls == ["c0_0", "c0_0"]


async def test_another_worker_takes_over_a_dead_workers_runs(tmp_path: Path) -> None:
    """A worker of another id recovers nothing at launch; `take_over` recovers them."""
    work = Work(rounds=1, width=1, crash_at="c0_0")
    agent = work.agent()
    async with DurableRuntime([agent], durable_settings(tmp_path), executor_id="dead") as durable:
        with pytest.raises(SimulatedCrash):
            await durable.run(agent, "go", run_id="orphan")
    async with DurableRuntime([agent], durable_settings(tmp_path), executor_id="alive") as durable:
        await durable.wait_idle()
        left = await durable.show("orphan")
        taken = await durable.take_over(["dead"])
        await durable.wait_idle()  # the runs it took over too
        shown = await durable.show("orphan")
    assert isinstance(left, DurableRunInfo)
    assert (left.status, left.executor_id) == ("PENDING", "dead")
    assert taken == ("orphan",)
    assert isinstance(shown, DurableRunInfo)
    assert (shown.status, shown.executor_id) == ("SUCCESS", "alive")
    assert work.tool_calls == ["c0_0", "c0_0"]


async def test_a_hook_registered_as_a_step_does_not_fire_again_on_recovery(
    tmp_path: Path,
) -> None:
    """A ``step=True`` hook that ran before the crash is replayed; a plain hook fires again."""
    audited: list[str] = []
    observed: list[str] = []
    registry = Registry()

    @registry.hook("tool_end", step=True)
    async def audit(event: ToolEnd) -> None:
        audited.append(event.call.id)

    @registry.hook("tool_end")
    async def observe(event: ToolEnd) -> None:
        observed.append(event.call.id)

    work = Work(rounds=2, width=1, crash_at="c1_0")
    agent = work.agent(registry)
    async with DurableRuntime([agent], durable_settings(tmp_path)) as durable:
        with pytest.raises(SimulatedCrash):
            await durable.run(agent, "go", run_id="audited")
        recovered = await _recover("audited")
        shown = await durable.show("audited")
    assert isinstance(recovered, Success)
    assert audited == ["c0_0", "c1_0"]
    assert observed == ["c0_0", "c0_0", "c1_0"]  # plain hooks observe the replay too
    assert isinstance(shown, DurableRunInfo)
    assert [s.name for s in shown.steps].count("tool_end:audit") == 2
