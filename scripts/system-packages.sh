#!/usr/bin/env bash
# The system packages the tests and the fleet run need, installed once, before any test runs.
#
#   scripts/system-packages.sh          # installs what is missing (idempotent), prints what is there
#   scripts/system-packages.sh check    # installs nothing; exits 1 naming what is missing
#
# Why one script, run once by .ci/run: tests used to install redis-server themselves, several at
# the same moment, and apt-get's lock (or another apt-get) made some of them fail with the reason
# lost in a test's captured output. Now tests only look for the binaries (and fail naming this
# script), and every apt-get runs here, in the open, once.
#
# Packages (Debian): redis-server (task and flow store tests), nginx (the fleet run), chromium
# (`mcp app`'s browser tests, driven over the DevTools protocol: no driver package needed).
set -euo pipefail

# name of the binary, Debian package that provides it
wanted=(
  "redis-server redis-server"
  "nginx nginx"
  "chromium chromium"
)

find_bin() {
  command -v "$1" 2>/dev/null && return 0
  local dir
  for dir in /usr/sbin /usr/bin /usr/local/bin /usr/local/sbin; do
    [ -x "$dir/$1" ] && { echo "$dir/$1"; return 0; }
  done
  return 1
}

missing=()
for entry in "${wanted[@]}"; do
  read -r bin package <<<"$entry"
  find_bin "$bin" >/dev/null || missing+=("$package")
done

if [ "${#missing[@]}" -gt 0 ]; then
  if [ "${1:-install}" = check ]; then
    echo "system-packages: missing ${missing[*]}; run scripts/system-packages.sh (as root)" >&2
    exit 1
  fi
  command -v apt-get >/dev/null || { echo "system-packages: apt-get not found; install ${missing[*]}" >&2; exit 2; }
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  echo "system-packages: installing ${missing[*]} (apt-get)" >&2
  # Another apt-get (the machine's own start-up) may hold the dpkg lock: wait for it.
  apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -qq)
  "${apt[@]}" update
  "${apt[@]}" install -y --no-install-recommends "${missing[@]}"
  # Debian starts system-wide services for these packages; the tests and the fleet run private
  # instances on their own ports, so the system ones are not needed (ignore failures: no init).
  for service in redis-server nginx; do
    "${sudo[@]}" service "$service" stop >/dev/null 2>&1 || true
  done
fi

for entry in "${wanted[@]}"; do
  read -r bin package <<<"$entry"
  path="$(find_bin "$bin")" || { echo "system-packages: $bin still missing after apt-get install $package" >&2; exit 1; }
  echo "system-packages: $bin at $path" >&2
done
