#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance@0.2.0-alpha.12)
# against our fixture binaries from the `modelctx-conformance` crate:
#   target/debug/conformance-server  (Streamable HTTP on 127.0.0.1:$PORT, path /mcp)
#   target/debug/conformance-client  (spawned by the harness once per client scenario)
#
# Why: the suite is the external oracle for protocol revision 2026-07-28 (and the 2025-11-25
# handshake era we also serve). The scored scenario sets are frozen per revision
# (`--requirements <rev>`), so "exit 0" here means "every required scenario passes".
#
# What it does:
#   1. scripts/node-env.sh (Node 22 + the suite, cached in .cache/conformance/)
#   2. cargo build -p modelctx-conformance (skipped when both commands are overridden, or
#      CONFORMANCE_SKIP_BUILD=1)
#   3. for server suites: starts the server with PORT=<free port> in its own process group,
#      polls the port (bounded), runs `server --url http://localhost:PORT/mcp --requirements R`,
#      and stops the server on exit (trap)
#   4. for client suites: runs `client --command <client> --requirements R` inside a private
#      network namespace that has only loopback (`unshare -n`), because the harness's mock
#      servers listen on all interfaces (root needed; the script refuses to run them otherwise)
#   5. results (-o) go to .cache/conformance-results/<suite>/, console logs to
#      .cache/conformance-results/<suite>.log; exit status is non-zero when any selected suite
#      has a failing *scored* scenario (the suite's own --requirements exit code).
#
# Environment (all optional):
#   CONFORMANCE_SUITES       space-separated subset of: server-2026 server-2025 client-2026 client-2025
#                            (default: "server-2026")
#   CONFORMANCE_SERVER_CMD   shell command that starts the server; it gets PORT in its environment
#                            and must bind 127.0.0.1:$PORT with the MCP endpoint at /mcp
#                            (default: "<repo>/target/debug/conformance-server")
#   CONFORMANCE_CLIENT_CMD   client command line handed to --command (the harness appends the URL)
#                            (default: "<repo>/target/debug/conformance-client")
#   CONFORMANCE_PORT         port for the server (default: a free ephemeral port)
#   CONFORMANCE_WAIT_SECS    how long to wait for the server port to open (default 30)
#   CONFORMANCE_TIMEOUT_MS   per-scenario harness timeout (default: 30000 server, 60000 client)
#   CONFORMANCE_SCENARIO     run just this scenario (--scenario X --spec-version <rev of the suite>)
#                            instead of the --requirements set
#   CONFORMANCE_EXPECTED_FAILURES  a baseline YAML passed as --expected-failures
#   CONFORMANCE_CLIENT_BASELINE    a baseline YAML passed as --expected-failures to client runs only
#   CONFORMANCE_RESULTS_DIR  where results go (default: <repo>/.cache/conformance-results)
#   CONFORMANCE_SKIP_BUILD=1 do not run cargo build
#
# Examples:
#   scripts/conformance.sh
#   CONFORMANCE_SUITES="server-2026 server-2025" scripts/conformance.sh
#   CONFORMANCE_SUITES="client-2026" CONFORMANCE_SCENARIO=sep-2322-client-request-state scripts/conformance.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

suites="${CONFORMANCE_SUITES:-server-2026}"
results="${CONFORMANCE_RESULTS_DIR:-$root/.cache/conformance-results}"
wait_secs="${CONFORMANCE_WAIT_SECS:-30}"
server_cmd="${CONFORMANCE_SERVER_CMD:-$root/target/debug/conformance-server}"
client_cmd="${CONFORMANCE_CLIENT_CMD:-$root/target/debug/conformance-client}"

log() { echo "conformance: $*" >&2; }

need_server=0
need_client=0
for s in $suites; do
  case "$s" in
    server-2026|server-2025) need_server=1 ;;
    client-2026|client-2025) need_client=1 ;;
    *) log "unknown suite '$s' (expected server-2026 server-2025 client-2026 client-2025)"; exit 2 ;;
  esac
done

# 1. Node 22 + the suite.
# shellcheck source=scripts/node-env.sh
. "$root/scripts/node-env.sh"
conf=("$NODE22" "$CONFORMANCE_JS")

# 2. Build, unless every binary we would use was overridden.
if [ "${CONFORMANCE_SKIP_BUILD:-0}" != 1 ]; then
  if { [ "$need_server" = 1 ] && [ -z "${CONFORMANCE_SERVER_CMD:-}" ]; } \
    || { [ "$need_client" = 1 ] && [ -z "${CONFORMANCE_CLIENT_CMD:-}" ]; }; then
    log "cargo build -p modelctx-conformance"
    cargo build -p modelctx-conformance
  fi
