#!/usr/bin/env bash
# Creates (once) the Python virtual environment that the interop tests use: the reference
# peer, the Python MCP SDK `mcp` 2.3.0. Idempotent; prints the interpreter path on stdout.
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
echo "$venv/bin/python"
