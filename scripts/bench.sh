#!/usr/bin/env bash
# Side by side, in one run on one machine: the mcp SDK server, the rmcp 3.11 server
# (bench-peers/rmcp-echo, its own workspace) and the Python SDK 2.3.0 server
# (tests/python/provisioner.py), all answering the same `echo {text}` tool, beside the floors
# (benches `stdio-floor`: blocking std I/O + serde_json; `axum-floor`: axum + serde_json).
#
#   (a) stdio, sequential: µs per call with the raw `load` driver (the server alone), and with
#       `mcp bench` (our client included; scripts/bench-peers.sh); rmcp both with its default
#       `stdio()` and with its opt-in non-blocking `stdio_pipes()` (rmcp-echo --pipes);
#   (b) HTTP: wrk, 1 thread, 32 connections, JSON responses (benches/wrk/tools-call.lua), and our
#       server with every response as an event stream (`HttpConfig::sse_responses`); sequential
#       calls on one keep-alive connection with `load`;
#   (c) server instructions per request under callgrind, stdio and HTTP
#       (scripts/bench-callgrind.sh --peers; the Python server is not run under callgrind);
#   (d) two-leg multi-round-trip flows per second, sealing on (`load --flow`: ours vs Python;
#       rmcp 3.11 has no multi-round-trip requests);
#   (e) server RSS: idle, after the sequential stdio run, and under wrk (VmRSS / VmHWM from
#       /proc), and while 100 000 flows are suspended (`load --suspend`);
#   (f) the floors, measured the same way in every table;
#   (g) cold start (spawn → first `server/discover` answer) and idle stdio memory against rmcp, a
#       cold `mcp call`, and client instructions per call against rmcp 3.11's client
#       (scripts/bench-cold.sh);
#   and seal + open through the whole boundary (criterion, `cargo bench -p modelctx-seal`).
#
# It writes the tables between the `bench:begin` / `bench:end` markers of BENCHMARKS.md, and
# regenerates the `bench-callgrind` and `bench-peers` sections through those scripts.
#
#   scripts/bench.sh            # the full run: about 7 minutes on the 2-core development VM after
#                               # the release builds (those take 5-10 more from scratch)
#   scripts/bench.sh --quick    # small N, one run each: a smoke run (about 5 minutes after the
#                               # builds); its figures are too short to quote
#   options: --no-build (reuse the binaries), --no-write (leave BENCHMARKS.md alone)
#
# Environment: BENCH_REV (the revision named in the results; default: git HEAD, "+ uncommitted
# changes" when crates/ or benches/ differ from it), CARGO_TARGET_DIR (default target/bench; the rmcp peer builds in
# bench-peers/target), OUT (default $CARGO_TARGET_DIR/bench-sh: raw outputs, results.tsv,
# summary.md), BENCH_INSTALL=0 (never apt-get install wrk / valgrind; by default they are
# installed when missing and running as root). The Python venv comes from scripts/python-env.sh.
# Servers bind 127.0.0.1 only and are stopped on exit. Not part of .ci/run: too long and too
# noisy for CI.
set -euo pipefail
trap 'echo "bench.sh: failed (line $LINENO)" >&2' ERR

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

QUICK=0
WRITE=1
BUILD=1
for arg in "$@"; do
  case "$arg" in
    --quick) QUICK=1 ;;
    --no-write) WRITE=0 ;;
    --no-build) BUILD=0 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "unknown argument: $arg" >&2; exit 2 ;;
  esac
done

if (( QUICK )); then
  N_CALLS=2000 N_PY=200 WARMUP=200 RUNS=1 WRK_SECONDS=2 FLOWS=300 FLOWS_PY=50
  SUSPEND=10000 SUSPEND_EVERY=1000 PEERS_CALLS=300 PEERS_RUNS=1 PEERS_MODES=auto PEERS_CONC=1
  CRITERION=(--warm-up-time 1 --measurement-time 2)
  CALLGRIND_ARGS=(--quick)
