"""`emulate_tools`: a model answers tool calls in place of the tools.

For prototypes, demos and tests of an agent whose tools do not exist yet, or must not run
(they send mail, they cost money): the listed tools (or all) are answered by a model from
the tool's name, description, argument schema and the call's arguments. The real tool never
runs. The call goes through the agent's ``model_call`` onion (`RunInfo.call_model`, ``by =
"emulate_tools"``), so tracing, limits and budgets see it.

An emulated result is marked twice: the ``tool_call`` span that `trace` opens gets the
attribute ``fncore.tool.emulated = true``, and the call's id is added to the reply's
`EMULATED` state. The text the model sees is the emulating model's answer, unmarked, so
the agent behaves as it would with the real tool.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from opentelemetry import trace as otel_trace
from returns.result import Failure, Success

from fncore.core import (
    Message,
    Model,
    ModelError,
    ModelRequest,
    Outcome,
    Registry,
    StateKey,
    ToolCallContext,
    ToolCallNext,
    ToolResult,
)
from fncore.core._position_names import TOOL_CALL
from fncore.middleware._checked import checked
from fncore.middleware._place import place

__all__ = ["emulate_tools"]

EMULATED: StateKey[tuple[str, ...]] = StateKey("fncore.emulate_tools.calls", default=tuple)
"""The ids of the tool calls of this reply that a model answered, in order."""

EMULATED_ATTRIBUTE = "fncore.tool.emulated"
"""The span attribute set (to ``True``) on an emulated call's ``execute_tool`` span."""

INSTRUCTIONS = (
    "You stand in for a software tool that cannot run here. Given the tool's name, "
    "description, JSON schema of its arguments and the arguments of one call, answer with "
    "exactly what the tool would return for that call: its result alone, as plain text or "
    "JSON, realistic and consistent with the arguments, with no commentary."
)
"""The default system prompt of the emulating model."""


def emulation_request(ctx: ToolCallContext, instructions: str) -> ModelRequest:
    """The request that asks a model to answer ``ctx``'s call in place of its tool."""
    spec = ctx.tool.spec
    described = {
        "tool": spec.name,
        "description": spec.description,
        "parameters": spec.parameters,
        "arguments": json.loads(ctx.args.model_dump_json()),
    }
    text = json.dumps(described, indent=2, default=str)
    return ModelRequest((Message.user(text),), instructions=instructions, tool_choice="none")


@checked
def emulate_tools(
    *,
    tools: Sequence[str] | None = None,
    model: Model | None = None,
    instructions: str = INSTRUCTIONS,
    name: str = "emulate_tools",
) -> Registry:
    """A model answers calls to ``tools`` (``None``: every tool); the tools never run.

    Args:
        tools: The names of the tools to emulate; ``None`` emulates every tool.
        model: The model that answers (in configuration, a preset's name under
            ``[models.<name>]``); ``None``: the agent's own model.
        instructions: The emulating model's system prompt.
        name: The middleware's name, to tell two instances apart.

    Returns:
        A registry with one ``tool_call`` middleware. When the emulating model fails with a
        `ModelError`, the call's result is an error result the agent's model sees; a limit,
        a budget or a `Terminate` from the call's onion ends the run as usual.

    Raises:
        ValueError: for an empty ``tools`` list (it would emulate nothing).

    Example:
        >>> registry = Registry()
        >>> registry.include(emulate_tools(tools=["send_mail"]))
        >>> [(m.position, m.name, m.tools) for m in registry.middleware]
        [('tool_call', 'emulate_tools', ('send_mail',))]
    """
    if tools is not None and not tools:
        msg = "emulate_tools: tools is empty; list tool names, or leave it out to emulate all"
        raise ValueError(msg)
    registry = Registry()

    @registry.on(
        TOOL_CALL,
        name=name,
        tools=None if tools is None else list(tools),
        **place("emulate_tools"),
    )
    async def emulate(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        request = emulation_request(ctx, instructions)
        outcome = await ctx.run.call_model(request, model=model, by="emulate_tools")
        if type(outcome) is Failure:
            halt = outcome.failure()
            if not isinstance(halt, ModelError):
                return Failure(halt)
            text = f"Tool {ctx.tool.name!r} could not be emulated: {halt.message}"
            return Success(ToolResult(text, True))
        state = ctx.run.state
        state.set(EMULATED, (*state.get(EMULATED), ctx.call.id))
        otel_trace.get_current_span().set_attribute(EMULATED_ATTRIBUTE, True)
        return Success(ToolResult(outcome.unwrap().text))

    return registry
