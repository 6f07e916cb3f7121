#!/usr/bin/env bash
# Server instructions per `tools/call` under valgrind callgrind (issue 3, acceptance 5).
#
# For each server — the SDK echo server over stdio and over HTTP, the raw stdio floor and the raw
# axum floor (crate benches/, package modelctx-benches) — it runs the server under
# `valgrind --tool=callgrind` twice, driven by `load` with N1 and then N2 sequential 2026-07-28
# `tools/call echo` requests, and reports
#
#     instructions per request = (total(N2) - total(N1)) / (N2 - N1)
#
# so that startup and shutdown cancel out. Only the server runs under callgrind; the driver runs
# natively. Then it runs each server natively (no valgrind) for calls/s (noisy; wall clock).
#
# usage: scripts/bench-callgrind.sh [--no-build] [--current-thread] [--extras] [--peers] [--write]
#                                   [--quick] [--otlp]
#   --no-build        reuse the binaries already built
#   --current-thread  run the tokio servers on a current-thread runtime (default: multi-thread,
#                     what #[tokio::main] builds)
#   --extras          also measure variants (instructions only) that preview proposed SDK changes:
#                     stdio through non-blocking pipes (echo-server --stdio-pipes), and every tokio
#                     server on a current-thread runtime
#   --peers           also measure the rmcp 3.11 echo server (bench-peers/rmcp-echo, its own
#                     workspace; built in bench-peers/target unless --no-build) over stdio (its
#                     default stdio() and its opt-in stdio_pipes()) and HTTP.
#                     The Python SDK is not measured under callgrind: the interpreter's own
#                     instructions (tens of thousands of calls at ~1 ms each, 50x slower under
#                     valgrind) would take longer than everything else together.
#   --write           also replace the generated table in BENCHMARKS.md (between the
#                     bench-callgrind:begin / end markers)
#   --quick           N1=200 N2=600 NATIVE_N=2000, one run each (a smoke run, e.g. in CI)
#   --otlp            also measure the echo server with tracing on and an OTLP exporter attached
#                     (echo-server-otlp: modelctx-benches feature `otlp`, `--otlp-endpoint` to a
#                     local python3 sink that answers every POST 200; batch span processor,
#                     flushed at exit), over stdio and HTTP; reported in a table of their own
# environment:
#   N1, N2 (default 1000, 3000)   requests of the two callgrind runs
#   CALLGRIND_RUNS (default 3)    pairs of callgrind runs per server; the median is reported (the
#                                 multi-thread runtime and tokio's blocking stdio vary by ~3%)
#   NATIVE_N (default 20000)      requests of each native calls/s run; NATIVE_RUNS (default 3;
#                                 0 leaves the native columns out, as scripts/bench.sh does, which
#                                 measures wall clock itself)
#   RMCP_ECHO                     the rmcp-echo binary (default bench-peers/target/release/rmcp-echo)
#   CARGO_TARGET_DIR              default: target/bench (its own dir, so it never waits on the
#                                 lock of other builds)
#   OUT                           outputs (callgrind files, annotations, results.md, and
#                                 results.tsv: server, instructions, min, max, calls/s); default
#                                 $CARGO_TARGET_DIR/callgrind
#   BENCH_REV                     the revision named in the results (default: git HEAD of the checkout)
#   BENCH_INSTALL=0               never try to install valgrind (default: apt-get install it when
#                                 missing and running as root)
# Idempotent: every run rebuilds (incrementally) and overwrites $OUT. Network: 127.0.0.1 only
# (ephemeral ports).
set -euo pipefail
trap 'echo "bench-callgrind.sh: failed (line $LINENO)" >&2' ERR

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

