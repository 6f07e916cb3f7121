#!/usr/bin/env bash
# The `lambda` example (examples/examples/lambda.rs) in the Lambda runtime emulator of
# `cargo lambda` (PyPI `cargo-lambda` 1.9.2, which ships the binary; installed once into
# .cache/cargo-lambda, nothing is downloaded after that), through its function URL endpoint:
#
#   server/discover, tools/call echo, the two rounds of `provision` each served by a new function
#   process (two cold instances sharing only MCP_REQUEST_STATE_KEYS), a tampered requestState,
#   a 2025-11-25 `initialize`; every event the emulator hands the function is recorded
#   (MCP_LAMBDA_RECORD) into OUT/events;
#   cold start: spawn of a function process → its first answer through the emulator (init +
#   first invocation), COLD_N times, beside the Python SDK 2.3.0's own start-up to its first
#   answer (tests/python/provisioner.py over stdio: spawn → `server/discover` answered).
#
# usage: scripts/lambda-emulator.sh [OUT]   (default target/lambda-emulator; release build)
# Not run by .ci/run: the committed events (examples/lambda-events/) and examples/tests/lambda.rs
# drive the same function without the emulator. Network: 127.0.0.1 only.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
OUT="${1:-$root/target/lambda-emulator}"
PORT="${LAMBDA_EMULATOR_PORT:-9321}"
COLD_N="${COLD_N:-9}"
mkdir -p "$OUT/events"
rm -f "$OUT"/events/*.json

venv="$root/.cache/cargo-lambda"
if [ ! -x "$venv/bin/cargo-lambda" ]; then
  echo "lambda-emulator: installing cargo-lambda 1.9.2 into $venv" >&2
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check "cargo-lambda==1.9.2" >&2
fi
CARGO_INCREMENTAL=0 cargo build --release -q -p modelctx-examples --example lambda
CARGO_INCREMENTAL=0 cargo build --release -q -p modelctx-benches --bin cold
function_bin="$root/target/release/examples/lambda"

"$venv/bin/cargo-lambda" lambda watch --only-lambda-apis -A 127.0.0.1 -P "$PORT" \
  >"$OUT/emulator.log" 2>&1 &
emulator=$!
trap 'kill "$emulator" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then break; fi
  sleep 0.1
done

export AWS_LAMBDA_FUNCTION_NAME=_ AWS_LAMBDA_FUNCTION_VERSION=1 AWS_LAMBDA_FUNCTION_MEMORY_SIZE=1024
export AWS_LAMBDA_RUNTIME_API="http://127.0.0.1:$PORT/.rt"
export MCP_REQUEST_STATE_KEYS="${MCP_REQUEST_STATE_KEYS:-$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')}"
url="http://127.0.0.1:$PORT/lambda-url/_/mcp"
meta='{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}},"io.modelcontextprotocol/clientInfo":{"name":"emulator","version":"1"}}'

now_ns() { date +%s%N; }

# One invocation on a new function process: prints the answer's body; the function's time from
# spawn to answer goes to $OUT/cold.txt.
invoke_cold() { # METHOD NAME BODY [PROTOCOL-VERSION]
  local method="$1" name="$2" body="$3" version="${4-2026-07-28}" start end
  start=$(now_ns)
  MCP_LAMBDA_RECORD="$OUT/events" "$function_bin" 2>>"$OUT/function.log" &
  local fn=$!
  local args=(-s -m 60 -X POST "$url" -H 'content-type: application/json'
    -H 'accept: application/json, text/event-stream' --data "$body")
  if [ -n "$version" ]; then args+=(-H "mcp-protocol-version: $version"); fi
  if [ "$version" = 2026-07-28 ]; then args+=(-H "mcp-method: $method"); fi
  if [ -n "$name" ]; then args+=(-H "mcp-name: $name"); fi
  curl "${args[@]}"
  end=$(now_ns)
  kill "$fn" 2>/dev/null || true
  wait "$fn" 2>/dev/null || true
  echo $(( (end - start) / 1000 )) >>"$OUT/cold.txt"
  # Events are numbered per process: give each a unique name.
  if [ -f "$OUT/events/00.json" ]; then
    mv "$OUT/events/00.json" "$OUT/events/$(date +%s%N)-${method//\//_}.json"
  fi
}

: >"$OUT/cold.txt"
echo "== server/discover"
invoke_cold server/discover "" "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{\"_meta\":$meta}}"
echo
echo "== tools/call echo"
invoke_cold tools/call echo "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"_meta\":$meta,\"name\":\"echo\",\"arguments\":{\"text\":\"hello\"}}}"
echo
echo "== provision, round 1 (instance A)"
round1="$(invoke_cold tools/call provision "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"_meta\":$meta,\"name\":\"provision\",\"arguments\":{\"name\":\"orders\"}}}")"
echo "$round1"
state="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["result"]["requestState"])' "$round1")"
answer='{"region":{"action":"accept","content":{"region":"eu-west-1"}}}'
echo "== provision, round 2 (instance B)"
invoke_cold tools/call provision "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"_meta\":$meta,\"name\":\"provision\",\"arguments\":{\"name\":\"orders\"},\"inputResponses\":$answer,\"requestState\":\"${state}\"}}"
echo
echo "== provision, tampered requestState"
invoke_cold tools/call provision "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"_meta\":$meta,\"name\":\"provision\",\"arguments\":{\"name\":\"orders\"},\"inputResponses\":$answer,\"requestState\":\"${state}x\"}}"
echo
echo "== initialize (2025-11-25)"
invoke_cold initialize "" '{"jsonrpc":"2.0","id":6,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}' ""
echo

# Cold starts: a new process per invocation (server/discover), COLD_N of them.
: >"$OUT/cold.txt"
for _ in $(seq "$COLD_N"); do
  invoke_cold server/discover "" "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{\"_meta\":$meta}}" >/dev/null
done
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ours_us=$(median <"$OUT/cold.txt")
# Warm: one function process, COLD_N invocations after a first one: what the emulator and curl
# add to every answer, so that cold − warm is the function's own init.
"$function_bin" 2>>"$OUT/function.log" &
warm_fn=$!
discover="{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{\"_meta\":$meta}}"
warm() {
  curl -s -m 60 -o /dev/null -X POST "$url" -H 'content-type: application/json' \
    -H 'accept: application/json, text/event-stream' -H 'mcp-protocol-version: 2026-07-28' \
    -H 'mcp-method: server/discover' --data "$discover"
}
warm
: >"$OUT/warm.txt"
for _ in $(seq "$COLD_N"); do
  start=$(now_ns); warm; end=$(now_ns)
  echo $(( (end - start) / 1000 )) >>"$OUT/warm.txt"
done
kill "$warm_fn" 2>/dev/null || true
warm_us=$(median <"$OUT/warm.txt")
python="$(bash scripts/python-env.sh)"
py_line="$("$root/target/release/cold" -n "$COLD_N" --discover -- "$python" tests/python/provisioner.py 2>>"$OUT/cold.log")"
echo "== cold start (median of $COLD_N)"
echo "function (emulator, spawn → first answer through the function URL): $(awk -v u="$ours_us" 'BEGIN { printf "%.1f ms", u / 1000 }')"
echo "function, warm (an invocation of a running instance, same path): $(awk -v u="$warm_us" 'BEGIN { printf "%.1f ms", u / 1000 }')"
echo "Python SDK 2.3.0 provisioner.py (stdio, spawn → server/discover answer): $py_line"
echo "events recorded in $OUT/events"