else
  N_CALLS=20000 N_PY=2000 WARMUP=1000 RUNS=3 WRK_SECONDS=5 FLOWS=5000 FLOWS_PY=300
  SUSPEND=100000 SUSPEND_EVERY=10000 PEERS_CALLS=3000 PEERS_RUNS=3 PEERS_MODES="auto legacy"
  PEERS_CONC="1 8"
  CRITERION=(--warm-up-time 2 --measurement-time 5)
  CALLGRIND_ARGS=()
fi

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target/bench}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
BIN="$CARGO_TARGET_DIR/release"
OUT="${OUT:-$CARGO_TARGET_DIR/bench-sh}"
RMCP="$ROOT/bench-peers/target/release/rmcp-echo"
PROVISIONER="$ROOT/tests/python/provisioner.py"
LUA="$ROOT/benches/wrk/tools-call.lua"
# Sealing keys for the Python peer (ours seals with an ephemeral key of its own).
PY_KEYS="bench-sh-request-state-key-0123456789abcdef"
STARTED=$SECONDS
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"

log() { echo "== bench.sh: $*" >&2; }

# Installs Debian package $2 for command $1 when missing (root and apt-get only).
APT_UPDATED=0
need() {
  command -v "$1" >/dev/null 2>&1 && return 0
  if [[ "${BENCH_INSTALL:-1}" != 0 && "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    log "installing $2 (apt-get)"
    if (( ! APT_UPDATED )); then apt-get update -qq >&2; APT_UPDATED=1; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >&2
  else
    echo "$1 is not installed (apt-get install $2)" >&2
    exit 1
  fi
}
need wrk wrk
need valgrind valgrind

if (( BUILD )); then
  # Two builds, not one: built together, Cargo unifies features across the packages, and the
  # benches' echo-server would carry the CLI's (OAuth client, SQLite task store, Redis bus, …):
  # 2.5 MB more text than a server that depends on what it uses, as a user's server does (and
  # as rmcp-echo is built, in its own workspace).
  log "cargo build --release -p modelctx-cli, then -p modelctx-benches (target dir $CARGO_TARGET_DIR)"
  cargo build --release --quiet -p modelctx-cli --bins
  cargo build --release --quiet -p modelctx-benches --bins
  log "cargo bench --no-run -p modelctx-seal (criterion, built before anything is measured)"
  cargo bench --quiet --no-run -p modelctx-seal --bench seal 2>/dev/null
  log "cargo build --release (bench-peers/rmcp-echo, rmcp 3.11)"
  (cd bench-peers/rmcp-echo && CARGO_TARGET_DIR="$ROOT/bench-peers/target" cargo build --release --quiet)
fi
for exe in "$BIN/echo-server" "$BIN/axum-floor" "$BIN/stdio-floor" "$BIN/load" "$BIN/cold" "$BIN/mcp" "$RMCP" \
  "$ROOT/bench-peers/target/release/rmcp-client"; do
  [[ -x "$exe" ]] || { echo "missing $exe (run without --no-build)" >&2; exit 1; }
done
PY="$(scripts/python-env.sh)"

rm -rf "$OUT"
mkdir -p "$OUT"
RES="$OUT/results.tsv"
: >"$RES"
put() { printf '%s\t%s\n' "$1" "$2" >>"$RES"; }
# field NAME LINE: the value of NAME=… in a `load` result line.
field() { sed -nE "s/.*(^| )$1=([0-9.]+).*/\2/p" <<<"$2" | tail -n 1; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# The servers: stdio commands, and HTTP commands that write their address to the file $2 (the Python
# server announces `listening on URL` on stderr instead).
stdio_cmd() {
  case "$1" in
    ours) echo "$BIN/echo-server --stdio" ;;
    rmcp) echo "$RMCP" ;;
    rmcp-pipes) echo "$RMCP --pipes" ;;
    python) echo "$PY $PROVISIONER" ;;
    floor) echo "$BIN/stdio-floor" ;;
  esac
}
http_cmd() {
  local ADDR="$2"
  case "$1" in
    ours) echo "$BIN/echo-server --http 127.0.0.1:0 --addr-file $ADDR" ;;
    ours-sse) echo "$BIN/echo-server --http 127.0.0.1:0 --sse --addr-file $ADDR" ;;
    rmcp) echo "$RMCP --http 0 --addr-file $ADDR" ;;
    python) echo "$PY $PROVISIONER --http 0" ;;
    floor) echo "$BIN/axum-floor --http 127.0.0.1:0 --addr-file $ADDR" ;;
  esac
}
# Other SDKs do not stamp our serverInfo.
peer_flag() { case "$1" in rmcp|rmcp-pipes|python) echo --peer ;; esac; }
calls_for() { case "$1" in python) echo "$N_PY" ;; *) echo "$N_CALLS" ;; esac; }

