#!/usr/bin/env bash
# `mcp bridge URL` measured (issue 36): the demo served 2026-07-28-only over HTTP on 127.0.0.1 is
# the upstream, and the rows are
#
#   cold start   spawn → the bridge's answer to a 2025-11-25 host's `initialize` over stdio
#                (median of N spawns, timed by a small Python host), which comes after the bridge
#                connected upstream (discovery) and mirrored its lists; the bridge's VmRSS right
#                after that answer (its idle memory);
#   peak RSS     the bridge's maximum resident set over a `mcp bench` run through it
#                (/usr/bin/time -f %M), CALLS calls of `echo`, 4 in flight;
#   latency      `mcp bench --tool echo` p50 / p99 through the bridge (a 2025-11-25 host and a
#                2026-07-28 host over stdio) against the same bench calling the upstream directly
#                over HTTP; the ratio is bridged p50 / direct p50.
#
# The peers of the issue (mcp-remote 0.15.1, supergateway 4.0.0, mcp-proxy 6.7.19) are not
# measured yet. usage: scripts/bench-bridge.sh [--quick]; prints a Markdown table. Builds the
# release `mcp` first. Network: 127.0.0.1 only.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
QUICK=0
[[ "${1:-}" == --quick ]] && QUICK=1
if (( QUICK )); then COLD_N=5 CALLS=500 WARMUP=50; else COLD_N=15 CALLS=3000 WARMUP=300; fi
unset MCP_REQUEST_STATE_KEYS

cd "$root"
echo "== bench-bridge.sh: building the release binaries" >&2
CARGO_INCREMENTAL=0 cargo build --release -q -p modelctx-cli --bin mcp >&2
BIN="$root/target/release"
OUT="$(mktemp -d)"
trap 'kill "$upstream_pid" 2>/dev/null || true; rm -rf "$OUT"' EXIT

: >"$OUT/upstream.log"
"$BIN/mcp" serve demo --http 0 --protocol 2026-07-28 2>"$OUT/upstream.log" &
upstream_pid=$!
url=""
for _ in $(seq 200); do
  url="$(sed -nE 's/.*listening on (http:[^ ]*).*/\1/p' "$OUT/upstream.log" | head -n 1)"
  [[ -n "$url" ]] && break
  kill -0 "$upstream_pid" 2>/dev/null || { cat "$OUT/upstream.log" >&2; exit 1; }
  sleep 0.05
done
[[ -n "$url" ]] || { echo "bench-bridge.sh: the upstream did not start" >&2; exit 1; }

field() { sed -nE "s/.*(^| )$1=([0-9.]+).*/\2/p" <<<"$2" | tail -n 1; }
json_field() { python3 -c "import json,sys; d=json.load(sys.stdin); print(d$1)"; }

echo "== bench-bridge.sh: cold start" >&2
cold="$(python3 - "$COLD_N" "$BIN/mcp" "$url" <<'PY'
import json, statistics, subprocess, sys, time
runs, mcp, url = int(sys.argv[1]), sys.argv[2], sys.argv[3]
initialize = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "bench", "version": "1"}}}) + "\n"
times, rss = [], []
for _ in range(runs):
    start = time.perf_counter()
    bridge = subprocess.Popen([mcp, "bridge", url], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    bridge.stdin.write(initialize)
    bridge.stdin.flush()
    answer = json.loads(bridge.stdout.readline())
    times.append((time.perf_counter() - start) * 1000)
    assert "result" in answer, answer
    with open(f"/proc/{bridge.pid}/status") as status:
        rss += [int(l.split()[1]) for l in status if l.startswith("VmRSS:")]
    bridge.stdin.close()
    bridge.wait(timeout=10)
print(f"median_ms={statistics.median(times):.1f} rss_kib={int(statistics.median(rss))}")
PY
)"

bench() { "$BIN/mcp" bench --tool echo --args '{"text":"hi"}' --calls "$CALLS" \
  --warmup "$WARMUP" --json "$@"; }
echo "== bench-bridge.sh: latency, direct" >&2
direct="$(bench "$url" --concurrency 1)"
echo "== bench-bridge.sh: latency, through the bridge (2025-11-25 host)" >&2
old_host="$(bench --mode 2025-11-25 --concurrency 1 -- /usr/bin/time -f %M -o "$OUT/peak1" \
  "$BIN/mcp" bridge "$url")"
echo "== bench-bridge.sh: latency, through the bridge (2026-07-28 host)" >&2
new_host="$(bench --mode 2026-07-28 --concurrency 1 -- "$BIN/mcp" bridge "$url")"
echo "== bench-bridge.sh: peak memory, 4 in flight" >&2
bench --mode 2025-11-25 --concurrency 4 -- /usr/bin/time -f %M -o "$OUT/peak4" \
  "$BIN/mcp" bridge "$url" >/dev/null

p50() { json_field "['latencyUs']['p50']" <<<"$1"; }
p99() { json_field "['latencyUs']['p99']" <<<"$1"; }
ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }
cat <<TABLE
| row | value |
|---|---:|
| cold start: spawn → first answer (median of $COLD_N) | $(field median_ms "$cold") ms |
| idle RSS after the first answer | $(field rss_kib "$cold") KiB |
| peak RSS, $CALLS calls, 1 in flight | $(tail -n 1 "$OUT/peak1") KiB |
| peak RSS, $CALLS calls, 4 in flight | $(tail -n 1 "$OUT/peak4") KiB |
| echo p50 / p99, direct over HTTP (2026-07-28) | $(p50 "$direct") / $(p99 "$direct") µs |
| echo p50 / p99 through the bridge, 2025-11-25 host | $(p50 "$old_host") / $(p99 "$old_host") µs |
| echo p50 / p99 through the bridge, 2026-07-28 host | $(p50 "$new_host") / $(p99 "$new_host") µs |
| bridged / direct p50, 2025-11-25 host | $(ratio "$(p50 "$old_host")" "$(p50 "$direct")")× |
| bridged / direct p50, 2026-07-28 host | $(ratio "$(p50 "$new_host")" "$(p50 "$direct")")× |
TABLE
