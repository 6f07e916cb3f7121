#!/usr/bin/env bash
# `mcp bench` against three servers, over stdio and streamable HTTP: the mcp SDK (the low-level
# echo-server of benches/, and the high-level McpServer of `mcp serve demo`), the official Rust
# SDK rmcp 3.11 (bench-peers/rmcp-echo, its own workspace) and the Python SDK 2.3.0
# (tests/python/provisioner.py). Every server answers `echo {text}`; each figure is what a client
# sees: calls/s and latency percentiles through modelctx::client, one connection.
#
#   scripts/bench-peers.sh            # prints the Markdown table
#   scripts/bench-peers.sh --write    # also replaces it in BENCHMARKS.md (between the markers)
#
# Environment: CALLS (default 5000 per run), RUNS (3; the run with the median calls/s is
# reported), CONCURRENCY (list, default "1 8"), MODES (list, default "auto legacy"),
# RESULTS_JSONL (also copy every run's `mcp bench --json` line there), BENCH_NO_BUILD=1 (reuse
# the binaries; scripts/bench.sh builds them once).
# Builds in release mode: $CARGO_TARGET_DIR, default target/bench-peers (mcp, echo-server), and
# bench-peers/target (rmcp).
# Servers bind 127.0.0.1 only and are stopped on exit.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
write=false
[ "${1:-}" = --write ] && write=true
CALLS="${CALLS:-5000}"
RUNS="${RUNS:-3}"
CONCURRENCY="${CONCURRENCY:-1 8}"
MODES="${MODES:-auto legacy}"

export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
target="${CARGO_TARGET_DIR:-$root/target/bench-peers}"
if [ "${BENCH_NO_BUILD:-0}" != 1 ]; then
  echo "bench-peers: building mcp and echo-server (release)" >&2
  # Separately, so that echo-server is built with its own features only (scripts/bench.sh).
  CARGO_TARGET_DIR="$target" cargo build --release --quiet -p modelctx-cli
  CARGO_TARGET_DIR="$target" cargo build --release --quiet -p modelctx-benches
  echo "bench-peers: building rmcp-echo (rmcp 3.11, release)" >&2
  (cd bench-peers/rmcp-echo && CARGO_TARGET_DIR="$root/bench-peers/target" cargo build --release --quiet)
fi
PY="$(scripts/python-env.sh)"

bin="$target/release"
mcp="$bin/mcp"
rmcp_echo="$root/bench-peers/target/release/rmcp-echo"
provisioner="$root/tests/python/provisioner.py"

work="$(mktemp -d)"
server_pid=""
stop_server() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
  fi
}
trap 'stop_server; rm -rf "$work"' EXIT

# start_http LOG CMD…: starts an HTTP server whose stderr announces `listening on URL`
# (echo-server writes its address to a file instead); sets $url.
start_http() {
  local log="$1"
  shift
  "$@" 2>"$log" &
  server_pid=$!
  url=""
  for _ in $(seq 1 600); do
    if [ -s "$work/addr" ]; then
      url="http://$(cat "$work/addr")/mcp"
    else
      url="$(sed -n 's/.*listening on \(http[^ ]*\).*/\1/p' "$log" | head -n 1)"
    fi
    [ -n "$url" ] && return 0
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.05
  done
  echo "bench-peers: server did not start: $*" >&2
  cat "$log" >&2
  exit 1
}

results="$work/results.jsonl"
# bench LABEL TRANSPORT TARGET…: every mode × concurrency, RUNS runs each.
bench() {
  local label="$1" transport="$2"
  shift 2
  local mode c run
  for mode in $MODES; do
    for c in $CONCURRENCY; do
      for run in $(seq 1 "$RUNS"); do
        echo "bench-peers: $label $transport mode=$mode c=$c run $run" >&2
        "$mcp" bench --json --timeout 600 --mode "$mode" --tool echo --args '{"text":"hello"}' \
          --calls "$CALLS" --warmup 200 --concurrency "$c" "$@" \
          | python3 -c 'import json,sys; r=json.load(sys.stdin); r.update(label=sys.argv[1], mode=sys.argv[2]); print(json.dumps(r))' \
            "$label" "$mode" >>"$results"
      done
    done
  done
}

