"""The imperative shell of the agent loop: the innermost handlers and the round loop.

Every decision is delegated to `fncore.core._loop`; this module only awaits (the model,
the tools, the hooks), applies timeouts and concurrency, and streams events.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from returns.result import Failure, Success

from fncore.core import (
    AgentError,
    Compaction,
    CompressContext,
    EventMapFailed,
    Halt,
    InvalidHistory,
    Message,
    Model,
    ModelCallContext,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    Outcome,
    Pause,
    Paused,
    PendingRequest,
    ReasoningContext,
    Resume,
    ResumePoint,
    RoundFinished,
    RoundStart,
    RoundStarted,
    RunContext,
    RunInfo,
    RunResult,
    Session,
    SessionError,
    State,
    SystemPromptContext,
    Terminate,
    Tool,
    ToolCallContext,
    ToolCallPart,
    ToolChoice,
    ToolResult,
    ToolResultPart,
    ToolSpec,
    check_pairing,
)
from fncore.core._contexts import RoundNote, RunRecord
from fncore.core._fold import Handler, Layer, Step, chain_steps, fold_onion, short_repr
from fncore.core._loop import (
    Fail,
    Finish,
    LoopSettings,
    LoopState,
    NextRound,
    Ready,
    Rejected,
    on_response,
    on_terminate,
    on_tool_results,
    replace_history,
    start,
)
from fncore.core._output import OutputSpec, on_output
from fncore.core._session import pending_calls
from fncore.runtime._call_usage import spend, with_calls
from fncore.runtime._hooks import HookEntry, notify
from fncore.runtime._model_call import ask, checked, raised_by
from fncore.runtime._subagent import Delegate, children_usage
from fncore.runtime._tool_run import Halting, ToolRunner

NamedLayer = tuple[str, Layer[Any, Any]]


@dataclass(frozen=True, slots=True)
class Layers:
    """Each position's middleware, ordered outermost first, dependencies bound."""

    run: Sequence[NamedLayer] = ()
    reasoning: Sequence[NamedLayer] = ()
    model_call: Sequence[NamedLayer] = ()
    compress_context: Sequence[NamedLayer] = ()
    system_prompt: Sequence[tuple[str, Step[Any, Any]]] = ()
    tool_call: Mapping[str, Sequence[NamedLayer]] | None = None
    """Per tool name: the ``tool_call`` layers that apply to it."""


@dataclass(frozen=True, slots=True)
class Hooks:
    """Each event's hooks, with their timeouts resolved."""

    run_start: tuple[HookEntry, ...] = ()
    run_end: tuple[HookEntry, ...] = ()
    round_start: tuple[HookEntry, ...] = ()
    tool_start: tuple[HookEntry, ...] = ()
    tool_end: tuple[HookEntry, ...] = ()
    compaction: tuple[HookEntry, ...] = ()
    error: tuple[HookEntry, ...] = ()
    subagent_start: tuple[HookEntry, ...] = ()
    subagent_end: tuple[HookEntry, ...] = ()


def session_state(session: Session | None, store: object = None) -> State | SessionError:
    """A fresh `State` holding a deep copy of ``session``'s state (empty without one).

    Args:
        session: The session the run continues, if any.
        store: The session store ``session`` came from; ``None`` when a run middleware gave it.

    Returns:
        The state, or a `SessionError` if it is not a mapping or a value cannot be copied.
    """
    if session is None:
        return State()
    stored: object = session.state
    if type(stored) is not MappingProxyType and not isinstance(stored, Mapping):
        return SessionError(
            message=(
                f"{_source(store)} returned session {session.id!r} with a state that is "
                f"{short_repr(stored)} ({type(stored).__name__}); a session's state must be a "
                "mapping of names to values; nothing ran"
            ),
            session_id=session.id,
        )
    if not stored:
        return State()
    memo: dict[int, Any] = {}  # one memo: values shared between keys stay shared
    copied: dict[str, object] = {}
    for key, value in stored.items():
        try:
            copied[key] = copy.deepcopy(value, memo)
        except Exception as exc:
            return SessionError(
                message=(
                    f"session {session.id!r} (from {_source(store)}) holds state {key!r} that "
                    f"cannot be copied into the run ({type(exc).__name__}: {exc}); keep values "
                    "that copy.deepcopy can copy (plain data, dataclasses) in session state; "
                    "nothing ran"
                ),
                session_id=session.id,
            )
    return State(copied)


