#!/usr/bin/env bash
# Installs (once) the cargo subcommands that CI's gates use into the git-ignored folder
# .cache/cargo-tools/ and prints its bin directory (put it on PATH).
#
# Each tool comes from crates.io at a pinned version with its own lock file (`--locked`), so a
# new release of a tool or of one of its dependencies cannot change or break CI. `cargo install`
# skips a tool already installed at that version, so a second run costs a few milliseconds;
# compiling both from scratch takes a few minutes (CONTRIBUTING.md, "What CI runs").
#
# Usage:
#   PATH="$(scripts/cargo-tools.sh):$PATH"
# Override the location with MCP_CARGO_TOOLS_DIR. Progress goes to stderr.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${MCP_CARGO_TOOLS_DIR:-$root/.cache/cargo-tools}"

# cargo-hack: each feature of modelctx alone (`cargo hack check --each-feature`); cargo-deny:
# licenses, bans, sources; cargo-fuzz: the fuzz smoke run (scripts/fuzz-smoke.sh).
tools=("cargo-hack@0.6.46" "cargo-deny@0.20.2" "cargo-fuzz@0.13.2")

for tool in "${tools[@]}"; do
  name="${tool%@*}"
  version="${tool#*@}"
  if [ -x "$dir/bin/$name" ] && "$dir/bin/$name" "${name#cargo-}" --version 2>/dev/null | grep -qF "$version"; then
    continue
  fi
  echo "cargo-tools: installing $tool into $dir" >&2
  # Debug builds: they compile in half the time of release builds (cargo-deny: 2.4 min against
  # about 5 on 2 cores) and the work they do here is small (cargo deny check: 4.6 s against
  # 1.5 s). The caller's dev-profile settings and target dir do not apply.
  env -u CARGO_PROFILE_DEV_DEBUG -u CARGO_TARGET_DIR \
    cargo install --locked --quiet --debug --root "$dir" "$tool" >&2
done
echo "$dir/bin"
