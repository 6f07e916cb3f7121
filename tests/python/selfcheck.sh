#!/usr/bin/env bash
# Self-check of the Python reference peers: runs every peer against client_driver.py (the Python
# SDK's mcp.Client) over stdio and over Streamable HTTP, plus raw stdio probes, and asserts the
# answers documented in tests/python/README.md. Needs only scripts/python-env.sh (mcp 2.3.0).
# Servers bind 127.0.0.1 on free ports and are stopped on exit. Prints "N passed, M failed".
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
py="$("$root/scripts/python-env.sh")"
cd "$here"

passed=0
failed=0
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

check() { # name, haystack, needle...
  local name="$1" out="$2"
  shift 2
  local needle
  for needle in "$@"; do
    if ! grep -qF -- "$needle" <<<"$out"; then
      echo "FAIL $name: missing: $needle" >&2
      echo "$out" | head -c 3000 >&2
      failed=$((failed + 1))
      return 0
    fi
  done
  echo "ok   $name"
  passed=$((passed + 1))
}

free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start_http() { # script args... ; sets $url (runs in this shell so the trap can stop the server)
  local port
  port="$(free_port)"
  "$py" "$@" --http "$port" >/dev/null 2>&1 &
  pids+=("$!")
  local deadline=$((SECONDS + 20))
  until (: >"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    [ "$SECONDS" -lt "$deadline" ] || { echo "server $* did not start" >&2; return 1; }
    sleep 0.05
  done
  url="http://127.0.0.1:$port/mcp"
}

drive() { "$py" client_driver.py --timeout 60 "$@" 2>&1 || true; }

# --- Provisioner ---------------------------------------------------------------------------------
PROV_OPS='[{"op":"call_tool","name":"provision","arguments":{"name":"orders"}},{"op":"call_tool","name":"echo","arguments":{"text":"hi"}},{"op":"call_tool","name":"state_only","arguments":{"n":3}}]'
ANS='{"elicitation":{"values":{"region":"eu-west-1","confirm":true,"seat":"aisle","amount":1200,"ok":true,"audience":"the board","format":"pdf"}}}'
out="$(drive --answers-json "$ANS" --ops-json "$PROV_OPS" --stdio "$py" provisioner.py)"
check "provisioner stdio auto" "$out" '"protocol_version": "2026-07-28"' \
  "Provisioned 'orders' in eu-west-1 (protocol 2026-07-28, state seen by handler: 'provision-v1')." \
  '"key": "region"' '"text": "hi"' "state_only completed after 3 state-only round(s)"
out="$(drive --mode legacy --answers-json "$ANS" --ops-json "$PROV_OPS" --stdio "$py" provisioner.py)"
check "provisioner stdio legacy" "$out" '"protocol_version": "2025-11-25"' \
  "Provisioned 'orders' in eu-west-1 (protocol 2025-11-25, state seen by handler: '')." '"key": 1'
start_http provisioner.py
out="$(drive --answers-json "$ANS" --ops-json "$PROV_OPS" --url "$url")"
check "provisioner http auto" "$out" "state seen by handler: 'provision-v1'" "state_only completed after 3"
out="$(MCP_REQUEST_STATE_KEYS=selfcheck-selfcheck-selfcheck-selfcheck drive --answers-json "$ANS" --ops-json "$PROV_OPS" \
  --stdio env MCP_REQUEST_STATE_KEYS=selfcheck-selfcheck-selfcheck-selfcheck "$py" provisioner.py)"
check "provisioner sealed stdio" "$out" "state seen by handler: 'provision-v1'" "state_only completed after 3"
out="$("$py" - <<'EOF' 2>/dev/null
import json, os, subprocess, sys
env = dict(os.environ, MCP_REQUEST_STATE_KEYS="selfcheck-selfcheck-selfcheck-selfcheck")
p = subprocess.Popen([sys.executable, "provisioner.py"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
def rpc(i, params):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {**params, "_meta": meta}}) + "\n")
    p.stdin.flush()
    return json.loads(p.stdout.readline())
tok = rpc(1, {"name": "provision", "arguments": {"name": "orders"}})["result"]["requestState"]
ans = {"region": {"action": "accept", "content": {"region": "eu-west-1"}}}
print("token", tok[:3])
print("tampered", json.dumps(rpc(2, {"name": "provision", "arguments": {"name": "orders"}, "inputResponses": ans, "requestState": tok + "x"})))
p.stdin.close(); p.wait()
EOF
)"
check "provisioner sealed raw tamper" "$out" "token v1." '"code": -32602' "Invalid or expired requestState"

