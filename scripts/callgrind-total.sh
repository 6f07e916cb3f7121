# Sourced by scripts/bench-callgrind.sh and scripts/bench-cold.sh (not run on its own).
#
# total_ir FILE: total instructions (Ir) of a callgrind output file, less aws-lc's one-off
# seeding of its generator with CPU-jitter entropy (tree_jitter_initialize_once), when something
# in the process seeded it: ~320 M instructions whose count varies by ~2 M with timing, which
# would not cancel in the difference of two runs (±1-5 k per request).
total_ir() {
  local total jitter
  total="$(awk '/^(summary|totals):/ { print $2; exit }' "$1")"
  jitter="$(callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null \
    | awk '/tree_jitter_initialize_once/ { gsub(",", "", $1); print $1; exit }')"
  echo "$(( total - ${jitter:-0} ))"
}
