"""The real OpenTelemetry SDK with in-memory exporters, for the ``trace`` tests."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader, Metric
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Sampler

from fncore import Registry
from fncore.middleware import trace


@dataclass
class Otel:
    """An SDK tracer provider and meter provider, each exporting to memory."""

    sampler: Sampler | None = None
    exporter: InMemorySpanExporter = field(default_factory=InMemorySpanExporter)
    reader: InMemoryMetricReader = field(default_factory=InMemoryMetricReader)

    def __post_init__(self) -> None:
        options: dict[str, Any] = {"shutdown_on_exit": False}
        if self.sampler is not None:
            options["sampler"] = self.sampler
        self.tracer_provider = TracerProvider(**options)
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.meter_provider = MeterProvider(metric_readers=[self.reader], shutdown_on_exit=False)

    def registry(self, **options: Any) -> Registry:
        """A registry holding ``trace`` on these providers."""
        registry = Registry()
        registry.include(
            trace(
                tracer_provider=self.tracer_provider,
                meter_provider=self.meter_provider,
                **options,
            )
        )
        return registry

    def spans(self) -> tuple[ReadableSpan, ...]:
        """Every span ended so far, in the order they ended."""
        return tuple(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        """The spans called ``name``, in the order they started."""
        found = [s for s in self.spans() if s.name == name]
        return sorted(found, key=lambda s: s.start_time or 0)

    def one(self, name: str) -> ReadableSpan:
        """The only span called ``name``."""
        found = self.named(name)
        assert len(found) == 1, [s.name for s in self.spans()]
        return found[0]

    def metrics(self) -> dict[str, Metric]:
        """Every metric recorded so far, by name."""
        data = self.reader.get_metrics_data()
        if data is None:
            return {}
        return {
            metric.name: metric
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
        }

    def points(self, name: str) -> Sequence[HistogramDataPoint]:
        """The data points of histogram ``name`` (none if it was not recorded)."""
        metric = self.metrics().get(name)
        if metric is None:
            return ()
        return metric.data.data_points  # type: ignore[return-value]


def parent_of(span: ReadableSpan) -> int | None:
    """The span id of ``span``'s parent, if it has one."""
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    """``span``'s own id."""
    assert span.context is not None
    return span.context.span_id


def attrs(span: ReadableSpan) -> dict[str, Any]:
    """``span``'s attributes as a plain dict."""
    return dict(span.attributes or {})
