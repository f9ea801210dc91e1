#!/usr/bin/env bash
# Sets up a fresh Debian machine: the C++ -dev packages and build tools, the Python build tools,
# and the vramplan package itself with its test extras (C++ core + bindings + the spec database).
# The linters (clang-format, clang-tidy) only with SETUP_LINTERS=1, as scripts/test.sh asks:
# planning does not need them. Safe to run again; each step is announced, its output kept
# unless it fails. Waits up to APT_LOCK_TIMEOUT seconds (default 300) for another apt/dpkg
# process to finish.
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
          libyaml-cpp-dev libgtest-dev libbenchmark-dev)
if [ "${SETUP_LINTERS:-0}" = 1 ]; then packages+=(clang-format clang-tidy); fi
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
echo "setup: Python build tools"
quietly "${pip[@]}" "scikit-build-core>=0.10" "pybind11>=2.12"
# A persistent build dir (pyproject build-dir) plus ccache keeps rebuilds incremental.
echo "setup: building and installing vramplan (the C++ core: several minutes on 2 cores the first time)"
quietly "${pip[@]}" --no-build-isolation ".[test]"
echo "setup: done ($("$PYTHON" -c 'import vramplan; print("vramplan", vramplan.__version__)'))"
