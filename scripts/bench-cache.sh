#!/usr/bin/env bash
# The client response cache's hit path against the request it saves (issue 35, point 1):
# instructions per `Client::list_tools` over the in-memory transport, cached (the default cache,
# a server hint of an hour: every call after the first is a hit) and uncached (`no_cache`: every
# call is a request to the in-process server), each as
#
#     instructions per call = (total(N2) - total(N1)) / (N2 - N1)
#
# under valgrind callgrind (client and server in one process, current-thread runtime), so that
# start-up cancels out; then each natively for ns/call (wall clock, noisy).
#
# usage: scripts/bench-cache.sh [--no-build]
# environment: N1, N2 (default 500, 2500); TOOLS (tools in the listing, default 8);
#              NATIVE_N (default 20000); CARGO_TARGET_DIR (default target/bench)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
N1="${N1:-500}"
N2="${N2:-2500}"
TOOLS="${TOOLS:-8}"
NATIVE_N="${NATIVE_N:-20000}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target/bench}"
BIN="$CARGO_TARGET_DIR/release/cache-bench"
OUT="$CARGO_TARGET_DIR/cache-bench"
if [[ "${1:-}" != --no-build ]]; then
  cargo build --release -p modelctx-benches --features cache-bench --bin cache-bench >&2
fi
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
mkdir -p "$OUT"
# shellcheck source=scripts/callgrind-total.sh
source "$ROOT/scripts/callgrind-total.sh"

declare -A IPC NS
for mode in cached uncached; do
  totals=()
  for n in "$N1" "$N2"; do
    file="$OUT/$mode.$n.callgrind"
    valgrind --tool=callgrind --callgrind-out-file="$file" --log-file="$OUT/$mode.$n.log" \
      "$BIN" "--$mode" -n "$n" --tools "$TOOLS" >/dev/null
    totals+=("$(total_ir "$file")")
  done
  IPC[$mode]=$(( (totals[1] - totals[0]) / (N2 - N1) ))
  NS[$mode]="$("$BIN" "--$mode" -n "$NATIVE_N" --tools "$TOOLS" | sed -E 's/.*ns_per_call=([0-9]+).*/\1/')"
  echo "   $mode: total($N1)=${totals[0]} total($N2)=${totals[1]} -> ${IPC[$mode]} instructions/call; ${NS[$mode]} ns/call native" >&2
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f×", a / b }'; }
echo "Measured $(date -u +%Y-%m-%d) at \`$(git rev-parse --short HEAD)\` by \`scripts/bench-cache.sh\` ($(rustc --version | cut -d' ' -f2), $(nproc) cores): \`Client::list_tools\` of $TOOLS tools over the in-memory transport, client and server in one process."
echo
echo "| list_tools | instructions / call | ns / call (native, noisy) |"
echo "|---|---:|---:|"
echo "| uncached (a request to the server) | ${IPC[uncached]} | ${NS[uncached]} |"
echo "| cached (a hit) | ${IPC[cached]} | ${NS[cached]} |"
echo "| ratio | $(ratio "${IPC[uncached]}" "${IPC[cached]}") | $(ratio "${NS[uncached]}" "${NS[cached]}") |"
