"""OpenTelemetry spans for forwarded calls, replay executions and steps (SPEC §12).

Configured only by the standard `OTEL_*` variables, and only when the OpenTelemetry SDK is
installed (`pip install toolreel[otel]`): otherwise `ENABLED` stays False, which is all the
hot path ever reads. Spans follow the MCP semantic conventions (`{mcp.method.name} {target}`,
`mcp.method.name`, `gen_ai.tool.name`, `mcp.session.id`, ...) plus `toolreel.execution` and
`toolreel.step`; a `traceparent` in a request's `_meta` is continued and passed on upstream.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span, Tracer

__all__ = ["ENABLED", "configure", "disable", "inject", "record_result", "span", "use"]

logger = logging.getLogger("toolreel.tracing")

ENABLED = False
_tracer: Tracer | None = None
_ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def configure(environ: Mapping[str, str] | None = None) -> bool:
    """Turn tracing on if `OTEL_TRACES_EXPORTER` (or an OTLP endpoint) is set and the SDK is
    installed; returns whether it is on. Nothing is exported unless asked for."""
    if ENABLED:  # once per process: the global provider cannot be replaced
        return True
    env = os.environ if environ is None else environ
    exporters = [e.strip() for e in env.get("OTEL_TRACES_EXPORTER", "").split(",") if e.strip()]
    if not exporters and any(env.get(v) for v in _ENDPOINT_VARIABLES):
        exporters = ["otlp"]
    if env.get("OTEL_SDK_DISABLED", "").lower() == "true" or not exporters or exporters == ["none"]:
        return False
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
    except ImportError:
        logger.warning("OTEL_* is set but the OpenTelemetry SDK is not installed: pip install 'toolreel[otel]'")
        return False
    provider = TracerProvider(resource=Resource.create({"service.name": env.get("OTEL_SERVICE_NAME", "toolreel")}))
    for name in exporters:
        processor = _processor(name)
        if processor is not None:
            provider.add_span_processor(processor)
    use(provider)
    return True


def _processor(name: str) -> Any:
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor

    if name == "console":  # stderr: in stdio mode stdout is the protocol channel
        return SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr))
    if name == "otlp":
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            logger.warning("OTEL_TRACES_EXPORTER=otlp needs the OTLP/HTTP exporter: pip install 'toolreel[otel]'")
            return None
        return BatchSpanProcessor(OTLPSpanExporter())  # endpoint, headers, timeout: from OTEL_EXPORTER_OTLP_*
    if name != "none":
        logger.warning("OTEL_TRACES_EXPORTER=%s is not supported here; use otlp, console or none", name)
    return None


def use(provider: TracerProvider, *, set_global: bool = True) -> None:
    """Trace through `provider`, by default also the global one, so the MCP SDK's own spans join the
    trace (a process can set the global provider once: tests that trace in-process do not)."""
    from opentelemetry import trace

    global ENABLED, _tracer
    if set_global:
        trace.set_tracer_provider(provider)
    _tracer = provider.get_tracer("toolreel")
    ENABLED = True


def disable() -> None:
    """Stop making spans (tests that turned tracing on in-process)."""
    global ENABLED, _tracer
    ENABLED, _tracer = False, None


@contextlib.contextmanager
def span(
    name: str, attributes: Mapping[str, Any], *, kind: str = "internal", meta: Mapping[str, Any] | None = None
) -> Iterator[Span]:
    """A span, child of the current one, or of the trace context in `meta` (a request's `_meta`)."""
    from opentelemetry.propagate import extract
    from opentelemetry.trace import SpanKind, get_current_span

    assert _tracer is not None, "tracing.span() is only called when tracing.ENABLED"
    parent = None
    if meta and "traceparent" in meta:
        parent = extract(dict(meta))
        if not get_current_span(parent).get_span_context().is_valid:
            parent = None
    kinds = {"server": SpanKind.SERVER, "client": SpanKind.CLIENT, "internal": SpanKind.INTERNAL}
    clean = {k: v for k, v in attributes.items() if v is not None}
    with _tracer.start_as_current_span(name, context=parent, kind=kinds[kind], attributes=clean) as current:
        yield current


def inject(meta: dict[str, Any]) -> None:
    """Put the current trace context (`traceparent`, `tracestate`) in an outgoing `_meta`."""
    from opentelemetry.propagate import inject as _inject

    _inject(meta)


def record_result(current: Span, result: Mapping[str, Any] | None, error: str | None = None) -> None:
    """A tool's outcome on its span: `error.type` `tool_error` for an isError result (semantic conventions)."""
    from opentelemetry.trace import StatusCode

    meta = (result or {}).get("_meta") or {}
    for key, attribute in (("toolreel/execution", "toolreel.execution"), ("toolreel/step", "toolreel.step")):
        if isinstance(meta.get(key), str):
            current.set_attribute(attribute, meta[key])
    if error is not None or (result or {}).get("isError") is True:
        current.set_attribute("error.type", "tool_error" if error is None else "transport_error")
        current.set_status(StatusCode.ERROR, error)
