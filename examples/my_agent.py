"""Your own agent on the command line: a module that holds an `Agent`, or makes one.

From the repository's root (the current directory is importable, as with ``uvicorn app:app``):

    fncore run --agent examples.my_agent:agent "hello there"
    fncore stack --agent examples.my_agent:make_agent   # a function (here async) is called

or, in a configuration file, ``[agent] ref = "examples.my_agent:agent"``. It runs on the
offline test model; give `Agent` a real model (or build it with ``load_container``) instead.
"""

from __future__ import annotations

from returns.result import Success

from fncore import Agent, Outcome, Registry, ToolCallContext, ToolCallNext, ToolResult
from fncore.testing import TestModel

registry = Registry()


@registry.tool(inline=True)
def shout(text: str) -> str:
    """Say a text in capitals.

    Args:
        text: The text to shout.
    """
    return text.upper()


@registry.on("tool_call", name="exclaim")
async def exclaim(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
    """Add an exclamation mark to every tool's result."""
    outcome = await call_next(ctx)
    if isinstance(outcome, Success):
        return Success(ToolResult(f"{outcome.unwrap().content}!"))
    return outcome


agent = Agent(TestModel(), registry=registry, name="shouter")
"""The agent itself: ``--agent examples.my_agent:agent``."""


async def make_agent() -> Agent:
    """A new agent each call (a factory may be async): ``--agent examples.my_agent:make_agent``."""
    return Agent(TestModel(), registry=registry, name="shouter")