def _source(store: object) -> str:
    """Where a session came from, for an error's message."""
    return "a run middleware" if store is None else f"session store {type(store).__name__}"


def _messages_ok(ctx: CompressContext, value: object) -> bool:
    """A compressed history is a tuple of messages (unchanged, or checked one by one)."""
    return value is ctx.messages or all(type(m) is Message for m in value)  # type: ignore[attr-defined]


def _halted(
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


def _round_halted(
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


async def _keep_history(ctx: CompressContext) -> Outcome[tuple[Message, ...]]:
    return Success(ctx.messages)


class Engine:
    """The folded handlers of one stack, and the loop that drives them.

    A position without middleware is skipped outright: no context is built for it and no
    outcome is wrapped, so an empty position costs nothing.
    """

    __slots__ = (
        "_compress",
        "_instructions",
        "_looped",
        "_model_call",
        "_noted",
        "_reasoning",
        "_run_onion",
        "_specs",
        "_system_prompt",
        "_tools_run",
        "hooks",
        "model",
        "offered",
        "output",
        "settings",
        "tools",
    )

    def __init__(
        self,
        *,
        model: Model,
        tools: Mapping[str, Tool],
        offered: tuple[Tool, ...],
        instructions: str,
        settings: LoopSettings,
        layers: Layers,
        hooks: Hooks,
    ) -> None:
        self.model = model
        self.tools = tools
        self.offered = offered
        self.settings = settings
        self.hooks = hooks
        self.output: OutputSpec[Any] | None = None
        """The agent's ``output_type``, if any: asked of the model, validated by the loop."""
        self._instructions = instructions
        self._specs: tuple[tuple[Tool, ...], tuple[ToolSpec, ...]] = (
            offered,
            tuple(t.spec for t in offered),
        )
        per_tool = layers.tool_call or {}
        self._tools_run = ToolRunner(
            settings,
            {
                name: fold_onion("tool_call", per_tool[name], self._tool_layer_end, ToolResult)
                for name in tools
                if per_tool.get(name)
            },
            hooks.tool_start,
            hooks.tool_end,
            (hooks.subagent_start, hooks.subagent_end),
        )
        self._looped = (
            self._loop_and_children
            if any(type(t.function) is Delegate for t in tools.values())
            else self._loop
        )
        """The loop; with sub-agents among the tools, it adds up their usage at its end."""
        self._model_call: Handler[ModelCallContext, ModelResponse] | None = (
            fold_onion("model_call", layers.model_call, self._call_model, ModelResponse)
            if layers.model_call
            else None
        )
        self._system_prompt: Callable[[SystemPromptContext, str], Awaitable[Outcome[str]]] | None
        self._system_prompt = chain_steps("system_prompt", layers.system_prompt)
        self._reasoning: Handler[ReasoningContext, ModelResponse] | None = (
            fold_onion("reasoning", layers.reasoning, self._reasoning_end, ModelResponse)
            if layers.reasoning
            else None
        )
        self._noted = bool(layers.reasoning or layers.model_call)
        """Whether a round needs a `RoundNote` (middleware may change what is sent)."""
        self._compress: Handler[CompressContext, tuple[Message, ...]] | None = (
            fold_onion(
                "compress_context", layers.compress_context, _keep_history, tuple, _messages_ok
            )
            if layers.compress_context
            else None
        )
        self._run_onion: Handler[RunContext, RunResult] | None = (
            fold_onion("run", layers.run, self._run_end, RunResult) if layers.run else None
        )

    @property
    def has_run_layers(self) -> bool:
        """Whether ``run`` middleware wrap the loop (they may change what the run commits)."""
        return self._run_onion is not None

    async def run(
        self,
        run: RunInfo,
        messages: tuple[Message, ...],
        session: Session | None,
        tool_choice: ToolChoice,
        settings: ModelSettings,
        record: RunRecord | None,
    ) -> Outcome[RunResult]:
        """Run through the ``run`` onion (if any) and the loop inside it.

        ``record`` (required when there are ``run`` middleware) receives what the loop ran
        with: the input, the session and the run, as the middleware left them.
        """
        if self._run_onion is None:
            return await self._looped(run, session, messages, tool_choice, settings)
        return await self._run_onion(
            RunContext(run, messages, tool_choice, settings, session, record or RunRecord())
        )

    # -- innermost handlers ------------------------------------------------------------

    async def _run_end(self, ctx: RunContext) -> Outcome[RunResult]:
        record = ctx._record
        run = ctx.run
        session = ctx.session
        if session is not record.session:  # a run middleware moved the run to another session
            state = session_state(session)
            if type(state) is not State:
                return Failure(state)
            run = replace(
                run, session_id=None if session is None else session.id, session_state=state
            )
        record.session, record.input, record.run = session, ctx.messages, run
        outcome = await self._looped(run, session, ctx.messages, ctx.tool_choice, ctx.settings)
        if type(outcome) is Success:  # so run middleware see what middleware calls spent
            done, record.counted = with_calls(run, outcome.unwrap())
            if done is not outcome.unwrap():
                outcome = Success(done)
        record.outcome = outcome
        return outcome

    def _reasoning_end(self, ctx: ReasoningContext) -> Awaitable[Outcome[ModelResponse]]:
        return self._reason(
            ctx.run, ctx.round, ctx.messages, ctx.tools, ctx.tool_choice, ctx.settings, ctx._note
        )

    async def _reason(
        self,
        run: RunInfo,
        round_no: int,
        messages: tuple[Message, ...],
        tools: tuple[Tool, ...],
        tool_choice: ToolChoice,
        settings: ModelSettings,
        note: RoundNote | None,
    ) -> Outcome[ModelResponse]:
        if note is not None:
            if messages is not note.history:  # a reasoning middleware changed the history
                broken = check_pairing(messages)
                if broken is not None:
                    return Failure(replace(broken, position="reasoning"))
                note.history = messages
            note.tool_choice = tool_choice
        prompt = self._instructions
        if self._system_prompt is not None:
            assembled = await self._system_prompt(
                SystemPromptContext(run, round_no, messages), prompt
            )
            if type(assembled) is Failure:
                return assembled
            prompt = assembled.unwrap()
        offered, specs = self._specs
        if tools is not offered:
            specs = tuple(t.spec for t in tools)
        output = self.output
        if output is None:
            request = ModelRequest(messages, prompt, specs, tool_choice, settings)
        elif output.strategy == "native":
            request = ModelRequest(
                messages, prompt, specs, tool_choice, settings, output_schema=output.schema
            )
        else:
            request = ModelRequest(messages, prompt, (*specs, output.tool), tool_choice, settings)
        if self._model_call is not None:
            return await self._model_call(ModelCallContext(run, request, self.model, note))  # type: ignore[arg-type]
        # No model_call middleware: `ask`'s common path, inlined to save a frame per round.
        if run.emit is not None:
            return await ask(self.model, request, run.emit)
        model = self.model
        try:
            out: Any = await model.request(request)
        except Exception as exc:
            return Failure(raised_by(model, exc))
        if type(out) is Success:
            answer = out._inner_value
            if type(answer) is ModelResponse:
                message: object = answer.message
                if type(message) is Message and message.role == "assistant":
                    return out
        return checked(model, out)

    async def _call_model(self, ctx: ModelCallContext) -> Outcome[ModelResponse]:
        note = ctx._note
        request = ctx.request
        if request.messages is not note.history:  # not the loop's checked history
            broken = check_pairing(request.messages)
            if broken is not None:
                return Failure(replace(broken, position="model_call"))
            note.history = request.messages
        note.tool_choice = request.tool_choice
        return await ask(ctx.model, request, ctx.run.emit)

    async def call_model(
        self, run: RunInfo, request: ModelRequest, model: Model | None
    ) -> Outcome[ModelResponse]:
        """A middleware's own model call (`RunInfo.call_model`), through ``model_call``.

        The request's pairing is checked, and nothing is streamed to the run's consumer.
        """
        quiet = run if run.emit is None else replace(run, emit=None)
        target = self.model if model is None else model
        if self._model_call is not None:
            outcome = await self._model_call(ModelCallContext(quiet, request, target))
        else:
            broken = check_pairing(request.messages)
            if broken is not None:
                return Failure(replace(broken, position="model_call"))
            outcome = await ask(target, request, None)
        if type(outcome) is Success:
            spend(run, outcome.unwrap().usage)
        return outcome

    async def _tool_layer_end(self, ctx: ToolCallContext) -> Outcome[ToolResult]:
        out = await self._tools_run.invoke(ctx.tool, ctx.args, ctx.run, ctx.call)
        return Success(out) if type(out) is ToolResult else Failure(out)

    async def _loop_and_children(
        self,
        run: RunInfo,
        session: Session | None,
        messages: tuple[Message, ...],
        tool_choice: ToolChoice,
        model_settings: ModelSettings,
    ) -> Outcome[RunResult]:
        """The loop, its result's usage counting what its sub-agents spent."""
        outcome = await self._loop(run, session, messages, tool_choice, model_settings)
        if type(outcome) is Success:
            spent = children_usage(run)
            if spent is not None:
                done = outcome.unwrap()
                return Success(replace(done, usage=done.usage + spent))
        return outcome

    # -- the loop ------------------------------------------------------------------------

    async def _loop(
        self,
        run: RunInfo,
        session: Session | None,
        messages: tuple[Message, ...],
        tool_choice: ToolChoice,
        model_settings: ModelSettings,
    ) -> Outcome[RunResult]:
        settings = self.settings
        hooks = self.hooks
        emit = run.emit
        state: LoopState
        resume = run._resume
        if resume is not None:  # a paused run goes on from its checkpoint
            point = resume.point
            state = LoopState(
                point.history, point.new, point.round, point.errors_in_a_row, point.usage
            )
            if point.calls is not None:
                went_on = await self._resumed_round(run, state, point, resume)
                if type(went_on) is not LoopState:
                    return went_on
                state = went_on
        else:
            if session is None:
                started = start(messages)
            else:
                pending = pending_calls(session)
                if type(pending) is InvalidHistory:
                    return Failure(
                        replace(pending, message=f"session {session.id!r}: {pending.message}")
                    )
                started = start(messages, session.messages, pending)  # type: ignore[arg-type]
            if type(started) is Fail:
                return Failure(started.error)
            state = started
        tools_run = self._tools_run
        output = self.output
        failures = 0
        while True:
            round_no = state.round
            if emit is not None:
                try:
                    emit(RoundStarted(round_no))
                except EventMapFailed as failed:
                    return Failure(failed.error)
            if hooks.round_start:
                await notify(hooks.round_start, RoundStart(run, round_no))
            if self._compress is not None:
                compacted = await self._compact(run, round_no, state, tool_choice)
                if type(compacted) is not LoopState:
                    return compacted
                state = compacted
            note: RoundNote | None = None
            if self._noted:
                note = RoundNote()
                note.history = state.history
            if self._reasoning is None:
                reasoned = await self._reason(
                    run, round_no, state.history, self.offered, tool_choice, model_settings, note
                )
            else:
                reasoned = await self._reasoning(
                    ReasoningContext(
                        run,
                        round_no,
                        state.history,
                        self.offered,
                        tool_choice,
                        model_settings,
                        note,  # type: ignore[arg-type]
                    )
                )
            if type(reasoned) is Failure:
                return _halted(reasoned.failure(), state, tool_choice)
            response: ModelResponse = reasoned.unwrap()
            message: object = response.message
            if type(message) is not Message:
                return Failure(
                    AgentError(
                        message=(
                            f"the round's ModelResponse holds a {type(message).__name__} "
                            "as its message, not a Message"
                        ),
                        position="reasoning" if self._reasoning is not None else "model_call",
                    )
                )
            choice = tool_choice if note is None or note.tool_choice is None else note.tool_choice
            settled = (
                None if output is None else on_output(state, response, output, failures, settings)
            )
            if settled is None:
                state, decision = on_response(state, response, self.tools, choice, settings)
            else:
                state, decision = settled
            if emit is not None:
                kept = state.new[-1] if settled is None else response.message
                if kept is not response.message:  # the loop gave calls unique ids
                    response = replace(response, message=kept)
                try:
                    emit(RoundFinished(round_no, response))
                except EventMapFailed as failed:
                    return Failure(failed.error)
            if type(decision) is Finish:
                return Success(decision.result)
            if type(decision) is Fail:
                return Failure(decision.error)
            if type(decision) is NextRound:  # an answer that did not fit the output type
                failures += 1
                continue
            calls = decision.calls
            if len(calls) == 1:
                part, halt = await tools_run.one(run, calls[0])
                results: tuple[ToolResultPart, ...] = (part,)
                if halt is not None:
                    return _round_halted(state, results, (halt,), choice)
            else:
                results, halts = await tools_run.many(run, calls)
                if any(h is not None for h in halts):
                    return _round_halted(state, results, halts, choice)
            state, decision = on_tool_results(state, results, choice, settings)
            if type(decision) is Finish:
                return Success(decision.result)
            if type(decision) is Fail:
                return Failure(decision.error)

    async def _resumed_round(
        self, run: RunInfo, state: LoopState, point: ResumePoint, resume: Resume
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
            tool = self.tools.get(call.name)
            checked = f"Unknown tool {call.name!r}." if tool is None else tool.check(call.arguments)
            if type(checked) is str:
                items.append(Rejected(ToolResultPart(call.id, call.name, checked, is_error=True)))
            else:
                items.append(Ready(call, tool, checked))  # type: ignore[arg-type]
            waiting.append(index)
        if len(items) == 1:
            part, halt = await self._tools_run.one(run, items[0])
            ran: tuple[ToolResultPart, ...] = (part,)
            ran_halts: tuple[Halting, ...] = (halt,)
        elif items:
            ran, ran_halts = await self._tools_run.many(run, tuple(items))
        else:
            ran, ran_halts = (), ()
        for index, part, halt in zip(waiting, ran, ran_halts, strict=True):
            results[index], halts[index] = part, halt
        done: tuple[ToolResultPart, ...] = tuple(results)  # type: ignore[arg-type]
        if any(h is not None for h in halts):
            return _round_halted(state, done, tuple(halts), point.choice)
        if resume.after_tools is not None and items:
            decided = replace(point, calls=tuple(zip((c for c, _ in slots), done, strict=True)))
            error = await resume.after_tools(decided, run)
            if error is not None:
                return Failure(error)
        state, decision = on_tool_results(state, done, point.choice, self.settings)
        if type(decision) is Finish:
            return Success(decision.result)
        if type(decision) is Fail:
            return Failure(decision.error)
        return state

    async def _compact(
        self, run: RunInfo, round_no: int, state: LoopState, tool_choice: ToolChoice
    ) -> LoopState | Outcome[RunResult]:
        """Run ``compress_context`` (it sees the assembled system prompt); the new state."""
        prompt = self._instructions
        if self._system_prompt is not None:
            assembled = await self._system_prompt(
                SystemPromptContext(run, round_no, state.history), prompt
            )
            if type(assembled) is Failure:
                return _halted(assembled.failure(), state, tool_choice)
            prompt = assembled.unwrap()
        compressed = await self._compress(  # type: ignore[misc]
            CompressContext(run, round_no, state.history, prompt)
        )
        if type(compressed) is Failure:
            return _halted(compressed.failure(), state, tool_choice)
        history = compressed.unwrap()
        if history is state.history:
            return state
        replaced = replace_history(state, history)
        if type(replaced) is Fail:
            return Failure(replace(replaced.error, position="compress_context"))
        if self.hooks.compaction:
            await notify(self.hooks.compaction, Compaction(run, state.history, history))
        return replaced
