#!/usr/bin/env bash
# Sets up what a fresh machine lacks (scripts/setup.sh with SETUP_TESTS=1: the linters, clang
# and the test extra, in .venv unless PYTHON is given; the package, the C++ tests and the
# benchmarks built together in build/tests), then runs every C++ and Python test, mypy --strict
# over the package, the C++ tests again under AddressSanitizer + UndefinedBehaviorSanitizer, and
# a bounded fuzz run of every reader of user files (the fuzzers and the sanitized tests share
# one clang build, build/sanitize, so the core compiles twice in all, not four times). Each
# step's output goes to build/test-logs/ (shown when the step fails); the last line is one
# summary of counts. Exits non-zero on any failure. Environment: PYTHON (default .venv/bin/python),
# JOBS (default nproc), FUZZ_RUNS (per reader, default 20000; 0 skips fuzzing), SANITIZE
# (default 1; 0 skips the sanitized test run, and with FUZZ_RUNS=0 the clang build too).
set -uo pipefail
cd "$(dirname "$0")/.."
# The interpreter setup.sh installed into: PYTHON, else the virtual environment it made.
SETUP_TESTS=1 ./scripts/setup.sh || exit 1
PYTHON=${PYTHON:-.venv/bin/python}
JOBS=${JOBS:-$(nproc)}
FUZZ_RUNS=${FUZZ_RUNS:-20000}
SANITIZE=${SANITIZE:-1}
LOGS=build/test-logs
mkdir -p "$LOGS"

passed=0 failed=0 skipped=0
parts=()
step() {  # step NAME COMMAND...: run, log, report; counts come from the parsers below
  local name=$1; shift
  echo "== $name"
  if "$@" >"$LOGS/$name.log" 2>&1; then return 0; fi
  echo "test: $name failed; the end of $LOGS/$name.log:" >&2
  tail -n 60 "$LOGS/$name.log" >&2
  return 1
}
count_ctest() {  # count_ctest NAME: "100% tests passed out of T" or "..., F tests failed out of T"
  local line total fails skips
  line=$(grep -E "tests passed.* out of [0-9]+" "$LOGS/$1.log" | tail -n 1)
  if [ -z "$line" ]; then failed=$((failed + 1)); parts+=("$1: no ctest summary"); return; fi
  total=$(sed -E 's/.*out of ([0-9]+).*/\1/' <<<"$line")
  fails=0
  if grep -qE "[0-9]+ tests? failed" <<<"$line"; then
    fails=$(sed -E 's/.* ([0-9]+) tests? failed.*/\1/' <<<"$line")
  fi
  skips=$(grep -c "\*\*\*Skipped" "$LOGS/$1.log")
  passed=$((passed + total - fails - skips)); failed=$((failed + fails)); skipped=$((skipped + skips))
  parts+=("$1 $((total - fails - skips))/$total")
}
check() {  # check NAME: a step that counts as one test
  if [ "$2" = 0 ]; then passed=$((passed + 1)); parts+=("$1 ok")
  else failed=$((failed + 1)); parts+=("$1 FAILED"); fi
}

# setup.sh configured and built build/tests with the package (benchmarks are built, not run, so
# they keep compiling without warnings); this step is the check that it is complete.
step cpp-build cmake --build build/tests -j "$JOBS"
build_rc=$?
check cpp-build $build_rc
if [ $build_rc = 0 ]; then
  step cpp ctest --test-dir build/tests --output-on-failure -j "$JOBS"
  count_ctest cpp
fi

step python "$PYTHON" -m pytest -q -p no:cacheprovider --junitxml="$LOGS/pytest.xml" tests/python
read -r py_pass py_fail py_skip < <("$PYTHON" - "$LOGS/pytest.xml" <<'PY' || echo "0 1 0"
import sys
import xml.etree.ElementTree as ET
suite = ET.parse(sys.argv[1]).getroot()
suite = suite if suite.tag == "testsuite" else suite[0]
tests, fails = int(suite.get("tests")), int(suite.get("failures")) + int(suite.get("errors"))
skips = int(suite.get("skipped"))
print(tests - fails - skips, fails, skips)
PY
)
passed=$((passed + py_pass)); failed=$((failed + py_fail)); skipped=$((skipped + py_skip))
parts+=("python $py_pass/$((py_pass + py_fail + py_skip))")

step mypy "$PYTHON" -m mypy --strict python/vramplan
check mypy $?

san_rc=1
# One clang build serves the sanitized tests and the fuzzers: -O1 is AddressSanitizer's advised
# level (the test files themselves compile at -O0), line tables are enough for its reports.
if [ "$SANITIZE" != 0 ] || [ "$FUZZ_RUNS" != 0 ]; then
  step sanitize-build sh -c "cmake -S . -B build/sanitize -G Ninja -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG='-O1 -gline-tables-only' \
    -DVRAMPLAN_SANITIZE=ON -DVRAMPLAN_BUILD_TESTS=ON -DVRAMPLAN_BUILD_FUZZERS=ON \
    -DVRAMPLAN_BUILD_PYTHON=OFF -DVRAMPLAN_WERROR=ON && cmake --build build/sanitize -j $JOBS"
  san_rc=$?
  check sanitize-build $san_rc
fi
if [ "$SANITIZE" != 0 ] && [ $san_rc = 0 ]; then
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    step sanitize ctest --test-dir build/sanitize --output-on-failure -j "$JOBS"
  count_ctest sanitize
fi

if [ "$FUZZ_RUNS" != 0 ] && [ $san_rc = 0 ]; then
  JOBS="$JOBS" FUZZ_BUILD_DIR=build/sanitize step fuzz ./scripts/fuzz.sh "$FUZZ_RUNS"
  check fuzz $?
fi

echo "vramplan tests: $passed passed, $failed failed, $skipped skipped (${parts[*]})"
[ "$failed" = 0 ]
