#!/usr/bin/env bash
# The Python package and CLI of this tree beside an earlier commit's, in one run on one machine:
#   benchmarks/compare_python.sh REV [compare_python.py args...]
# Installs REV's package (git archive, pip --no-build-isolation) in its own virtual environment
# under build/compare/REV-SHA/ (kept and reused: a commit does not change), and this tree's in
# build/compare/tree/ (reinstalled each run; the build folder makes that incremental), then runs
# benchmarks/compare_python.py, which times both alternating and prints the ratios. Both venvs
# see the system site-packages (pandas, rich, ... as the developers' venv does). Asserts nothing.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REV="${1:?usage: benchmarks/compare_python.sh REV [compare_python.py args...]}"
shift
SHA="$(git -C "$ROOT" rev-parse --short=10 "$REV^{commit}")"
DIR="${VRAMPLAN_COMPARE_DIR:-$ROOT/build/compare}"
PYTHON="${PYTHON:-python3}"

install() {  # install SOURCE VENV
  [ -x "$2/bin/python" ] || "$PYTHON" -m venv --system-site-packages "$2"
  "$2/bin/python" -m pip install -q --no-build-isolation --no-deps "$1" >"$2.log" 2>&1 ||
    { cat "$2.log" >&2; exit 1; }
}

OLD="$DIR/$SHA"
if ! "$OLD/venv/bin/python" -c "import vramplan" >/dev/null 2>&1; then
  rm -rf "$OLD" && mkdir -p "$OLD/src"
  git -C "$ROOT" archive "$SHA" | tar -x -C "$OLD/src"
  echo "building $REV ($SHA) in $OLD ..." >&2
  install "$OLD/src" "$OLD/venv"
fi
echo "installing this tree in $DIR/tree ..." >&2
install "$ROOT" "$DIR/tree/venv"
DIRTY="$(git -C "$ROOT" diff --quiet HEAD || echo '+modified')"
exec "$PYTHON" "$ROOT/benchmarks/compare_python.py" \
  --old "$OLD/venv/bin/python" --old-name "$REV ($SHA)" \
  --new "$DIR/tree/venv/bin/python" --new-name "tree ($(git -C "$ROOT" rev-parse --short HEAD)$DIRTY)" \
  "$@"
