#!/usr/bin/env bash
# Fleet: two reliability-server instances behind nginx (round-robin, 127.0.0.1 only) and
# two-round multi-round-trip flows through it (crates/modelctx-reliability/src/bin/mcp-fleet.rs):
#
#   1. shared keys (MCP_REQUEST_STATE_KEYS): FLEET_FLOWS flows whose rounds alternate between
#      the instances, then FLEET_FLOWS concurrent flows: 0 failures;
#   2. per-process default keys: cross-instance rounds get exactly the documented -32602 and
#      the driver starts those flows again until they complete;
#   3. a rolling three-phase key rotation [OLD] → [OLD,NEW] → [NEW,OLD] → [NEW], one instance
#      restarted at a time while flows run: 0 failures;
#   4. the change bus: both instances on a private redis-server, FLEET_LISTENERS listen
#      streams (default 100) spread over them; changes made on A, then on B, reach every listener
#      exactly once; after a Redis restart every listener gets the resync notifications and
#      changes cross again.
#
# nginx is the Debian package, installed by scripts/system-packages.sh (.ci/run runs it first).
# It runs in the foreground as a child of the driver with its own configuration, pid, logs and
# temp paths under .cache/fleet (git-ignored); no system configuration is read or changed.
#
#   scripts/fleet.sh                          # 1 000 flows per phase, release build
#   FLEET_FLOWS=200 FLEET_PROFILE=dev scripts/fleet.sh    # the bounded CI run
#   FLEET_SKIP_BUILD=1                        # use the binaries already in target/ (CI: built
#                                             # by `cargo test --workspace`)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
flows="${FLEET_FLOWS:-1000}"
concurrency="${FLEET_CONCURRENCY:-16}"
profile="${FLEET_PROFILE:-release}"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
case "$profile" in
  dev) bin_dir="$target_dir/debug" ;;
  *) bin_dir="$target_dir/$profile" ;;
esac

find_nginx() {
  command -v nginx 2>/dev/null || { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; } || true
}
nginx_bin="$(find_nginx)"
if [ -z "$nginx_bin" ]; then
  # .ci/run installed it before the tests; a run by hand installs it here, the same way.
  scripts/system-packages.sh
  nginx_bin="$(find_nginx)"
  [ -n "$nginx_bin" ] || { echo "fleet: nginx still not found after installing" >&2; exit 2; }
fi
echo "fleet: $("$nginx_bin" -v 2>&1)" >&2
redis_bin="$(command -v redis-server 2>/dev/null || true)"
if [ -z "$redis_bin" ]; then
  scripts/system-packages.sh
  redis_bin="$(command -v redis-server 2>/dev/null || true)"
  [ -n "$redis_bin" ] || { echo "fleet: redis-server still not found after installing" >&2; exit 2; }
fi

if [ "${FLEET_SKIP_BUILD:-0}" = 1 ]; then
  for bin in mcp-fleet reliability-server; do
    [ -x "$bin_dir/$bin" ] || { echo "fleet: FLEET_SKIP_BUILD=1 but $bin_dir/$bin is not built" >&2; exit 2; }
  done
else
  echo "fleet: building modelctx-reliability ($profile)" >&2
  cargo build --quiet --profile "$profile" -p modelctx-reliability --bins
fi

work="$root/.cache/fleet"
mkdir -p "$work"
"$bin_dir/mcp-fleet" \
  --server "$bin_dir/reliability-server" \
  --nginx "$nginx_bin" \
  --dir "$work" \
  --flows "$flows" \
  --concurrency "$concurrency" \
  --redis-server "$redis_bin" \
  --listeners "${FLEET_LISTENERS:-100}" \
  --json "$work/fleet.json"
