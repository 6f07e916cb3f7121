#!/usr/bin/env bash
# Load: LOAD_CLIENTS concurrent SDK clients (default 200) for LOAD_SECONDS (default 30) against
# one reliability-server on 127.0.0.1, mixing `tools/call echo` with two-round multi-round-trip
# flows (sealed requestState); 0 errors or it fails. Prints p50/p90/p99/max per kind, throughput
# and the server's VmRSS/VmHWM every second, and writes the same figures as JSON to
# .cache/reliability/load.json (git-ignored). Not part of CI (it runs long); see RELIABILITY.md.
#
#   scripts/load.sh                      # release build, 200 clients × 30 s
#   LOAD_CLIENTS=20 LOAD_SECONDS=5 LOAD_PROFILE=dev scripts/load.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
clients="${LOAD_CLIENTS:-200}"
seconds="${LOAD_SECONDS:-30}"
mrtr="${LOAD_MRTR_PERCENT:-50}"
profile="${LOAD_PROFILE:-release}"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
case "$profile" in
  dev) bin_dir="$target_dir/debug" ;;
  *) bin_dir="$target_dir/$profile" ;;
esac

# One process serves many sockets: 200 client connections plus the server's side.
ulimit -n "$(( $(ulimit -Hn) < 65536 ? $(ulimit -Hn) : 65536 ))" 2>/dev/null || true

echo "load: building modelctx-reliability ($profile)" >&2
cargo build --quiet --profile "$profile" -p modelctx-reliability --bins

mkdir -p "$root/.cache/reliability"
echo "load: $(nproc) CPUs, $(uname -sr)" >&2
"$bin_dir/mcp-load" \
  --server "$bin_dir/reliability-server" \
  --clients "$clients" \
  --seconds "$seconds" \
  --mrtr-percent "$mrtr" \
  --json "$root/.cache/reliability/load.json"
