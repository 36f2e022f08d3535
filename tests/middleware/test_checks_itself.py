"""The built-ins that make their layer's checks themselves are folded with no guard around.

Each one turns what it raises (its ``call_next`` included) into the error value the guard
would make, naming its registration, and returns only outcomes of its position.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from returns.result import Success

from fncore import Message, ModelRequest, ModelResponse, Registry, RunInfo, State, Usage
from fncore.core import ModelCallContext, ModelSettings, ReasoningContext
from fncore.core._fold import fold_onion, raised
from fncore.middleware import budget, cache, limit_calls, rate_limit, retry
from fncore.testing import FunctionModel

MADE: dict[str, Callable[[str], Registry]] = {
    "retry": lambda name: retry(name=name),
    "limit_calls": lambda name: limit_calls(name=name),
    "budget": lambda name: budget(name=name),
    "rate_limit": lambda name: rate_limit(name=name),
    "cache": lambda name: cache(name=name),
}
LAYERS = [
    ("retry", "model_call"),
    ("limit_calls", "model_call"),
    ("limit_calls", "reasoning"),
    ("budget", "model_call"),
    ("budget", "reasoning"),
    ("rate_limit", "model_call"),
    ("cache", "model_call"),
]
ANSWER = ModelResponse(Message.assistant("4"), Usage(3, 1), "stop", "m")


def context(position: str) -> Any:
    run = RunInfo("r1", {}, State())
    if position == "reasoning":
        return ReasoningContext(run, 1, (Message.user("2 + 2?"),), (), "auto", ModelSettings())
    request = ModelRequest((Message.user("2 + 2?"),))
    return ModelCallContext(run, request, FunctionModel(lambda request: "4"))


def own_code(fn: Any) -> Any:
    """The code a layer runs first: the middleware's own, through a ``partial`` it may be."""
    return (fn.func if isinstance(fn, partial) else fn).__code__


def layer(builtin: str, position: str, name: str = "mine") -> Any:
    (registration,) = [r for r in MADE[builtin](name).middleware if r.position == position]
    return registration


@pytest.mark.parametrize(("builtin", "position"), LAYERS)
async def test_the_layer_is_a_straight_call_and_passes_the_answer_on(
    builtin: str, position: str
) -> None:
    registration = layer(builtin, position)

    async def end(ctx: object) -> Any:
        return Success(ANSWER)

    handler = fold_onion(position, [(registration.name, registration.function)], end, ModelResponse)
    assert own_code(handler) is own_code(registration.function)  # no guard around it
    assert await handler(context(position)) == Success(ANSWER)


@pytest.mark.parametrize(("builtin", "position"), LAYERS)
async def test_what_it_raises_is_the_error_value_a_guard_makes(builtin: str, position: str) -> None:
    registration = layer(builtin, position)

    async def end(ctx: object) -> Any:
        raise RuntimeError("down")

    handler = fold_onion(position, [("mine", registration.function)], end, ModelResponse)
    assert own_code(handler) is own_code(registration.function)  # no guard around it
    assert await handler(context(position)) == raised(position, "mine", RuntimeError("down"))
