#!/usr/bin/env bash
# `cargo package` for every publishable crate (issue 18: a missing file or a path-only dependency
# is caught before a release, not by `cargo publish`), then a check of what was packed.
#
# Cargo's own verification (`cargo package` without --no-verify) compiles every packaged crate
# with codegen under its own feature resolution: 5 of CI's 33 minutes. The check below type-checks
# the same unpacked sources instead: a temporary workspace of the unpacked crates, each sibling
# resolved to its unpacked copy through [patch.crates-io] (never to crates.io), the workspace's
# Cargo.lock for identical versions, and the workspace target dir, so dependencies already
# checked by clippy are reused. What it gives up: codegen and link errors, which the test build
# of the same sources catches.
# Extra arguments go to `cargo package` (e.g. --allow-dirty while editing).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
crates=(modelctx-types modelctx-seal modelctx-macros modelctx modelctx-cli)
args=()
for crate in "${crates[@]}"; do
  args+=(-p "$crate")
done
cargo package --no-verify "${args[@]}" "$@"

# name=version of every workspace package, read once.
versions="$(cargo metadata --format-version 1 --no-deps \
  | python3 -c 'import json,sys; [print(p["name"] + "=" + p["version"]) for p in json.load(sys.stdin)["packages"]]')"
version() { grep "^$1=" <<<"$versions" | cut -d= -f2; }

check="$root/target/package-check"
rm -rf "$check"
mkdir -p "$check"
members=()
patches=()
for crate in "${crates[@]}"; do
  dir="$crate-$(version "$crate")"
  tar -xzf "target/package/$dir.crate" -C "$check"
  members+=("\"$dir\"")
  patches+=("$crate = { path = \"$dir\" }")
done
{
  echo "[workspace]"
  echo "resolver = \"3\""
  echo "members = [$(IFS=,; echo "${members[*]}")]"
  echo
  echo "[patch.crates-io]"
  printf '%s\n' "${patches[@]}"
  echo
  # The workspace's profiles, so the dependencies' fingerprints match the ones clippy left.
  sed -n '/^\[profile\./,$p' Cargo.toml
} > "$check/Cargo.toml"
cp Cargo.lock "$check/Cargo.lock"
CARGO_TARGET_DIR="$root/target" cargo check --manifest-path "$check/Cargo.toml" --workspace
echo "package-check: ${#crates[@]} crates packed and checked from their packages" >&2
