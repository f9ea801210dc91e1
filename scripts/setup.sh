#!/usr/bin/env bash
# Sets up a fresh Debian machine for planning: the C++ -dev packages and build tools, a virtual
# environment (.venv, unless PYTHON names the interpreter to install into), and the vramplan
# package built from this tree (C++ core + bindings + the spec database). Then:
#   .venv/bin/python -m vramplan plan
# SETUP_TESTS=1 (scripts/test.sh sets it) adds what only the tests need: the linters
# (clang-format, clang-tidy), clang for the sanitizer and fuzzing build, and the package's
# `test` extra; the package is then built in build/tests together with the C++ tests and
# benchmarks (warnings as errors), so the core compiles once for both. The package is built without
# link-time optimization (VRAMPLAN_LTO=OFF): it costs minutes of linking and a plan takes
# microseconds either way; SETUP_LTO=1 builds with it (`pip install .` does by default).
# Each step is announced with the seconds since the start, the C++ build with its progress;
# a step's output is kept in a log, shown if the step fails. Safe to run again (ccache and the
# build folder make a rebuild incremental). Waits up to APT_LOCK_TIMEOUT seconds (default
# 300) for another apt/dpkg process to finish.
set -euo pipefail
cd "$(dirname "$0")/.."
LOG=$(mktemp -t vramplan-setup.XXXXXX)
trap 'rm -f "$LOG"' EXIT
START=$SECONDS

say() { echo "setup: [$((SECONDS - START)) s] $*"; }

quietly() {  # run a step with its output in the log; show the log if it fails
  if ! "$@" >>"$LOG" 2>&1; then
    echo "setup: failed: $*" >&2
    tail -n 40 "$LOG" >&2
    exit 1
  fi
}

with_progress() {  # run the build with its output in the log; print its progress by tenths
  local shown=-1 done total tenth
  set +e
  "$@" 2>&1 | tee -a "$LOG" | grep --line-buffered -oE '^ *\[[0-9]+/[0-9]+\]' | {
    while IFS='[/]' read -r _ done total; do
      ((done > 0)) || continue  # ninja's "[0/N] Re-checking ..." before it starts
      tenth=$((10 * done / total))
      if ((tenth > shown)); then
        shown=$tenth
        say "  compiled $done of $total steps"
      fi
    done
  }
  local status=${PIPESTATUS[0]}
  set -e
  if ((status != 0)); then
    echo "setup: failed: $*" >&2
    tail -n 40 "$LOG" >&2
    exit 1
  fi
}

packages=(build-essential cmake ninja-build ccache python3-dev python3-venv libeigen3-dev
          nlohmann-json3-dev libyaml-cpp-dev libgtest-dev libbenchmark-dev)
if [ "${SETUP_TESTS:-0}" = 1 ]; then packages+=(clang clang-format clang-tidy); fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  say "installing ${missing[*]} (apt)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  lock=(-o "DPkg::Lock::Timeout=${APT_LOCK_TIMEOUT:-300}")
  quietly $SUDO apt-get "${lock[@]}" update -qq
  quietly $SUDO env DEBIAN_FRONTEND=noninteractive apt-get "${lock[@]}" install -y -qq "${missing[@]}"
else
  say "system packages present"
fi

if [ -z "${PYTHON:-}" ]; then
  if [ ! -x .venv/bin/python ]; then
    # The machine's own packages (numpy, pandas) serve where present; the rest comes from PyPI.
    say "creating the virtual environment .venv"
    quietly python3 -m venv --system-site-packages .venv
  else
    say "using the virtual environment .venv"
  fi
  PYTHON=.venv/bin/python
fi
pip=("$PYTHON" -m pip install --disable-pip-version-check)
say "Python build tools (scikit-build-core, pybind11)"
quietly "${pip[@]}" -q "scikit-build-core>=0.10" "pybind11>=2.12"

target="."
lto=OFF
[ "${SETUP_LTO:-0}" = 1 ] && lto=ON
settings=(--config-settings=cmake.define.VRAMPLAN_LTO=$lto)
what="the C++ core"
if [ "${SETUP_TESTS:-0}" = 1 ]; then
  target=".[test]"
  what="the C++ core, its tests and benchmarks"
  settings+=(--config-settings=build-dir=build/tests
             --config-settings=cmake.define.VRAMPLAN_BUILD_TESTS=ON
             --config-settings=cmake.define.VRAMPLAN_BUILD_BENCHMARKS=ON
             --config-settings=cmake.define.VRAMPLAN_WERROR=ON)
fi
# A persistent build dir (pyproject build-dir) plus ccache keeps rebuilds incremental; -v
# streams the build's steps, from which the progress is read.
say "building and installing vramplan $target ($what; several minutes on 2 cores the first time)"
with_progress "${pip[@]}" -v --no-build-isolation "${settings[@]}" "$target"
say "done: $("$PYTHON" -c 'import vramplan; print("vramplan", vramplan.__version__)') in $PYTHON"
