#!/usr/bin/env bash
# Server instructions per `tools/call` under valgrind callgrind (issue 3, acceptance 5).
#
# For each server — the SDK echo server over stdio and over HTTP, the raw stdio floor and the raw
# axum floor (crate benches/, package mcp-benches) — it runs the server under
# `valgrind --tool=callgrind` twice, driven by `load` with N1 and then N2 sequential 2026-07-28
# `tools/call echo` requests, and reports
#
#     instructions per request = (total(N2) - total(N1)) / (N2 - N1)
#
# so that startup and shutdown cancel out. Only the server runs under callgrind; the driver runs
# natively. Then it runs each server natively (no valgrind) for calls/s (noisy; wall clock).
#
# usage: scripts/bench-callgrind.sh [--no-build] [--current-thread] [--extras] [--write] [--quick]
#   --no-build        reuse the binaries already built
#   --current-thread  run the tokio servers on a current-thread runtime (default: multi-thread,
#                     what #[tokio::main] builds)
#   --extras          also measure variants (instructions only) that preview proposed SDK changes:
#                     stdio through non-blocking pipes (echo-server --stdio-pipes), and every tokio
#                     server on a current-thread runtime
#   --write           also replace the generated table in BENCHMARKS.md (between the
#                     bench-callgrind:begin / end markers)
#   --quick           N1=200 N2=600 NATIVE_N=2000 (a smoke run, e.g. in CI)
# environment:
#   N1, N2 (default 1000, 3000)   requests of the two callgrind runs
#   NATIVE_N (default 20000)      requests of each native calls/s run; NATIVE_RUNS (default 3)
#   CARGO_TARGET_DIR              default: target/bench (its own dir, so it never waits on the
#                                 lock of other builds)
#   OUT                           outputs (callgrind files, annotations, results.md); default
#                                 $CARGO_TARGET_DIR/callgrind
#   BENCH_INSTALL=0               never try to install valgrind (default: apt-get install it when
#                                 missing and running as root)
# Idempotent: every run rebuilds (incrementally) and overwrites $OUT. Network: 127.0.0.1 only
# (ephemeral ports).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

BUILD=1
RT_FLAG=()
WRITE=0
EXTRAS=0
N1="${N1:-1000}"
N2="${N2:-3000}"
NATIVE_N="${NATIVE_N:-20000}"
NATIVE_RUNS="${NATIVE_RUNS:-3}"
for arg in "$@"; do
  case "$arg" in
    --no-build) BUILD=0 ;;
    --current-thread) RT_FLAG=(--current-thread) ;;
    --write) WRITE=1 ;;
    --extras) EXTRAS=1 ;;
    --quick) N1=200 N2=600 NATIVE_N=2000 ;;
    -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
    *) echo "unknown argument: $arg" >&2; exit 2 ;;
  esac
done
if (( N2 <= N1 )); then
  echo "N2 ($N2) must be larger than N1 ($N1)" >&2
  exit 2
fi

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target/bench}"
BIN="$CARGO_TARGET_DIR/release"
OUT="${OUT:-$CARGO_TARGET_DIR/callgrind}"

if ! command -v valgrind >/dev/null 2>&1; then
  if [[ "${BENCH_INSTALL:-1}" != 0 && "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "== installing valgrind (apt-get)" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >&2
  else
    echo "valgrind is not installed (apt-get install valgrind)" >&2
    exit 1
  fi
fi

if (( BUILD )); then
  echo "== cargo build --release -p mcp-benches (target dir $CARGO_TARGET_DIR)" >&2
  cargo build --release -p mcp-benches --bins >&2
fi
for exe in echo-server axum-floor stdio-floor load; do
  [[ -x "$BIN/$exe" ]] || { echo "missing $BIN/$exe (run without --no-build)" >&2; exit 1; }
done

rm -rf "$OUT"
mkdir -p "$OUT"

SERVER_PID=""
cleanup() {
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
}
trap cleanup EXIT

# The server command of each measured server (stdio servers read stdin; HTTP servers get an
# ephemeral port and write it to an address file).
server_cmd() {
  case "$1" in
    ours-stdio) echo "$BIN/echo-server --stdio ${RT_FLAG[*]}" ;;
    floor-stdio) echo "$BIN/stdio-floor" ;;
    ours-http) echo "$BIN/echo-server --http 127.0.0.1:0 ${RT_FLAG[*]}" ;;
    floor-http) echo "$BIN/axum-floor --http 127.0.0.1:0 ${RT_FLAG[*]}" ;;
    ours-pipes-stdio) echo "$BIN/echo-server --stdio-pipes ${RT_FLAG[*]}" ;;
    ours-ct-stdio) echo "$BIN/echo-server --stdio --current-thread" ;;
    ours-pipes-ct-stdio) echo "$BIN/echo-server --stdio-pipes --current-thread" ;;
    ours-ct-http) echo "$BIN/echo-server --http 127.0.0.1:0 --current-thread" ;;
    floor-ct-http) echo "$BIN/axum-floor --http 127.0.0.1:0 --current-thread" ;;
    *) echo "unknown server $1" >&2; return 1 ;;
  esac
}

