"""`approve`: a human approves, edits, rejects or answers tool calls before they run.

A call that needs approval pauses the run (`Pause`): the run returns a result with
``stop_reason == "paused"`` whose `Paused` holds the checkpoint id and the pending requests
(call id, tool, arguments, description, allowed decisions); the round's other calls run
meanwhile. ``agent.resume(checkpoint_id, decisions)`` then goes on, in this process or
another, and the call goes through ``approve`` again, which applies its decision:

* `Approve`: the call runs as the model made it;
* `Edit`: it runs with the human's arguments, and its result starts with a note that says
  so (with the arguments), so the model does not just make the original call again;
* `Reject`: it does not run; the message is its (error) result;
* `Respond`: it does not run; the message is its result (the human answers for the tool).

Batch mode (the default) asks for every waiting call of a round at once; per-call mode asks
for one call at a time, in call order (resuming with its decision asks for the next).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Literal

from returns.result import Failure, Success

from fncore.core import (
    ALL_DECISIONS,
    DecisionKind,
    Edit,
    Outcome,
    Pause,
    PendingRequest,
    Registry,
    Reject,
    Respond,
    ToolCallContext,
    ToolCallNext,
    ToolResult,
)
from fncore.core._position_names import TOOL_CALL
from fncore.middleware._checked import checked
from fncore.middleware._imports import import_function
from fncore.middleware._place import place

__all__ = ["approve"]

DESCRIPTION = "Run {tool} with {arguments}?"
"""The default description of a request: ``{tool}`` and ``{arguments}`` (JSON) filled in."""

EDITED = (
    "[A human edited this call before it ran: it ran with arguments {arguments}, not the "
    "ones you gave. Do not repeat the original call.]\n"
)
"""The note an edited call's result starts with."""

Predicate = Callable[[ToolCallContext], bool]
"""Whether a call needs approval."""


def _describe(
    description: str | Callable[[ToolCallContext], str],
) -> Callable[[ToolCallContext, str], str]:
    """The request's description as a function of the call's context and its JSON arguments."""
    if callable(description):
        return lambda ctx, arguments: description(ctx)
    return lambda ctx, arguments: description.format(tool=ctx.tool.name, arguments=arguments)


@checked
def approve(
    tools: Sequence[str] | None = None,
    *,
    when: Predicate | str | None = None,
    decisions: Sequence[DecisionKind] = ALL_DECISIONS,
    mode: Literal["batch", "per_call"] = "batch",
    description: str | Callable[[ToolCallContext], str] = DESCRIPTION,
    name: str = "approve",
) -> Registry:
    """Pause the run for a human's decision before the chosen tool calls run.

    See the module's rules. Place: inside `trace` (a paused call shows in its tool span),
    outside every other built-in at ``tool_call``, so a call is counted, limited, retried
    and cached only once it is allowed to run.

    Args:
        tools: The tools whose calls need approval (an unknown name is a registration
            error); ``None``: every tool.
        when: Of those calls, which need it: a function of the call's context (or its
            ``"package.module:function"`` name from configuration); ``None``: all.
        decisions: What the human may decide (of ``approve``, ``edit``, ``reject``,
            ``respond``).
        mode: ``batch``: ask for every waiting call of a round at once; ``per_call``: one
            at a time.
        description: What the request says: a text with ``{tool}`` and ``{arguments}``,
            or a function of the call's context.
        name: The middleware's name, to tell two instances apart.

    Raises:
        ValueError: for an empty ``tools`` or ``decisions``, or a ``when`` name that does
            not import.

    Example:
        >>> registry = Registry()
        >>> registry.include(approve(["delete_file"]))
        >>> [(m.position, m.name, m.tools) for m in registry.middleware]
        [('tool_call', 'approve', ('delete_file',))]
    """
    if tools is not None and not tools:
        msg = "approve: tools is empty, so nothing would wait; list tool names, or leave it out"
        raise ValueError(msg)
    allowed = tuple(k for k in ALL_DECISIONS if k in decisions)
    if not allowed:
        msg = "approve needs at least one decision to offer (approve, edit, reject, respond)"
        raise ValueError(msg)
    test: Predicate | None = (
        import_function(when, "when") if isinstance(when, str) else when  # type: ignore[assignment]
    )
    describe = _describe(description)
    alone = mode == "per_call"
    registry = Registry()
    only = None if tools is None else tuple(tools)

    @registry.on(TOOL_CALL, name=name, tools=only, **place("approve"))
    async def approving(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        decision = ctx.run.decision(ctx.call.id)
        if decision is None:
            if test is not None and not test(ctx):
                return await call_next(ctx)
            arguments = ctx.args.model_dump(mode="json")
            request = PendingRequest(
                ctx.call.id,
                ctx.tool.name,
                arguments,
                describe(ctx, json.dumps(arguments, ensure_ascii=False)),
                allowed,
                name,
            )
            return Failure(Pause((request,), one_at_a_time=alone))
        kind = type(decision)
        if kind is Reject or kind is Respond:
            return Success(ToolResult(decision.message, kind is Reject))  # type: ignore[union-attr]
        if kind is not Edit:
            return await call_next(ctx)
        edited = ctx.tool.args_model.model_validate(dict(decision.arguments))  # type: ignore[union-attr]
        outcome = await call_next(replace(ctx, args=edited))
        if type(outcome) is not Success:
            return outcome
        result: ToolResult = outcome.unwrap()
        shown = json.dumps(edited.model_dump(mode="json"), ensure_ascii=False)
        return Success(replace(result, content=EDITED.format(arguments=shown) + result.content))

    return registry
