#!/usr/bin/env bash
# Installs (once) the TypeScript MCP Apps package, `@modelcontextprotocol/ext-apps` 2.0.4 (its
# generated JSON Schema of the extension's types, and its server helpers), into the git-ignored
# folder .cache/ext-apps/, and prints the package's folder. `crates/modelctx/tests/apps_interop.rs`
# checks the SDK's tool and resource metadata against them; it is an ordinary npm-registry
# install, nothing else is downloaded.
#
# Idempotent (scripts/npm-cached.sh): when the marker matches and the schema is there, the script
# only prints. Override the location with MCP_EXT_APPS_DIR.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${MCP_EXT_APPS_DIR:-$root/.cache/ext-apps}"
package="@modelcontextprotocol/ext-apps@2.0.4"
folder="$dir/node_modules/@modelcontextprotocol/ext-apps"

# shellcheck source=scripts/npm-cached.sh
. "$root/scripts/npm-cached.sh"
npm_cached ext-apps "$dir" "$package" "$folder/dist/src/generated/schema.json" \
  '{"name":"modelctx-ext-apps","private":true,"type":"module"}'

echo "$folder"
