"""The runs log's span processor: it keeps each recorded run's spans (the ``otel`` extra).

Imported only when OpenTelemetry's SDK is installed. The processor is *added* to an SDK
tracer provider, next to whatever exporters the application configured there: it takes
nothing away from them, and keeps only the spans started while a run is being recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.trace import TracerProvider as ApiTracerProvider

__all__ = ["SpanCapture", "is_sdk_provider", "span_doc"]

_SPAN_ID = "{:016x}"


def is_sdk_provider(provider: ApiTracerProvider) -> bool:
    """Whether ``provider`` is the SDK's, which takes span processors."""
    return isinstance(provider, TracerProvider)


def _attribute(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value


def span_doc(span: ReadableSpan, started_ns: int) -> dict[str, object]:
    """One finished span for the waterfall.

    Its ids, its start and end in milliseconds from the run's start, status and attributes.
    """
    context = span.context
    start = span.start_time or started_ns
    end = span.end_time or start
    return {
        "name": span.name,
        "span_id": _SPAN_ID.format(context.span_id) if context is not None else None,
        "parent_id": _SPAN_ID.format(span.parent.span_id) if span.parent is not None else None,
        "start_ms": (start - started_ns) / 1e6,
        "end_ms": (end - started_ns) / 1e6,
        "status": span.status.status_code.name.lower(),
        "attributes": {k: _attribute(v) for k, v in (span.attributes or {}).items()},
    }


class SpanCapture(SpanProcessor):
    """Hands each span started while a run is recorded to that run, when it ends.

    Args:
        current: The context variable holding the run being recorded (``None``: none).
        owner_of: What to call with the run and the span once it ends.
    """

    def __init__(
        self, current: ContextVar[Any], owner_of: Callable[[Any, ReadableSpan], None]
    ) -> None:
        self._current = current
        self._deliver = owner_of
        self._owners: dict[int, Any] = {}

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Note the run being recorded now, if any, as the span's owner."""
        run = self._current.get()
        if run is not None and span.context is not None:
            self._owners[span.context.span_id] = run

    def on_end(self, span: ReadableSpan) -> None:
        """Give the ended span to its run."""
        if span.context is None:
            return
        run = self._owners.pop(span.context.span_id, None)
        if run is not None:
            self._deliver(run, span)

    def attach(self, provider: ApiTracerProvider) -> None:
        """Add this processor to ``provider`` (an SDK tracer provider)."""
        assert isinstance(provider, TracerProvider)
        provider.add_span_processor(self)
