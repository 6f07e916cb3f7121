#!/usr/bin/env bash
# Installs (once) the TypeScript MCP Apps package, `@modelcontextprotocol/ext-apps` 2.0.4 (its
# generated JSON Schema of the extension's types, and its server helpers), into the git-ignored
# folder .cache/ext-apps/, and prints the package's folder. `crates/modelctx/tests/apps_interop.rs`
# checks the SDK's tool and resource metadata against them; it is an ordinary npm-registry
# install, nothing else is downloaded.
#
# Idempotent: a marker file records the installed version; when it matches and the schema is
# there, the script only prints. Override the location with MCP_EXT_APPS_DIR.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${MCP_EXT_APPS_DIR:-$root/.cache/ext-apps}"
package="@modelcontextprotocol/ext-apps@2.0.4"
folder="$dir/node_modules/@modelcontextprotocol/ext-apps"
marker="$dir/.ready"

if [ ! -f "$marker" ] || [ "$(cat "$marker")" != "$package" ] \
  || [ ! -f "$folder/dist/src/generated/schema.json" ]; then
  command -v npm >/dev/null 2>&1 || { echo "ext-apps: npm is required (apt-get install npm)" >&2; exit 1; }
  mkdir -p "$dir"
  # A private package.json keeps npm from walking up into some other project.
  [ -f "$dir/package.json" ] || printf '{"name":"modelctx-ext-apps","private":true,"type":"module"}\n' >"$dir/package.json"
  echo "ext-apps: installing $package into $dir" >&2
  npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$package" >&2
  [ -f "$folder/dist/src/generated/schema.json" ] || { echo "ext-apps: schema missing after install" >&2; exit 1; }
  printf '%s' "$package" >"$marker"
fi

echo "$folder"