BUILD=1
RT_FLAG=()
WRITE=0
EXTRAS=0
PEERS=0
OTLP=0
N1="${N1:-1000}"
N2="${N2:-3000}"
NATIVE_N="${NATIVE_N:-20000}"
NATIVE_RUNS="${NATIVE_RUNS:-3}"
CALLGRIND_RUNS="${CALLGRIND_RUNS:-3}"
for arg in "$@"; do
  case "$arg" in
    --no-build) BUILD=0 ;;
    --current-thread) RT_FLAG=(--current-thread) ;;
    --write) WRITE=1 ;;
    --extras) EXTRAS=1 ;;
    --peers) PEERS=1 ;;
    --otlp) OTLP=1 ;;
    --quick) N1=200 N2=600 NATIVE_N=2000 CALLGRIND_RUNS=1 NATIVE_RUNS=$(( NATIVE_RUNS > 0 ? 1 : 0 )) ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
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
RMCP_ECHO="${RMCP_ECHO:-$ROOT/bench-peers/target/release/rmcp-echo}"

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
  if (( OTLP )); then
    # First, and copied aside: the plain build below relinks echo-server without `otel`.
    echo "== cargo build --release -p modelctx-benches --features otlp --bin echo-server" >&2
    cargo build --release -p modelctx-benches --features otlp --bin echo-server >&2
    cp "$BIN/echo-server" "$BIN/echo-server-otlp"
  fi
  echo "== cargo build --release -p modelctx-benches (target dir $CARGO_TARGET_DIR)" >&2
  cargo build --release -p modelctx-benches --bins >&2
  if (( PEERS )); then
    echo "== cargo build --release (bench-peers/rmcp-echo, target dir bench-peers/target)" >&2
    (cd "$ROOT/bench-peers/rmcp-echo" && CARGO_TARGET_DIR="$ROOT/bench-peers/target" cargo build --release >&2)
  fi
fi
for exe in echo-server axum-floor stdio-floor load; do
  [[ -x "$BIN/$exe" ]] || { echo "missing $BIN/$exe (run without --no-build)" >&2; exit 1; }
done
if (( OTLP )) && [[ ! -x "$BIN/echo-server-otlp" ]]; then
  echo "missing $BIN/echo-server-otlp (run without --no-build)" >&2
  exit 1
fi
if (( PEERS )) && [[ ! -x "$RMCP_ECHO" ]]; then
  echo "missing $RMCP_ECHO (run without --no-build)" >&2
  exit 1
fi

rm -rf "$OUT"
mkdir -p "$OUT"

SERVER_PID=""
SINK_PID=""
cleanup() {
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  if [[ -n "$SINK_PID" ]]; then
    kill -TERM "$SINK_PID" 2>/dev/null || true
    wait "$SINK_PID" 2>/dev/null || true
  fi
}
trap cleanup EXIT

# --otlp: the collector the traced servers export to, a sink that reads each OTLP/HTTP POST and
# answers 200 (its own cost is not measured: only the server runs under callgrind).
OTLP_ENDPOINT=""
if (( OTLP )); then
  python3 -c '
import http.server, sys
class Sink(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
print(server.server_port, flush=True)
server.serve_forever()
' >"$OUT/otlp-sink.port" &
  SINK_PID=$!
  for _ in $(seq 100); do [[ -s "$OUT/otlp-sink.port" ]] && break; sleep 0.1; done
  [[ -s "$OUT/otlp-sink.port" ]] || { echo "the OTLP sink did not start" >&2; exit 1; }
  OTLP_ENDPOINT="http://127.0.0.1:$(cat "$OUT/otlp-sink.port")"
fi

# The server command of each measured server (stdio servers read stdin; HTTP servers get an
# ephemeral port and write it to an address file).
server_cmd() {
  case "$1" in
    ours-stdio) echo "$BIN/echo-server --stdio ${RT_FLAG[*]}" ;;
    floor-stdio) echo "$BIN/stdio-floor" ;;
    ours-http) echo "$BIN/echo-server --http 127.0.0.1:0 ${RT_FLAG[*]}" ;;
    ours-otlp-stdio) echo "$BIN/echo-server-otlp --stdio --otlp-endpoint $OTLP_ENDPOINT ${RT_FLAG[*]}" ;;
    ours-otlp-http) echo "$BIN/echo-server-otlp --http 127.0.0.1:0 --otlp-endpoint $OTLP_ENDPOINT ${RT_FLAG[*]}" ;;
    ours-sse-http) echo "$BIN/echo-server --http 127.0.0.1:0 --sse ${RT_FLAG[*]}" ;;
    floor-http) echo "$BIN/axum-floor --http 127.0.0.1:0 ${RT_FLAG[*]}" ;;
    ours-pipes-stdio) echo "$BIN/echo-server --stdio-pipes ${RT_FLAG[*]}" ;;
    ours-ct-stdio) echo "$BIN/echo-server --stdio --current-thread" ;;
    ours-pipes-ct-stdio) echo "$BIN/echo-server --stdio-pipes --current-thread" ;;
    ours-ct-http) echo "$BIN/echo-server --http 127.0.0.1:0 --current-thread" ;;
    floor-ct-http) echo "$BIN/axum-floor --http 127.0.0.1:0 --current-thread" ;;
    rmcp-stdio) echo "$RMCP_ECHO" ;;
    rmcp-pipes-stdio) echo "$RMCP_ECHO --pipes" ;;
    rmcp-http) echo "$RMCP_ECHO --http 0" ;;
    *) echo "unknown server $1" >&2; return 1 ;;
  esac
}

