#!/usr/bin/env bash
# Google Benchmark figures of this tree beside an earlier commit's, in one run on one machine:
#   benchmarks/compare_with.sh REV [benchmark args...]
# Builds REV's benchmarks (Release) in a temporary git worktree and this tree's in build/bench,
# then runs both back to back. Reports; asserts nothing.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REV="${1:?usage: benchmarks/compare_with.sh REV [benchmark args...]}"
shift
OLD="$(mktemp -d)"
trap 'git -C "$ROOT" worktree remove --force "$OLD/src" >/dev/null 2>&1 || true; rm -rf "$OLD"' EXIT
git -C "$ROOT" worktree add --detach "$OLD/src" "$REV" >/dev/null
for tree in "$OLD/src" "$ROOT"; do
  build="$tree/build/bench"
  cmake -S "$tree" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVRAMPLAN_BUILD_TESTS=OFF \
    -DVRAMPLAN_BUILD_BENCHMARKS=ON >/dev/null
  cmake --build "$build" --target vramplan_bench -j "${JOBS:-2}" >/dev/null
done
echo "== $REV ($(git -C "$ROOT" rev-parse --short "$REV"))"
"$OLD/src/build/bench/benchmarks/vramplan_bench" "$@"
echo "== this tree ($(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet || echo ', modified'))"
"$ROOT/build/bench/benchmarks/vramplan_bench" "$@"
