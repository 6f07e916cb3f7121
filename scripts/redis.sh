#!/usr/bin/env bash
# A private Redis for the tests of the tasks extension's Redis store (crates/mcp/tests/tasks_redis.rs).
#
# Why: the shared-store tests need a real Redis; CI runs as root on Debian, so the server comes
# from the distribution (apt-get install redis-server) when it is not on the machine yet.
#
# Usage:
#   scripts/redis.sh install        # installs redis-server if absent (idempotent); prints its path
#   scripts/redis.sh path           # same as install
#   scripts/redis.sh start [PORT]   # starts a private instance on 127.0.0.1:PORT (default: a free
#                                   # port) with its data under .cache/redis/PORT/ (AOF on),
#                                   # waits until it answers, prints "PORT PID"
#   scripts/redis.sh stop PORT      # stops the instance started on PORT (by its pid file)
#
# The tests spawn redis-server themselves (as a child they kill when done) and only use
# `install`; `start`/`stop` are for running a store by hand, e.g. two `conformance-server`s.
# All progress messages go to stderr.
set -euo pipefail
shopt -s inherit_errexit

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log() { echo "redis: $*" >&2; }

install() {
  local bin
  bin="$(command -v redis-server || true)"
  if [ -z "$bin" ]; then
    if [ "$(id -u)" != 0 ]; then
      log "redis-server is not installed and this is not root: apt-get install redis-server"
      return 1
    fi
    log "installing redis-server (apt-get)"
    # Another apt-get (CI setup, a colleague) may hold the dpkg lock: wait for it.
    local apt=(apt-get -o DPkg::Lock::Timeout=600 -qq)
    DEBIAN_FRONTEND=noninteractive "${apt[@]}" update >&2
    DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y --no-install-recommends redis-server >&2
    # The package may start a system-wide instance on 6379; the tests use private instances.
    bin="$(command -v redis-server || true)"
    if [ -z "$bin" ]; then
      log "redis-server is still missing after apt-get install"
      return 1
    fi
  fi
  echo "$bin"
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
