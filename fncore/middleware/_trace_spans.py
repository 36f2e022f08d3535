"""What `trace` records: its telemetry, the attributes of its spans, its metrics.

`trace` (the middleware, in ``trace.py``) decides when a span starts and ends; what each
span and each measurement holds is built here: `Spans` for the spans (with or without
captured content), `measure` for the metrics (the stand-in span of a model call is
`CallSpan`, in ``_trace_call.py``).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.metrics import Histogram, MeterProvider
from opentelemetry.trace import (
    NoOpTracerProvider,
    ProxyTracerProvider,
    Span,
    SpanKind,
    Status,
    StatusCode,
    Tracer,
    TracerProvider,
)
from returns.result import Failure, Success

from fncore._distribution import installed_version
from fncore.core import (
    AgentError,
    Halt,
    LoopError,
    Message,
    ModelCallContext,
    ModelResponse,
    Outcome,
    Pause,
    RunInfo,
    RunResult,
    StreamEvent,
    Terminate,
    ToolCallContext,
    ToolResult,
    Usage,
)
from fncore.middleware import _genai as g
from fncore.middleware._trace_call import CallSpan
from fncore.runtime._subagent import children_usage

_T = TypeVar("_T")

SCOPE = "fncore"
"""The instrumentation scope of every span and metric ``trace`` records."""


class Meters:
    """The histograms ``trace`` records to."""

    __slots__ = ("duration", "first_chunk", "tokens")

    def __init__(self, duration: Histogram, tokens: Histogram, first_chunk: Histogram) -> None:
        self.duration = duration
        self.tokens = tokens
        self.first_chunk = first_chunk


class Telemetry:
    """What one pair of providers gives: a tracer, histograms (``None``: that one is off)."""

    __slots__ = ("meters", "tracer")

    def __init__(self, tracer: Tracer | None, meters: Meters | None) -> None:
        self.tracer = tracer
        self.meters = meters


def telemetry(tracer_provider: TracerProvider, meter_provider: MeterProvider) -> Telemetry | None:
    """The tracer and histograms of these providers; ``None`` when both record nothing.

    The API's own providers (before an SDK's is set, or the no-op ones) record nothing, so
    ``trace`` skips its work entirely for them.
    """
    version = installed_version()
    tracer = None
    if not isinstance(tracer_provider, ProxyTracerProvider | NoOpTracerProvider):
        tracer = tracer_provider.get_tracer(SCOPE, version)
    meters = None
    if not type(meter_provider).__module__.startswith("opentelemetry.metrics"):
        meter = meter_provider.get_meter(SCOPE, version)
        meters = Meters(
            meter.create_histogram(
                g.OPERATION_DURATION,
                unit="s",
                description="GenAI operation duration.",
                explicit_bucket_boundaries_advisory=g.SECONDS_BUCKETS,
            ),
            meter.create_histogram(
                g.TOKEN_USAGE,
                unit="{token}",
                description="Number of input and output tokens used.",
                explicit_bucket_boundaries_advisory=g.TOKEN_BUCKETS,
            ),
            meter.create_histogram(
                g.TIME_TO_FIRST_CHUNK,
                unit="s",
                description="Time to receive the first chunk of a streamed response.",
                explicit_bucket_boundaries_advisory=g.SECONDS_BUCKETS,
            ),
        )
    if tracer is None and meters is None:
        return None
    return Telemetry(tracer, meters)


NOTHING = Usage()
"""What a run that is not a resume spent before it started (compared by identity)."""


def spent_before(run: RunInfo) -> tuple[Usage, Usage]:
    """What a resumed reply had spent when it paused: by its loop, and in all.

    "In all" adds its sub-agents' usage (the run's state, restored from the checkpoint): the
    paused run's result counted both, and so does the resumed one's, from the reply's
    start. A run that is not a resume has spent nothing before.
    """
    resume = run._resume
    if resume is None:
        return NOTHING, NOTHING
    loop = resume.point.usage
    children = children_usage(run)
    return loop, loop if children is None else loop + children


class RunSpan:
    """One traced run: its telemetry and its ``invoke_agent`` span.

    With content captured, the run's input and answer are taken from its model calls as the
    model got and gave them (``seen``, ``answer``), inside every other built-in: what a
    redactor kept from the model stays out of the run's span too.

    A resumed run reports only what it spent itself: ``loop_before`` and ``before`` are what
    the reply had spent when it paused (`spent_before`), taken off the totals its results
    carry, so the paused run's span and the resumed run's span add up to the reply's usage.
    """

    __slots__ = ("answer", "before", "described", "loop_before", "seen", "span", "telemetry")

    def __init__(self, telemetry: Telemetry, span: Span, run: RunInfo) -> None:
        self.telemetry = telemetry
        self.span = span
        self.described = False
        self.seen: str | None = None
        self.answer: Message | None = None
        self.loop_before, self.before = spent_before(run)

    def describe(self, provider: str, model: str) -> None:
        """Name the run's provider and model after its first model call (once)."""
        if not self.described:
            self.described = True
            self.span.set_attributes({g.PROVIDER_NAME: provider, g.REQUEST_MODEL: model})


