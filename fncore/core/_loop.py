"""The agent loop's decisions, as pure transitions.

The runtime shell does the waiting (model calls, tools, hooks); every decision about what
happens next is made here, from values alone, so the loop's rules are tested without a
model or an event loop::

    start ─▶ (round: model) ─▶ on_response ─┬─▶ Finish
                   ▲                         ├─▶ Fail
                   │                         └─▶ RunTools ─▶ (tools) ─▶ on_tool_results ─┬─▶ Finish
                   └──────────────────────────────── NextRound (round + 1) ◀─────────────┴─▶ Fail
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, TypeAlias, final

from pydantic import BaseModel, ConfigDict, Field
from pydantic.dataclasses import dataclass as pydantic_dataclass
from returns.result import Result, Success

from fncore.core._checks import Seconds
from fncore.core._errors import (
    InvalidHistory,
    LoopError,
    MaxIterationsReached,
    TooManyToolErrors,
    UnknownToolCalled,
)
from fncore.core._messages import Message, ToolCallPart, ToolResultPart
from fncore.core._model import ModelResponse
from fncore.core._outcomes import Halt, Terminate
from fncore.core._pairing import check_pairing, open_calls, unanswered, with_unique_call_ids
from fncore.core._result import RunResult, StopReason
from fncore.core._tool_choice import ToolChoice
from fncore.core._tools import Tool
from fncore.core._usage import NO_USAGE, Usage
from fncore.core._value import maker

_AtLeastOne = Annotated[int, Field(ge=1)]


@final
@pydantic_dataclass(frozen=True, slots=True, config=ConfigDict(extra="forbid"))
class LoopSettings:
    """How the agent loop behaves. The defaults are those of the seeds, and bounded tools.

    Every field is checked when the settings are made (a `pydantic.ValidationError`, which
    is a ``ValueError``, names the field); the ``loop`` section of the configuration is this
    class, so the limits are declared once.
    """

    max_iterations: _AtLeastOne = 40
    """Most model rounds in one run."""
    max_consecutive_errors_per_request: _AtLeastOne = 3
    """Most rounds in a row with a failing tool call before the run stops."""
    terminate_on_unknown_calls: bool = False
    """Stop the run (instead of telling the model) when it calls an unknown tool."""
    include_detailed_errors: bool = False
    """Put the exception text of a failing tool in its result (it may leak internals)."""
    enabled: bool = True
    """Run the model's tool calls automatically. ``False`` (Microsoft Agent Framework's
    ``enabled``): a response with tool calls ends the run unexecuted, with
    ``stop_reason="awaiting_tools"``; a later run given their results continues."""
    tool_timeout: Seconds | None = 300.0
    """Seconds a tool may run before its call fails (``None``: no limit); a tool's own
    timeout wins."""
    max_concurrent_tools: _AtLeastOne = 8
    """Most tool calls of one round running at once."""
    max_tool_threads: _AtLeastOne = 16
    """Most sync tools of one agent running in worker threads at once; a thread abandoned
    past its timeout gives its place back."""
    hook_timeout: Seconds = 5.0
    """Default seconds a hook may take before it is skipped with a warning."""


@final
@dataclass(slots=True)
class LoopState:
    """Where a run is. Transitions return a new state; none mutates one."""

    history: tuple[Message, ...]
    """The conversation as the round's request sends it. The round's response joins it
    with the round's tool results (until then it is the last of ``new``), so a long
    history is copied once per round, not twice."""
    new: tuple[Message, ...] = ()
    """The messages this run added."""
    round: int = 1
    """The round in progress, from 1."""
    errors_in_a_row: int = 0
    """Consecutive rounds with a failing tool call."""
    usage: Usage = NO_USAGE
    """Tokens spent so far."""


@final
@dataclass(slots=True)
class Ready:
    """A tool call that passed validation and will go through ``tool_call``."""

    call: ToolCallPart
    tool: Tool
    args: BaseModel


@final
@dataclass(slots=True)
class Rejected:
    """A tool call answered without running (unknown tool, invalid arguments, tools off)."""

    result: ToolResultPart


@final
@dataclass(slots=True)
class Finish:
    """The run is over with this result."""

    result: RunResult


@final
@dataclass(slots=True)
class Fail:
    """The run is over with this error."""

    error: LoopError | InvalidHistory


@final
@dataclass(slots=True)
class RunTools:
    """Run these calls (in order), then call `on_tool_results`."""

    calls: tuple[Ready | Rejected, ...]


@final
@dataclass(slots=True)
class NextRound:
    """Start the next round (the state already counts it)."""


NEXT_ROUND = NextRound()

_message = maker(Message)
_result = maker(RunResult)

Decision: TypeAlias = Finish | Fail | RunTools | NextRound
"""What the shell does next."""


def start(
    messages: tuple[Message, ...],
    history: tuple[Message, ...] = (),
    pending: tuple[ToolCallPart, ...] = (),
) -> LoopState | Fail:
    """The state of a new run, in its first round; a `Fail` if the conversation is unpaired.

    Args:
        messages: The run's input, checked here, after the history.
        history: The session's history, already checked (its scan gave ``pending``).
        pending: The calls ``history`` leaves unanswered; ``messages`` must answer them.
    """
    if not pending and len(messages) == 1 and _plain(messages[0]):
        return LoopState(history + messages if history else messages, (), 1)
    found = open_calls(messages, pending, offset=len(history))
    if type(found) is InvalidHistory:
        return Fail(found)
    if found:
        return Fail(unanswered(found))  # type: ignore[arg-type]
    return LoopState(history + messages if history else messages, (), 1)


def _plain(message: object) -> bool:
    """Whether ``message`` is one `open_calls` finds nothing in: no call, no result.

    A message other than an assistant's that holds neither (a user's text, say) opens no
    call and answers none, wherever it is; the usual input of a run is one such message.
    """
    if type(message) is not Message or message.role == "assistant":
        return False
    for part in message.parts:
        kind = type(part)
        if kind is ToolResultPart or kind is ToolCallPart:
            return False
    return True


def check_history(messages: tuple[Message, ...]) -> Fail | None:
    """A `Fail` unless every tool call in ``messages`` is answered, by position."""
    error = check_pairing(messages)
    return None if error is None else Fail(error)


def _distinct(calls: list[ToolCallPart]) -> bool:
    return len({c.id for c in calls}) == len(calls)


def _closing(calls: list[ToolCallPart], content: str) -> Message:
    return Message(
        "tool", tuple(ToolResultPart(c.id, c.name, content, is_error=True) for c in calls)
    )


def on_response(
    state: LoopState,
    response: ModelResponse,
    tools: Mapping[str, Tool],
    tool_choice: ToolChoice,
    settings: LoopSettings,
) -> tuple[LoopState, Decision]:
    """Decide what follows a model response: finish with its text, or run its tool calls."""
    message = response.message
    usage = state.usage if response.usage is NO_USAGE else state.usage + response.usage
    calls = []  # a loop, not a comprehension: no frame of its own (Python 3.11)
    for part in message.parts:
        if type(part) is ToolCallPart:
            calls.append(part)
    if calls and not (
        calls[0].id if len(calls) == 1 else all(c.id for c in calls) and _distinct(calls)
    ):
        fixed = with_unique_call_ids(message)
        if fixed is not message:
            message = fixed
            calls = [p for p in message.parts if type(p) is ToolCallPart]
    new = state.new + (message,)  # noqa: RUF005 - a third cheaper than unpacking
    history = state.history
    if not calls or not settings.enabled:
        done = LoopState(history, new, state.round, state.errors_in_a_row, usage)
        stop: StopReason = "awaiting_tools" if calls else "completed"
        return done, Finish(_result(message.text, new, usage, state.round, stop))
    plan: list[Ready | Rejected] = []
    for call in calls:
        tool = tools.get(call.name)
        if tool_choice == "none":
            content = (
                "Tool calls are disabled for this request (tool_choice='none'); answer in text."
            )
            plan.append(Rejected(ToolResultPart(call.id, call.name, content, is_error=True)))
        elif tool is None:
            if settings.terminate_on_unknown_calls:
                closed = (*new, _closing(calls, f"Not run: unknown tool {call.name!r}."))
                error = UnknownToolCalled(
                    message=(
                        f"the model called unknown tool {call.name!r}; offer it, or set "
                        "terminate_on_unknown_calls=False to let the model recover"
                    ),
                    messages=closed,
                    usage=usage,
                    tool_name=call.name,
                )
                return LoopState(history, new, state.round, state.errors_in_a_row, usage), Fail(
                    error
                )
            available = ", ".join(sorted(tools)) or "none"
            content = f"Unknown tool {call.name!r}. Available tools: {available}."
            plan.append(Rejected(ToolResultPart(call.id, call.name, content, is_error=True)))
        else:
            checked = tool.check(call.arguments)
            if type(checked) is str:
                plan.append(Rejected(ToolResultPart(call.id, call.name, checked, is_error=True)))
            else:
                plan.append(Ready(call, tool, checked))  # type: ignore[arg-type]
    return LoopState(history, new, state.round, state.errors_in_a_row, usage), RunTools(tuple(plan))


def on_tool_results(
    state: LoopState,
    results: tuple[ToolResultPart, ...],
    tool_choice: ToolChoice,
    settings: LoopSettings,
) -> tuple[LoopState, Decision]:
    """Record a round's tool results (in call order) and decide whether to go on.

    The round's response (the last of ``state.new``) and its results join the history.
    """
    message = _message("tool", results)
    history = state.history + (state.new[-1], message)  # noqa: RUF005 - twice as fast
    new = state.new + (message,)  # noqa: RUF005 - a third cheaper than unpacking
    failed = False
    for r in results:
        if r.is_error:
            failed = True
            break
    errors = state.errors_in_a_row + 1 if failed else 0
    after = LoopState(history, new, state.round, errors, state.usage)
    if tool_choice != "auto" and tool_choice != "none":
        output = "\n".join(r.content for r in results)
        return after, Finish(_result(output, new, state.usage, state.round, "tool_required"))
    if errors >= settings.max_consecutive_errors_per_request:
        return after, Fail(
            TooManyToolErrors(
                message=(
                    f"tool calls failed in {errors} rounds in a row; check the tools' results "
                    "in `messages`, or raise max_consecutive_errors_per_request"
                ),
                messages=new,
                usage=state.usage,
            )
        )
    if state.round >= settings.max_iterations:
        rounds = "1 round" if state.round == 1 else f"{state.round} rounds"
        return after, Fail(
            MaxIterationsReached(
                message=(
                    f"the model still asked for tools after {rounds}; "
                    "raise max_iterations or give the agent a narrower task"
                ),
                messages=new,
                usage=state.usage,
            )
        )
    after.round += 1
    return after, NEXT_ROUND


def terminated(
    terminate: Terminate,
    new: tuple[Message, ...] = (),
    usage: Usage = NO_USAGE,
    rounds: int = 0,
) -> RunResult:
    """The result of a run a middleware terminated: its output closes the transcript."""
    if terminate.output:
        new = (*new, Message.assistant(terminate.output))
    return RunResult(terminate.output, new, usage, rounds, "terminated")


def terminated_after(terminate: Terminate, inner: Result[RunResult, Halt] | None) -> RunResult:
    """The result of a run a ``run`` middleware terminated after the loop ran (``inner``).

    It keeps the loop's accounting: its messages (every call paired), usage and rounds.
    """
    if inner is None:
        return terminated(terminate)
    if type(inner) is Success:
        done: RunResult = inner.unwrap()
        return terminated(terminate, done.messages, done.usage, done.rounds)
    error = inner.failure()
    if isinstance(error, LoopError):
        rounds = sum(1 for m in error.messages if m.role == "assistant")
        return terminated(terminate, error.messages, error.usage, rounds)
    return terminated(terminate)


def on_terminate(
    state: LoopState,
    terminate: Terminate,
    results: tuple[ToolResultPart, ...] = (),
) -> RunResult:
    """The result of a run terminated inside the loop; ``results`` close a tool round."""
    new = (*state.new, Message("tool", results)) if results else state.new
    return terminated(terminate, new, state.usage, state.round)


def replace_history(state: LoopState, messages: tuple[Message, ...]) -> LoopState | Fail:
    """Adopt a compacted history, if it keeps every tool call paired with its result."""
    return check_history(messages) or LoopState(
        messages, state.new, state.round, state.errors_in_a_row, state.usage
    )
