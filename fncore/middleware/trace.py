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
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from typing import Any, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import metrics as otel_metrics
from opentelemetry import trace as otel_trace
from opentelemetry.metrics import Histogram, MeterProvider
from opentelemetry.trace import (
    NoOpTracerProvider,
    ProxyTracerProvider,
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    Tracer,
    TracerProvider,
)
from opentelemetry.util.types import Attributes
from returns.result import Failure, Success

from fncore._distribution import installed_version
from fncore.core import (
    AgentError,
    Halt,
    LoopError,
    Message,
    ModelCallContext,
    ModelCallNext,
    ModelResponse,
    Outcome,
    Pause,
    Registry,
    RunContext,
    RunInfo,
    RunNext,
    RunResult,
    StreamEvent,
    Terminate,
    ToolCallContext,
    ToolCallNext,
    ToolResult,
    Usage,
)
from fncore.middleware import _genai as g
from fncore.middleware._checked import checked
from fncore.middleware._place import ORDER, place
from fncore.runtime._subagent import children_usage

__all__ = ["trace"]

_T = TypeVar("_T")

SCOPE = "fncore"
"""The instrumentation scope of every span and metric ``trace`` records."""

RECHECK_SECONDS = 1.0
"""While no provider records, how long ``trace`` goes before looking for one again."""

_clock = time.monotonic


class _Meters:
    """The histograms ``trace`` records to."""

    __slots__ = ("duration", "first_chunk", "tokens")

    def __init__(self, duration: Histogram, tokens: Histogram, first_chunk: Histogram) -> None:
        self.duration = duration
        self.tokens = tokens
        self.first_chunk = first_chunk


class _Telemetry:
    """What one pair of providers gives: a tracer, histograms (``None``: that one is off)."""

    __slots__ = ("meters", "tracer")

    def __init__(self, tracer: Tracer | None, meters: _Meters | None) -> None:
        self.tracer = tracer
        self.meters = meters


