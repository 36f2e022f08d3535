"""The imperative shell of the agent loop: the innermost handlers and the round loop.

Every decision is delegated to `fncore.core._loop`; this module only awaits (the model,
the tools, the hooks), applies timeouts and concurrency, and streams events.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from returns.result import Failure, Success

from fncore.core import (
    AgentError,
    Compaction,
    CompressContext,
    Emit,
    Message,
    Model,
    ModelCallContext,
    ModelError,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    Outcome,
    ReasoningContext,
    RoundFinished,
    RoundStart,
    RoundStarted,
    RunContext,
    RunInfo,
    RunResult,
    SystemPromptContext,
    Terminate,
    Tool,
    ToolCallContext,
    ToolChoice,
    ToolEnd,
    ToolResult,
    ToolResultPart,
    ToolResultReady,
    ToolSpec,
    ToolStart,
    to_content,
)
from fncore.core._fold import Handler, Layer, Step, chain_steps, fold_onion
from fncore.core._loop import (
    Fail,
    Finish,
    LoopSettings,
    LoopState,
    Ready,
    Rejected,
    on_response,
    on_terminate,
    on_tool_results,
    replace_history,
    start,
)
from fncore.runtime._hooks import HookEntry, notify

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


class Engine:
    """The folded handlers of one stack, and the loop that drives them.

    A position without middleware is skipped outright: no context is built for it and no
    outcome is wrapped, so an empty position costs nothing.
    """

    __slots__ = (
        "_compress",
        "_instructions",
        "_model_call",
        "_reasoning",
        "_specs",
        "_system_prompt",
        "_tool_handlers",
        "hooks",
        "model",
        "offered",
        "run",
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
        self._instructions = instructions
        self._specs: tuple[tuple[Tool, ...], tuple[ToolSpec, ...]] = (
            offered,
            tuple(t.spec for t in offered),
        )
        per_tool = layers.tool_call or {}
        self._tool_handlers: dict[str, Handler[ToolCallContext, ToolResult]] = {
            name: fold_onion("tool_call", per_tool[name], self._tool_layer_end)
            for name in tools
            if per_tool.get(name)
        }
        self._model_call: Handler[ModelCallContext, ModelResponse] | None = (
            fold_onion("model_call", layers.model_call, _call_model) if layers.model_call else None
        )
        self._system_prompt: Callable[[SystemPromptContext, str], Awaitable[Outcome[str]]] | None
        self._system_prompt = chain_steps("system_prompt", layers.system_prompt)
        self._reasoning: Handler[ReasoningContext, ModelResponse] | None = (
            fold_onion("reasoning", layers.reasoning, self._reasoning_end)
            if layers.reasoning
            else None
        )
        self._compress: Handler[CompressContext, tuple[Message, ...]] | None = (
            fold_onion("compress_context", layers.compress_context, _keep_history)
            if layers.compress_context
            else None
        )
        self.run: Callable[
            [RunInfo, tuple[Message, ...], ToolChoice, ModelSettings],
            Awaitable[Outcome[RunResult]],
        ] = self._loop
        """Run through the ``run`` onion and the loop inside it."""
        if layers.run:
            onion = fold_onion("run", layers.run, self._run_end)

            def run_onion(
                run: RunInfo,
                messages: tuple[Message, ...],
                tool_choice: ToolChoice,
                settings: ModelSettings,
            ) -> Awaitable[Outcome[RunResult]]:
                return onion(RunContext(run, messages, tool_choice, settings))

            self.run = run_onion

    # -- innermost handlers ------------------------------------------------------------

    def _run_end(self, ctx: RunContext) -> Awaitable[Outcome[RunResult]]:
        return self._loop(ctx.run, ctx.messages, ctx.tool_choice, ctx.settings)

    def _reasoning_end(self, ctx: ReasoningContext) -> Awaitable[Outcome[ModelResponse]]:
        return self._reason(
            ctx.run, ctx.round, ctx.messages, ctx.tools, ctx.tool_choice, ctx.settings
        )

    async def _reason(
        self,
        run: RunInfo,
        round_no: int,
        messages: tuple[Message, ...],
        tools: tuple[Tool, ...],
        tool_choice: ToolChoice,
        settings: ModelSettings,
    ) -> Outcome[ModelResponse]:
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
        request = ModelRequest(messages, prompt, specs, tool_choice, settings)
        if self._model_call is not None:
            return await self._model_call(ModelCallContext(run, request, self.model))
        # No model_call middleware: the body of `_call_model`, inlined to save a frame.
        if run.emit is not None:
            return await _stream(self.model, request, run.emit)
        try:
            return await self.model.request(request)
        except Exception as exc:
            return Failure(_raised(self.model, exc))

    async def _tool_layer_end(self, ctx: ToolCallContext) -> Outcome[ToolResult]:
        return Success(await self._invoke(ctx.tool, ctx.args))

    async def _invoke(self, tool: Tool, args: BaseModel) -> ToolResult:
        timeout = tool.timeout if tool.timeout is not None else self.settings.tool_timeout
        try:
            if tool.inline:
                value = tool.function(**tool.keywords(args))
            else:
                pending = (
                    tool.function(**tool.keywords(args))
                    if tool.is_async
                    else asyncio.to_thread(tool.function, **tool.keywords(args))
                )
                if timeout is None:
                    value = await pending  # type: ignore[misc]
                else:
                    scope = asyncio.timeout(timeout)
                    try:
                        async with scope:
                            value = await pending  # type: ignore[misc]
                    except TimeoutError:
                        if not scope.expired():
                            raise  # the tool's own TimeoutError: a failure like any other
                        text = f"Tool {tool.name!r} timed out after {timeout}s."
                        return ToolResult(text, is_error=True)
        except Exception as exc:
            detail = (
                f": {type(exc).__name__}: {exc}" if self.settings.include_detailed_errors else ""
            )
            return ToolResult(f"Tool {tool.name!r} failed{detail}.", is_error=True)
        return ToolResult(to_content(value))

    # -- the loop ------------------------------------------------------------------------

    async def _loop(
        self,
        run: RunInfo,
        messages: tuple[Message, ...],
        tool_choice: ToolChoice,
        model_settings: ModelSettings,
    ) -> Outcome[RunResult]:
        settings = self.settings
        hooks = self.hooks
        emit = run.emit
        started = start(messages)
        if type(started) is Fail:
            return Failure(started.error)
        state: LoopState = started
        while True:
            round_no = state.round
            if emit is not None:
                emit(RoundStarted(round_no))
            if hooks.round_start:
                await notify(hooks.round_start, RoundStart(run, round_no))
            if self._compress is not None:
                compressed = await self._compress(CompressContext(run, round_no, state.history))
                if type(compressed) is Failure:
                    return _halted(compressed.failure(), state)
                history = compressed.unwrap()
                if history != state.history:
                    replaced = replace_history(state, history)
                    if type(replaced) is Fail:
                        return Failure(replaced.error)
                    if hooks.compaction:
                        await notify(hooks.compaction, Compaction(run, state.history, history))
                    state = replaced
            if self._reasoning is None:
                reasoned = await self._reason(
                    run, round_no, state.history, self.offered, tool_choice, model_settings
                )
            else:
                reasoned = await self._reasoning(
                    ReasoningContext(
                        run, round_no, state.history, self.offered, tool_choice, model_settings
                    )
                )
            if type(reasoned) is Failure:
                return _halted(reasoned.failure(), state)
            response: ModelResponse = reasoned.unwrap()
            if emit is not None:
                emit(RoundFinished(round_no, response))
            state, decision = on_response(state, response, self.tools, tool_choice, settings)
            if type(decision) is Finish:
                return Success(decision.result)
            if type(decision) is Fail:
                return Failure(decision.error)
            calls = decision.calls  # type: ignore[union-attr]
            if len(calls) == 1:
                part, halt = await self._one_tool(run, calls[0])
                results: tuple[ToolResultPart, ...] = (part,)
            else:
                results, halt = await self._many_tools(run, calls)
            if halt is not None:
                return _halted(halt, state, results)
            state, decision = on_tool_results(state, results, tool_choice, settings)
            if type(decision) is Finish:
                return Success(decision.result)
            if type(decision) is Fail:
                return Failure(decision.error)

    async def _many_tools(
        self, run: RunInfo, calls: tuple[Ready | Rejected, ...]
    ) -> tuple[tuple[ToolResultPart, ...], Terminate | AgentError | None]:
        limit = asyncio.Semaphore(self.settings.max_concurrent_tools)

        async def bounded(item: Ready | Rejected) -> tuple[ToolResultPart, Any]:
            async with limit:
                return await self._one_tool(run, item)

        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(bounded(item)) for item in calls]
        done = [t.result() for t in tasks]
        halts = [h for _, h in done if h is not None]
        halt = next((h for h in halts if type(h) is not Terminate), halts[0] if halts else None)
        return tuple(p for p, _ in done), halt

    async def _one_tool(
        self, run: RunInfo, item: Ready | Rejected
    ) -> tuple[ToolResultPart, Terminate | AgentError | None]:
        if type(item) is Rejected:
            part = item.result
            if run.emit is not None:
                run.emit(ToolResultReady(part))
            return part, None
        call = item.call
        hooks = self.hooks
        if hooks.tool_start:
            await notify(hooks.tool_start, ToolStart(run, call))
        halt: Terminate | AgentError | None = None
        handler = self._tool_handlers.get(call.name)
        if handler is None:
            result = await self._invoke(item.tool, item.args)
            part = ToolResultPart(call.id, call.name, result.content, result.is_error)
        else:
            out = await handler(ToolCallContext(run, call, item.tool, item.args))
            if type(out) is Success:
                result = out.unwrap()
                part = ToolResultPart(call.id, call.name, result.content, result.is_error)
            else:
                halt = out.failure()
                if type(halt) is Terminate:
                    part = ToolResultPart(call.id, call.name, halt.output)
                else:
                    part = ToolResultPart(call.id, call.name, f"Not completed: {halt}", True)
        if run.emit is not None:
            run.emit(ToolResultReady(part))
        if hooks.tool_end:
            await notify(hooks.tool_end, ToolEnd(run, call, part))
        return part, halt


def _halted(
    halt: Terminate | AgentError, state: LoopState, results: tuple[ToolResultPart, ...] = ()
) -> Outcome[RunResult]:
    """A termination ends the run with its output (closing a tool round); an error fails it."""
    if type(halt) is Terminate:
        return Success(on_terminate(state, halt, results))
    return Failure(halt)


async def _keep_history(ctx: CompressContext) -> Outcome[tuple[Message, ...]]:
    return Success(ctx.messages)


async def _call_model(ctx: ModelCallContext) -> Outcome[ModelResponse]:
    emit = ctx.run.emit
    if emit is not None:
        return await _stream(ctx.model, ctx.request, emit)
    try:
        return await ctx.model.request(ctx.request)
    except Exception as exc:
        return Failure(_raised(ctx.model, exc))


def _raised(model: Model, exc: Exception) -> ModelError:
    return ModelError(
        message=f"model {model.name!r} raised {type(exc).__name__}: {exc}",
        position="model_call",
    )


async def _stream(model: Model, request: ModelRequest, emit: Emit) -> Outcome[ModelResponse]:
    try:
        async for item in model.stream(request):
            if type(item) is ModelResponse:
                return Success(item)
            if isinstance(item, ModelError):
                return Failure(item)
            emit(item)
    except Exception as exc:
        return Failure(_raised(model, exc))
    return Failure(
        ModelError(
            message=f"model {model.name!r} ended its stream without a response",
            position="model_call",
            retryable=True,
        )
    )