SPID=""
URL=""
declare -A PIDS URLS
stop_server() {
  if [[ -n "$SPID" ]]; then
    kill -TERM "$SPID" 2>/dev/null || true
    wait "$SPID" 2>/dev/null || true
    SPID=""
  fi
}
stop_all() {
  local pid
  for pid in "${PIDS[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  PIDS=()
  SPID=""
}
trap stop_all EXIT

# start_http NAME: starts the HTTP server NAME; sets SPID and URL (and PIDS[NAME], URLS[NAME]).
start_http() {
  local cmd addr="$OUT/$1.addr"
  read -r -a cmd <<<"$(http_cmd "$1" "$addr")"
  rm -f "$addr"
  MCP_REQUEST_STATE_KEYS="$PY_KEYS" "${cmd[@]}" 2>"$OUT/$1.http.log" &
  SPID=$!
  PIDS[$1]=$SPID
  URL=""
  for _ in $(seq 1 600); do
    if [[ -s "$addr" ]]; then
      URL="http://$(cat "$addr")/mcp"
    else
      URL="$(sed -n 's/.*listening on \(http[^ ]*\).*/\1/p' "$OUT/$1.http.log" | head -n 1)"
    fi
    if [[ -n "$URL" ]]; then
      URLS[$1]=$URL
      return 0
    fi
    kill -0 "$SPID" 2>/dev/null || break
    sleep 0.05
  done
  echo "server $1 did not start" >&2
  cat "$OUT/$1.http.log" >&2
  exit 1
}

# VmRSS / VmHWM (KiB) of the process $2 (default $SPID).
proc_kib() { awk -v f="$1:" '$1 == f { print $2 }' "/proc/${2:-$SPID}/status"; }

# (a) stdio, sequential, the raw driver. The runs alternate between the servers, so that a
# burst of load from elsewhere on the machine does not land on one server's runs only.
declare -A STDIO_RATES
for run in $(seq "$RUNS"); do
  for s in ours rmcp rmcp-pipes python floor; do
    read -r -a cmd <<<"$(stdio_cmd "$s")"
    log "stdio sequential: $s (run $run)"
    line="$("$BIN/load" -n "$(calls_for "$s")" --warmup "$WARMUP" $(peer_flag "$s") --stdio -- "${cmd[@]}")"
    echo "$s $line" >>"$OUT/stdio.txt"
    STDIO_RATES[$s]+=" $(field calls_per_s "$line")"
    put "stdio.$s.hwm_kib" "$(field server_vmhwm_kib "$line")"
  done
done
for s in ours rmcp rmcp-pipes python floor; do
  # shellcheck disable=SC2086 # a list of numbers
  put "stdio.$s.cps" "$(median ${STDIO_RATES[$s]})"
  put "stdio.$s.runs" "${STDIO_RATES[$s]# }"
done