def failed(span: Span, error_type: str, description: str) -> None:
    """Mark ``span`` as failed with ``error_type``."""
    span.set_attribute(g.ERROR_TYPE, error_type)
    span.set_status(Status(StatusCode.ERROR, description))


def raised(span: Span, exc: BaseException) -> None:
    """Record an exception passing through (cancellation, ``KeyboardInterrupt``)."""
    failed(span, type(exc).__qualname__, f"{type(exc).__qualname__} went through")


class Clock:
    """Times one attempt: its duration and, streaming, the time to its first chunk."""

    __slots__ = ("first", "seconds", "started")

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.first: float | None = None
        self.seconds = 0.0

    def start(self) -> None:
        """The request goes out now."""
        self.started = time.perf_counter()

    def chunk(self, event: StreamEvent) -> StreamEvent:
        """An event map: note when the first streamed event arrives, pass it on."""
        if self.first is None:
            self.first = time.perf_counter()
        return event

    def stop(self) -> None:
        """The answer is in."""
        self.seconds = time.perf_counter() - self.started

    @property
    def to_first(self) -> float | None:
        """Seconds from the request to the first chunk, if one came."""
        return None if self.first is None else self.first - self.started


async def within(
    span: Span,
    step: Awaitable[Outcome[_T]],
    done: Callable[[Outcome[_T]], None],
    hold: Callable[[Span], None] | None = None,
) -> Outcome[_T]:
    """Await ``step`` with ``span`` current; ``done`` records the outcome; then end ``span``.

    With ``hold``, a span whose step returned is handed to it instead, to be ended later.
    An exception passing through (cancellation) is recorded on the span and raised again,
    and the span ends.
    """
    token = otel_context.attach(otel_trace.set_span_in_context(span))
    held = False
    try:
        outcome = await step
    except BaseException as exc:
        raised(span, exc)
        raise
    else:
        done(outcome)
        if hold is not None:
            hold(span)
            held = True
        return outcome
    finally:
        otel_context.detach(token)
        if not held:
            span.end()


