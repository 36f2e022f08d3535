"""The rest of the tool round a paused run stopped in, when it is resumed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from returns.result import Failure, Success

from fncore.core import (
    Outcome,
    Resume,
    ResumePoint,
    RunInfo,
    RunResult,
    Tool,
    ToolResultPart,
)
from fncore.core._loop import (
    Fail,
    Finish,
    LoopSettings,
    LoopState,
    Ready,
    Rejected,
    on_tool_results,
)
from fncore.runtime._halts import round_halted
from fncore.runtime._tool_run import Halting, ToolRunner

__all__ = ["resumed_round"]


async def resumed_round(
    tools: Mapping[str, Tool],
    tools_run: ToolRunner,
    settings: LoopSettings,
    run: RunInfo,
    state: LoopState,
    point: ResumePoint,
    resume: Resume,
) -> LoopState | Outcome[RunResult]:
    """Finish the tool round a run paused in.

    Its waiting calls run (the decisions are in ``run``); then what follows is decided
    as after any tool round.
    """
    slots = point.calls or ()
    results = [result for _, result in slots]
    halts: list[Halting] = [None] * len(slots)
    waiting: list[int] = []
    items: list[Ready | Rejected] = []
    for index, (call, result) in enumerate(slots):
        if result is not None:
            continue
        tool = tools.get(call.name)
        checked = f"Unknown tool {call.name!r}." if tool is None else tool.check(call.arguments)
        if type(checked) is str:
            items.append(Rejected(ToolResultPart(call.id, call.name, checked, is_error=True)))
        else:
            items.append(Ready(call, tool, checked))  # type: ignore[arg-type]
        waiting.append(index)
    if len(items) == 1:
        part, halt = await tools_run.one(run, items[0])
        ran: tuple[ToolResultPart, ...] = (part,)
        ran_halts: tuple[Halting, ...] = (halt,)
    elif items:
        ran, ran_halts = await tools_run.many(run, tuple(items))
    else:
        ran, ran_halts = (), ()
    for index, part, halt in zip(waiting, ran, ran_halts, strict=True):
        results[index], halts[index] = part, halt
    done: tuple[ToolResultPart, ...] = tuple(results)  # type: ignore[arg-type]
    if any(h is not None for h in halts):
        return round_halted(state, done, tuple(halts), point.choice)
    if resume.after_tools is not None and items:
        decided = replace(point, calls=tuple(zip((c for c, _ in slots), done, strict=True)))
        error = await resume.after_tools(decided, run)
        if error is not None:
            return Failure(error)
    state, decision = on_tool_results(state, done, point.choice, settings)
    if type(decision) is Finish:
        return Success(decision.result)
    if type(decision) is Fail:
        return Failure(decision.error)
    return state
