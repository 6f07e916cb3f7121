#!/usr/bin/env bash
# Installs (once) the TypeScript MCP SDK v1, `@modelcontextprotocol/sdk` 1.32.2 (the client
# hosts ship), into the git-ignored folder .cache/ts-sdk/, and prints how to run a script against
# it: the Node 22 binary (scripts/node-env.sh) on the first line, the folder whose node_modules
# holds the SDK on the second (run a CommonJS script with NODE_PATH=<folder>/node_modules).
# `mcp bridge`'s tests (crates/modelctx-cli/tests/bridge/) drive the bridge with it.
#
# Idempotent (scripts/npm-cached.sh): when the marker matches and the package is there, the
# script only prints. Override the location with MCP_TS_SDK_DIR.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${MCP_TS_SDK_DIR:-$root/.cache/ts-sdk}"
# shellcheck source=scripts/npm-cached.sh
. "$root/scripts/npm-cached.sh"

node22="$(bash "$root/scripts/node-env.sh")"
npm_cached ts-sdk "$dir" "@modelcontextprotocol/sdk@1.32.2" \
  "$dir/node_modules/@modelcontextprotocol/sdk/package.json"

echo "$node22"
echo "$dir"
