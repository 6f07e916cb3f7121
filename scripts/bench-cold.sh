#!/usr/bin/env bash
# The rows of issue 22 that scripts/bench.sh measures through this script, side by side with
# rmcp 3.11 in the same run (bench.sh appends its output to its results.tsv):
#
#   cold start   spawn → the first `server/discover` answer over stdio, default settings (sealing
#                on with an ephemeral key: MCP_REQUEST_STATE_KEYS unset), for the benches
#                `echo-server`, `mcp serve demo` and rmcp-echo, alternating, median of COLD_N
#                each; the server's VmRSS right after that answer (its idle memory on stdio);
#   cold call    `mcp call echo text=hello -- mcp serve demo`: spawn → result printed (and
#                spawn → exit, the server closed and reaped);
#   client       client instructions per `tools/call` under callgrind (the client process only,
#                (total(N2) − total(N1)) / (N2 − N1) after 500 warm-up calls), our `mcp bench`
#                against rmcp 3.11's client (`bench-peers` `rmcp-client`), both against the
#                benches `echo-server`, over stdio and HTTP.
#
# usage: scripts/bench-cold.sh BIN RMCP_DIR OUT [--quick]
#   BIN       the release binaries (echo-server, cold, mcp)
#   RMCP_DIR  bench-peers/target/release (rmcp-echo, rmcp-client)
#   OUT       where raw outputs go
# Prints `key<TAB>value` lines. Network: 127.0.0.1 only.
set -euo pipefail
trap 'echo "bench-cold.sh: failed (line $LINENO)" >&2' ERR

BIN="$1" RMCP_DIR="$2" OUT="$3"
QUICK=0
[[ "${4:-}" == --quick ]] && QUICK=1
if (( QUICK )); then COLD_N=3 ROUNDS=1 N1=200 N2=600; else COLD_N=9 ROUNDS=2 N1=1000 N2=3000; fi
mkdir -p "$OUT"
unset MCP_REQUEST_STATE_KEYS

field() { sed -nE "s/.*(^| )$1=([0-9.]+).*/\2/p" <<<"$2" | tail -n 1; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
log() { echo "== bench-cold.sh: $*" >&2; }

server_cmd() {
  case "$1" in
    ours) echo "$BIN/echo-server --stdio" ;;
    demo) echo "$BIN/mcp serve demo" ;;
    rmcp) echo "$RMCP_DIR/rmcp-echo" ;;
  esac
}

# Cold start and idle stdio memory; the rounds alternate between the servers.
declare -A MS RSS
for round in $(seq "$ROUNDS"); do
  for s in ours demo rmcp; do
    read -r -a cmd <<<"$(server_cmd "$s")"
    log "cold start: $s (round $round)"
    line="$("$BIN/cold" -n "$COLD_N" --discover -- "${cmd[@]}" 2>>"$OUT/cold.log")"
    echo "$s $line" >>"$OUT/cold.txt"
    MS[$s]+=" $(field median_ms "$line")"
    RSS[$s]+=" $(field rss_kib "$line")"
  done
  log "cold mcp call (round $round)"
  line="$("$BIN/cold" -n "$COLD_N" --exit -- "$BIN/mcp" call echo text=hello -- "$BIN/mcp" serve demo \
    2>>"$OUT/cold.log")"
  echo "call $line" >>"$OUT/cold.txt"
  # The goal's clock stops when the result is printed; `mcp` closes the server after that.
  MS[call]+=" $(field printed_median_ms "$line")"
  MS[call_exit]+=" $(field median_ms "$line")"
done
for s in ours demo rmcp call call_exit; do
  # shellcheck disable=SC2086 # lists of numbers
  printf 'cold.%s.ms\t%s\ncold.%s.runs\t%s\n' "$s" "$(median ${MS[$s]})" "$s" "${MS[$s]# }"
done
for s in ours demo rmcp; do
  # shellcheck disable=SC2086
  printf 'stdio.%s.idle_kib\t%s\n' "$s" "$(median ${RSS[$s]})"
done

# total_ir FILE: a callgrind file's instructions, less aws-lc's one-off jitter-entropy seeding.
# shellcheck source=scripts/callgrind-total.sh
source "$(dirname "${BASH_SOURCE[0]}")/callgrind-total.sh"

# client_ir NAME CMD…: client instructions per call; CMD takes the call count as `{N}`.
client_ir() {
  local name="$1" totals=() n
  shift
  for n in "$N1" "$N2"; do
    local args=("${@//\{N\}/$n}") file="$OUT/client-$name.$n.callgrind"
    log "callgrind client: $name, $n calls"
    valgrind --tool=callgrind --callgrind-out-file="$file" "${args[@]}" \
      >"$OUT/client-$name.$n.out" 2>"$OUT/client-$name.$n.log"
    totals+=("$(total_ir "$file")")
  done
  printf 'client.%s.ir\t%s\n' "$name" "$(( (totals[1] - totals[0]) / (N2 - N1) ))"
}

ADDR="$OUT/echo.addr"
rm -f "$ADDR"
"$BIN/echo-server" --http 127.0.0.1:0 --addr-file "$ADDR" 2>"$OUT/echo-http.log" &
ECHO_PID=$!
trap 'kill "$ECHO_PID" 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do [[ -s "$ADDR" ]] && break; sleep 0.05; done
[[ -s "$ADDR" ]] || { echo "echo-server did not start" >&2; exit 1; }
URL="http://$(cat "$ADDR")/mcp"

BENCH=("$BIN/mcp" bench --tool echo --args '{"text":"hello"}' --calls '{N}' --warmup 500)
client_ir ours-stdio "${BENCH[@]}" -- "$BIN/echo-server" --stdio
client_ir ours-http "${BENCH[@]}" "$URL"
client_ir rmcp-stdio "$RMCP_DIR/rmcp-client" -n '{N}' --warmup 500 --stdio "$BIN/echo-server" --stdio
client_ir rmcp-http "$RMCP_DIR/rmcp-client" -n '{N}' --warmup 500 --http "$URL"
