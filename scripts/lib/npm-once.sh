# Sourced by the scripts that install one npm package into a git-ignored folder of .cache.
#
# npm_install_once LABEL DIR PACKAGE CHECK [PACKAGE_JSON]
#   Installs PACKAGE (name@version) into DIR unless DIR/.ready records that very PACKAGE and the
#   file CHECK (what the caller needs from it) exists; checks CHECK afterwards. PACKAGE_JSON is
#   the private package.json written first (so that npm never walks up into another project).
#   Idempotent; an ordinary npm-registry install, nothing else is downloaded.
npm_install_once() {
  local label="$1" dir="$2" package="$3" check="$4"
  local package_json="${5:-{\"name\":\"modelctx-$1\",\"private\":true\}}"
  local marker="$dir/.ready"
  if [ -f "$marker" ] && [ "$(cat "$marker")" = "$package" ] && [ -f "$check" ]; then
    return 0
  fi
  command -v npm >/dev/null 2>&1 || { echo "$label: npm is required (apt-get install npm)" >&2; return 1; }
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || printf '%s\n' "$package_json" >"$dir/package.json"
  echo "$label: installing $package into $dir" >&2
  npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$package" >&2
  [ -f "$check" ] || { echo "$label: $check missing after install" >&2; return 1; }
  printf '%s' "$package" >"$marker"
}