# --- PeerBookshop --------------------------------------------------------------------------------
BOOK_OPS='[{"op":"call_tool","name":"order_book","arguments":{"title":"Neuromancer"}},{"op":"call_tool","name":"plan_trip","arguments":{"city":"Lisbon"}},{"op":"call_tool","name":"summarize","arguments":{"text":"long text"}},{"op":"call_tool","name":"where_am_i","arguments":{}},{"op":"call_tool","name":"manual_irr","arguments":{"x":7}},{"op":"call_tool","name":"echo","arguments":{"text":"hi"}},{"op":"get_prompt","name":"briefing","arguments":{"topic":"Q3"}},{"op":"read_resource","uri":"report://q3"}]'
BOOK_EXPECT=("Backorder for 'Neuromancer': placed." "Trip to Lisbon: seat aisle, budget 1200 EUR." \
  "summary[fake-llm-1]: A short summary." "roots: file:///tmp/mcp-peer-root (peer-root)" "Brief the board on Q3." "Report q3 (pdf)")
out="$(drive --answers-json "$ANS" --ops-json "$BOOK_OPS" --stdio "$py" bookshop.py)"
check "bookshop stdio auto" "$out" "${BOOK_EXPECT[@]}" "manual_irr done: x=7, ok=True, state seen by handler: 'manual:7'" \
  '"key": "__main__:confirm_backorder"' '"key": "__main__:ask_budget"' '"key": "__main__:sample_summary"'
out="$(drive --mode legacy --answers-json "$ANS" --ops-json "$BOOK_OPS" --stdio "$py" bookshop.py)"
check "bookshop stdio legacy" "$out" "${BOOK_EXPECT[@]}" '"code": -32603' "Handler returned an invalid result"
start_http bookshop.py
out="$(drive --answers-json "$ANS" --ops-json "$BOOK_OPS" --url "$url")"
check "bookshop http auto" "$out" "${BOOK_EXPECT[@]}" "state seen by handler: 'manual:7'"
out="$(drive --mode legacy --answers-json "$ANS" --ops-json "$BOOK_OPS" --url "$url")"
check "bookshop http legacy" "$out" "${BOOK_EXPECT[@]}"
out="$(drive --no-elicitation --ops-json '[{"op":"call_tool","name":"order_book","arguments":{"title":"Neuromancer"}}]' --url "$url")"
check "bookshop missing capability" "$out" '"code": -32021' '"requiredCapabilities": {"elicitation": {"form": {}}}'

# --- handshake-only ------------------------------------------------------------------------------
HS_OPS='[{"op":"call_tool","name":"provision","arguments":{"name":"orders"}},{"op":"call_tool","name":"echo","arguments":{"text":"hi"}}]'
HS_EXPECT=('"protocol_version": "2025-11-25"' "Provisioned 'orders' in eu-west-1 (protocol 2025-11-25, via back-channel elicitation)." '"text": "hi"')
out="$(drive --answers-json "$ANS" --ops-json "$HS_OPS" --stdio "$py" handshake_only.py)"
check "handshake_only stdio auto (fallback)" "$out" "${HS_EXPECT[@]}"
for mode in 404 200 400-session; do
  start_http handshake_only.py --discover-http "$mode"
  out="$(drive --answers-json "$ANS" --ops-json "$HS_OPS" --url "$url")"
  check "handshake_only http auto (discover-http $mode)" "$out" "${HS_EXPECT[@]}"
done
out="$(printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}' | "$py" handshake_only.py)"
check "handshake_only raw discover" "$out" '"code":-32601' '"data":"server/discover"'

# --- fake server ---------------------------------------------------------------------------------
for v in no-result-type list-no-cache irr-empty irr-unknown-method; do
  out="$(drive --ops-json "[{\"op\":\"call_tool\",\"name\":\"$v\"}]" --stdio "$py" fake_server.py)"
  check "fake_server $v rejected by mcp.Client" "$out" '"ok": false' 'ValidationError'
done
out="$(drive --ops-json '[{"op":"call_tool","name":"irr-extra"},{"op":"call_tool","name":"irr-no-state"},{"op":"call_tool","name":"irr-url"}]' --stdio "$py" fake_server.py)"
check "fake_server tolerated variants (stdio)" "$out" 'irr-extra: answered' 'requestState=extra-1' \
  'irr-no-state: requestState absent' 'irr-url: action=accept' '"event": "done", "ok": true'
start_http fake_server.py
out="$(drive --ops-json '[{"op":"call_tool","name":"irr-extra"},{"op":"call_tool","name":"no-result-type"}]' --url "$url")"
check "fake_server http" "$out" 'irr-extra: answered' 'ValidationError'

echo "selfcheck: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
