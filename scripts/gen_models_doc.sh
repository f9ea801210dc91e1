#!/usr/bin/env bash
# Regenerates docs/models.md from the architecture table and vLLM's
# registry entries (model_specs/architectures.yaml) through the
# test that guards it. Usage: scripts/gen_models_doc.sh [build-dir]   (default build/tests)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build/tests}"
cmake --build "$build" --target vramplan_tests
VRAMPLAN_UPDATE_DOCS=1 "$build/tests/cpp/vramplan_tests" \
  --gtest_filter='Architectures.DocsModelsPageIsGeneratedFromTheTable'
