#!/usr/bin/env bash
# Creates (once) the Python virtual environment that the interop tests use: the reference
# peer, the Python MCP SDK `mcp` 2.3.0, and the OpenTelemetry SDK its spans need in the
# cross-language trace tests. Idempotent; prints the interpreter path on stdout.
# Cached under .cache/ (git-ignored). Override the location with MCP_PY_VENV.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${MCP_PY_VENV:-$root/.cache/venv}"
marker="$venv/.mcp-2.3.0-ready"
if [ ! -f "$marker" ]; then
  echo "python-env: creating $venv with mcp==2.3.0" >&2
  python3 -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "mcp==2.3.0" >&2
  touch "$marker"
fi
# crates/modelctx/tests/otel_python.rs: the Python peers record their spans with the
# OpenTelemetry SDK's in-memory exporter. Pinned to the opentelemetry-api that mcp 2.3.0 uses
# (an SDK must match its API exactly); a marker of its own so that caches made before it get it.
otel_marker="$venv/.opentelemetry-sdk-1.45.2-ready"
if [ ! -f "$otel_marker" ]; then
  echo "python-env: adding opentelemetry-sdk==1.45.2 to $venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "opentelemetry-api==1.45.2" "opentelemetry-sdk==1.45.2" >&2
  touch "$otel_marker"
fi
echo "$venv/bin/python"