else
  for bin in "$server_cmd" "$client_cmd"; do
    [ -x "${bin%% *}" ] || { log "CONFORMANCE_SKIP_BUILD=1 but ${bin%% *} is not built"; exit 2; }
  done
fi

mkdir -p "$results"

server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then
    # The server runs in its own process group (setsid), so this ends it and its children only.
    kill -TERM -- "-$server_pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
      kill -0 -- "-$server_pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL -- "-$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

port_open() { (: >"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start_server() {
  local port="$1" deadline
  if port_open "$port"; then
    log "port $port is already in use; refusing to test an unknown listener"
    return 1
  fi
  log "starting server: PORT=$port $server_cmd"
  PORT="$port" setsid bash -c "$server_cmd" >"$results/server.log" 2>&1 &
  server_pid=$!
  deadline=$((SECONDS + wait_secs))
  until port_open "$port"; do
    if ! kill -0 "$server_pid" 2>/dev/null; then
      log "server exited before opening port $port; see $results/server.log"
      tail -n 20 "$results/server.log" >&2 || true
      server_pid=""
      return 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      log "server did not open port $port within ${wait_secs}s; see $results/server.log"
      return 1
    fi
    sleep 0.1
  done
  log "server is listening on 127.0.0.1:$port"
}

netns_ok() {
  unshare -n sh -c 'ip link set lo up' >/dev/null 2>&1
}

# Runs one suite; prints its summary; returns the harness exit code.
run_suite() {
  local suite="$1" mode rev out logf rc=0
  mode="${suite%-*}"
  case "${suite#*-}" in
    2026) rev=2026-07-28 ;;
    2025) rev=2025-11-25 ;;
  esac
  out="$results/$suite"
  logf="$results/$suite.log"
  rm -rf "$out"
  mkdir -p "$out"

  local select=(--requirements "$rev")
  if [ -n "${CONFORMANCE_SCENARIO:-}" ]; then
    select=(--scenario "$CONFORMANCE_SCENARIO" --spec-version "$rev")
  fi
  local extra=()
  if [ -n "${CONFORMANCE_EXPECTED_FAILURES:-}" ]; then
    extra+=(--expected-failures "$CONFORMANCE_EXPECTED_FAILURES")
  elif [ "$mode" = client ] && [ -n "${CONFORMANCE_CLIENT_BASELINE:-}" ]; then
    # Client runs only: a baseline of scenarios known to fail (see the file's header).
    extra+=(--expected-failures "$CONFORMANCE_CLIENT_BASELINE")
  fi

  log "running $suite (${select[*]}) -> $logf"
  if [ "$mode" = server ]; then
    "${conf[@]}" server --url "http://localhost:$port/mcp" "${select[@]}" "${extra[@]}" \
      --timeout "${CONFORMANCE_TIMEOUT_MS:-30000}" -o "$out" >"$logf" 2>&1 || rc=$?
  else
    # The harness splits --command on spaces and appends the mock server URL.
    unshare -n sh -c 'ip link set lo up && exec "$@"' sh \
      "${conf[@]}" client --command "$client_cmd" "${select[@]}" "${extra[@]}" \
      --timeout "${CONFORMANCE_TIMEOUT_MS:-60000}" -o "$out" >"$logf" 2>&1 || rc=$?
  fi

  # Show the summary part of the log (everything from the summary header on).
  if grep -qE '=== (SUITE )?SUMMARY ===' "$logf"; then
    sed -n '/=== \(SUITE \)\{0,1\}SUMMARY ===/,$p' "$logf" >&2
  else
    tail -n 15 "$logf" >&2
  fi
  log "$suite: harness exit code $rc"
  return "$rc"
}

port=""
if [ "$need_server" = 1 ]; then
  port="${CONFORMANCE_PORT:-$(free_port)}"
  start_server "$port"
fi
if [ "$need_client" = 1 ] && ! netns_ok; then
  log "client suites need 'unshare -n' (root) to keep the harness's mock servers on loopback; not running them"
  exit 1
fi

failed=()
for s in $suites; do
  run_suite "$s" || failed+=("$s")
done

if [ "${#failed[@]}" -gt 0 ]; then
  log "FAILED: ${failed[*]} (logs and checks.json under $results)"
  exit 1
fi
log "all selected suites passed: $suites"
