"""Registrations that must NOT type-check: lines marked with an E-comment are mypy errors.

``check_expected_errors.py`` runs mypy on this file and compares the errors it reports
with the markers, line by line, so a signature that stops being caught fails CI.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from returns.result import Success

from fncore import (
    Agent,
    ModelCallContext,
    ModelCallNext,
    ModelResponse,
    Outcome,
    Registry,
    RunResult,
    ToolCallContext,
    ToolCallNext,
    ToolResult,
)
from fncore.events import RunStart, ToolEnd

registry = Registry()


async def tool_mw(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
    return await call_next(ctx)


async def model_mw(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
    return await call_next(ctx)


async def one_arg(ctx: ModelCallContext) -> Outcome[ModelResponse]:
    return Success(ModelResponse.__new__(ModelResponse))


async def wrong_return(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[RunResult]:
    return Success(RunResult("", ()))


def not_async(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
    return Success(ModelResponse.__new__(ModelResponse))


async def tool_end_hook(event: ToolEnd) -> None:
    return None


def returns_awaitable(
    ctx: ModelCallContext, call_next: ModelCallNext
) -> Awaitable[Outcome[ModelResponse]]:
    return call_next(ctx)  # a plain def: registration refuses it at run time too


def hook_returns_awaitable(event: ToolEnd) -> Awaitable[None]:
    return asyncio.sleep(0)


registry.on("model_call")(tool_mw)  # E: type-var
registry.on("tool_call")(model_mw)  # E: type-var
registry.on("model_call")(one_arg)  # E: type-var
registry.on("model_call")(wrong_return)  # E: type-var
registry.on("model_call")(not_async)  # E: type-var
registry.on("run")(model_mw)  # E: type-var
registry.on("system_prompt")(model_mw)  # E: type-var
registry.on("model_cal")(model_mw)  # E: call-overload
registry.on("model_call", tools=["add"])(model_mw)  # E: call-overload
registry.hook("run_start")(tool_end_hook)  # E: type-var
registry.on("model_call", before="outer")(model_mw)  # E: call-overload
registry.on("tool_call", tools="add")(tool_mw)  # E: call-overload
registry.on("model_call")(returns_awaitable)  # E: type-var
registry.hook("tool_end")(hook_returns_awaitable)  # E: type-var


@registry.on("model_call")  # E: type-var
def decorated(ctx: ModelCallContext, call_next: ModelCallNext) -> Awaitable[Outcome[ModelResponse]]:
    return call_next(ctx)


def add(a: int, b: int) -> int:
    return a + b


async def change_args(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
    ctx.with_args(add, a="one", b=2)  # E: call-overload
    ctx.with_args(add, a=1)  # E: call-overload
    ctx.with_args(add, a=1, b=2, c=3)  # E: call-overload
    ctx.with_args(add, 1, 2, 3)  # E: call-overload
    return await call_next(ctx.with_args(add, a=1, b=2))


def source_with_parameter(path: str) -> list[ToolResult]:
    return []


registry.tool_source(source_with_parameter)  # E: type-var
Agent()  # E: call-arg
registry.on("tool_call")(tool_mw)
registry.hook("tool_end")(tool_end_hook)
_: RunStart | None = None
