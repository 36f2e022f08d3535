"""The step boundary of a durable run: what a durable engine records, and replays.

A run given a `Steps` (``Runner.start(..., steps=...)``) passes each of its effects through
it as one named step: loading the session, each pass through the ``model_call`` onion (the
bare model call without one), each tool call's pass through ``tool_call``, a hook
registered with ``step=True``, saving a paused run's checkpoint, and committing the
session. A durable engine records what each step returned and, when the run is replayed
after a crash, returns the record instead of running the step again; everything between
the steps runs again and, given the same records, decides the same.

Without a `Steps` (``RunInfo._steps`` is ``None``) nothing here is on the run's path.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace

from returns.result import Success

from fncore.core import ModelRequest, ModelResponse, Outcome, ToolChoice
from fncore.core._contexts import Steps

__all__ = ["Steps", "model_step"]

Recorded = tuple[Outcome[ModelResponse], ToolChoice | None]
"""What a model step records: the outcome without the request it answered (which grows
with the history), and the tool choice that request was sent with, if a middleware changed
it (the loop follows it)."""


def _recorded(out: Outcome[ModelResponse]) -> Recorded:
    """``out`` as a model step records it: without its response's hidden ``_sent``."""
    if type(out) is Success:
        response = out.unwrap()
        sent = response._sent
        if sent is not None:
            bare = ModelResponse(
                response.message, response.usage, response.finish_reason, response.model_name
            )
            return Success(bare), sent.tool_choice
    return out, None


async def model_step(
    steps: Steps,
    name: str,
    call: Callable[[], Awaitable[Outcome[ModelResponse]]],
    request: ModelRequest,
) -> Outcome[ModelResponse]:
    """``call()``, one pass through ``model_call``, as the step ``name``.

    A response that says which request it answered (a middleware changed the tool choice
    it was sent with) gets ``request`` back as that, with the tool choice that was sent:
    the same live and on replay.
    """

    async def recorded() -> Recorded:
        return _recorded(await call())

    out, choice = await steps.step(name, recorded)
    if choice is None:
        return out
    response = out.unwrap()
    return Success(replace(response, _sent=replace(request, tool_choice=choice)))
