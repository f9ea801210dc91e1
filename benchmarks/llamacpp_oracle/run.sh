#!/usr/bin/env bash
# Builds the llama.cpp oracle (CPU only), writes the sparse GGUF files, runs llama.cpp's
# no-allocation load over them and writes tests/data/llamacpp_dryrun/records.jsonl.
# Usage: benchmarks/llamacpp_oracle/run.sh LLAMACPP_SOURCE_DIR [run_oracle.py options]
# PYTHON (default .venv/bin/python) gets the `gguf` package if it lacks it.
set -euo pipefail
cd "$(dirname "$0")/../.."
src=${1:?usage: run.sh LLAMACPP_SOURCE_DIR [--arch NAME ...] [--out FILE]}
shift
py=${PYTHON:-.venv/bin/python}
"$py" -c 'import gguf' 2>/dev/null || "$py" -m pip install -q 'gguf==0.19.0'
exec "$py" benchmarks/llamacpp_oracle/run_oracle.py --llamacpp-src "$src" "$@"
