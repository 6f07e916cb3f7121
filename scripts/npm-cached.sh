#!/usr/bin/env bash
# The one way the test scripts install an npm package into a git-ignored cache folder: sourced by
# app-example.sh, ext-apps.sh and ts-sdk-env.sh, each naming its package and the file that proves
# the install complete. An ordinary npm-registry install; nothing else is downloaded.
#
# npm_cached LABEL DIR PACKAGE@VERSION CHECK_FILE [PACKAGE_JSON]
#   Installs PACKAGE@VERSION into DIR unless DIR/.ready records that very version and CHECK_FILE
#   exists (idempotent: later runs only check). PACKAGE_JSON is the private package.json written
#   first (default: a plain private one), which keeps npm from walking up into another project.
#   Progress goes to stderr, prefixed with LABEL.
npm_cached() {
  local label="$1" dir="$2" package="$3" check="$4"
  local manifest="${5:-{\"name\":\"modelctx-$label\",\"private\":true\}}"
  local marker="$dir/.ready"
  if [ -f "$marker" ] && [ "$(cat "$marker")" = "$package" ] && [ -f "$check" ]; then
    return 0
  fi
  command -v npm >/dev/null 2>&1 || { echo "$label: npm is required (apt-get install npm)" >&2; return 1; }
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || printf '%s\n' "$manifest" >"$dir/package.json"
  echo "$label: installing $package into $dir" >&2
  npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$package" >&2
  [ -f "$check" ] || { echo "$label: $check missing after install" >&2; return 1; }
  printf '%s' "$package" >"$marker"
}
