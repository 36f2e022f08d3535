"""`trace`: OpenTelemetry spans and metrics for runs, model calls and tool calls.

Spans follow the GenAI semantic conventions: ``invoke_agent {agent}`` for a run,
``chat {model}`` for each attempt at a model call, ``execute_tool {tool}`` for each tool
call; metrics ``gen_ai.client.operation.duration``, ``gen_ai.client.token.usage`` and, when
streaming, ``gen_ai.client.operation.time_to_first_chunk``. Only the OpenTelemetry API is
needed; with no tracer or meter provider configured it records nothing, and a run costs
what four pass-through middleware cost plus well under a microsecond.

Where it stands, at ``model_call``: two layers. The outer one (``trace``, outermost among
the built-ins) stands for the model call as the loop asked for it; the inner one
(``trace_chat``, inside every other built-in) opens one ``chat`` span per attempt that
reaches the model, so each retry and each fallback model shows. While the middleware
between them run, the current span is a stand-in for the model call: what they set on it
(``cache`` sets ``fncore.cache.hit``) lands on the attempts' spans, or, when no attempt
reached the model (a cache hit, a limit), on the one ``chat`` span recorded for the call.
What they set after an attempt returned (``patch_tool_calls``' events) lands on that
attempt's span, which ends, at the time the model answered, once the outer layer returns.
The page "trace" in the docs says it all in detail.
"""

from __future__ import annotations

import time
from contextvars import ContextVar
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import metrics as otel_metrics
from opentelemetry import trace as otel_trace
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import SpanKind, TracerProvider

from fncore.core import (
    ModelCallContext,
    ModelCallNext,
    ModelResponse,
    Outcome,
    Registry,
    RunContext,
    RunNext,
    RunResult,
    ToolCallContext,
    ToolCallNext,
    ToolResult,
)
from fncore.core._position_names import MODEL_CALL, RUN, TOOL_CALL
from fncore.middleware import _genai as g
from fncore.middleware._checked import checked
from fncore.middleware._place import ORDER, place
from fncore.middleware._trace_call import CallSpan
from fncore.middleware._trace_spans import SCOPE as SCOPE  # where it was defined before
from fncore.middleware._trace_spans import (
    FirstChunk,
    RunSpan,
    Spans,
    Telemetry,
    measure,
    raised,
    telemetry,
)

__all__ = ["trace"]

RECHECK_SECONDS = 1.0
"""While no provider records, how long ``trace`` goes before looking for one again."""

_clock = time.monotonic
_timer = time.perf_counter


