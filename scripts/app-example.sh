#!/usr/bin/env bash
# Installs (once) the official MCP Apps example server, `@modelcontextprotocol/server-basic-vanillajs`
# 2.0.3 (a `get-time` tool whose `ui://` app is built on the ext-apps `App` class), into the
# git-ignored folder .cache/app-example/, and prints how to run it: the Node 22 binary
# (scripts/node-env.sh) on the first line, the server's entry point on the second. Run it as a
# stdio server with `NODE ENTRY --stdio`. `mcp app`'s browser tests (crates/modelctx-cli/tests/
# app_host.rs) run it so; it is an ordinary npm-registry install, nothing else is downloaded.
#
# Idempotent (scripts/npm-cached.sh): when the marker matches and the entry point is there, the
# script only prints. Override the location with MCP_APP_EXAMPLE_DIR.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${MCP_APP_EXAMPLE_DIR:-$root/.cache/app-example}"
package="@modelcontextprotocol/server-basic-vanillajs@2.0.3"
entry="$dir/node_modules/@modelcontextprotocol/server-basic-vanillajs/dist/index.js"

# shellcheck source=scripts/npm-cached.sh
. "$root/scripts/npm-cached.sh"

node22="$(bash "$root/scripts/node-env.sh")"

npm_cached app-example "$dir" "$package" "$entry"

echo "$node22"
echo "$entry"
