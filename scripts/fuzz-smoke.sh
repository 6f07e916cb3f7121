#!/usr/bin/env bash
# Smoke-runs every cargo-fuzz target in fuzz/fuzz_targets for FUZZ_SECONDS each (default 10),
# on the stable toolchain without sanitizer (`cargo fuzz run -s none`). Fails on any crash,
# panic, leak or timeout reported by libFuzzer.
#
# cargo-fuzz is installed once by scripts/cargo-tools.sh (pinned, into .cache/cargo-tools);
# later runs reuse it. Targets are discovered from the files, so new
# targets are picked up without editing this script (each still needs its [[bin]] entry in
# fuzz/Cargo.toml).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${FUZZ_SECONDS:-10}"

if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz-smoke: FUZZ_SECONDS must be a positive integer, got '$seconds'" >&2
  exit 2
fi

# cargo-fuzz (pinned) comes from scripts/cargo-tools.sh; `cargo fuzz` resolves it through PATH.
PATH="$("$root/scripts/cargo-tools.sh"):$PATH"
export PATH

cd "$root/fuzz"
shopt -s nullglob
targets=()
for file in fuzz_targets/*.rs; do
  targets+=("$(basename "$file" .rs)")
done
if [ "${#targets[@]}" -eq 0 ]; then
  echo "fuzz-smoke: no targets in fuzz/fuzz_targets" >&2
  exit 1
fi

failed=()
for target in "${targets[@]}"; do
  echo "fuzz-smoke: $target for ${seconds}s" >&2
  # The corpus (fuzz/corpus/<target>, git-ignored) grows across runs; a smoke run starts from it.
  corpus="$root/fuzz/corpus/$target"
  mkdir -p "$corpus"
  if ! cargo fuzz run -s none "$target" "$corpus" -- -max_total_time="$seconds" -print_final_stats=1; then
    failed+=("$target")
  fi
done

if [ "${#failed[@]}" -ne 0 ]; then
  echo "fuzz-smoke: FAILED: ${failed[*]} (reproducers under fuzz/artifacts/)" >&2
  exit 1
fi
echo "fuzz-smoke: ${#targets[@]} passed, 0 failed" >&2
