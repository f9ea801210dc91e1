#!/usr/bin/env bash
# Sets up what a fresh machine lacks, then runs every C++ and Python test, the C++ tests again
# under AddressSanitizer + UndefinedBehaviorSanitizer, and a bounded fuzz run of every reader
# of user files. Environment: JOBS (default nproc), FUZZ_RUNS (per reader, default 20000;
# 0 skips fuzzing), SANITIZE (default 1; 0 skips the sanitizer build).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
PYTHON=${PYTHON:-python3}
JOBS=${JOBS:-$(nproc)}
FUZZ_RUNS=${FUZZ_RUNS:-20000}
SANITIZE=${SANITIZE:-1}

# Benchmarks are built (not run) so they keep compiling without warnings.
cmake -S . -B build/tests -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DVRAMPLAN_BUILD_TESTS=ON -DVRAMPLAN_BUILD_BENCHMARKS=ON -DVRAMPLAN_WERROR=ON >/dev/null
cmake --build build/tests -j "$JOBS"
ctest --test-dir build/tests --output-on-failure -j "$JOBS"

"$PYTHON" -m pytest -q tests/python

if [ "$SANITIZE" != 0 ]; then
  echo "== C++ tests under ASan + UBSan"
  cmake -S . -B build/sanitize -G Ninja -DCMAKE_BUILD_TYPE=Debug -DVRAMPLAN_SANITIZE=ON \
    -DVRAMPLAN_BUILD_TESTS=ON -DVRAMPLAN_BUILD_PYTHON=OFF -DVRAMPLAN_WERROR=ON >/dev/null
  cmake --build build/sanitize -j "$JOBS"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build/sanitize --output-on-failure -j "$JOBS"
fi

if [ "$FUZZ_RUNS" != 0 ]; then
  echo "== bounded fuzzing: $FUZZ_RUNS runs per reader"
  JOBS="$JOBS" ./scripts/fuzz.sh "$FUZZ_RUNS"
fi
