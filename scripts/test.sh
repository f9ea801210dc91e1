#!/usr/bin/env bash
# Sets up what a fresh machine lacks, then runs every C++ and Python test.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
PYTHON=${PYTHON:-python3}
JOBS=${JOBS:-$(nproc)}

cmake -S . -B build/tests -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DVRAMPLAN_BUILD_TESTS=ON -DVRAMPLAN_WERROR=ON >/dev/null
cmake --build build/tests -j "$JOBS"
ctest --test-dir build/tests --output-on-failure -j "$JOBS"

"$PYTHON" -m pytest -q tests/python
