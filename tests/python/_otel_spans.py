"""The OpenTelemetry side of the cross-language trace tests (crates/modelctx/tests/otel_python.rs).

`record_spans()` installs a global TracerProvider whose SimpleSpanProcessor hands every finished
span to the SDK's InMemorySpanExporter (opentelemetry-sdk 1.45.2, from scripts/python-env.sh);
the SDK's own spans (mcp/shared/_otel.py, mcp/server/_otel.py) then land there. `finished_spans()`
turns them into the JSON the Rust test reads: name, kind, ids in W3C hex, parent, status and
attributes.
"""

from __future__ import annotations

import json
import os
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_exporter: InMemorySpanExporter | None = None


def record_spans() -> None:
    """Make the in-memory exporter the end of every span of this process (call once, first)."""
    global _exporter
    _exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_exporter))
    trace.set_tracer_provider(provider)


def _span(span: ReadableSpan) -> dict[str, Any]:
    context = span.get_span_context()
    parent = span.parent
    return {
        "name": span.name,
        "kind": span.kind.name,
        "trace_id": trace.format_trace_id(context.trace_id),
        "span_id": trace.format_span_id(context.span_id),
        "parent_span_id": trace.format_span_id(parent.span_id) if parent is not None else None,
        "parent_is_remote": parent.is_remote if parent is not None else None,
        "status": span.status.status_code.name,
        "attributes": {key: value for key, value in (span.attributes or {}).items()},
    }


def finished_spans() -> list[dict[str, Any]]:
    """Every span finished so far, oldest first."""
    assert _exporter is not None, "record_spans() was not called"
    return [_span(span) for span in _exporter.get_finished_spans()]


def write_json(path: str, document: dict[str, Any]) -> None:
    """Writes `document` to `path` whole or not at all (a reader never sees half a file)."""
    partial = f"{path}.partial"
    with open(partial, "w", encoding="utf-8") as out:
        json.dump(document, out, default=list)
    os.replace(partial, path)