# run_server NAME N [WRAPPER...]: N checked requests against server NAME, optionally under a
# wrapper command (valgrind). Prints the load driver's result line.
run_server() {
  local name="$1" n="$2"
  shift 2
  local wrapper=("$@")
  local cmd
  read -r -a cmd <<<"$(server_cmd "$name")"
  case "$name" in
    *-stdio)
      "$BIN/load" -n "$n" --timeout-s 600 --stdio -- "${wrapper[@]}" "${cmd[@]}"
      ;;
    *-http)
      local addr="$OUT/$name.addr"
      rm -f "$addr"
      "${wrapper[@]}" "${cmd[@]}" --addr-file "$addr" &
      SERVER_PID=$!
      local result
      if ! result="$("$BIN/load" -n "$n" --timeout-s 600 --addr-file "$addr")"; then
        echo "load failed against $name" >&2
        return 1
      fi
      kill -TERM "$SERVER_PID"
      if ! wait "$SERVER_PID"; then
        echo "$name did not exit cleanly" >&2
        return 1
      fi
      SERVER_PID=""
      echo "$result"
      ;;
  esac
}

# Total instructions (Ir) of a callgrind output file.
total_ir() {
  awk '/^(summary|totals):/ { print $2; exit }' "$1"
}

declare -A IPR NATIVE NATIVE_RANGE
SERVERS=(ours-stdio floor-stdio ours-http floor-http)
EXTRA_SERVERS=()
if (( EXTRAS )); then
  EXTRA_SERVERS=(ours-pipes-stdio ours-ct-stdio ours-pipes-ct-stdio ours-ct-http floor-ct-http)
fi

for name in "${SERVERS[@]}" "${EXTRA_SERVERS[@]}"; do
  declare -A total=()
  for n in "$N1" "$N2"; do
    file="$OUT/$name.$n.callgrind"
    echo "== callgrind: $name, $n requests" >&2
    run_server "$name" "$n" valgrind --tool=callgrind --callgrind-out-file="$file" \
      --log-file="$OUT/$name.$n.valgrind.log" >&2
    total[$n]="$(total_ir "$file")"
    [[ -n "${total[$n]}" ]] || { echo "no totals in $file" >&2; exit 1; }
  done
  IPR[$name]=$(( (total[$N2] - total[$N1]) / (N2 - N1) ))
  echo "   $name: total($N1)=${total[$N1]} total($N2)=${total[$N2]} -> ${IPR[$name]} instructions/request" >&2
  callgrind_annotate --inclusive=yes "$OUT/$name.$N2.callgrind" >"$OUT/$name.inclusive.txt" 2>/dev/null || true
  callgrind_annotate "$OUT/$name.$N2.callgrind" >"$OUT/$name.self.txt" 2>/dev/null || true
  unset total
done

for name in "${SERVERS[@]}"; do
  rates=()
  for _ in $(seq "$NATIVE_RUNS"); do
    line="$(run_server "$name" "$NATIVE_N")"
    rates+=("$(sed -E 's/.*calls_per_s=([0-9]+).*/\1/' <<<"$line")")
  done
  sorted=($(printf '%s\n' "${rates[@]}" | sort -n))
  NATIVE[$name]="${sorted[$(( ${#sorted[@]} / 2 ))]}"
  NATIVE_RANGE[$name]="${sorted[0]}–${sorted[-1]}"
  echo "   $name: native calls/s ${rates[*]}" >&2
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f×", a / b }'; }
us() { awk -v r="$1" 'BEGIN { printf "%.1f", 1e6 / r }'; }
fmt() { sed -E ':a; s/([0-9])([0-9]{3})($|,)/\1,\2\3/; ta' <<<"$1"; }

