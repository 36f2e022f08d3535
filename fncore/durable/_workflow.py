"""fncore's one DBOS workflow, ``fncore.run``: a reply (new or resumed) of an agent, by name.

Its arguments are plain data that pickle: the agent's name, the config hash it started
with, the session id, and the request (`Start` or `Resume`). It finds the agent among
those the process serves (`Served`, set by the `DurableRuntime` that launched DBOS), and
runs the reply through the agent's runner with the run id its workflow id and a
`DbosSteps` step boundary. Its output, recorded by DBOS, is the run's outcome before the
agent's output type parses it.

One module-level workflow, registered when this module is imported, so a worker knows it
before DBOS recovers or dequeues anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, final

from dbos import DBOS
from returns.result import Failure

from fncore.core import Decision, RunOutcome
from fncore.durable._config import WORKFLOW
from fncore.durable._errors import UnknownAgent, stack_changed
from fncore.durable._steps import DbosSteps
from fncore.runtime import Agent

__all__: list[str] = []


@final
@dataclass(frozen=True, slots=True)
class Start:
    """A new reply: to ``prompt`` (text, a message or messages), with this metadata."""

    prompt: object
    metadata: dict[str, object] | None


@final
@dataclass(frozen=True, slots=True)
class Resume:
    """The rest of a paused reply: its checkpoint, the decisions, the metadata."""

    checkpoint_id: str
    decisions: Mapping[str, Decision] | Decision
    metadata: dict[str, object] | None


@final
class Served:
    """The agents whose durable runs this process runs, and its runs in flight."""

    __slots__ = ("agents", "running")

    def __init__(self, agents: Mapping[str, Agent[Any]]) -> None:
        self.agents = agents
        """The agents, by name."""
        self.running = 0
        """How many runs are in flight in this process."""


_served: list[Served] = []
"""The one `Served` of the process while a `DurableRuntime` is entered (at most one)."""


def serve(served: Served) -> None:
    """Make ``served`` the agents this process runs durably.

    Raises:
        RuntimeError: if a `DurableRuntime` is already entered in this process.
    """
    if _served:
        msg = (
            "a DurableRuntime is already running in this process (DBOS allows one per "
            "process): give it every agent, or leave it first"
        )
        raise RuntimeError(msg)
    _served.append(served)


def unserve() -> None:
    """The process serves no agents any more."""
    _served.clear()


@DBOS.workflow(name=WORKFLOW)
async def fncore_run(
    agent: str, config: str, session_id: str | None, request: Start | Resume
) -> RunOutcome:
    """One durable reply of agent ``agent``, started with its stack's ``config`` hash."""
    if not _served or agent not in _served[0].agents:
        return Failure(
            UnknownAgent(
                message=f"run {DBOS.workflow_id} is of agent {agent!r}, which this process "
                "does not serve",
                agent=agent,
            )
        )
    served = _served[0]
    runner = served.agents[agent]._runner
    if runner.stack.config != config:
        run = DBOS.workflow_id or ""
        return Failure(stack_changed(run, agent, config, runner.stack.config))
    served.running += 1
    try:
        steps, run_id = DbosSteps(), DBOS.workflow_id
        if isinstance(request, Start):
            return await runner.start(
                request.prompt,
                request.metadata,
                session_id,
                None,
                None,
                None,
                steps=steps,
                run_id=run_id,
            )
        return await runner.go_on(
            request.checkpoint_id,
            request.decisions,
            request.metadata,
            None,
            steps=steps,
            run_id=run_id,
        )
    finally:
        served.running -= 1