def measure(
    meters: Meters | None,
    ctx: ModelCallContext,
    outcome: Outcome[ModelResponse],
    provider: str,
    model: str,
    clock: Clock,
) -> None:
    """Record one attempt's duration, time to first chunk and tokens, if metrics are on."""
    if meters is None:
        return
    attributes: dict[str, Any] = {
        g.OPERATION_NAME: g.CHAT,
        g.PROVIDER_NAME: provider,
        g.REQUEST_MODEL: model,
    }
    attributes.update(g.server_of(ctx.model))
    response: ModelResponse | None = None
    if type(outcome) is Success:
        response = outcome.unwrap()
        if response.model_name:
            attributes[g.RESPONSE_MODEL] = response.model_name
    to_first = clock.to_first
    if to_first is not None:
        meters.first_chunk.record(to_first, attributes)
    if type(outcome) is Failure:
        halt = outcome.failure()
        if isinstance(halt, AgentError):
            attributes = {**attributes, g.ERROR_TYPE: type(halt).__name__}
    meters.duration.record(clock.seconds, attributes)
    if response is not None and g.usage_known(response.usage):
        usage = response.usage
        tokens = meters.tokens
        tokens.record(usage.input_tokens, {**attributes, g.TOKEN_TYPE: "input"})
        tokens.record(usage.output_tokens, {**attributes, g.TOKEN_TYPE: "output"})


