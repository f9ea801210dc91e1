#!/usr/bin/env bash
# Sets up a fresh Debian machine: the C++ -dev packages, the Python build tools, and the
# vramplan package itself (C++ core + bindings + the spec database). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake ninja-build ccache libeigen3-dev nlohmann-json3-dev
          libyaml-cpp-dev libgtest-dev libbenchmark-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PYTHON=${PYTHON:-python3}
"$PYTHON" -m pip install -q --disable-pip-version-check "scikit-build-core>=0.10" "pybind11>=2.12" pytest hypothesis
# A persistent build dir (pyproject build-dir) plus ccache keeps rebuilds incremental.
"$PYTHON" -m pip install -q --disable-pip-version-check --no-build-isolation .
echo "setup: done ($("$PYTHON" -c 'import vramplan; print("vramplan", vramplan.__version__)'))"