# (b) HTTP: idle memory, sequential calls on one connection, wrk c=32, memory under load.
# Every server runs at once (idle ones cost nothing) and the runs alternate between them.
HTTP_SERVERS=(ours ours-sse rmcp python floor)
for s in "${HTTP_SERVERS[@]}"; do
  start_http "$s"
  # The first answer is checked (and the server is up) before the idle sample.
  "$BIN/load" -n 1 $(peer_flag "${s%-sse}") --http "$URL" >/dev/null
  put "http.$s.idle_kib" "$(proc_kib VmRSS)"
done
declare -A SEQ_RATES WRK_RATES
for run in $(seq "$RUNS"); do
  for s in "${HTTP_SERVERS[@]}"; do
    log "HTTP sequential: $s (run $run)"
    line="$("$BIN/load" -n "$(calls_for "${s%-sse}")" --warmup "$WARMUP" $(peer_flag "${s%-sse}") --http "${URLS[$s]}")"
    echo "$s $line" >>"$OUT/http.txt"
    SEQ_RATES[$s]+=" $(field calls_per_s "$line")"
    log "wrk -t1 -c32 -d${WRK_SECONDS}s: $s (run $run)"
    wrk -t1 -c32 -d"${WRK_SECONDS}s" --latency -s "$LUA" "${URLS[$s]}" >"$OUT/wrk.$s.$run.txt"
    WRK_RATES[$s]+=" $(awk '/^Requests\/sec:/ { print $2 }' "$OUT/wrk.$s.$run.txt")"
    if grep -q 'Non-2xx or 3xx responses' "$OUT/wrk.$s.$run.txt"; then
      echo "wrk against $s: error statuses, see $OUT/wrk.$s.$run.txt" >&2
      exit 1
    fi
  done
done
for s in "${HTTP_SERVERS[@]}"; do
  # shellcheck disable=SC2086 # lists of numbers
  put "http.$s.cps" "$(median ${SEQ_RATES[$s]})"
  # shellcheck disable=SC2086
  put "wrk.$s.rps" "$(median ${WRK_RATES[$s]})"
  put "wrk.$s.runs" "${WRK_RATES[$s]# }"
  put "wrk.$s.p99" "$(awk '$1 == "99%" { print $2 }' "$OUT/wrk.$s.$RUNS.txt")"
  # Timeouts and resets (a slow server at 32 connections), reported beside the figure.
  put "wrk.$s.socket_errors" "$(sed -n 's/.*Socket errors: //p' "$OUT/wrk.$s.$RUNS.txt")"
  put "http.$s.load_rss_kib" "$(proc_kib VmRSS "${PIDS[$s]}")"
  put "http.$s.hwm_kib" "$(proc_kib VmHWM "${PIDS[$s]}")"
done
stop_all

# (d) Two-leg flows, sealing on: ours vs Python (rmcp 3.11 has no multi-round-trip requests).
for s in ours python; do
  n=$FLOWS
  [[ "$s" == python ]] && n=$FLOWS_PY
  read -r -a cmd <<<"$(stdio_cmd "$s")"
  rates=()
  for run in $(seq "$RUNS"); do
    log "flows over stdio: $s (run $run)"
    line="$(MCP_REQUEST_STATE_KEYS="$PY_KEYS" "$BIN/load" --flow -n "$n" --warmup 20 $(peer_flag "$s") --stdio -- "${cmd[@]}")"
    echo "$s stdio $line" >>"$OUT/flows.txt"
    rates+=("$(field calls_per_s "$line")")
  done
  put "flow.stdio.$s.fps" "$(median "${rates[@]}")"
  start_http "$s"
  rates=()
  for run in $(seq "$RUNS"); do
    log "flows over HTTP: $s (run $run)"
    line="$("$BIN/load" --flow -n "$n" --warmup 20 $(peer_flag "$s") --http "$URL")"
    echo "$s http $line" >>"$OUT/flows.txt"
    rates+=("$(field calls_per_s "$line")")
  done
  put "flow.http.$s.fps" "$(median "${rates[@]}")"
  stop_server
