#!/usr/bin/env bash
# A private Redis for the tests of the tasks extension's Redis store (crates/modelctx/tests/tasks_redis.rs).
#
# Why: the shared-store tests need a real Redis; it comes from the distribution, installed by
# scripts/system-packages.sh (which .ci/run runs once, before any test).
#
# Usage:
#   scripts/redis.sh install        # installs redis-server if absent (system-packages.sh); prints its path
#   scripts/redis.sh path           # same as install
#   scripts/redis.sh start [PORT]   # starts a private instance on 127.0.0.1:PORT (default: a free
#                                   # port) with its data under .cache/redis/PORT/ (AOF on),
#                                   # waits until it answers, prints "PORT PID"
#   scripts/redis.sh stop PORT      # stops the instance started on PORT (by its pid file)
#
# The tests spawn redis-server themselves (as a child they kill when done) and never install it;
# `start`/`stop` are for running a store by hand, e.g. two `conformance-server`s.
# All progress messages go to stderr.
set -euo pipefail
shopt -s inherit_errexit

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log() { echo "redis: $*" >&2; }

install() {
  # One place installs system packages (scripts/system-packages.sh, run by .ci/run before any test).
  "$root/scripts/system-packages.sh" >/dev/null
  command -v redis-server || echo /usr/bin/redis-server
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

start() {
  local bin port dir pid
  bin="$(install)"
  port="${1:-$(free_port)}"
  dir="$root/.cache/redis/$port"
  mkdir -p "$dir"
  "$bin" --bind 127.0.0.1 --port "$port" --dir "$dir" --appendonly yes --save "" \
    --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" >&2
  for _ in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      pid="$(cat "$dir/redis.pid" 2>/dev/null || true)"
      [ -n "$pid" ] && { echo "$port $pid"; return 0; }
    fi
    sleep 0.05
  done
  log "redis-server did not answer on 127.0.0.1:$port; see $dir/redis.log"
  return 1
}

stop() {
  local port="${1:?usage: scripts/redis.sh stop PORT}" pidfile
  pidfile="$root/.cache/redis/$port/redis.pid"
  if [ -f "$pidfile" ]; then
    kill "$(cat "$pidfile")" 2>/dev/null || true
    rm -f "$pidfile"
  fi
}

case "${1:-install}" in
  install|path) install ;;
  start) shift; start "$@" ;;
  stop) shift; stop "$@" ;;
  *) log "unknown command ${1}"; exit 2 ;;
esac
