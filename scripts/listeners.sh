#!/usr/bin/env bash
# Listen streams: one reliability-server on 127.0.0.1 holding LISTEN_STREAMS concurrent
# `subscriptions/listen` streams over HTTP (default 10 000, raw HTTP/1.1 connections from the
# driver), then LISTEN_CHANGES changes (default 20) announced to all of them. Prints the
# server's RSS per stream and the p50/p99 time for one change to reach every stream, and writes
# the figures to .cache/reliability/listeners.json (git-ignored). Not part of CI; see
# RELIABILITY.md ("Change bus").
#
#   scripts/listeners.sh                                        # release build
#   LISTEN_STREAMS=1000 LISTEN_PROFILE=dev scripts/listeners.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
streams="${LISTEN_STREAMS:-10000}"
changes="${LISTEN_CHANGES:-20}"
profile="${LISTEN_PROFILE:-release}"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
case "$profile" in
  dev) bin_dir="$target_dir/debug" ;;
  *) bin_dir="$target_dir/$profile" ;;
esac

# Each process holds one socket per stream (the server's side, the driver's side).
ulimit -n "$(( $(ulimit -Hn) < 65536 ? $(ulimit -Hn) : 65536 ))" 2>/dev/null || true

echo "listeners: building modelctx-reliability ($profile)" >&2
cargo build --quiet --profile "$profile" -p modelctx-reliability --bin reliability-server --bin mcp-listeners

mkdir -p "$root/.cache/reliability"
echo "listeners: $(nproc) CPUs, $(uname -sr)" >&2
"$bin_dir/mcp-listeners" \
  --server "$bin_dir/reliability-server" \
  --streams "$streams" \
  --changes "$changes" \
  --json "$root/.cache/reliability/listeners.json"