done

# (e) Flows left suspended: first legs whose questions are never answered.
log "$SUSPEND suspended flows over stdio (our server)"
"$BIN/load" --suspend -n "$SUSPEND" --sample-every "$SUSPEND_EVERY" --stdio -- "$BIN/echo-server" --stdio \
  >"$OUT/suspend.stdio.txt"
start_http ours
log "$SUSPEND suspended flows over HTTP (our server)"
"$BIN/load" --suspend -n "$SUSPEND" --sample-every "$SUSPEND_EVERY" --pid "$SPID" --http "$URL" \
  >"$OUT/suspend.http.txt"
stop_server

# Seal + open through the whole boundary (criterion).
log "cargo bench -p modelctx-seal (seal + open, one round)"
cargo bench --quiet -p modelctx-seal --bench seal -- 'seal\+open \(policy, small' "${CRITERION[@]}" --noplot \
  >"$OUT/criterion.txt" 2>&1
# "time: [low µs estimate µs high µs]": the estimate.
put seal.us "$(awk '/time:/ { v = $4; u = $5; if (u == "ns") v /= 1000; if (u == "ms") v *= 1000; print v; exit }' "$OUT/criterion.txt")"

# mcp bench: our client against every server (also regenerates its section of BENCHMARKS.md).
log "scripts/bench-peers.sh (mcp bench)"
write_flag=()
(( WRITE )) && write_flag=(--write)
BENCH_NO_BUILD=1 RESULTS_JSONL="$OUT/peers.jsonl" CALLS="$PEERS_CALLS" RUNS="$PEERS_RUNS" \
  MODES="$PEERS_MODES" CONCURRENCY="$PEERS_CONC" scripts/bench-peers.sh "${write_flag[@]}" \
  >"$OUT/peers.md"

# (c) callgrind (also regenerates its section of BENCHMARKS.md).
log "scripts/bench-callgrind.sh --peers"
OUT="$OUT/callgrind" NATIVE_RUNS=0 RMCP_ECHO="$RMCP" \
  scripts/bench-callgrind.sh --no-build --peers "${CALLGRIND_ARGS[@]}" "${write_flag[@]}" >"$OUT/callgrind.md"

# (g) Cold start, idle stdio memory, a cold `mcp call`, and client instructions against rmcp's
# client (issue 22), with every server of the run stopped.
log "scripts/bench-cold.sh"
cold_flag=()
(( QUICK )) && cold_flag=(--quick)
scripts/bench-cold.sh "$BIN" "$ROOT/bench-peers/target/release" "$OUT/cold" "${cold_flag[@]}" >>"$RES"

put minutes "$(( (SECONDS - STARTED + 30) / 60 ))"
put load_start "$LOAD_START"
put load_end "$(cut -d' ' -f1-3 /proc/loadavg)"
put quick "$QUICK"
put n_calls "$N_CALLS"
put n_py "$N_PY"
put wrk_seconds "$WRK_SECONDS"
put runs "$RUNS"
REV="${BENCH_REV:-$(git rev-parse --short HEAD)}"
[[ -z "${BENCH_REV:-}" && -n "$(git status --porcelain -- crates benches 2>/dev/null)" ]] && REV="$REV + uncommitted changes"
python3 scripts/bench-report.py "$OUT" "$REV" "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)" \
  "$(nproc)" "$(rustc --version)" >"$OUT/summary.md"
cat "$OUT/summary.md"
if (( WRITE )); then
  python3 scripts/bench-report.py --replace BENCHMARKS.md bench "$OUT/summary.md"
  log "BENCHMARKS.md updated"
fi
log "done in $(( (SECONDS - STARTED) / 60 )) min; raw outputs in $OUT"
