"""The imperative shell of the agent loop: the innermost handlers and the round loop.

Every decision is delegated to `fncore.core._loop`; this module only awaits (the model,
the tools, the hooks), applies timeouts and concurrency, and streams events.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from pydantic import BaseModel
from returns.result import Failure, Success

from fncore.core import (
    AgentError,
    Compaction,
    EventMapFailed,
    Halt,
    InvalidHistory,
    Message,
    Model,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    Outcome,
    RoundFinished,
    RoundStart,
    RoundStarted,
    RunInfo,
    RunResult,
    Session,
    State,
    SystemPromptContext,
    Tool,
    ToolCallPart,
    ToolChoice,
    ToolResult,
    ToolResultPart,
    ToolSpec,
)
from fncore.core._fold import chain_steps
from fncore.core._loop import (
    Fail,
    Finish,
    LoopSettings,
    LoopState,
    NextRound,
    on_response,
    on_tool_results,
    replace_history,
    start,
)
from fncore.core._output import OutputSpec, on_output
from fncore.core._pairing import PairedHistories
from fncore.core._position_names import (
    COMPRESS_CONTEXT,
    MODEL_CALL,
    REASONING,
    RUN,
    SYSTEM_PROMPT,
    TOOL_CALL,
    Position,
)
from fncore.core._positions import POSITIONS
from fncore.core._session import pending_calls
from fncore.core._turn import vouch
from fncore.core._usage import NO_USAGE
from fncore.core._value import maker, success
from fncore.runtime._call_usage import spend, with_calls
from fncore.runtime._halts import halted, round_halted
from fncore.runtime._handlers import End, NamedLayer, NamedStep, Ran, handler, record
from fncore.runtime._hooks import Hooks, notify
from fncore.runtime._model_call import answered, ask, raised_by, sent
from fncore.runtime._resumed_round import resumed_round
from fncore.runtime._session_state import session_state
from fncore.runtime._steps import model_step
from fncore.runtime._subagent import Delegate, children_usage
from fncore.runtime._tool_run import ToolRunner

_request = maker(ModelRequest)


async def _keep_history(
    run: RunInfo, round_no: int, messages: tuple[Message, ...], *_: object
) -> Outcome[tuple[Message, ...]]:
    return Success(messages)


class Engine:
    """The folded handlers of one stack, and the loop that drives them.

    Each position's handler is built from `POSITIONS` the same way (see
    `fncore.runtime._handlers`) and called with its context's fields: a position without
    middleware is its innermost end itself, so no context is built for it and an empty
    position costs nothing.
    """

    __slots__ = (
        "_compress",
        "_direct",
        "_instructions",
        "_looped",
        "_model_call",
        "_model_layered",
        "_paired",
        "_reasoned",
        "_reasoning",
        "_run",
        "_specs",
        "_system_prompt",
        "_tools_run",
        "hooks",
        "model",
        "offered",
        "output",
        "settings",
        "tools",
        "wrapped",
    )

    def __init__(
        self,
        *,
        model: Model,
        tools: Mapping[str, Tool],
        offered: tuple[Tool, ...],
        instructions: str,
        settings: LoopSettings,
        layers: Mapping[Position, Sequence[NamedLayer]],
        steps: Mapping[Position, Sequence[NamedStep]],
        tool_layers: Mapping[str, Sequence[NamedLayer]],
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
        self._paired = PairedHistories()
        """Histories a middleware changed that passed the pairing check, remembered."""
        self._specs: tuple[tuple[Tool, ...], tuple[ToolSpec, ...]] = (
            offered,
            tuple(t.spec for t in offered),
        )
        self._looped = looped = (
            self._loop_and_children
            if any(type(t.function) is Delegate for t in tools.values())
            else self._loop
        )
        ends: dict[Position, End] = {
            RUN: self._run_end if layers.get(RUN) else looped,
            REASONING: self._reason,
            MODEL_CALL: self._call_model,
            TOOL_CALL: self._tool_end,
            COMPRESS_CONTEXT: _keep_history,
        }
        handlers: dict[Position, Any] = {}
        for name, info in POSITIONS.items():
            if info.kind == "chain":
                handlers[name] = chain_steps(name, steps.get(name, ()))
            elif info.per_tool:
                handlers[name] = {
                    tool: handler(info, tool_layers[tool], ends[name])
                    for tool in tools
                    if tool_layers.get(tool)
                }
            else:
                handlers[name] = handler(info, layers.get(name, ()), ends[name])
        self._run: End = handlers[RUN]
        self._reasoning: End = handlers[REASONING]
        self._model_call: End = handlers[MODEL_CALL]
        self._compress: End | None = (
            handlers[COMPRESS_CONTEXT] if layers.get(COMPRESS_CONTEXT) else None
        )
        """``None`` without middleware: the position is skipped (its end changes nothing)."""
        self._system_prompt: Callable[[SystemPromptContext, str], Awaitable[Outcome[str]]] | None
        self._system_prompt = handlers[SYSTEM_PROMPT]
        self._tools_run = ToolRunner(
            settings,
            handlers[TOOL_CALL],
            hooks.tool_start,
            hooks.tool_end,
            (hooks.subagent_start, hooks.subagent_end),
        )
        self._model_layered = bool(layers.get(MODEL_CALL))
        """Whether ``model_call`` middleware stand between a round and the model."""
        self._reasoned = bool(layers.get(REASONING))
        """Whether ``reasoning`` middleware wrap the round (they may change what is sent)."""
        self.wrapped = bool(layers.get(RUN))
        """Whether ``run`` middleware wrap the loop (it then records what it ran with)."""
        self._direct = not (self._reasoned or self._model_layered or self._system_prompt)
        """Whether the loop builds and sends each round's request itself (nothing wraps it)."""

    def run(
        self,
        run: RunInfo,
        messages: tuple[Message, ...],
        session: Session | None,
        tool_choice: ToolChoice,
        settings: ModelSettings,
    ) -> Awaitable[Outcome[RunResult]]:
        """The ``run`` onion's (if any) coroutine around the loop: a frame less than awaiting.

        Under ``run`` middleware, `fncore.runtime._handlers.take_record` takes what it ran with.
        """
        return self._run(run, messages, tool_choice, settings, session, session)

    # -- innermost handlers ------------------------------------------------------------

    async def _run_end(
        self,
        run: RunInfo,
        messages: tuple[Message, ...],
        tool_choice: ToolChoice,
        settings: ModelSettings,
        session: Session | None,
        loaded: Session | None,
    ) -> Outcome[RunResult]:
        """The loop under ``run`` middleware: it records what it ran with."""
        if session is not loaded:  # a run middleware moved the run to another session
            state = session_state(session)
            if type(state) is not State:
                return Failure(state)
            run = replace(
                run, session_id=None if session is None else session.id, session_state=state
            )
        outcome = await self._looped(run, messages, tool_choice, settings, session)
        counted = NO_USAGE
        if type(outcome) is Success:  # so run middleware see what middleware calls spent
            done = outcome.unwrap()
            with_spent, counted = with_calls(run, done)
            if with_spent is not done:
                outcome = Success(with_spent)
        record(run.state, Ran(session, messages, run, outcome, counted))
        return outcome

    async def _reason(
        self,
        run: RunInfo,
        round_no: int,
        messages: tuple[Message, ...],
        tools: tuple[Tool, ...],
        tool_choice: ToolChoice,
        settings: ModelSettings,
        paired: tuple[Message, ...] | None,
        prompt: str | None,
        choice: ToolChoice | None,
    ) -> Outcome[ModelResponse]:
        """``reasoning``'s end: assemble the prompt (unless ``prompt`` is), ask the model.

        ``paired`` is the history the loop checked: only one a middleware changed is
        checked again. ``choice`` is the tool choice the loop chose: the response of a
        request that a ``reasoning`` middleware sent with another returns what was sent.
        """
        if messages is not paired:  # a reasoning middleware changed the history
            broken = self._paired.check(messages, paired or ())
            if broken is not None:
                return Failure(replace(broken, position=REASONING))
        if prompt is None:
            prompt = self._instructions
            if self._system_prompt is not None:
                assembled = await self._prompt(run, round_no, messages)
                if not isinstance(assembled, str):
                    return assembled
                prompt = assembled
        request = self._request(messages, tools, tool_choice, settings, prompt)
        steps = run._steps
        if steps is not None:  # a durable run: the pass is one step
            out = await model_step(
                steps, f"model_call:{round_no}", partial(self._send, run, request), request
            )
        elif self._model_layered:
            out = await self._model_call(run, request, self.model, request)
        elif run.emit is not None:
            out = await ask(self.model, request, run.emit)
        else:  # no model_call middleware: the model is awaited here (a frame less per round)
            model = self.model
            try:
                answer: Any = await model.request(request)
            except Exception as exc:
                return Failure(raised_by(model, exc))
            out = answered(model, answer)
        if tool_choice is not choice:  # the loop follows what was sent, which a middleware changed
            return sent(out, request)
        return out

    def _send(self, run: RunInfo, request: ModelRequest) -> Awaitable[Outcome[ModelResponse]]:
        """One pass through ``model_call`` (the bare model call without middleware)."""
        if self._model_layered:
            return self._model_call(run, request, self.model, request)
        return ask(self.model, request, run.emit)

    def _request(
        self,
        messages: tuple[Message, ...],
        tools: tuple[Tool, ...],
        tool_choice: ToolChoice,
        settings: ModelSettings,
        prompt: str,
    ) -> ModelRequest:
        """The round's request: ``messages`` with ``prompt``, ``tools`` and the output's schema."""
        offered, specs = self._specs
        if tools is not offered:
            specs = tuple(t.spec for t in tools)
        output = self.output
        if output is None:
            return _request(messages, prompt, specs, tool_choice, settings)
        if output.strategy == "native":
            return _request(
                messages, prompt, specs, tool_choice, settings, output_schema=output.schema
            )
        return _request(messages, prompt, (*specs, output.tool), tool_choice, settings)

    async def _prompt(
        self, run: RunInfo, round_no: int, messages: tuple[Message, ...]
    ) -> str | Failure[Halt]:
        """The round's system prompt: the agent's instructions through the transformers."""
        prompt = self._instructions
        if self._system_prompt is None:
            return prompt
        assembled = await self._system_prompt(SystemPromptContext(run, round_no, messages), prompt)
        return assembled.unwrap() if type(assembled) is Success else assembled  # type: ignore[return-value]

    async def _call_model(
        self, run: RunInfo, request: ModelRequest, model: Model, asked: ModelRequest | None
    ) -> Outcome[ModelResponse]:
        """``model_call``'s end: send ``request`` (``asked``: as the round built it).

        A request middleware changed is checked for pairing again (a middleware's own
        call, ``asked`` is ``None``, always is), and its response returns what was sent.
        """
        if request is not asked:  # a middleware changed the request, or sends its own
            if asked is None or request.messages is not asked.messages:
                checked = () if asked is None else asked.messages
                broken = self._paired.check(request.messages, checked)
                if broken is not None:
                    return Failure(replace(broken, position=MODEL_CALL))
            out = await ask(model, request, run.emit)
            return out if asked is None else sent(out, request)
        return await ask(model, request, run.emit)

    async def call_model(
        self, run: RunInfo, request: ModelRequest, model: Model | None
    ) -> Outcome[ModelResponse]:
        """A middleware's own model call (`RunInfo.call_model`), through ``model_call``.

        The request's pairing is checked, and nothing is streamed to the run's consumer.
        """
        quiet = run if run.emit is None else replace(run, emit=None)
        target = self.model if model is None else model
        steps = run._steps
        if steps is None:
            outcome = await self._model_call(quiet, request, target, None)
        else:  # a durable run: the middleware's call is one step
            call = partial(self._model_call, quiet, request, target, None)
            outcome = await model_step(steps, f"model_call:by:{run.calling}", call, request)
        if type(outcome) is Success:
            spend(run, outcome.unwrap().usage)
        return outcome

    async def _tool_end(
        self, run: RunInfo, call: ToolCallPart, tool: Tool, args: BaseModel
    ) -> Outcome[ToolResult]:
        out = await self._tools_run.invoke(tool, args, run, call)
        return success(out) if type(out) is ToolResult else Failure(out)

    async def _loop_and_children(
        self,
        run: RunInfo,
        messages: tuple[Message, ...],
        tool_choice: ToolChoice,
        model_settings: ModelSettings,
        session: Session | None,
        loaded: Session | None = None,
    ) -> Outcome[RunResult]:
        """The loop, its result's usage counting what its sub-agents spent."""
        outcome = await self._loop(run, messages, tool_choice, model_settings, session)
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
        messages: tuple[Message, ...],
        tool_choice: ToolChoice,
        model_settings: ModelSettings,
        session: Session | None,
        loaded: Session | None = None,
    ) -> Outcome[RunResult]:
        """The agent loop (``run``'s end: ``loaded`` is the session the agent loaded)."""
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
                went_on = await resumed_round(
                    self.tools, self._tools_run, self.settings, run, state, point, resume
                )
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
        direct, instructions, model = self._direct, self._instructions, self.model
        if run._steps is not None:  # a durable run: each model and tool call is a step
            direct = quick = False
        else:
            quick = emit is None
        # A fresh run's own messages, to be committed: their pairing is known when it ends.
        vouching = resume is None and session is not None and output is None
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
            prompt: str | None = None
            if self._compress is not None:
                compacted = await self._compact(run, round_no, state, tool_choice)
                if type(compacted) is not tuple:
                    return compacted  # type: ignore[return-value]
                state, prompt = compacted
            history = state.history
            if direct and emit is None:  # no middleware around the round: the loop asks
                request = self._request(
                    history,
                    self.offered,
                    tool_choice,
                    model_settings,
                    instructions if prompt is None else prompt,
                )
                try:
                    answer: Any = await model.request(request)
                except Exception as exc:
                    answer = Failure(raised_by(model, exc))
                reasoned = answered(model, answer)
            else:
                reasoned = await self._reasoning(
                    run,
                    round_no,
                    history,
                    self.offered,
                    tool_choice,
                    model_settings,
                    history,
                    prompt,
                    tool_choice,
                )
            if type(reasoned) is Failure:
                return halted(reasoned.failure(), state, tool_choice)
            response: ModelResponse = reasoned._inner_value  # type: ignore[assignment]
            message: object = response.message
            if type(message) is not Message:
                return Failure(
                    AgentError(
                        message=(
                            f"the round's ModelResponse holds a {type(message).__name__} "
                            "as its message, not a Message"
                        ),
                        position=REASONING if self._reasoned else MODEL_CALL,
                    )
                )
            sent_as = response._sent  # what was sent, when middleware could change it
            choice = tool_choice if sent_as is None else sent_as.tool_choice
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
                if vouching:
                    vouch(decision.result)
                return success(decision.result)
            if type(decision) is Fail:
                return Failure(decision.error)
            if type(decision) is NextRound:  # an answer that did not fit the output type
                failures += 1
                continue
            calls = decision.calls
            if len(calls) == 1:
                part = tools_run.at_once(calls[0]) if quick else None
                if part is None:  # hooks, middleware or an await: through the onion
                    part, halt = await tools_run.one(run, calls[0])
                    if halt is not None:
                        return round_halted(state, (part,), (halt,), choice)
                results: tuple[ToolResultPart, ...] = (part,)
            else:
                results, halts = await tools_run.many(run, calls)
                if any(h is not None for h in halts):
                    return round_halted(state, results, halts, choice)
            state, decision = on_tool_results(state, results, choice, settings)
            if type(decision) is Finish:
                if vouching:
                    vouch(decision.result)
                return success(decision.result)
            if type(decision) is Fail:
                return Failure(decision.error)

    async def _compact(
        self, run: RunInfo, round_no: int, state: LoopState, tool_choice: ToolChoice
    ) -> tuple[LoopState, str] | Outcome[RunResult]:
        """Run ``compress_context``; the new state, and the round's system prompt.

        The prompt is assembled here, once for the round: ``compress_context`` sees it,
        and the round's request is built with it.
        """
        prompt = await self._prompt(run, round_no, state.history)
        if not isinstance(prompt, str):
            return halted(prompt.failure(), state, tool_choice)
        specs, output = self._specs[1], self.output
        if output is not None and output.strategy == "tool":
            specs = (*specs, output.tool)
        compressed = await self._compress(run, round_no, state.history, prompt, specs)  # type: ignore[misc]
        if type(compressed) is Failure:
            return halted(compressed.failure(), state, tool_choice)
        history = compressed.unwrap()
        if history is state.history:
            return state, prompt
        replaced = replace_history(state, history)
        if type(replaced) is Fail:
            return Failure(replace(replaced.error, position=COMPRESS_CONTEXT))
        if self.hooks.compaction:
            await notify(self.hooks.compaction, Compaction(run, state.history, history))
        return replaced, prompt
