#!/usr/bin/env bash
# `cargo package` for every publishable crate (issue 18: a missing file or a path-only dependency
# is caught before a release, not by `cargo publish`). Packages them together, so each one's
# verification build resolves its sibling crates to the packaged versions, not to crates.io.
# Extra arguments go to cargo (e.g. --allow-dirty while editing).
set -euo pipefail
cd "$(dirname "$0")/.."
crates=(modelctx-types modelctx-seal modelctx-macros modelctx modelctx-cli)
args=()
for crate in "${crates[@]}"; do
  args+=(-p "$crate")
done
cargo package "${args[@]}" "$@"
