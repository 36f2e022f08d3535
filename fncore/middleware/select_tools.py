"""`select_tools`: a model picks the few tools worth offering from the many an agent has.

Before each of the agent's model calls that offers more than ``max_tools`` tools (besides
those in ``always_include``), a model is asked which of them matter for the conversation
so far, and only those (plus ``always_include``) are offered to the agent's model. The
selection call goes through the agent's ``model_call`` onion (`RunInfo.call_model`, ``by =
"select_tools"``), so tracing, limits and budgets see it; it does not pass through
`select_tools` again.

The selector answers with a JSON array of tool names (``["search", "fetch"]``), alone or
inside its text. Names it invents are ignored; beyond ``max_tools``, the first are kept. An
empty array offers ``always_include`` alone. A failed selection call or an answer with no
JSON array offers every tool (``on_failure = "offer_all"``, the default) or fails the call
(``on_failure = "fail"``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Annotated, Literal

from pydantic import Field
from returns.result import Failure

from fncore.core import (
    Message,
    MiddlewareError,
    Model,
    ModelCallContext,
    ModelCallNext,
    ModelRequest,
    ModelResponse,
    Outcome,
    Registry,
    RequireTool,
    StateKey,
    ToolSpec,
)
from fncore.core._position_names import MODEL_CALL
from fncore.middleware._checked import checked
from fncore.middleware._place import place

__all__ = ["select_tools"]

SELECTED: StateKey[tuple[str, ...] | None] = StateKey(
    "fncore.select_tools.selected", default=lambda: None
)
"""The names of the tools offered by the reply's latest selection (``None``: no selection
was made, or it failed and every tool was offered)."""

INSTRUCTIONS = (
    "You choose which tools an assistant may use next. Read the conversation and the "
    "numbered tools, then answer with a JSON array of the names of the tools that could "
    "help with the next step, most useful first, at most {max_tools}, for example "
    '["search", "fetch_page"]. Answer [] if none helps. Answer with the array alone.'
)
"""The default system prompt of the selecting model; ``{max_tools}`` is filled in."""

CONTEXT_MESSAGES = 6
"""How many of the latest messages the selector sees (their text, each clipped)."""

_CLIP = 2000


def selection_request(
    request: ModelRequest, candidates: Sequence[ToolSpec], instructions: str, max_tools: int
) -> ModelRequest:
    """The request that asks a model to choose among ``candidates`` for ``request``."""
    lines = ["Conversation (latest messages):"]
    for message in request.messages[-CONTEXT_MESSAGES:]:
        text = message.text or " ".join(
            f"[{part.name}: {part.content}]" for part in message.tool_results
        )
        if text:
            lines.append(f"{message.role}: {text[:_CLIP]}")
    lines.append("")
    lines.append("Tools:")
    lines.extend(
        f"{index}. {spec.name}: {spec.description or '(no description)'}"
        for index, spec in enumerate(candidates, 1)
    )
    prompt = instructions.replace("{max_tools}", str(max_tools))
    return ModelRequest((Message.user("\n".join(lines)),), instructions=prompt, tool_choice="none")


def chosen_names(text: str) -> list[str] | None:
    """The tool names in the JSON array ``text`` holds, or ``None`` if it holds none.

    Example:
        >>> chosen_names('Here: ["search", "fetch", 3]')
        ['search', 'fetch']
        >>> chosen_names("search and fetch") is None
        True
    """
    start, end = text.find("["), text.rfind("]")
    if start < 0 or end < start:
        return None
    try:
        found = json.loads(text[start : end + 1])
    except ValueError:
        return None
    if not isinstance(found, list):
        return None
    return [item for item in found if isinstance(item, str)]


@checked
def select_tools(
    *,
    max_tools: Annotated[int, Field(ge=1)] = 8,
    always_include: Sequence[str] = (),
    model: Model | None = None,
    on_failure: Literal["offer_all", "fail"] = "offer_all",
    instructions: str = INSTRUCTIONS,
    name: str = "select_tools",
) -> Registry:
    """Offer the agent's model at most ``max_tools`` tools a selecting model picks, per call.

    Args:
        max_tools: The most tools the selector may pick. A call offering this many or fewer
            (besides ``always_include``) is sent unchanged, with no selection call.
        always_include: Tools always offered, outside the selection and its count.
        model: The selecting model (in configuration, a preset's name under
            ``[models.<name>]``); ``None``: the agent's own model. A small, fast model fits.
        on_failure: When the selection call fails or its answer holds no JSON array:
            ``"offer_all"`` offers every tool, ``"fail"`` fails the call with the model's
            error, or a `MiddlewareError` for an unusable answer.
        instructions: The selector's system prompt; ``{max_tools}`` is replaced by the number.
        name: The middleware's name, to tell two instances apart.

    Returns:
        A registry with one ``model_call`` middleware.

    Example:
        >>> registry = Registry()
        >>> registry.include(select_tools(max_tools=5, always_include=["answer"]))
        >>> [(m.position, m.name) for m in registry.middleware]
        [('model_call', 'select_tools')]
    """
    always = frozenset(always_include)
    registry = Registry()

    @registry.on(MODEL_CALL, name=name, **place("select_tools"))
    async def select(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        request = ctx.request
        if ctx.run.calling is not None:
            return await call_next(ctx)
        candidates = [spec for spec in request.tools if spec.name not in always]
        if len(candidates) <= max_tools:
            return await call_next(ctx)
        asked = selection_request(request, candidates, instructions, max_tools)
        answer = await ctx.run.call_model(asked, model=model, by="select_tools")
        names: list[str] | None = None
        if type(answer) is Failure:
            if on_failure == "fail":
                return answer
        else:
            names = chosen_names(answer.unwrap().text)
            if names is None and on_failure == "fail":
                return Failure(
                    MiddlewareError(
                        message=(
                            "the selecting model's answer holds no JSON array of tool names; "
                            "check the model, or set on_failure = 'offer_all'"
                        ),
                        position=MODEL_CALL,
                        middleware=name,
                    )
                )
        if names is None:
            ctx.run.state.set(SELECTED, None)
            return await call_next(ctx)
        offered = {spec.name for spec in candidates}
        picked = list(dict.fromkeys(n for n in names if n in offered))[:max_tools]
        keep = always.union(picked)
        choice = request.tool_choice
        if isinstance(choice, RequireTool):
            keep = keep | {choice.name}
        tools = tuple(spec for spec in request.tools if spec.name in keep)
        ctx.run.state.set(SELECTED, tuple(spec.name for spec in tools))
        return await call_next(replace(ctx, request=replace(request, tools=tools)))

    return registry
