"""The imperative shell of the agent loop: the innermost handlers and the round loop.

Every decision is delegated to `fncore.core._loop`; this module only awaits (the model,
the tools, the hooks), applies timeouts and concurrency, and streams events.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from returns.result import Failure, Success

from fncore.core import (
    AgentError,
    Compaction,
    CompressContext,
    Message,
    Model,
    ModelCallContext,
    ModelError,
    ModelRequest,
    ModelResponse,
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
    RunTools,
    begin_round,
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
    """The folded handlers of one stack, and the loop that drives them."""

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
            name: fold_onion("tool_call", per_tool.get(name, ()), self._invoke_tool)
            for name in tools
        }
        self._model_call: Handler[ModelCallContext, ModelResponse] = fold_onion(
            "model_call", layers.model_call, _call_model
        )
        self._system_prompt: Callable[[SystemPromptContext, str], Awaitable[Outcome[str]]] | None
        self._system_prompt = chain_steps("system_prompt", layers.system_prompt)
        self._reasoning: Handler[ReasoningContext, ModelResponse] = fold_onion(
            "reasoning", layers.reasoning, self._reason
        )
        self._compress: Handler[CompressContext, tuple[Message, ...]] | None = (
            fold_onion("compress_context", layers.compress_context, _keep_history)
            if layers.compress_context
            else None
        )
        self.run: Handler[RunContext, RunResult] = fold_onion("run", layers.run, self._loop)

    # -- innermost handlers ------------------------------------------------------------

    async def _reason(self, ctx: ReasoningContext) -> Outcome[ModelResponse]:
        prompt = self._instructions
        if self._system_prompt is not None:
            assembled = await self._system_prompt(
                SystemPromptContext(ctx.run, ctx.round, ctx.messages), prompt
            )
            if type(assembled) is Failure:
                return assembled
            prompt = assembled.unwrap()
        offered, specs = self._specs
        if ctx.tools is not offered:
            specs = tuple(t.spec for t in ctx.tools)
        request = ModelRequest(ctx.messages, prompt, specs, ctx.tool_choice, ctx.settings)
        return await self._model_call(ModelCallContext(ctx.run, request, self.model))

    async def _invoke_tool(self, ctx: ToolCallContext) -> Outcome[ToolResult]:
        tool = ctx.tool
        timeout = tool.timeout if tool.timeout is not None else self.settings.tool_timeout
        try:
            if tool.is_async:
                pending = tool.function(**tool.keywords(ctx.args))
                if timeout is None:
                    value = await pending  # type: ignore[misc]
                else:
                    async with asyncio.timeout(timeout):
                        value = await pending  # type: ignore[misc]
            else:
                value = tool.function(**tool.keywords(ctx.args))
        except TimeoutError:
            text = f"Tool {tool.name!r} timed out after {timeout}s."
            return Success(ToolResult(text, is_error=True))
        except Exception as exc:
            detail = (
                f": {type(exc).__name__}: {exc}" if self.settings.include_detailed_errors else ""
            )
            return Success(ToolResult(f"Tool {tool.name!r} failed{detail}.", is_error=True))
        return Success(ToolResult(to_content(value)))

    # -- the loop ------------------------------------------------------------------------

    async def _loop(self, ctx: RunContext) -> Outcome[RunResult]:
        run = ctx.run
        settings = self.settings
        tool_choice = ctx.tool_choice
        state_or_fail = start(ctx.messages)
        if type(state_or_fail) is Fail:
            return Failure(state_or_fail.error)
        state: LoopState = state_or_fail
        while True:
            begun = begin_round(state, settings)
            if type(begun) is Fail:
                return Failure(begun.error)
            state = begun
            round_no = state.round
            if run.emit is not None:
                run.emit(RoundStarted(round_no))
            if self.hooks.round_start:
                await notify(self.hooks.round_start, RoundStart(run, round_no))
            if self._compress is not None:
                compressed = await self._compress(CompressContext(run, round_no, state.history))
                if type(compressed) is Failure:
                    return _halted(compressed.failure(), state)
                history = compressed.unwrap()
                if history != state.history:
                    replaced = replace_history(state, history)
                    if type(replaced) is Fail:
                        return Failure(replaced.error)
                    if self.hooks.compaction:
                        await notify(self.hooks.compaction, Compaction(run, state.history, history))
                    state = replaced
            reasoned = await self._reasoning(
                ReasoningContext(
                    run, round_no, state.history, self.offered, tool_choice, ctx.settings
                )
            )
            if type(reasoned) is Failure:
                return _halted(reasoned.failure(), state)
            response: ModelResponse = reasoned.unwrap()
            if run.emit is not None:
                run.emit(RoundFinished(round_no, response))
            state, decision = on_response(state, response, self.tools, tool_choice, settings)
            if type(decision) is Finish:
                return Success(decision.result)
            if type(decision) is Fail:
                return Failure(decision.error)
            assert type(decision) is RunTools
            results, halt = await self._run_tools(run, decision.calls)
            if halt is not None:
                if type(halt) is Terminate:
                    return Success(on_terminate(state, halt, results))
                return Failure(halt)
            state, decision = on_tool_results(state, results, tool_choice, settings)
            if type(decision) is Finish:
                return Success(decision.result)
            if type(decision) is Fail:
                return Failure(decision.error)

    async def _run_tools(
        self, run: RunInfo, calls: tuple[Ready | Rejected, ...]
    ) -> tuple[tuple[ToolResultPart, ...], Terminate | AgentError | None]:
        if len(calls) == 1:
            part, halt = await self._one_tool(run, calls[0])
            return (part,), halt
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
        halt: Terminate | AgentError | None = None
        if type(item) is Rejected:
            part = item.result
            call = None
        else:
            assert type(item) is Ready
            call = item.call
            if self.hooks.tool_start:
                await notify(self.hooks.tool_start, ToolStart(run, call))
            out = await self._tool_handlers[item.tool.name](
                ToolCallContext(run, call, item.tool, item.args)
            )
            if type(out) is Success:
                result: ToolResult = out.unwrap()
                part = ToolResultPart(call.id, call.name, result.content, result.is_error)
            else:
                halt = out.failure()
                if type(halt) is Terminate:
                    part = ToolResultPart(call.id, call.name, halt.output)
                else:
                    text = f"Not completed: {halt}"
                    part = ToolResultPart(call.id, call.name, text, is_error=True)
        if run.emit is not None:
            run.emit(ToolResultReady(part))
        if self.hooks.tool_end and call is not None:
            await notify(self.hooks.tool_end, ToolEnd(run, call, part))
        return part, halt


def _halted(halt: Terminate | AgentError, state: LoopState) -> Outcome[RunResult]:
    if type(halt) is Terminate:
        return Success(on_terminate(state, halt))
    return Failure(halt)


async def _keep_history(ctx: CompressContext) -> Outcome[tuple[Message, ...]]:
    return Success(ctx.messages)


async def _call_model(ctx: ModelCallContext) -> Outcome[ModelResponse]:
    model = ctx.model
    emit = ctx.run.emit
    try:
        if emit is None:
            return await model.request(ctx.request)
        async for item in model.stream(ctx.request):
            if type(item) is ModelResponse:
                return Success(item)
            if isinstance(item, ModelError):
                return Failure(item)
            emit(item)
    except Exception as exc:
        return Failure(
            ModelError(
                message=f"model {model.name!r} raised {type(exc).__name__}: {exc}",
                position="model_call",
            )
        )
    return Failure(
        ModelError(
            message=f"model {model.name!r} ended its stream without a response",
            position="model_call",
            retryable=True,
        )
    )


def describe_request(request: ModelRequest) -> str:
    """One line about a request, for traces."""
    return (
        f"{len(request.messages)} messages, {len(request.tools)} tools, "
        f"tool_choice={request.tool_choice!r}"
    )