class Spans:
    """The attributes of ``trace``'s spans: with content captured or not, texts clipped.

    Args:
        capture: Whether messages, instructions, tools, arguments and results are recorded.
        limit: The most characters of any text attribute.
    """

    __slots__ = ("capture", "limit")

    def __init__(self, capture: bool, limit: int) -> None:
        self.capture = capture
        self.limit = limit

    def halted(self, span: Span, halt: Halt, before: Usage = NOTHING) -> None:
        """Record a ``Failure``: a termination or a pause is not an error; an error is.

        A loop error carries the usage spent; ``before`` of it was spent before a resume.
        """
        if type(halt) is Terminate:
            span.set_attribute(g.TERMINATED, True)
            if self.capture:
                span.set_attribute(g.TERMINATE_OUTPUT, g.clip(halt.output, self.limit))
            return
        if type(halt) is Pause:
            span.set_attribute(g.PAUSED, True)
            return
        failed(span, type(halt).__name__, g.clip(str(halt), self.limit))
        if isinstance(halt, LoopError):
            spent = halt.usage if before is NOTHING else g.usage_since(halt.usage, before)
            if g.usage_known(spent):
                span.set_attributes(g.usage_attributes(spent))

    def ran(self, run: RunSpan, outcome: Outcome[RunResult]) -> None:
        """Record how a run ended on its ``invoke_agent`` span."""
        span = run.span
        if not span.is_recording():
            return
        capture, limit = self.capture, self.limit
        if capture and run.seen is not None:
            span.set_attribute(g.INPUT_MESSAGES, run.seen)
        if type(outcome) is not Success:
            self.halted(span, outcome.failure(), run.loop_before)
            return
        result: RunResult = outcome.unwrap()
        found: dict[str, Any] = {g.STOP_REASON: result.stop_reason, g.ROUNDS: result.rounds}
        spent = result.usage if run.before is NOTHING else g.usage_since(result.usage, run.before)
        if g.usage_known(spent):
            found.update(g.usage_attributes(spent))
        if result.stop_reason == "terminated":
            found[g.TERMINATED] = True
        if capture:
            answer = Message.assistant(result.output)
            if run.answer is not None and result.stop_reason != "terminated":
                answer = run.answer
            found[g.OUTPUT_MESSAGES] = g.output_json(answer, result.stop_reason, limit)
        span.set_attributes(found)

    def chat_attributes(
        self, ctx: ModelCallContext, provider: str, model: str, attempt: int
    ) -> dict[str, Any]:
        """The attributes a ``chat`` span starts with: the request as the model gets it."""
        request = ctx.request
        attributes: dict[str, Any] = {
            g.OPERATION_NAME: g.CHAT,
            g.PROVIDER_NAME: provider,
            g.REQUEST_MODEL: model,
            g.ATTEMPT: attempt,
            **g.request_attributes(request, ctx.run.emit is not None),
        }
        attributes.update(g.server_of(ctx.model))
        if self.capture:
            limit = self.limit
            attributes[g.INPUT_MESSAGES] = g.messages_json(request.messages, limit)
            if request.instructions:
                attributes[g.SYSTEM_INSTRUCTIONS] = g.instructions_json(request.instructions, limit)
            if request.tools:
                attributes[g.TOOL_DEFINITIONS] = g.tools_json(request.tools, limit)
        return attributes

    def answered(self, span: Span, outcome: Outcome[ModelResponse], to_first: float | None) -> None:
        """Record an attempt's answer (or how it failed) on its ``chat`` span."""
        if type(outcome) is not Success:
            self.halted(span, outcome.failure())
            return
        response: ModelResponse = outcome.unwrap()
        found = g.response_attributes(response)
        if to_first is not None:
            found[g.RESPONSE_TIME_TO_FIRST_CHUNK] = to_first
        if g.usage_known(response.usage):
            found.update(g.usage_attributes(response.usage))
        if self.capture:
            found[g.OUTPUT_MESSAGES] = g.output_json(
                response.message, response.finish_reason, self.limit
            )
        span.set_attributes(found)

    def unattempted(
        self,
        tracer: Tracer,
        ctx: ModelCallContext,
        call: CallSpan,
        outcome: Outcome[ModelResponse],
        started: int,
    ) -> None:
        """The ``chat`` span of a model call that no attempt reached the model for."""
        model = ctx.model
        attributes = self.chat_attributes(ctx, g.provider_of(model), g.model_name(model), 0)
        span = tracer.start_span(
            f"{g.CHAT} {attributes[g.REQUEST_MODEL]}",
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=started,
        )
        call.copy_to(span)
        if type(outcome) is Success:
            response: ModelResponse = outcome.unwrap()
            span.set_attributes(g.response_attributes(response))
            if self.capture:
                answer = g.output_json(response.message, response.finish_reason, self.limit)
                span.set_attribute(g.OUTPUT_MESSAGES, answer)
        else:
            self.halted(span, outcome.failure())
        span.end()

    def tool_attributes(self, ctx: ToolCallContext) -> dict[str, Any]:
        """The attributes an ``execute_tool`` span starts with."""
        tool, limit = ctx.tool, self.limit
        attributes: dict[str, Any] = {
            g.OPERATION_NAME: g.EXECUTE_TOOL,
            g.TOOL_NAME: tool.name,
            g.TOOL_CALL_ID: g.clip(ctx.call.id, limit),
            g.TOOL_TYPE: "function",
        }
        if tool.spec.description:
            attributes[g.TOOL_DESCRIPTION] = g.clip(tool.spec.description, limit)
        if self.capture:
            attributes[g.TOOL_CALL_ARGUMENTS] = g.clip(ctx.args.model_dump_json(), limit)
        return attributes

    def tool_done(self, span: Span, outcome: Outcome[ToolResult]) -> None:
        """Record a tool call's result (or how it failed) on its ``execute_tool`` span."""
        if not span.is_recording():
            return
        if type(outcome) is Success:
            result: ToolResult = outcome.unwrap()
            if self.capture:
                span.set_attribute(g.TOOL_CALL_RESULT, g.clip(result.content, self.limit))
            if result.is_error:
                failed(span, g.TOOL_ERROR, "the tool's result is an error")
        else:
            self.halted(span, outcome.failure())


class Attempt:
    """One attempt at a model call, on its ``chat`` span: `done` records its answer."""

    __slots__ = ("clock", "own", "run", "span", "spans")

    def __init__(self, spans: Spans, run: RunSpan, span: Span, clock: Clock, own: bool) -> None:
        self.spans = spans
        self.run = run
        self.span = span
        self.clock = clock
        self.own = own
        """Whether the loop made this call (not a middleware, with ``call_model``)."""

    def done(self, outcome: Outcome[ModelResponse]) -> None:
        """The model answered (or the attempt failed): stop the clock, record the answer."""
        self.clock.stop()
        spans = self.spans
        if spans.capture and self.own and type(outcome) is Success:
            response: ModelResponse = outcome.unwrap()
            self.run.answer = response.message
        if self.span.is_recording():
            spans.answered(self.span, outcome, self.clock.to_first)
