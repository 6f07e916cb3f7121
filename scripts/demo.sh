#!/usr/bin/env bash
# The README's first command, end to end: the `mcp` client calls the demo server's `provision`
# tool; the server asks which region the database should live in, and you answer in the
# terminal (Enter on the review line sends the answer).
#
#   scripts/demo.sh                 # the demo server spawned over stdio
#   scripts/demo.sh http            # the demo server on http://127.0.0.1:<free port>/mcp
#   scripts/demo.sh [http] ARGS…    # extra `mcp call` flags, e.g. --answer region=eu-west-1
#
# Builds crates/modelctx-cli once (debug profile), then runs target/debug/mcp.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
cargo build --quiet -p modelctx-cli
target_dir="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
mcp="${target_dir:-$root/target}/debug/mcp"

transport=stdio
if [ "${1:-}" = http ]; then
  transport=http
  shift
fi

if [ "$transport" = stdio ]; then
  exec "$mcp" call provision name=orders "$@" -- "$mcp" serve demo
fi

log="$(mktemp)"
"$mcp" serve demo --http 127.0.0.1:0 2>"$log" &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -f "$log"' EXIT
url=""
for _ in $(seq 1 200); do
  url="$(sed -n 's/^listening on //p' "$log")"
  [ -n "$url" ] && break
  kill -0 "$server" 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.05
done
[ -n "$url" ] || { echo "demo.sh: the demo server did not start" >&2; exit 1; }
echo "demo server: $url" >&2
"$mcp" call "$url" provision name=orders "$@"
