"""OpenTelemetry (SPEC §12): spans for forwarded calls, replay executions and steps, trace context continued.

Replays are traced in-process into the SDK's in-memory exporter; the gateway runs as a real process with
`OTEL_TRACES_EXPORTER=console` (spans on its stderr) and once exporting OTLP/HTTP to a receiver this test
runs. The `traced` fixture server answers with the `traceparent` it received, so propagation is seen from
the upstream's side.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import uvicorn
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.gw import call, fixture_entry, free_port, gateway_env, stdio_gateway, wait_until, write_config
from toolreel.core import tracing
from toolreel.core.model import TemplateDraft
from toolreel.core.store import open_store
from toolreel.replayer import Engine, load_template
from toolreel.upstreams.config import parse_config
from toolreel.upstreams.hub import open_upstreams

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT_ID = "b7ad6b7169203331"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


def test_nothing_is_traced_unless_otel_variables_ask() -> None:
    for environ in (
        {},
        {"OTEL_TRACES_EXPORTER": "none"},
        {"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "console"},
    ):
        assert tracing.configure(environ) is False
    assert tracing.ENABLED is False


@pytest.fixture
def memory() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use(provider, set_global=False)  # this process's own MCP clients stay untraced
    try:
        yield exporter
    finally:
        tracing.disable()


@pytest.mark.slow
@pytest.mark.anyio
async def test_replay_execution_and_steps_are_spans_and_upstreams_continue_the_trace(
    tmp_path: Path, memory: InMemorySpanExporter
) -> None:
    definition = {
        "name": "traced",
        "steps": [
            {"name": "see", "tool": "traced__meta", "input": {}},
            {"name": "say", "tool": "features__echo", "input": {"text": "hi"}, "depends_on": ["see"]},
        ],
        "output": "@see",
    }
    config = parse_config({"mcpServers": {"traced": fixture_entry("traced"), "features": fixture_entry("features")}})
    with open_store(f"sqlite:///{tmp_path / 'store.db'}") as store:
        store.save_template(TemplateDraft("traced", definition))
        template = load_template(store, "traced", 1)
        async with open_upstreams(config) as hub, Engine(store, hub) as engine:
            execution = await engine.run_template(template, {})
    spans = {s.name: s for s in memory.get_finished_spans()}
    run = spans["toolreel.execution traced"]
    see, say = spans["tools/call traced__meta"], spans["tools/call features__echo"]
    assert dict(run.attributes or {})["toolreel.execution"] == execution.id
    for step, name in ((see, "see"), (say, "say")):
        attributes = dict(step.attributes or {})
        assert step.parent is not None and step.parent.span_id == run.context.span_id
        assert attributes["toolreel.step"] == name and attributes["toolreel.execution"] == execution.id
        assert attributes["mcp.method.name"] == "tools/call" and attributes["gen_ai.operation.name"] == "execute_tool"
    assert dict(see.attributes or {})["gen_ai.tool.name"] == "traced__meta"
    received = execution.output["traceparent"]
    assert received.split("-")[1] == f"{run.context.trace_id:032x}"  # the upstream is in the same trace


def _console_spans(stderr: str) -> list[dict[str, Any]]:
    """The JSON spans ConsoleSpanExporter wrote among the log lines."""
    decoder, spans, at = json.JSONDecoder(), [], 0
    while (at := stderr.find("{\n", at)) >= 0:
        try:
            value, end = decoder.raw_decode(stderr, at)
        except ValueError:
            at += 1
            continue
        if isinstance(value, dict) and "context" in value and "name" in value:
            spans.append(value)
        at = end
    return spans


@pytest.mark.anyio
@pytest.mark.slow
async def test_forwarded_call_span_on_the_console_continues_the_callers_trace(tmp_path: Path) -> None:
    config = write_config(tmp_path / "client.json", {"traced": fixture_entry("traced")})
    env = gateway_env(f"sqlite:///{tmp_path / 'store.db'}", OTEL_TRACES_EXPORTER="console", OTEL_SERVICE_NAME="gw")
    async with stdio_gateway(["--config", str(config)], env) as s:
        result = await call(s, "traced__meta", meta={"traceparent": TRACEPARENT})
        assert s.gateway is not None
        gateway = s.gateway
        await wait_until(lambda: "tools/call traced__meta" in gateway.stderr(), 30, "the span on stderr")
    passed_on = result.structured_content["traceparent"]
    assert passed_on.split("-")[1] == TRACE_ID and passed_on.split("-")[2] != PARENT_ID  # continued, one hop on
    (span,) = [sp for sp in _console_spans(gateway.stderr()) if sp["name"] == "tools/call traced__meta"]
    attributes = span["attributes"]
    assert span["context"]["trace_id"] == f"0x{TRACE_ID}" and span["parent_id"] == f"0x{PARENT_ID}"
    assert span["kind"] == "SpanKind.SERVER" and span["resource"]["attributes"]["service.name"] == "gw"
    assert attributes["mcp.method.name"] == "tools/call" and attributes["gen_ai.tool.name"] == "traced__meta"
    assert attributes["toolreel.step"] == "meta_1" and attributes["toolreel.server"] == "traced"
    assert attributes["toolreel.execution"] == (result.meta or {})["toolreel/execution"]


@pytest.fixture
async def receiver() -> AsyncIterator[tuple[str, list[ExportTraceServiceRequest]]]:
    """A real OTLP/HTTP endpoint (protobuf on /v1/traces) on 127.0.0.1."""
    received: list[ExportTraceServiceRequest] = []

    async def traces(request: Request) -> Response:
        message = ExportTraceServiceRequest()
        message.ParseFromString(await request.body())
        received.append(message)
        return Response(b"", media_type="application/x-protobuf")

    port = free_port()
    app = Starlette(routes=[Route("/v1/traces", traces, methods=["POST"])])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="off"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        await wait_until(lambda: server.started, 30, "the OTLP receiver")
        yield f"http://127.0.0.1:{port}", received
        server.should_exit = True


@pytest.mark.anyio
@pytest.mark.slow
async def test_spans_reach_a_real_otlp_http_receiver(
    tmp_path: Path, receiver: tuple[str, list[ExportTraceServiceRequest]]
) -> None:
    endpoint, received = receiver
    config = write_config(tmp_path / "client.json", {"traced": fixture_entry("traced")})
    env = gateway_env(
        f"sqlite:///{tmp_path / 'store.db'}",
        OTEL_TRACES_EXPORTER="otlp",
        OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
        OTEL_BSP_SCHEDULE_DELAY="100",
    )

    def names() -> set[str]:
        return {
            span.name
            for message in received
            for resource in message.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        }

    async with stdio_gateway(["--config", str(config)], env) as s:
        await call(s, "traced__meta", meta={"traceparent": TRACEPARENT})
        await wait_until(lambda: "tools/call traced__meta" in names(), 30, "the span at the receiver")
    spans = [
        span
        for message in received
        for resource in message.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
        if span.name == "tools/call traced__meta"
    ]
    assert spans[0].trace_id.hex() == TRACE_ID and spans[0].parent_span_id.hex() == PARENT_ID


@pytest.mark.anyio
@pytest.mark.slow
async def test_over_http_the_trace_context_also_travels_in_headers(tmp_path: Path) -> None:
    from tests.gw import fixture_http_server

    async with fixture_http_server("traced") as url:
        config = write_config(tmp_path / "client.json", {"web": {"url": url}})
        env = gateway_env(f"sqlite:///{tmp_path / 'store.db'}", OTEL_TRACES_EXPORTER="console")
        async with stdio_gateway(["--config", str(config)], env) as s:
            result = await call(s, "web__meta", meta={"traceparent": TRACEPARENT})
    seen = result.structured_content
    assert seen["header"] is not None and seen["header"].split("-")[1] == TRACE_ID
    assert seen["traceparent"].split("-")[1] == TRACE_ID


@pytest.mark.anyio
@pytest.mark.slow
async def test_without_otel_variables_the_callers_traceparent_passes_through_untouched(tmp_path: Path) -> None:
    config = write_config(tmp_path / "client.json", {"traced": fixture_entry("traced")})
    async with stdio_gateway(["--config", str(config)], gateway_env(f"sqlite:///{tmp_path / 'store.db'}")) as s:
        result = await call(s, "traced__meta", meta={"traceparent": TRACEPARENT})
        assert s.gateway is not None
        stderr = s.gateway.stderr()
    assert result.structured_content["traceparent"] == TRACEPARENT and not _console_spans(stderr)