# run_server NAME N [WRAPPER...]: N checked requests against server NAME, optionally under a
# wrapper command (valgrind). Prints the load driver's result line.
run_server() {
  local name="$1" n="$2"
  shift 2
  local wrapper=("$@")
  local cmd flags=()
  read -r -a cmd <<<"$(server_cmd "$name")"
  # Other SDKs do not stamp our serverInfo.
  [[ "$name" == rmcp-* ]] && flags=(--peer)
  case "$name" in
    *-stdio)
      "$BIN/load" -n "$n" --timeout-s 600 "${flags[@]}" --stdio -- "${wrapper[@]}" "${cmd[@]}"
      ;;
    *-http)
      local addr="$OUT/$name.addr"
      rm -f "$addr"
      "${wrapper[@]}" "${cmd[@]}" --addr-file "$addr" &
      SERVER_PID=$!
      local result
      if ! result="$("$BIN/load" -n "$n" --timeout-s 600 "${flags[@]}" --addr-file "$addr")"; then
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

# total_ir FILE: a callgrind file's instructions, less aws-lc's one-off jitter-entropy seeding.
# shellcheck source=scripts/callgrind-total.sh
source "$ROOT/scripts/callgrind-total.sh"

# Per-function costs of one callgrind file, "cost<TAB>function" (file names and binaries dropped,
# so inlined pieces of one function add up). $2: self (summed) or inclusive (largest entry).
function_costs() {
  local mode=() how=sum
  if [[ "$2" == inclusive ]]; then mode=(--inclusive=yes); how=max; fi
  callgrind_annotate --auto=no --threshold=100 "${mode[@]}" "$1" 2>/dev/null | awk -v how="$how" '
    /^ *[0-9][0-9,]* \(/ && !/PROGRAM TOTALS/ {
      cost = $1; gsub(",", "", cost); cost += 0
      line = $0
      sub(/^ *[0-9,]+ \([^)]*\) +/, "", line)
      sub(/ \[[^]]*\]$/, "", line)
      sub(/ \([0-9,]+x\)$/, "", line)
      # Drop a leading "path:" (a path has a "/", or is "???").
      colon = index(line, ":")
      if (colon > 1) {
        prefix = substr(line, 1, colon - 1)
        if ((prefix ~ /\// || prefix == "???") && colon < length(line)) line = substr(line, colon + 1)
      }
      if (how == "sum") costs[line] += cost
      else if (cost > costs[line]) costs[line] = cost
    }
    END { for (f in costs) printf "%.0f\t%s\n", costs[f], f }'
}

# Per-request profile: the difference of the N2 and N1 runs, divided by N2 - N1, so startup and
# shutdown cancel out. Writes the top functions by self and by inclusive cost.
per_request_profile() {
  local name="$1" run="$2" kind
  for kind in self inclusive; do
    echo "== $name: instructions per request by function ($kind cost; (N2 run - N1 run) / $((N2 - N1)))"
    join -t $'\t' -1 2 -2 2 -a 2 -e 0 -o 0,1.1,2.1 \
      <(function_costs "$OUT/$name.$N1.$run.callgrind" "$kind" | sort -t $'\t' -k2,2) \
      <(function_costs "$OUT/$name.$N2.$run.callgrind" "$kind" | sort -t $'\t' -k2,2) |
      # (aws-lc's one-off jitter-entropy seeding left out, as in total_ir)
      awk -F '\t' -v d="$((N2 - N1))" '$1 ~ /jent_|rol64|jitter/ { next }
        { v = ($3 - $2) / d; if (v >= 1) printf "%9.0f  %s\n", v, $1 }' |
      sort -rn | awk 'NR <= 80'  # reads all its input: no SIGPIPE under pipefail
    echo
  done
}

declare -A IPR IPR_RANGE NATIVE NATIVE_RANGE
SERVERS=(ours-stdio floor-stdio ours-http ours-sse-http floor-http)
(( PEERS )) && SERVERS+=(rmcp-stdio rmcp-pipes-stdio rmcp-http)
(( OTLP )) && SERVERS+=(ours-otlp-stdio ours-otlp-http)
EXTRA_SERVERS=()
if (( EXTRAS )); then
  EXTRA_SERVERS=(ours-pipes-stdio ours-ct-stdio ours-pipes-ct-stdio ours-ct-http floor-ct-http)
fi

median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
range() { printf '%s\n' "$@" | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo "–" hi }'; }

for name in "${SERVERS[@]}" "${EXTRA_SERVERS[@]}"; do
  runs=()
  for run in $(seq "$CALLGRIND_RUNS"); do
    totals=()
    for n in "$N1" "$N2"; do
      file="$OUT/$name.$n.$run.callgrind"
      echo "== callgrind: $name, $n requests (run $run)" >&2
      run_server "$name" "$n" valgrind --tool=callgrind --callgrind-out-file="$file" \
        --log-file="$OUT/$name.$n.$run.valgrind.log" >&2
      totals+=("$(total_ir "$file")")
      [[ -n "${totals[-1]}" ]] || { echo "no totals in $file" >&2; exit 1; }
    done
    runs+=("$(( (totals[1] - totals[0]) / (N2 - N1) ))")
    echo "   $name: total($N1)=${totals[0]} total($N2)=${totals[1]} -> ${runs[-1]} instructions/request" >&2
  done
  IPR[$name]="$(median "${runs[@]}")"
  IPR_RANGE[$name]="$(range "${runs[@]}")"
  per_request_profile "$name" "$CALLGRIND_RUNS" >"$OUT/$name.profile.txt"
done

for name in "${SERVERS[@]}"; do
  (( NATIVE_RUNS > 0 )) || break
  rates=()
  for _ in $(seq "$NATIVE_RUNS"); do
    line="$(run_server "$name" "$NATIVE_N")"
    rates+=("$(sed -E 's/.*calls_per_s=([0-9]+).*/\1/' <<<"$line")")
  done
  NATIVE[$name]="$(median "${rates[@]}")"
  NATIVE_RANGE[$name]="$(range "${rates[@]}")"
  echo "   $name: native calls/s ${rates[*]}" >&2
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f×", a / b }'; }
us() { awk -v r="$1" 'BEGIN { printf "%.1f", 1e6 / r }'; }
fmt() { sed -E ':a; s/([0-9])([0-9]{3})($|,)/\1,\2\3/; ta' <<<"$1"; }
instructions() {
  if (( CALLGRIND_RUNS > 1 )); then
    echo "$(fmt "${IPR[$1]}") ($(fmt "${IPR_RANGE[$1]%–*}")–$(fmt "${IPR_RANGE[$1]#*–}"))"
  else
    fmt "${IPR[$1]}"
  fi
}
# row LABEL TRANSPORT SERVER FLOOR
row() {
  if (( NATIVE_RUNS > 0 )); then
    echo "| $1 | $2 | $(instructions "$3") | $(ratio "${IPR[$3]}" "${IPR[$4]}") | ${NATIVE[$3]} (${NATIVE_RANGE[$3]}) | $(us "${NATIVE[$3]}") |"
  else
    echo "| $1 | $2 | $(instructions "$3") | $(ratio "${IPR[$3]}" "${IPR[$4]}") |"
  fi
}

CPU="$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
CORES="$(nproc)"
RUSTC="$(rustc --version)"
RUNTIME="multi-thread"
[[ ${#RT_FLAG[@]} -gt 0 ]] && RUNTIME="current-thread"
REV="${BENCH_REV:-$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)}"
if [[ -z "${BENCH_REV:-}" && -n "$(git -C "$ROOT" status --porcelain -- crates benches 2>/dev/null)" ]]; then
  REV="$REV + uncommitted changes"
fi

{
  echo "Measured $(date -u +%Y-%m-%d) at \`$REV\` by \`scripts/bench-callgrind.sh\`."
  echo "Machine: $CPU, $CORES cores; $RUSTC; valgrind $(valgrind --version | sed 's/valgrind-//'); tokio runtime of the tokio servers: $RUNTIME."
  echo "Instructions: median (min–max) of $CALLGRIND_RUNS callgrind pairs, (total($N2) − total($N1)) / $((N2 - N1)), server only."
  if (( NATIVE_RUNS > 0 )); then
    echo "calls/s: median (min–max) of $NATIVE_RUNS native runs of $NATIVE_N sequential calls (one pipe / one keep-alive connection, 16 B text); wall clock, noisy."
    echo
    echo "| server | transport | instructions / \`tools/call\` | ratio to floor | calls/s (noisy) | µs/call (noisy) |"
    echo "|---|---|---:|---:|---:|---:|"
  else
    echo
    echo "| server | transport | instructions / \`tools/call\` | ratio to floor |"
    echo "|---|---|---:|---:|"
  fi
  row "mcp \`echo-server --stdio\` (\`serve_stdio\`)" stdio ours-stdio floor-stdio
  (( PEERS )) && row "rmcp 3.11 \`rmcp-echo\` (\`stdio()\`)" stdio rmcp-stdio floor-stdio
  (( PEERS )) && row "rmcp 3.11 \`rmcp-echo --pipes\` (opt-in \`stdio_pipes()\`)" stdio rmcp-pipes-stdio floor-stdio
  row "\`stdio-floor\` (std I/O + serde_json)" stdio floor-stdio floor-stdio
  row "mcp \`echo-server --http\` (\`serve_http_on\`)" "HTTP/1.1, JSON" ours-http floor-http
  row "mcp \`echo-server --http --sse\` (\`HttpConfig::sse_responses\`)" "HTTP/1.1, SSE" ours-sse-http floor-http
  (( PEERS )) && row "rmcp 3.11 \`rmcp-echo --http\` (\`StreamableHttpService\`, JSON responses)" "HTTP/1.1, JSON" rmcp-http floor-http
  row "\`axum-floor\` (axum + serde_json)" "HTTP/1.1, JSON" floor-http floor-http
  if (( OTLP )); then
    echo
    echo "With tracing on and an OTLP exporter attached (\`--otlp\`: \`echo-server-otlp --otlp-endpoint\`, batch span processor to a local sink), beside the plain server:"
    echo
    echo "| server | transport | instructions / \`tools/call\` | ratio to plain |"
    echo "|---|---|---:|---:|"
    echo "| mcp \`echo-server --stdio\` | stdio | $(instructions ours-stdio) | 1.00× |"
    echo "| mcp \`echo-server-otlp --stdio --otlp-endpoint\` | stdio | $(instructions ours-otlp-stdio) | $(ratio "${IPR[ours-otlp-stdio]}" "${IPR[ours-stdio]}") |"
    echo "| mcp \`echo-server --http\` | HTTP/1.1, JSON | $(instructions ours-http) | 1.00× |"
    echo "| mcp \`echo-server-otlp --http --otlp-endpoint\` | HTTP/1.1, JSON | $(instructions ours-otlp-http) | $(ratio "${IPR[ours-otlp-http]}" "${IPR[ours-http]}") |"
  fi
  if (( EXTRAS )); then
    echo
    echo "Variants (\`--extras\`, instructions only): previews of proposed SDK changes, not what the SDK does today."
    echo
    echo "| variant | instructions / \`tools/call\` | ratio to its floor |"
    echo "|---|---:|---:|"
    echo "| mcp stdio through non-blocking pipes (\`--stdio-pipes\`), $RUNTIME runtime | $(instructions ours-pipes-stdio) | $(ratio "${IPR[ours-pipes-stdio]}" "${IPR[floor-stdio]}") |"
    echo "| mcp \`serve_stdio\`, current-thread runtime | $(instructions ours-ct-stdio) | $(ratio "${IPR[ours-ct-stdio]}" "${IPR[floor-stdio]}") |"
    echo "| mcp stdio through non-blocking pipes, current-thread runtime | $(instructions ours-pipes-ct-stdio) | $(ratio "${IPR[ours-pipes-ct-stdio]}" "${IPR[floor-stdio]}") |"
    echo "| mcp HTTP, current-thread runtime (floor: axum, current-thread) | $(instructions ours-ct-http) | $(ratio "${IPR[ours-ct-http]}" "${IPR[floor-ct-http]}") |"
    echo "| axum floor, current-thread runtime | $(instructions floor-ct-http) | 1.00× |"
  fi
} >"$OUT/results.md"
for name in "${SERVERS[@]}" "${EXTRA_SERVERS[@]}"; do
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "${IPR[$name]}" "${IPR_RANGE[$name]%–*}" "${IPR_RANGE[$name]#*–}" "${NATIVE[$name]:-}"
done >"$OUT/results.tsv"

cat "$OUT/results.md"
echo >&2
echo "outputs in $OUT: <server>.profile.txt (per-request profile), <server>.<N>.<run>.callgrind" >&2

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
