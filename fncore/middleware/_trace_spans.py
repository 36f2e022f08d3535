"""What `trace` records: its telemetry, the attributes of its spans, its metrics.

`trace` (the middleware, in ``trace.py``) decides when a span starts and ends; what each
span and each measurement holds is built here: `Spans` for the spans (with or without
captured content), `measure` for the metrics (the stand-in span of a model call is
`CallSpan`, in ``_trace_call.py``).
"""

from __future__ import annotations

import time
from typing import Any

from opentelemetry.context import Context
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
from returns.result import Success

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
    ToolSpec,
    Usage,
)
from fncore.middleware import _genai as g
from fncore.middleware._trace_call import CallSpan
from fncore.middleware._trace_models import MAX_KNOWN, ModelFacts, Models
from fncore.runtime._subagent import children_usage

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
        self.described: dict[str, Any] | None = None
        """The provider and model of the run's first model call, set on its span at its end."""
        self.seen: str | None = None
        self.answer: Message | None = None
        if run._resume is None:
            self.loop_before = self.before = NOTHING
        else:
            self.loop_before, self.before = spent_before(run)

    def raised(self, exc: BaseException) -> None:
        """Record an exception passing through the run (cancellation) on its span."""
        if self.described is not None:
            self.span.set_attributes(self.described)
        raised(self.span, exc)


def failed(span: Span, error_type: str, description: str) -> None:
    """Mark ``span`` as failed with ``error_type``."""
    span.set_attribute(g.ERROR_TYPE, error_type)
    span.set_status(Status(StatusCode.ERROR, description))


def raised(span: Span, exc: BaseException) -> None:
    """Record an exception passing through (cancellation, ``KeyboardInterrupt``)."""
    failed(span, type(exc).__qualname__, f"{type(exc).__qualname__} went through")


class FirstChunk:
    """When a streamed attempt's first event arrived (`chunk` maps each event to itself)."""

    __slots__ = ("at",)

    def __init__(self) -> None:
        self.at: float | None = None

    def chunk(self, event: StreamEvent) -> StreamEvent:
        """An event map: note when the first streamed event arrives, pass it on."""
        if self.at is None:
            self.at = time.perf_counter()
        return event

    def after(self, started: float) -> float | None:
        """Seconds from ``started`` to the first chunk, if one came."""
        return None if self.at is None else self.at - started


def measure(
    meters: Meters | None,
    model: ModelFacts,
    outcome: Outcome[ModelResponse],
    seconds: float,
    to_first: float | None,
    context: Context | None = None,
) -> None:
    """Record one attempt's duration, time to first chunk and tokens, if metrics are on.

    ``context`` is the current one, if the caller has it at hand (else it is looked up).
    """
    if meters is None:
        return
    if type(outcome) is Success:
        response: ModelResponse = outcome.unwrap()
        attributes, input_, output = model.metrics(response.model_name)
        if to_first is not None:
            meters.first_chunk.record(to_first, attributes, context)
        meters.duration.record(seconds, attributes, context)
        usage = response.usage
        if usage.requests or usage.input_tokens or usage.output_tokens:  # `g.usage_known`
            meters.tokens.record(usage.input_tokens, input_, context)
            meters.tokens.record(usage.output_tokens, output, context)
        return
    attributes = model.metrics("")[0]
    if to_first is not None:
        meters.first_chunk.record(to_first, attributes, context)
    halt = outcome.failure()
    if isinstance(halt, AgentError):
        attributes = {**attributes, g.ERROR_TYPE: type(halt).__name__}
    meters.duration.record(seconds, attributes, context)


