"""The example agent that ``fncore run`` and ``fncore stack`` use.

It is built in a function, into its own `Registry`, so importing this module registers
nothing anywhere and every call gets a fresh agent.
"""

from __future__ import annotations

from returns.result import Success

from fncore import Agent, Container, Outcome, Registry, SystemPromptContext
from fncore.cli._trace import Trace, register_trace
from fncore.core._position_names import SYSTEM_PROMPT

INSTRUCTION = "Use the tools, then answer from their results."
"""The line the ``add_instruction`` transformer appends to the system prompt."""


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


def multiply(a: int, b: int) -> int:
    """Multiply two integers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


def word_count(text: str) -> int:
    """Count the whitespace-separated words of a text.

    Args:
        text: The text to count words in.
    """
    return len(text.split())


def build_example_agent(
    container: Container, trace: Trace, outermost: Registry | None = None
) -> Agent:
    """Build the example agent: three tools, tracing middleware, one prompt transformer.

    It is built the way any application builds its agents, by the container: on its
    model, settings and instructions, with the container's registry (the default one and
    the plugins the configuration allows) inside the example's own middleware.

    Args:
        container: Supplies the model, registry, loop settings and base instructions.
        trace: Where the middleware write their trace lines.
        outermost: Middleware to wrap everything else (``--trace`` puts the ``trace``
            built-in here).

    Returns:
        A new agent.

    Raises:
        RegistrationError: if the stack cannot be built (a plugin that fails to load, say).
    """
    registry = Registry()
    if outermost is not None:
        registry.include(outermost)
    register_trace(registry, trace)

    @registry.on(SYSTEM_PROMPT, name="add_instruction")
    async def add_instruction(ctx: SystemPromptContext, prompt: str) -> Outcome[str]:
        trace(f"[system_prompt] round {ctx.round}: + {INSTRUCTION!r}")
        return Success(f"{prompt}\n{INSTRUCTION}" if prompt else INSTRUCTION)

    for function in (add, multiply, word_count):  # quick pure functions: no thread hop
        registry.tool(inline=True)(function)
    registry.include(container.registry())
    return container.agent(registry=registry)
