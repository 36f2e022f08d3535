"""How a halt (a termination, a pause, an error) inside the loop ends the run."""

from __future__ import annotations

from returns.result import Failure, Success

from fncore.core import (
    Halt,
    Outcome,
    Pause,
    Paused,
    PendingRequest,
    ResumePoint,
    RunResult,
    Terminate,
    ToolCallPart,
    ToolChoice,
    ToolResultPart,
)
from fncore.core._loop import LoopState, on_terminate
from fncore.runtime._tool_run import Halting


def halted(
    halt: Halt, state: LoopState, choice: ToolChoice, results: tuple[ToolResultPart, ...] = ()
) -> Outcome[RunResult]:
    """How a halt inside a round ends the run.

    A termination ends it with its output (closing a tool round); a pause pauses it (the
    round starts again on resume); an error fails it.
    """
    kind = type(halt)
    if kind is Terminate:
        return Success(on_terminate(state, halt, results))  # type: ignore[arg-type]
    if kind is Pause:
        point = ResumePoint(
            state.history, state.new, state.round, state.errors_in_a_row, state.usage, None, choice
        )
        return _paused(state, halt.requests, point)  # type: ignore[union-attr]
    return Failure(halt)


def _paused(
    state: LoopState, requests: tuple[PendingRequest, ...], point: ResumePoint
) -> Outcome[RunResult]:
    """The result of a paused run: no output yet; the agent saves the checkpoint."""
    return Success(
        RunResult("", state.new, state.usage, state.round, "paused", Paused("", requests, point))
    )


def round_halted(
    state: LoopState,
    results: tuple[ToolResultPart, ...],
    halts: tuple[Halting, ...],
    choice: ToolChoice,
) -> Outcome[RunResult]:
    """How a tool round that some calls halted ends the run.

    An error fails it, else a termination ends it, else it pauses, keeping the results of
    the calls that ran.

    When a pause asks to be alone (``one_at_a_time``), only the first such pause's
    requests are asked for; the round's other waiting calls are asked for on resume.
    """
    pauses: list[Pause] = []
    terminate: Terminate | None = None
    for halt in halts:
        kind = type(halt)
        if kind is Pause:
            pauses.append(halt)  # type: ignore[arg-type]
        elif kind is Terminate:
            terminate = terminate or halt  # type: ignore[assignment]
        elif halt is not None:
            return Failure(halt)
    if terminate is not None:
        return Success(on_terminate(state, terminate, results))
    alone = next((p for p in pauses if p.one_at_a_time), None)
    requests = alone.requests if alone is not None else tuple(r for p in pauses for r in p.requests)
    calls = [p for p in state.new[-1].parts if type(p) is ToolCallPart]
    slots = tuple(
        (call, None if type(halt) is Pause else part)
        for call, part, halt in zip(calls, results, halts, strict=True)
    )
    point = ResumePoint(
        state.history, state.new, state.round, state.errors_in_a_row, state.usage, slots, choice
    )
    return _paused(state, requests, point)