def _telemetry(tracer_provider: TracerProvider, meter_provider: MeterProvider) -> _Telemetry | None:
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
        meters = _Meters(
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
    return _Telemetry(tracer, meters)


_NOTHING = Usage()
"""What a run that is not a resume spent before it started (compared by identity)."""


def _spent_before(run: RunInfo) -> tuple[Usage, Usage]:
    """What a resumed reply had spent when it paused: by its loop, and in all.

    "In all" adds its sub-agents' usage (the run's state, restored from the checkpoint): the
    paused run's result counted both, and so does the resumed one's, from the reply's
    start. A run that is not a resume has spent nothing before.
    """
    resume = run._resume
    if resume is None:
        return _NOTHING, _NOTHING
    loop = resume.point.usage
    children = children_usage(run)
    return loop, loop if children is None else loop + children


class _Run:
    """One traced run: its telemetry and its ``invoke_agent`` span.

    With content captured, the run's input and answer are taken from its model calls as the
    model got and gave them (``seen``, ``answer``), inside every other built-in: what a
    redactor kept from the model stays out of the run's span too.

    A resumed run reports only what it spent itself: ``loop_before`` and ``before`` are what
    the reply had spent when it paused (`_spent_before`), taken off the totals its results
    carry, so the paused run's span and the resumed run's span add up to the reply's usage.
    """

    __slots__ = ("answer", "before", "described", "loop_before", "seen", "span", "telemetry")

    def __init__(self, telemetry: _Telemetry, span: Span, run: RunInfo) -> None:
        self.telemetry = telemetry
        self.span = span
        self.described = False
        self.seen: str | None = None
        self.answer: Message | None = None
        self.loop_before, self.before = _spent_before(run)

    def describe(self, provider: str, model: str) -> None:
        """Name the run's provider and model after its first model call (once)."""
        if not self.described:
            self.described = True
            self.span.set_attributes({g.PROVIDER_NAME: provider, g.REQUEST_MODEL: model})


class _ModelCall(Span):
    """The current span while a model call's middleware run, before an attempt opens one.

    Its span context is its parent's, so spans started under it nest under the run. What
    is set on it is kept, and lands on the ``chat`` spans:

    * set before the first attempt started (a cache's miss), on every attempt's span,
      copied as each starts (`begin`);
    * set after an attempt returned (``patch_tool_calls``' events), on that attempt's span:
      it is held open (`hold`) until the next attempt starts or the call is over, then
      ended at the time its attempt returned (`settle`);
    * with no attempt (a cache hit, a limit), all of it on the one span recorded for the
      call (`copy_to`).

    Status, exceptions, links and a new name are not kept.
    """

    def __init__(self, parent: Span) -> None:
        self._parent = parent
        self.attributes: dict[str, Any] = {}
        self.events: list[tuple[str, Attributes, int]] = []
        self.attempts = 0
        self._shared: tuple[dict[str, Any], int] | None = None
        self._late: dict[str, Any] = {}
        self._copied = 0
        self._held: Span | None = None
        self._ended = 0

    def get_span_context(self) -> SpanContext:
        return self._parent.get_span_context()

    def is_recording(self) -> bool:
        return self._parent.is_recording()

    def set_attribute(self, key: str, value: Any) -> None:
        self.attributes[key] = value
        self._late[key] = value

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        self.attributes.update(attributes)
        self._late.update(attributes)

    def add_event(
        self, name: str, attributes: Attributes = None, timestamp: int | None = None
    ) -> None:
        self.events.append((name, attributes, time.time_ns() if timestamp is None else timestamp))

    def update_name(self, name: str) -> None:
        pass

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        pass

    def record_exception(
        self,
        exception: BaseException,
        attributes: Attributes = None,
        timestamp: int | None = None,
        escaped: bool = False,
    ) -> None:
        pass

    def end(self, end_time: int | None = None) -> None:
        pass

    def copy_to(self, span: Span) -> None:
        """Add everything set on this stand-in to ``span`` (a call with no attempt)."""
        _add(span, self.attributes, self.events)

    def begin(self, span: Span) -> None:
        """An attempt starts with ``span``: it gets what was set before the first attempt.

        The attempt before, if any, is over: its span ends first (`settle`).
        """
        self.settle()
        if self._shared is None:
            self._shared = (dict(self.attributes), len(self.events))
        attributes, count = self._shared
        _add(span, attributes, self.events[:count])
        self._late = {}
        self._copied = len(self.events)

    def hold(self, span: Span) -> None:
        """Keep the returned attempt's ``span`` open for what is set after it; end it later.

        One is held at a time: a span held already (attempts run side by side) ends first.
        """
        self.settle()
        self._held = span
        self._ended = time.time_ns()

    def settle(self) -> None:
        """End the held attempt's span, with what was set on this stand-in since it began."""
        span = self._held
        if span is None:
            return
        self._held = None
        _add(span, self._late, self.events[self._copied :])
        self._late = {}
        self._copied = len(self.events)
        span.end(self._ended)


def _add(
    span: Span, attributes: Mapping[str, Any], events: list[tuple[str, Attributes, int]]
) -> None:
    """Set ``attributes`` and add ``events`` on ``span``."""
    if attributes:
        span.set_attributes(attributes)
    for name, event_attributes, timestamp in events:
        span.add_event(name, event_attributes, timestamp)


def _failed(span: Span, error_type: str, description: str) -> None:
    span.set_attribute(g.ERROR_TYPE, error_type)
    span.set_status(Status(StatusCode.ERROR, description))


def _raised(span: Span, exc: BaseException) -> None:
    """Record an exception passing through (cancellation, ``KeyboardInterrupt``)."""
    _failed(span, type(exc).__qualname__, f"{type(exc).__qualname__} went through")


def _halted(span: Span, halt: Halt, capture: bool, limit: int, before: Usage = _NOTHING) -> None:
    """Record a ``Failure``: a termination or a pause is not an error; an error is.

    A loop error carries the usage spent; ``before`` of it was spent before a resume.
    """
    if type(halt) is Terminate:
        span.set_attribute(g.TERMINATED, True)
        if capture:
            span.set_attribute(g.TERMINATE_OUTPUT, g.clip(halt.output, limit))
        return
    if type(halt) is Pause:
        span.set_attribute(g.PAUSED, True)
        return
    _failed(span, type(halt).__name__, g.clip(str(halt), limit))
    if isinstance(halt, LoopError):
        spent = halt.usage if before is _NOTHING else g.usage_since(halt.usage, before)
        if g.usage_known(spent):
            span.set_attributes(g.usage_attributes(spent))


class _Clock:
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


async def _within(
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
        _raised(span, exc)
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
    capture, limit = capture_content, max_attribute_length
    # Per instance, so two `trace`s (each to its own providers) never see each other's run.
    current_run: ContextVar[_Run | None] = ContextVar(f"{name}_run", default=None)
    current_call: ContextVar[_ModelCall | None] = ContextVar(f"{name}_call", default=None)
    # The telemetry of the last providers seen, resolved again only when they change (an
    # application sets its SDK's providers after building its agents, say). While none
    # records, the global ones are looked up again at most every RECHECK_SECONDS: looking
    # up an unset global provider reads the environment, about a microsecond each.
    held: list[tuple[object, object, _Telemetry | None, float]] = []

    def telemetry() -> _Telemetry | None:
        now = _clock()
        if held and held[0][2] is None and now < held[0][3]:
            return None
        tp = tracer_provider if tracer_provider is not None else otel_trace.get_tracer_provider()
        mp = meter_provider if meter_provider is not None else otel_metrics.get_meter_provider()
        same = bool(held) and held[0][0] is tp and held[0][1] is mp
        made = held[0][2] if same else _telemetry(tp, mp)
        held[:] = [(tp, mp, made, now + RECHECK_SECONDS)]
        return made

    registry = Registry()
    where = place("trace")

    @registry.on("run", name=name, **where)
    async def trace_run(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        made = telemetry()
        if made is None:
            return await call_next(ctx)
        run = ctx.run
        span: Span = otel_trace.INVALID_SPAN
        if made.tracer is not None:
            attributes: dict[str, Any] = {
                g.OPERATION_NAME: g.INVOKE_AGENT,
                g.AGENT_NAME: run.agent,
                g.RUN_ID: run.run_id,
            }
            if run.session_id is not None:
                attributes[g.CONVERSATION_ID] = run.session_id
            span = made.tracer.start_span(
                f"{g.INVOKE_AGENT} {run.agent}", kind=SpanKind.INTERNAL, attributes=attributes
            )
        traced = _Run(made, span, run)
        marker = current_run.set(traced)
        try:
            if made.tracer is None:  # metrics only: the caller's span stays the current one
                return await call_next(ctx)
            return await _within(span, call_next(ctx), lambda outcome: _ran(traced, outcome))
        finally:
            current_run.reset(marker)

    def _ran(run: _Run, outcome: Outcome[RunResult]) -> None:
        span = run.span
        if not span.is_recording():
            return
        if capture and run.seen is not None:
            span.set_attribute(g.INPUT_MESSAGES, run.seen)
        if type(outcome) is not Success:
            _halted(span, outcome.failure(), capture, limit, run.loop_before)
            return
        result: RunResult = outcome.unwrap()
        found: dict[str, Any] = {g.STOP_REASON: result.stop_reason, g.ROUNDS: result.rounds}
        spent = result.usage if run.before is _NOTHING else g.usage_since(result.usage, run.before)
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

    @registry.on("model_call", name=name, **where)
    async def trace_call(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        run = current_run.get()
        if run is None or run.telemetry.tracer is None:
            return await call_next(ctx)
        call = _ModelCall(otel_trace.get_current_span())
        started = time.time_ns()
        marker = current_call.set(call)
        token = otel_context.attach(otel_trace.set_span_in_context(call))
        try:
            outcome = await call_next(ctx)
        finally:
            otel_context.detach(token)
            current_call.reset(marker)
            call.settle()  # the last attempt's span, with what was set after it returned
        if call.attempts == 0 and call.is_recording():
            _unattempted(run.telemetry.tracer, ctx, call, outcome, started)
        return outcome

    def _unattempted(
        tracer: Tracer,
        ctx: ModelCallContext,
        call: _ModelCall,
        outcome: Outcome[ModelResponse],
        started: int,
    ) -> None:
        """The ``chat`` span of a model call that no attempt reached the model for."""
        model = ctx.model
        attributes = _chat_attributes(ctx, g.provider_of(model), g.model_name(model), 0)
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
            if capture:
                answer = g.output_json(response.message, response.finish_reason, limit)
                span.set_attribute(g.OUTPUT_MESSAGES, answer)
        else:
            _halted(span, outcome.failure(), capture, limit)
        span.end()

    def _chat_attributes(
        ctx: ModelCallContext, provider: str, model: str, attempt: int
    ) -> dict[str, Any]:
        request = ctx.request
        attributes: dict[str, Any] = {
            g.OPERATION_NAME: g.CHAT,
            g.PROVIDER_NAME: provider,
            g.REQUEST_MODEL: model,
            g.ATTEMPT: attempt,
            **g.request_attributes(request, ctx.run.emit is not None),
        }
        attributes.update(g.server_of(ctx.model))
        if capture:
            attributes[g.INPUT_MESSAGES] = g.messages_json(request.messages, limit)
            if request.instructions:
                attributes[g.SYSTEM_INSTRUCTIONS] = g.instructions_json(request.instructions, limit)
            if request.tools:
                attributes[g.TOOL_DEFINITIONS] = g.tools_json(request.tools, limit)
        return attributes

    @registry.on(
        "model_call",
        name=f"{name}_chat",
        order="innermost",
        after=[n for n in ORDER if n != "trace"],
        builtin="trace_chat",
    )
    async def trace_chat(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        run = current_run.get()
        if run is None:
            return await call_next(ctx)
        call = current_call.get()
        if call is None:  # metrics only: the outer layer stood for nothing
            call = _ModelCall(otel_trace.INVALID_SPAN)
        call.attempts += 1
        attempt = call.attempts
        model = ctx.model
        provider, model_id = g.provider_of(model), g.model_name(model)
        made = run.telemetry
        clock = _Clock()
        if ctx.run.emit is not None:
            ctx = ctx.map_events(clock.chunk)
        if made.tracer is None:  # metrics only
            clock.start()
            outcome = await call_next(ctx)
            clock.stop()
        else:
            run.describe(provider, model_id)
            span = made.tracer.start_span(
                f"{g.CHAT} {model_id}",
                kind=SpanKind.CLIENT,
                attributes=_chat_attributes(ctx, provider, model_id, attempt),
            )
            call.begin(span)

            own = ctx.run.calling is None  # not a middleware's own call (call_model)
            if capture and own and run.seen is None:
                run.seen = g.messages_json(ctx.request.messages, limit)

            def done(outcome: Outcome[ModelResponse]) -> None:
                clock.stop()
                if capture and own and type(outcome) is Success:
                    response: ModelResponse = outcome.unwrap()
                    run.answer = response.message
                if span.is_recording():
                    _answered(span, outcome, clock.to_first)

            clock.start()
            outcome = await _within(span, call_next(ctx), done, call.hold)
        _measure(made.meters, ctx, outcome, provider, model_id, clock)
        return outcome

    def _answered(span: Span, outcome: Outcome[ModelResponse], to_first: float | None) -> None:
        if type(outcome) is not Success:
            _halted(span, outcome.failure(), capture, limit)
            return
        response: ModelResponse = outcome.unwrap()
        found = g.response_attributes(response)
        if to_first is not None:
            found[g.RESPONSE_TIME_TO_FIRST_CHUNK] = to_first
        if g.usage_known(response.usage):
            found.update(g.usage_attributes(response.usage))
        if capture:
            found[g.OUTPUT_MESSAGES] = g.output_json(
                response.message, response.finish_reason, limit
            )
        span.set_attributes(found)

    def _measure(
        meters: _Meters | None,
        ctx: ModelCallContext,
        outcome: Outcome[ModelResponse],
        provider: str,
        model: str,
        clock: _Clock,
    ) -> None:
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

    @registry.on("tool_call", name=name, **where)
    async def trace_tool(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        run = current_run.get()
        if run is None or run.telemetry.tracer is None:
            return await call_next(ctx)
        tool = ctx.tool
        attributes: dict[str, Any] = {
            g.OPERATION_NAME: g.EXECUTE_TOOL,
            g.TOOL_NAME: tool.name,
            g.TOOL_CALL_ID: g.clip(ctx.call.id, limit),
            g.TOOL_TYPE: "function",
        }
        if tool.spec.description:
            attributes[g.TOOL_DESCRIPTION] = g.clip(tool.spec.description, limit)
        if capture:
            attributes[g.TOOL_CALL_ARGUMENTS] = g.clip(ctx.args.model_dump_json(), limit)
        span = run.telemetry.tracer.start_span(
            f"{g.EXECUTE_TOOL} {tool.name}", kind=SpanKind.INTERNAL, attributes=attributes
        )
        return await _within(span, call_next(ctx), lambda outcome: _done(span, outcome))

    def _done(span: Span, outcome: Outcome[ToolResult]) -> None:
        if not span.is_recording():
            return
        if type(outcome) is Success:
            result: ToolResult = outcome.unwrap()
            if capture:
                span.set_attribute(g.TOOL_CALL_RESULT, g.clip(result.content, limit))
            if result.is_error:
                _failed(span, g.TOOL_ERROR, "the tool's result is an error")
        else:
            _halted(span, outcome.failure(), capture, limit)

    return registry