bench "mcp low-level \`Server\` (benches \`echo-server\`)" stdio -- "$bin/echo-server" --stdio
bench "mcp \`McpServer\` (\`mcp serve demo\`)" stdio -- "$mcp" serve demo
bench "rmcp 3.11 (\`bench-peers/rmcp-echo\`)" stdio -- "$rmcp_echo"
bench "Python SDK 2.3.0 low-level \`Server\` (\`provisioner.py\`)" stdio -- "$PY" "$provisioner"

rm -f "$work/addr"
start_http "$work/ours.log" "$bin/echo-server" --http 127.0.0.1:0 --addr-file "$work/addr"
rm -f "$work/addr"
bench "mcp low-level \`Server\` (benches \`echo-server\`)" http "$url"
stop_server
start_http "$work/demo.log" "$mcp" serve demo --http 127.0.0.1:0
bench "mcp \`McpServer\` (\`mcp serve demo\`)" http "$url"
stop_server
start_http "$work/rmcp.log" "$rmcp_echo" --http 0
bench "rmcp 3.11 (\`bench-peers/rmcp-echo\`)" http "$url"
stop_server
start_http "$work/py.log" "$PY" "$provisioner" --http 0
bench "Python SDK 2.3.0 low-level \`Server\` (\`provisioner.py\`)" http "$url"
stop_server

[ -n "${RESULTS_JSONL:-}" ] && cp "$results" "$RESULTS_JSONL"
commit="${BENCH_REV:-$(git rev-parse --short HEAD)}"
cpu="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
table="$work/table.md"
python3 - "$results" "$CALLS" "$RUNS" "$commit" "$cpu" "$(nproc)" "$(rustc --version)" >"$table" <<'PY'
import json, sys, statistics, datetime
path, calls, runs, commit, cpu, cores, rustc = sys.argv[1:8]
rows = {}
order = []
for line in open(path):
    r = json.loads(line)
    key = (r["transport"], r["mode"], r["concurrency"], r["label"])
    if key not in rows:
        rows[key] = []
        order.append(key)
    rows[key].append(r)
print(f"Measured {datetime.date.today()} at `{commit}` by `scripts/bench-peers.sh`.")
print(f"Machine: {cpu}, {cores} cores; {rustc}. Client: `mcp bench` (release), one connection,")
print(f"`echo {{\"text\":\"hello\"}}`, {calls} calls after 200 warm-up calls; of {runs} runs the one with the")
print("median calls/s is shown (its latencies in µs). `auto` negotiates 2026-07-28 (every server here")
print("speaks it); `legacy` is the 2025-11-25 `initialize` handshake.")
print()
print("| transport | era | concurrency | server | calls/s | p50 µs | p90 µs | p99 µs | errors |")
print("|---|---|---:|---|---:|---:|---:|---:|---:|")
for key in order:
    transport, mode, c, label = key
    group = sorted(rows[key], key=lambda r: r["callsPerSecond"])
    r = group[len(group) // 2]
    era = "2026-07-28" if r["protocolVersion"] == "2026-07-28" else r["protocolVersion"]
    errors = sum(x["errors"] for x in rows[key])
    t = "stdio" if transport == "stdio" else "HTTP"
    print(f"| {t} | {era} | {c} | {label} | {r['callsPerSecond']:,.0f} | {r['latencyUs']['p50']:,.0f} "
          f"| {r['latencyUs']['p90']:,.0f} | {r['latencyUs']['p99']:,.0f} | {errors} |")
PY
cat "$table"

if $write; then
  python3 - BENCHMARKS.md "$table" <<'PY'
import sys
path, table = sys.argv[1], open(sys.argv[2]).read().rstrip("\n")
text = open(path).read()
begin, end = "<!-- bench-peers:begin -->", "<!-- bench-peers:end -->"
if begin not in text or end not in text:
    sys.exit("BENCHMARKS.md has no bench-peers markers")
head, rest = text.split(begin, 1)
_, tail = rest.split(end, 1)
open(path, "w").write(f"{head}{begin}\n{table}\n{end}{tail}")
PY
  echo "bench-peers: BENCHMARKS.md updated" >&2
fi
