"""fncore's side of ``durable.py``: the workload's agent, plain and in a `DurableRuntime`.

Run as ``python bench/_durable_fncore.py URL`` by ``durable.py``. Variants, on the workload
of ``_durable_side.py`` (a model answering from prebuilt responses, ``add`` an inline tool,
as in ``overhead.py``):

* ``plain``: ``agent.run``, not durable;
* ``durable``: ``runtime.run(agent, ...)``, one DBOS workflow a run on the database at
  ``URL``, with no session (as Pydantic AI's runs have none): its steps are the 4 model
  calls and the 3 tool calls;
* ``floor``: no agent, a bare DBOS workflow of as many steps that do nothing, called
  directly: what DBOS itself costs, the floor of a durable run's cost per step.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import sys
import uuid
from typing import TYPE_CHECKING

from dbos import DBOS, SetWorkflowID
from pydantic import SecretStr
from returns.result import Result, Success

from fncore import Agent, Message, ModelError, ModelRequest, ModelResponse, Tool, ToolCallPart
from fncore.core import ModelStreamItem, ToolResultPart
from fncore.durable import DurableRuntime, UnknownRun
from fncore.settings import DurableSettings

if TYPE_CHECKING:  # mypy reads bench/ as a package (see bench/__init__.py)
    from collections.abc import AsyncIterator

    from bench import _durable_side as side
else:  # run as a script, whose folder is on sys.path
    import _durable_side as side


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


_CALLS: tuple[Result[ModelResponse, ModelError], ...] = tuple(
    Success(
        ModelResponse(
            Message(
                "assistant", (ToolCallPart(f"call_{n}", "add", json.dumps(side.arguments(n))),)
            ),
            finish_reason="tool_calls",
        )
    )
    for n in range(side.CALLS)
)
_TEXT: Result[ModelResponse, ModelError] = Success(
    ModelResponse(Message.assistant(side.ANSWER), finish_reason="stop")
)


class ThreeCalls:
    """A model asking for ``add`` until `side.CALLS` results are in, then answering."""

    name = "instant"

    async def request(self, request: ModelRequest) -> Result[ModelResponse, ModelError]:
        """The next tool call, or the text once every result is in."""
        done = sum(
            isinstance(part, ToolResultPart)
            for message in request.messages
            if message.role == "tool"
            for part in message.parts
        )
        return _CALLS[done] if done < side.CALLS else _TEXT

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamItem]:
        """The same response, unstreamed."""
        yield (await self.request(request)).unwrap()


def _nothing() -> None:
    """A step that does nothing."""


@DBOS.workflow(name="bench.floor")
async def floor(prompt: str) -> str:
    """A workflow of as many steps as a durable run of the workload, each doing nothing."""
    for n in range(2 * side.CALLS + 1):
        await DBOS.run_step_async({"name": f"step:{n}"}, _nothing)
    return side.ANSWER


async def main(url: str) -> None:
    """Launch a `DurableRuntime` on ``url``, then serve the protocol of ``_durable_side.py``."""
    out = side.protocol_out()
    agent = Agent(ThreeCalls(), tools=[Tool.from_function(add, inline=True)], name="bench")
    settings = DurableSettings(url=SecretStr(url))

    async def run_plain(prompt: str) -> str:
        return (await agent.run(prompt)).unwrap().output

    async with DurableRuntime([agent], settings) as runtime:

        async def run_durable(prompt: str) -> str:
            return (await runtime.run(agent, prompt)).unwrap().output

        check = f"check-{uuid.uuid4().hex}"
        await runtime.run(agent, side.PROMPT, run_id=check)
        shown = await runtime.show(check)
        if isinstance(shown, UnknownRun):
            raise RuntimeError(str(shown))
        with SetWorkflowID(f"{check}-floor"):
            await floor(side.PROMPT)
        floor_steps = await DBOS.list_workflow_steps_async(f"{check}-floor")
        info = {
            "version": importlib.metadata.version("fncore-agents"),
            "dbos": importlib.metadata.version("dbos"),
            "steps": {
                "durable": [step.name for step in shown.steps],
                "floor": [step["function_name"] for step in floor_steps],
            },
        }
        variants = {"plain": run_plain, "durable": run_durable, "floor": floor}
        await side.serve(variants, info, out)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