class _Trace:
    """One configured `trace`: its middleware at each position, as methods.

    Per instance, the current run and model call are context variables of their own, so
    two `trace`s (each to its own providers) never see each other's. The telemetry of the
    last providers seen is kept, resolved again only when they change (an application sets
    its SDK's providers after building its agents, say). While none records, the global
    ones are looked up again at most every `RECHECK_SECONDS`: looking up an unset global
    provider reads the environment, about a microsecond each. Given both providers, it
    never looks again.
    """

    __slots__ = (
        "_call",
        "_fixed",
        "_last",
        "_meter_provider",
        "_run",
        "_tracer_provider",
        "spans",
    )

    def __init__(
        self,
        spans: Spans,
        name: str,
        tracer_provider: TracerProvider | None,
        meter_provider: MeterProvider | None,
    ) -> None:
        self.spans = spans
        self._tracer_provider = tracer_provider
        self._meter_provider = meter_provider
        self._run: ContextVar[RunSpan | None] = ContextVar(f"{name}_run", default=None)
        self._call: ContextVar[CallSpan | None] = ContextVar(f"{name}_call", default=None)
        self._last: tuple[object, object, Telemetry | None, float] | None = None
        self._fixed = tracer_provider is not None and meter_provider is not None

    def telemetry(self) -> Telemetry | None:
        """The telemetry of the providers in use now; ``None`` while none records."""
        last = self._last
        if self._fixed and last is not None:
            return last[2]
        now = _clock()
        if last is not None and last[2] is None and now < last[3]:
            return None
        tp = self._tracer_provider
        if tp is None:
            tp = otel_trace.get_tracer_provider()
        mp = self._meter_provider
        if mp is None:
            mp = otel_metrics.get_meter_provider()
        if last is not None and last[0] is tp and last[1] is mp:
            made = last[2]
        else:
            made = telemetry(tp, mp)
        self._last = (tp, mp, made, now + RECHECK_SECONDS)
        return made

    async def trace_run(self, ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        """At ``run``: the run's ``invoke_agent`` span."""
        made = self.telemetry()
        if made is None:
            return await call_next(ctx)
        run = ctx.run
        tracer = made.tracer
        if tracer is None:  # metrics only: the caller's span stays the current one
            marker = self._run.set(RunSpan(made, otel_trace.INVALID_SPAN, run))
            try:
                return await call_next(ctx)
            finally:
                self._run.reset(marker)
        attributes: dict[str, Any] = {
            g.OPERATION_NAME: g.INVOKE_AGENT,
            g.AGENT_NAME: run.agent,
            g.RUN_ID: run.run_id,
        }
        if run.session_id is not None:
            attributes[g.CONVERSATION_ID] = run.session_id
        context = otel_context.get_current()
        span = tracer.start_span(
            f"{g.INVOKE_AGENT} {run.agent}",
            context,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
        )
        traced = RunSpan(made, span, run)
        marker = self._run.set(traced)
        token = otel_context.attach(otel_trace.set_span_in_context(span, context))
        try:
            outcome = await call_next(ctx)
        except BaseException as exc:
            traced.raised(exc)
            raise
        else:
            self.spans.ran(traced, outcome)
            return outcome
        finally:
            otel_context.detach(token)
            self._run.reset(marker)
            span.end()

    async def trace_call(
        self, ctx: ModelCallContext, call_next: ModelCallNext
    ) -> Outcome[ModelResponse]:
        """At ``model_call``, outermost: the stand-in span while the call's middleware run."""
        run = self._run.get()
        if run is None or run.telemetry.tracer is None:
            return await call_next(ctx)
        context = otel_context.get_current()
        call = CallSpan(otel_trace.get_current_span(context))
        started = time.time_ns()
        marker = self._call.set(call)
        token = otel_context.attach(otel_trace.set_span_in_context(call, context))
        try:
            outcome = await call_next(ctx)
        finally:
            otel_context.detach(token)
            self._call.reset(marker)
            call.settle()  # the last attempt's span, with what was set after it returned
        if call.attempts == 0 and call.is_recording():
            self.spans.unattempted(run.telemetry.tracer, ctx, call, outcome, started)
        return outcome

    async def trace_chat(
        self, ctx: ModelCallContext, call_next: ModelCallNext
    ) -> Outcome[ModelResponse]:
        """At ``model_call``, innermost: one ``chat`` span and measurement per attempt."""
        run = self._run.get()
        if run is None:
            return await call_next(ctx)
        spans = self.spans
        model = spans.models.of(ctx.model)
        made = run.telemetry
        tracer = made.tracer
        first = None
        if ctx.run.emit is not None:
            first = FirstChunk()
            ctx = ctx.map_events(first.chunk)
        if tracer is None:  # metrics only
            started = _timer()
            outcome = await call_next(ctx)
            seconds = _timer() - started
            measure(
                made.meters,
                model,
                outcome,
                seconds,
                None if first is None else first.after(started),
            )
            return outcome
        call = self._call.get()
        if call is None:  # the outer layer is not there (a model call of its own)
            call = CallSpan(otel_trace.INVALID_SPAN)
        call.attempts += 1
        if run.described is None:
            run.described = model.described
        context = otel_context.get_current()
        span = tracer.start_span(
            model.chat,
            context,
            kind=SpanKind.CLIENT,
            attributes=call.begin(spans.chat_attributes(ctx, model, call.attempts)),
        )
        if call.events:
            call.began(span)
        if spans.capture:
            spans.asked(run, ctx)
        token = otel_context.attach(otel_trace.set_span_in_context(span, context))
        started = _timer()
        try:
            outcome = await call_next(ctx)
        except BaseException as exc:
            otel_context.detach(token)
            raised(span, exc)
            span.end()
            raise
        seconds = _timer() - started
        otel_context.detach(token)
        to_first = None if first is None else first.after(started)
        spans.answered(run, ctx, span, outcome, to_first)
        call.hold(span)
        measure(made.meters, model, outcome, seconds, to_first, context)  # current again
        return outcome

    async def trace_tool(
        self, ctx: ToolCallContext, call_next: ToolCallNext
    ) -> Outcome[ToolResult]:
        """At ``tool_call``: the call's ``execute_tool`` span."""
        run = self._run.get()
        if run is None or run.telemetry.tracer is None:
            return await call_next(ctx)
        context = otel_context.get_current()
        name, attributes = self.spans.tool(ctx)
        span = run.telemetry.tracer.start_span(
            name, context, kind=SpanKind.INTERNAL, attributes=attributes
        )
        token = otel_context.attach(otel_trace.set_span_in_context(span, context))
        try:
            outcome = await call_next(ctx)
        except BaseException as exc:
            raised(span, exc)
            raise
        else:
            self.spans.tool_done(span, outcome)
            return outcome
        finally:
            otel_context.detach(token)
            span.end()


@checked
def trace(
    *,
    capture_content: bool = False,
    max_attribute_length: int = 4096,
    name: str = "trace",
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
) -> Registry:
    """OpenTelemetry spans and metrics, by the GenAI semantic conventions.

    Args:
        capture_content: Record messages, instructions, tool definitions, tool arguments
            and results (``gen_ai.input.messages`` and the like). They may hold personal
            data: off by default.
        max_attribute_length: The most characters any text attribute ``trace`` sets may
            have (captured content, error messages); longer text is cut and marked
            ``…[truncated]``. At least 32.
        name: The middleware's name at each position (``trace``; the per-attempt layer is
            ``{name}_chat``). Give another to run two, each to its own providers.
        tracer_provider: Where spans go (default: the global tracer provider, looked up at
            each run). From code only.
        meter_provider: Where metrics go (default: the global meter provider). From code
            only.

    Returns:
        A registry holding the ``run``, ``model_call`` and ``tool_call`` middleware.

    Raises:
        ValueError: for a ``max_attribute_length`` below 32 or an empty ``name``.

    Example:
        >>> registry = Registry()
        >>> registry.include(trace())
        >>> [(r.position, r.name) for r in registry.middleware]  # doctest: +NORMALIZE_WHITESPACE
        [('run', 'trace'), ('model_call', 'trace'), ('model_call', 'trace_chat'),
         ('tool_call', 'trace')]
    """
    if type(max_attribute_length) is not int or max_attribute_length < g.MIN_ATTRIBUTE_LENGTH:
        msg = (
            f"max_attribute_length must be a whole number of characters, at least "
            f"{g.MIN_ATTRIBUTE_LENGTH}, not {max_attribute_length!r}"
        )
        raise ValueError(msg)
    if not name:
        msg = "name must not be empty"
        raise ValueError(msg)
    spans = Spans(capture_content, max_attribute_length)
    traced = _Trace(spans, name, tracer_provider, meter_provider)
    registry = Registry()
    where = place("trace")
    registry.on(RUN, name=name, **where)(traced.trace_run)
    registry.on(MODEL_CALL, name=name, **where)(traced.trace_call)
    registry.on(
        MODEL_CALL,
        name=f"{name}_chat",
        order="innermost",
        after=[n for n in ORDER if n != "trace"],
        builtin="trace_chat",
    )(traced.trace_chat)
    registry.on(TOOL_CALL, name=name, **where)(traced.trace_tool)
    return registry
