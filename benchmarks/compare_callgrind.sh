#!/usr/bin/env bash
# Instructions and heap allocations per call of this tree beside an earlier commit's, under
# callgrind (load-proof, unlike times):
#   benchmarks/compare_callgrind.sh REV [REGEX]     (REGEX default: BM_(Plan|Evaluate|Compile)/)
# Builds REV's benchmarks (Release) in a git worktree kept at build/rev-REV (a rerun reuses its
# build; `git worktree remove --force build/rev-REV` drops it) and this tree's in build/bench, as
# compare_with.sh does, then compiles each bench_vramplan.cpp once more against
# benchmarks/fixed_iterations/ (a stand-in for Google Benchmark that runs a fixed iteration
# count) and runs every matching benchmark under callgrind at $LOW and $HIGH iterations:
# instructions per call = (Ir at HIGH - Ir at LOW) / (HIGH - LOW), so the setup cancels.
# Allocations per call are the benchmark's own counter. Reports; asserts nothing.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REV="${1:?usage: benchmarks/compare_callgrind.sh REV [REGEX]}"
FILTER="${2:-BM_(Plan|Evaluate|Compile)/}"
LOW="${LOW:-20}" HIGH="${HIGH:-220}"
command -v valgrind >/dev/null || { echo "valgrind missing: apt-get install valgrind" >&2; exit 1; }
OLD="$ROOT/build/rev-$(git -C "$ROOT" rev-parse --short "$REV")"
[[ -d "$OLD" ]] || git -C "$ROOT" worktree add --detach "$OLD" "$REV" >/dev/null
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
# The bench's own compile and link commands, with the stand-in header first and no library.
fixed_driver() {
  local build="$1/build/bench" out="$1/build/bench/vramplan_bench_fixed"
  cmake -S "$1" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVRAMPLAN_BUILD_TESTS=OFF \
    -DVRAMPLAN_BUILD_BENCHMARKS=ON >/dev/null
  cmake --build "$build" --target vramplan_bench -j "${JOBS:-2}" >/dev/null
  local commands compile link
  # Up to date: newer than the library, the bench and the stand-in (a rerun against another REV).
  if [[ "$out" -nt "$build/cpp/libvramplan_core.a" && "$out" -nt "$1/benchmarks/bench_vramplan.cpp" &&
    "$out" -nt "$ROOT/benchmarks/fixed_iterations/benchmark/benchmark.h" ]]; then
    return
  fi
  commands="$(ninja -C "$build" -t commands vramplan_bench)"
  compile="$(grep -- '-c \S*bench_vramplan\.cpp$' <<<"$commands")"
  link="$(tail -1 <<<"$commands")"
  compile="$(sed -E "s# -c # -I$ROOT/benchmarks/fixed_iterations -c #; s# -MD -MT \\S+ -MF \\S+##;
    s#-o \\S+#-o $out.o#" <<<"$compile")"
  link="$(sed -E "s#\\S*bench_vramplan\\.cpp\\.o#$out.o#; s#-o \\S+#-o $out#; s#\\S*libbenchmark\\S*##g" \
    <<<"$link")"
  (cd "$build" && eval "$compile" && eval "$link")
}
fixed_driver "$OLD"
fixed_driver "$ROOT"
# One callgrind run of DRIVER at ITERATIONS, a profile part per benchmark (part 1 is the start):
# "name Ir allocations-per-call" per benchmark.
profile() {
  local out="$SCRATCH/$3" part=1 name counters allocs file
  valgrind --tool=callgrind --dump-before='vramplan_fixed_iterations_run*' \
    --callgrind-out-file="$out" "$1" "$FILTER" "$2" >"$out.txt" 2>/dev/null
  while read -r name counters; do
    part=$((part + 1))
    allocs="$(grep -o 'allocs_per_call=[0-9.]*' <<<"$counters" | cut -d= -f2)"
    file="$out.$part"
    [[ -f "$file" ]] || file="$out"  # the last part is written at exit, unnumbered
    echo "$name $(awk '/^(summary|totals):/ {print $2; exit}' "$file") ${allocs:--}"
  done <"$out.txt"
}
# "name instructions-per-call allocations-per-call" for each benchmark of DRIVER (TAG names files).
per_call() {
  join <(profile "$1" "$LOW" "$2-low" | sort) <(profile "$1" "$HIGH" "$2-high" | sort) |
    awk -v n=$((HIGH - LOW)) '{ print $1, int(($4 - $2) / n), $5 }'
}
join -a 2 -e - -o 0,1.2,2.2,1.3,2.3 <(per_call "$OLD/build/bench/vramplan_bench_fixed" old) \
  <(per_call "$ROOT/build/bench/vramplan_bench_fixed" tree) |
  awk -v rev="$REV" 'BEGIN { printf "%-16s %12s %12s %7s %12s %12s\n", "benchmark", "Ir " rev,
      "Ir tree", "ratio", "allocs " rev, "allocs tree" }
    { ratio = $2 > 0 ? sprintf("%.2f", $3 / $2) : "-"
      printf "%-16s %12s %12s %7s %12s %12s\n", $1, $2, $3, ratio, $4, $5 }'
