"""Pydantic AI's side of ``durable.py``: its agent on DBOS, in a venv of its own.

Run as ``python bench/_durable_pydantic_ai.py URL`` by ``durable.py`` (``--peer-python``),
in a venv with ``pydantic-ai-slim[dbos]`` (never a dependency of fncore). Variants, on the
workload of ``_durable_side.py`` with Pydantic AI's offline `FunctionModel`:

* ``plain``: the agent, not durable; its tool ``add`` a coroutine function;
* ``dbos_agent``: the agent wrapped in ``DBOSAgent``, whose ``run`` is a DBOS workflow
  (deprecated in Pydantic AI 2.68 for the capability below, and still there);
* ``durability``: the agent with the ``DBOSDurability`` capability, run inside a
  ``@DBOS.workflow`` of our own, as its documentation shows.

Pydantic AI makes each model request a DBOS step; a function tool is one when the function
is a ``@DBOS.step`` (its documentation's advice for tools with effects), as the durable
variants' ``add`` is, so that each durable run records what fncore's does: 4 model calls
and 3 tool calls.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import sys
import uuid
import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # mypy reads bench/ as a package (see bench/__init__.py)
    from bench import _durable_side as side
else:  # run as a script, whose folder is on sys.path
    import _durable_side as side

try:
    from dbos import DBOS, SetWorkflowID
    from pydantic_ai import Agent, Tool
    from pydantic_ai.durable_exec.dbos import DBOSAgent, DBOSDurability
    from pydantic_ai.messages import (
        ModelMessage,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel
except ImportError as missing:
    print(
        f"durable.py: not installed for --peer-python: {missing.name} "
        '(pip install "pydantic-ai-slim[dbos]" in a venv of its own: see docs/performance.md)',
        file=sys.stderr,
    )
    raise SystemExit(2) from None


def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Ask for ``add`` until `side.CALLS` results are in, then answer."""
    done = sum(isinstance(part, ToolReturnPart) for message in messages for part in message.parts)
    if done < side.CALLS:
        call = ToolCallPart("add", side.arguments(done), tool_call_id=f"call_{done}")
        return ModelResponse(parts=[call])
    return ModelResponse(parts=[TextPart(side.ANSWER)])


async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@DBOS.step(name="add")
async def add_step(a: int, b: int) -> int:
    """Add two integers, as a DBOS step."""
    return a + b


async def main(url: str) -> None:
    """Launch DBOS on ``url``, then serve the protocol of ``_durable_side.py``."""
    out = side.protocol_out()
    DBOS(config={"name": "pydantic-ai-bench", "system_database_url": url, "log_level": "WARNING"})
    plain: Any = Agent(FunctionModel(respond), name="plain", tools=[Tool(add, name="add")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # DBOSAgent is deprecated: measured all the same
        wrapped: Any = DBOSAgent(
            Agent(FunctionModel(respond), name="wrapped", tools=[Tool(add_step, name="add")])
        )
    capable: Any = Agent(
        FunctionModel(respond),
        name="capable",
        tools=[Tool(add_step, name="add")],
        capabilities=[DBOSDurability()],
    )

    @DBOS.workflow(name="capable.run")
    async def capable_run(prompt: str) -> str:
        output: str = (await capable.run(prompt)).output
        return output

    async def run_plain(prompt: str) -> str:
        output: str = (await plain.run(prompt)).output
        return output

    async def run_wrapped(prompt: str) -> str:
        output: str = (await wrapped.run(prompt)).output
        return output

    variants: dict[str, side.Run] = {
        "plain": run_plain,
        "dbos_agent": run_wrapped,
        "durability": capable_run,
    }
    DBOS.launch()
    try:
        steps: dict[str, list[str]] = {}
        for name in ("dbos_agent", "durability"):
            workflow_id = f"check-{name}-{uuid.uuid4().hex}"
            with SetWorkflowID(workflow_id):
                await variants[name](side.PROMPT)
            recorded = await DBOS.list_workflow_steps_async(workflow_id)
            steps[name] = [step["function_name"] for step in recorded]
        info = {
            "version": importlib.metadata.version("pydantic-ai-slim"),
            "dbos": importlib.metadata.version("dbos"),
            "steps": steps,
        }
        await side.serve(variants, info, out)
    finally:
        DBOS.destroy(destroy_registry=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
