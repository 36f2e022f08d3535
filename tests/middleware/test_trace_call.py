"""`trace`'s stand-in span: made of the OpenTelemetry API's public parts only."""

from __future__ import annotations

import inspect

from opentelemetry import trace as otel_trace
from opentelemetry.trace import NonRecordingSpan, Span

from fncore.middleware._trace_call import CallSpan


def test_the_stand_in_leaves_what_it_does_not_keep_to_the_api() -> None:
    """Every abstract method of Span is implemented by the API's NonRecordingSpan or by us.

    So a method the API adds to Span (as it added ``add_link``) is its own no-op on the
    stand-in, which never becomes an abstract class that cannot be made.
    """
    assert issubclass(CallSpan, NonRecordingSpan)
    assert not inspect.isabstract(CallSpan)
    kept = {name for name in vars(CallSpan) if not name.startswith("_")}
    for name in Span.__abstractmethods__ - kept:
        assert getattr(CallSpan, name) is getattr(NonRecordingSpan, name), name
    call = CallSpan(otel_trace.INVALID_SPAN)
    call.add_link(otel_trace.INVALID_SPAN.get_span_context())
    assert call.get_span_context() is otel_trace.INVALID_SPAN.get_span_context()
    assert (call.attributes, call.events) == ({}, [])