CPU="$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
CORES="$(nproc)"
RUSTC="$(rustc --version)"
RUNTIME="multi-thread"
[[ ${#RT_FLAG[@]} -gt 0 ]] && RUNTIME="current-thread"

{
  echo "Measured $(date -u +%Y-%m-%d) by \`scripts/bench-callgrind.sh\`: N1=$N1, N2=$N2 callgrind requests,"
  echo "native calls/s = median of $NATIVE_RUNS runs of $NATIVE_N sequential calls (one connection / one pipe, 16 B text)."
  echo "Machine: $CPU, $CORES cores; $RUSTC; tokio runtime: $RUNTIME; valgrind $(valgrind --version | sed 's/valgrind-//')."
  echo
  echo "| server | transport | instructions / \`tools/call\` | ratio to floor | calls/s (noisy, wall clock) | µs/call (noisy) |"
  echo "|---|---|---:|---:|---:|---:|"
  echo "| mcp \`echo-server --stdio\` | stdio | $(fmt "${IPR[ours-stdio]}") | $(ratio "${IPR[ours-stdio]}" "${IPR[floor-stdio]}") | ${NATIVE[ours-stdio]} (${NATIVE_RANGE[ours-stdio]}) | $(us "${NATIVE[ours-stdio]}") |"
  echo "| \`stdio-floor\` (std I/O + serde_json) | stdio | $(fmt "${IPR[floor-stdio]}") | 1.00× | ${NATIVE[floor-stdio]} (${NATIVE_RANGE[floor-stdio]}) | $(us "${NATIVE[floor-stdio]}") |"
  echo "| mcp \`echo-server --http\` | HTTP/1.1 JSON | $(fmt "${IPR[ours-http]}") | $(ratio "${IPR[ours-http]}" "${IPR[floor-http]}") | ${NATIVE[ours-http]} (${NATIVE_RANGE[ours-http]}) | $(us "${NATIVE[ours-http]}") |"
  echo "| \`axum-floor\` (axum + serde_json) | HTTP/1.1 JSON | $(fmt "${IPR[floor-http]}") | 1.00× | ${NATIVE[floor-http]} (${NATIVE_RANGE[floor-http]}) | $(us "${NATIVE[floor-http]}") |"
  if (( EXTRAS )); then
    echo
    echo "Variants (\`--extras\`; instructions only): previews of proposed SDK changes, not what \`serve_stdio\` does today."
    echo
    echo "| variant | instructions / \`tools/call\` | ratio to its floor |"
    echo "|---|---:|---:|"
    echo "| mcp stdio over non-blocking pipes (\`echo-server --stdio-pipes\`), $RUNTIME | $(fmt "${IPR[ours-pipes-stdio]}") | $(ratio "${IPR[ours-pipes-stdio]}" "${IPR[floor-stdio]}") |"
    echo "| mcp \`serve_stdio\`, current-thread runtime | $(fmt "${IPR[ours-ct-stdio]}") | $(ratio "${IPR[ours-ct-stdio]}" "${IPR[floor-stdio]}") |"
    echo "| mcp stdio over non-blocking pipes, current-thread runtime | $(fmt "${IPR[ours-pipes-ct-stdio]}") | $(ratio "${IPR[ours-pipes-ct-stdio]}" "${IPR[floor-stdio]}") |"
    echo "| mcp HTTP, current-thread runtime (vs axum floor, current-thread) | $(fmt "${IPR[ours-ct-http]}") | $(ratio "${IPR[ours-ct-http]}" "${IPR[floor-ct-http]}") |"
    echo "| axum floor, current-thread runtime | $(fmt "${IPR[floor-ct-http]}") | 1.00× |"
  fi
} >"$OUT/results.md"

cat "$OUT/results.md"
echo >&2
echo "callgrind files and annotations (<server>.inclusive.txt, <server>.self.txt): $OUT" >&2

if (( WRITE )); then
  doc="$ROOT/BENCHMARKS.md"
  begin="<!-- bench-callgrind:begin -->"
  end="<!-- bench-callgrind:end -->"
  if [[ -f "$doc" ]] && grep -qF "$begin" "$doc" && grep -qF "$end" "$doc"; then
    awk -v begin="$begin" -v end="$end" -v results="$OUT/results.md" '
      $0 == begin { print; while ((getline line < results) > 0) print line; skip = 1; next }
      $0 == end { skip = 0 }
      !skip { print }
    ' "$doc" >"$doc.tmp" && mv "$doc.tmp" "$doc"
    echo "updated the generated table in $doc" >&2
  else
    echo "BENCHMARKS.md has no bench-callgrind markers; table not written" >&2
  fi
fi
