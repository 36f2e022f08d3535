"""Export the spans of ``fncore run`` and ``fncore serve`` over OTLP, as the environment says.

With ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) set,
`export_from_environment` makes OpenTelemetry's global tracer provider an SDK provider that
sends spans in batches to an OTLP/HTTP exporter, so the ``trace`` built-in (which uses the
global provider unless given one) exports there. The SDK and the exporter read the other
standard variables themselves: ``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``,
``OTEL_EXPORTER_OTLP_HEADERS``, ``..._TIMEOUT``, ``..._COMPRESSION``,
``OTEL_TRACES_SAMPLER``, ``OTEL_BSP_*``. The provider is shut down when the process exits,
which sends what is still batched.

Nothing is set up when neither variable is set, when ``OTEL_SDK_DISABLED`` is ``true``, or
when a global provider is set already (``opentelemetry-instrument`` configured one).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from opentelemetry import trace as otel_trace

from fncore import ConfigError
from fncore._distribution import install_hint

__all__ = ["export_from_environment"]

ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
"""The variables that ask for export, the more specific first."""
PROTOCOLS = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
"""The variables that choose the protocol, the more specific first."""


def _first(names: tuple[str, ...], environ: Mapping[str, str]) -> str:
    return next((environ[name] for name in names if environ.get(name)), "")


def export_from_environment(environ: Mapping[str, str] = os.environ) -> None:
    """Send the global tracer provider's spans over OTLP/HTTP, if the environment asks.

    Args:
        environ: The environment to read (default: the process's).

    Raises:
        ConfigError: if an endpoint is set but the exporter package is not installed, or
            the protocol asked for is not ``http/protobuf``.
    """
    variable = next((name for name in ENDPOINTS if environ.get(name)), None)
    if variable is None or environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return
    if not isinstance(otel_trace.get_tracer_provider(), otel_trace.ProxyTracerProvider):
        return  # the application (or opentelemetry-instrument) chose where spans go
    protocol = _first(PROTOCOLS, environ) or "http/protobuf"
    if protocol != "http/protobuf":
        msg = (
            f"{variable} is set with the OTLP protocol {protocol!r}; fncore exports over "
            "'http/protobuf' only: unset the protocol variable or point it at an HTTP receiver"
        )
        raise ConfigError(msg)
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        msg = f"{variable} is set: exporting spans over OTLP needs {install_hint('otlp')}"
        raise ConfigError(msg) from None
    provider = TracerProvider()  # shut down at exit, flushing its processors
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    otel_trace.set_tracer_provider(provider)
