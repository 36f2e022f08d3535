"""Measure what calling an agent as a tool (``Agent.as_tool``) costs, against calling its run.

The child is the reference workload's agent (``_measure.agent_with``: one tool call, the
tool, a text answer; an in-process model with zero latency). The parent's model calls one
tool, ``child``, then answers. Workloads, timed in the same rounds:

* ``child_run``: ``child.run(prompt)`` on its own: what the child's work costs;
* ``plain_tool``: the parent, whose ``child`` tool is a plain async function that awaits
  ``child.run(prompt)`` and returns its output: the baseline;
* ``as_tool``: the parent, whose ``child`` tool is ``child.as_tool()``.

``as_tool_overhead_us`` is ``as_tool`` minus ``plain_tool``: what the sub-agent machinery adds
to one call (the depth check, the hooks lookup, the usage roll-up, the reply state shared
with the parent); ``as_tool_ratio`` is ``as_tool`` over ``plain_tool``. Each figure is the
minimum over rounds of the mean per run.

Usage::

    python bench/subagents.py            # full run, human-readable table
    python bench/subagents.py --json     # the same, then one JSON object as the last line
    python bench/subagents.py --quick    # a fast smoke run (figures are rough)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from returns.result import Result, Success

from bench._measure import Figures, Workload, agent_with, main, minimum_of_rounds
from fncore import (
    Agent,
    Message,
    ModelError,
    ModelRequest,
    ModelResponse,
    Registry,
    Tool,
    Usage,
)
from fncore.core import ModelStreamItem, ToolCallPart

_DELEGATE: Result[ModelResponse, ModelError] = Success(
    ModelResponse(
        Message("assistant", (ToolCallPart("call_0", "child", '{"prompt": "What is 1 + 2?"}'),)),
        Usage(12, 8, requests=1),
        "tool_calls",
        "delegating",
    )
)
_ANSWER: Result[ModelResponse, ModelError] = Success(
    ModelResponse(Message.assistant("It is 3."), Usage(20, 6, requests=1), "stop", "delegating")
)


class DelegatingModel:
    """Answers at once: a call of the ``child`` tool, then text after its result."""

    name = "delegating"

    async def request(self, request: ModelRequest) -> Result[ModelResponse, ModelError]:
        """The call, or the text once a tool result is in the history."""
        return _ANSWER if request.messages[-1].role == "tool" else _DELEGATE

    async def stream(self, request: ModelRequest) -> Any:
        """The same response, unstreamed."""
        response: ModelStreamItem = (await self.request(request)).unwrap()
        yield response


def parents() -> tuple[Agent, Agent, Agent]:
    """The child, the parent with a plain tool running it, the parent with ``as_tool``."""
    child = agent_with(None)

    async def run_child(prompt: str) -> str:
        """Ask the child."""
        return child_output(await child.run(prompt))

    plain = Agent(
        DelegatingModel(),
        registry=Registry(),
        tools=[Tool.from_function(run_child, name="child")],
    )
    delegating = Agent(DelegatingModel(), registry=Registry(), tools=[child.as_tool(name="child")])
    return child, plain, delegating


def child_output(outcome: Any) -> str:
    """The output of a successful run (the workload cannot fail)."""
    return str(outcome.unwrap().output)


async def measure(rounds: int, runs: int) -> Figures:
    """Time the three workloads; check first that both parents answer alike."""
    child, plain, delegating = parents()
    first = (await plain.run("go")).unwrap()
    second = (await delegating.run("go")).unwrap()
    if first.output != second.output or first.messages[1:] != second.messages[1:]:
        msg = "the two parents do not answer alike; the comparison would be meaningless"
        raise SystemExit(msg)

    async def nothing() -> None:
        return None

    best = await minimum_of_rounds(
        (
            Workload("child_run", child.run),
            Workload("plain_tool", plain.run),
            Workload("as_tool", delegating.run),
        ),
        rounds,
        runs,
        nothing,
    )
    return {
        "child_run_us": best["child_run"],
        "plain_tool_us": best["plain_tool"],
        "as_tool_us": best["as_tool"],
        "as_tool_overhead_us": best["as_tool"] - best["plain_tool"],
        "as_tool_ratio": best["as_tool"] / best["plain_tool"],
        "rounds": rounds,
        "runs": runs,
    }


def report(figures: Figures) -> str:
    """The figures as a table."""
    return "\n".join(
        [
            "agent as a tool, per parent run (minimum over rounds of the mean)",
            f"  child.run alone                         {figures['child_run_us']:>9.1f} µs",
            f"  parent, plain tool awaiting child.run   {figures['plain_tool_us']:>9.1f} µs",
            f"  parent, child.as_tool()                 {figures['as_tool_us']:>9.1f} µs",
            f"  as_tool overhead per call               {figures['as_tool_overhead_us']:>9.1f} µs"
            f"  ({figures['as_tool_ratio']:.3f}x the plain tool)",
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main(__doc__, None, measure, report))
