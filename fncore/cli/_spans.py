"""``fncore run --trace``: the run's OpenTelemetry spans, printed as a compact tree.

This module needs the OpenTelemetry SDK (the ``otel`` extra); the CLI imports it only for
``--trace``. Its tracer provider is the CLI's own, handed to the ``trace`` built-in: the
global provider is left alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.sampling import ALWAYS_ON

from fncore.middleware import _genai as g

PREFIX = "[span] "
"""What every printed span line starts with (the middleware trace uses ``[run]`` and so on)."""


def _tokens(attributes: Mapping[str, object]) -> str | None:
    if g.USAGE_INPUT_TOKENS not in attributes:
        return None
    return (
        f"tokens {attributes[g.USAGE_INPUT_TOKENS]} in / "
        f"{attributes.get(g.USAGE_OUTPUT_TOKENS, 0)} out"
    )


def details(span: ReadableSpan) -> list[str]:
    """What a span line says after the name and duration, most telling first."""
    attributes = dict(span.attributes or {})
    out: list[str] = []
    if g.ERROR_TYPE in attributes:
        out.append(f"error {attributes[g.ERROR_TYPE]}")
    if attributes.get(g.TERMINATED):
        out.append("terminated")
    if attributes.get(g.CACHE_HIT):
        out.append("cache hit")
    operation = attributes.get(g.OPERATION_NAME)
    if operation == g.INVOKE_AGENT:
        for key, label in ((g.PROVIDER_NAME, "provider"), (g.REQUEST_MODEL, "model")):
            if key in attributes:
                out.append(f"{label} {attributes[key]}")
        if g.ROUNDS in attributes:
            out.append(f"rounds {attributes[g.ROUNDS]}")
        if g.STOP_REASON in attributes:
            out.append(f"stop {attributes[g.STOP_REASON]}")
    elif operation == g.CHAT:
        out.append(f"attempt {attributes.get(g.ATTEMPT, '?')}")
        reasons = attributes.get(g.RESPONSE_FINISH_REASONS)
        if isinstance(reasons, Sequence) and not isinstance(reasons, str):
            out.append(f"finish {','.join(str(r) for r in reasons)}")
        first = attributes.get(g.RESPONSE_TIME_TO_FIRST_CHUNK)
        if isinstance(first, float):
            out.append(f"first chunk {first * 1000:.2f} ms")
    elif operation == g.EXECUTE_TOOL and g.TOOL_CALL_ID in attributes:
        out.append(f"call {attributes[g.TOOL_CALL_ID]}")
    tokens = _tokens(attributes)
    if tokens is not None:
        out.append(tokens)
    return out


def line(span: ReadableSpan, depth: int) -> str:
    """One span as one line: indented by depth, its name, duration and details.

    Example:
        >>> from opentelemetry.sdk.trace import ReadableSpan
        >>> span = ReadableSpan("chat test", attributes={"gen_ai.operation.name": "chat",
        ...     "fncore.attempt": 1}, start_time=0, end_time=1_500_000)
        >>> line(span, 1)
        '[span]   chat test 1.50 ms: attempt 1'
    """
    took = ((span.end_time or 0) - (span.start_time or 0)) / 1e6
    said = details(span)
    tail = f": {', '.join(said)}" if said else ""
    return f"{PREFIX}{'  ' * depth}{span.name} {took:.2f} ms{tail}"


def _own_id(span: ReadableSpan) -> int:
    return span.context.span_id if span.context is not None else 0


class SpanPrinter(SpanProcessor):
    """Prints each trace's spans as a tree, once its root span ends.

    Spans end inner first; they are kept, per trace, until the trace's root ends, then
    printed parent before child, siblings in the order they started.
    """

    def __init__(self, write: Callable[[str], None]) -> None:
        self._write = write
        self._traces: dict[int, list[ReadableSpan]] = {}

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Nothing to do until spans end."""

    def on_end(self, span: ReadableSpan) -> None:
        """Keep ``span``; print its trace when it is the root."""
        trace_id = span.context.trace_id if span.context is not None else 0
        spans = self._traces.setdefault(trace_id, [])
        spans.append(span)
        if span.parent is None:
            del self._traces[trace_id]
            self._print(spans)

    def _print(self, spans: list[ReadableSpan]) -> None:
        ids = {_own_id(s) for s in spans}
        children: dict[int | None, list[ReadableSpan]] = {}
        for span in spans:
            parent = span.parent.span_id if span.parent is not None else None
            children.setdefault(parent if parent in ids else None, []).append(span)

        def walk(parent: int | None, depth: int) -> None:
            for span in sorted(children.get(parent, []), key=lambda s: s.start_time or 0):
                self._write(line(span, depth))
                walk(_own_id(span), depth + 1)

        walk(None, 0)

    def shutdown(self) -> None:
        """Print what is left (spans whose root never ended), then forget it."""
        traces, self._traces = self._traces, {}
        for spans in traces.values():
            self._print(spans)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Nothing is buffered but unfinished traces: always flushed."""
        return True


def printing_provider(write: Callable[[str], None]) -> TracerProvider:
    """A tracer provider that samples every span and prints each trace through ``write``.

    Call its ``shutdown()`` when the run is over.
    """
    provider = TracerProvider(
        sampler=ALWAYS_ON,
        resource=Resource.create({"service.name": "fncore"}),
        shutdown_on_exit=False,
    )
    provider.add_span_processor(SpanPrinter(write))
    return provider