class Spans:
    """The attributes of ``trace``'s spans: with content captured or not, texts clipped.

    Args:
        capture: Whether messages, instructions, tools, arguments and results are recorded.
        limit: The most characters of any text attribute.
    """

    __slots__ = ("_tools", "capture", "limit", "models")

    def __init__(self, capture: bool, limit: int) -> None:
        self.capture = capture
        self.limit = limit
        self.models = Models()
        self._tools: dict[str, tuple[ToolSpec, str, dict[str, Any]]] = {}
        """Per tool name: its spec, its span's name and the attributes it always has."""

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
            found: dict[str, Any] = {}
            g.add_usage(found, spent)
            if found:
                span.set_attributes(found)

    def ran(self, run: RunSpan, outcome: Outcome[RunResult]) -> None:
        """Record how a run ended on its ``invoke_agent`` span."""
        span = run.span
        if not span.is_recording():
            return
        capture, limit = self.capture, self.limit
        described = run.described
        if type(outcome) is not Success:
            if described is not None:
                span.set_attributes(described)
            if capture and run.seen is not None:
                span.set_attribute(g.INPUT_MESSAGES, run.seen)
            self.halted(span, outcome.failure(), run.loop_before)
            return
        result: RunResult = outcome.unwrap()
        found: dict[str, Any] = {} if described is None else dict(described)
        if capture and run.seen is not None:
            found[g.INPUT_MESSAGES] = run.seen
        found[g.STOP_REASON] = result.stop_reason
        found[g.ROUNDS] = result.rounds
        spent = result.usage if run.before is NOTHING else g.usage_since(result.usage, run.before)
        g.add_usage(found, spent)
        if result.stop_reason == "terminated":
            found[g.TERMINATED] = True
        if capture:
            answer = Message.assistant(result.output)
            if run.answer is not None and result.stop_reason != "terminated":
                answer = run.answer
            found[g.OUTPUT_MESSAGES] = g.output_json(answer, result.stop_reason, limit)
        span.set_attributes(found)

    def chat_attributes(
        self, ctx: ModelCallContext, model: ModelFacts, attempt: int
    ) -> dict[str, Any]:
        """The attributes a ``chat`` span starts with: the request as the model gets it.

        Not to be changed: a first attempt with no content captured gets what
        `ModelFacts.first_for` keeps.
        """
        request = ctx.request
        streaming = ctx.run.emit is not None
        capture = self.capture
        if attempt == 1 and not capture:
            return model.first_for(request, streaming)
        attributes = model.started(attempt, g.request_attributes(request, streaming))
        if not capture:
            return attributes
        limit = self.limit
        attributes[g.INPUT_MESSAGES] = g.messages_json(request.messages, limit)
        if request.instructions:
            attributes[g.SYSTEM_INSTRUCTIONS] = g.instructions_json(request.instructions, limit)
        if request.tools:
            attributes[g.TOOL_DEFINITIONS] = g.tools_json(request.tools, limit)
        return attributes

    def asked(self, run: RunSpan, ctx: ModelCallContext) -> None:
        """Keep the run's input (content captured): the first request the loop made."""
        if run.seen is None and ctx.run.calling is None:
            run.seen = g.messages_json(ctx.request.messages, self.limit)

    def answered(
        self,
        run: RunSpan,
        ctx: ModelCallContext,
        span: Span,
        outcome: Outcome[ModelResponse],
        to_first: float | None,
    ) -> None:
        """Record an attempt's answer (or how it failed) on its ``chat`` span.

        With content captured, an answer to the loop's own call (not a middleware's, with
        ``call_model``) is also kept as the run's answer so far.
        """
        if type(outcome) is not Success:
            if span.is_recording():
                self.halted(span, outcome.failure())
            return
        response: ModelResponse = outcome.unwrap()
        if self.capture and ctx.run.calling is None:
            run.answer = response.message
        if not span.is_recording():
            return
        found = g.response_attributes(response)
        if to_first is not None:
            found[g.RESPONSE_TIME_TO_FIRST_CHUNK] = to_first
        g.add_usage(found, response.usage)
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
        model = self.models.of(ctx.model)
        span = tracer.start_span(
            model.chat,
            kind=SpanKind.INTERNAL,
            attributes={**self.chat_attributes(ctx, model, 0), **call.attributes},
            start_time=started,
        )
        call.copy_events_to(span)
        if type(outcome) is Success:
            response: ModelResponse = outcome.unwrap()
            span.set_attributes(g.response_attributes(response))
            if self.capture:
                answer = g.output_json(response.message, response.finish_reason, self.limit)
                span.set_attribute(g.OUTPUT_MESSAGES, answer)
        else:
            self.halted(span, outcome.failure())
        span.end()

    def tool(self, ctx: ToolCallContext) -> tuple[str, dict[str, Any]]:
        """An ``execute_tool`` span's name, and the attributes it starts with (a new dict).

        What never changes for a tool (its name, its description) is made once per spec.
        """
        tool, limit = ctx.tool, self.limit
        name, spec = tool.name, tool.spec
        known = self._tools.get(name)
        if known is None or known[0] is not spec:
            fixed: dict[str, Any] = {
                g.OPERATION_NAME: g.EXECUTE_TOOL,
                g.TOOL_NAME: name,
                g.TOOL_TYPE: "function",
            }
            if spec.description:
                fixed[g.TOOL_DESCRIPTION] = g.clip(spec.description, limit)
            known = (spec, f"{g.EXECUTE_TOOL} {name}", fixed)
            if len(self._tools) >= MAX_KNOWN:
                self._tools.clear()
            self._tools[name] = known
        attributes = {**known[2], g.TOOL_CALL_ID: g.clip(ctx.call.id, limit)}
        if self.capture:
            attributes[g.TOOL_CALL_ARGUMENTS] = g.clip(ctx.args.model_dump_json(), limit)
        return known[1], attributes

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
