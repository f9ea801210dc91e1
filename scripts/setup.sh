#!/usr/bin/env bash
# Sets up a fresh Debian machine: the C++ -dev packages and tools (clang-format, clang-tidy),
# the Python build tools, and the vramplan package itself with its test extras (C++ core +
# bindings + the spec database). Safe to run again; quiet unless something fails.
# Waits up to APT_LOCK_TIMEOUT seconds (default 300) for another apt/dpkg process to finish.
set -euo pipefail
cd "$(dirname "$0")/.."
LOG=$(mktemp -t vramplan-setup.XXXXXX)
trap 'rm -f "$LOG"' EXIT

quietly() {  # run a step with its output in the log; show the log if it fails
  if ! "$@" >>"$LOG" 2>&1; then
    echo "setup: failed: $*" >&2
    tail -n 40 "$LOG" >&2
    exit 1
  fi
}

packages=(build-essential cmake ninja-build ccache libeigen3-dev nlohmann-json3-dev
          libyaml-cpp-dev libgtest-dev libbenchmark-dev clang-format clang-tidy)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  lock=(-o "DPkg::Lock::Timeout=${APT_LOCK_TIMEOUT:-300}")
  quietly $SUDO apt-get "${lock[@]}" update -qq
  quietly $SUDO env DEBIAN_FRONTEND=noninteractive apt-get "${lock[@]}" install -y -qq "${missing[@]}"
fi

PYTHON=${PYTHON:-python3}
pip=("$PYTHON" -m pip install -q --disable-pip-version-check)
quietly "${pip[@]}" "scikit-build-core>=0.10" "pybind11>=2.12"
# A persistent build dir (pyproject build-dir) plus ccache keeps rebuilds incremental.
quietly "${pip[@]}" --no-build-isolation ".[test]"
echo "setup: done ($("$PYTHON" -c 'import vramplan; print("vramplan", vramplan.__version__)'))"
