"""Executes the example notebooks (docs/examples/*.ipynb, or the ones named) in place with
nbclient, so that they are committed with their outputs: the README's worked examples show
results. tests/python/test_notebook.py re-executes them and fails when a deterministic output
differs from the committed one; run this after a change that moves a figure.

    python3 scripts/run_notebooks.py [NOTEBOOK.ipynb ...]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]


def execute(path: Path) -> nbformat.NotebookNode:
    """The notebook executed in its own folder, without per-run metadata (timestamps)."""
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    ).execute()
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)  # start and end times of this run
    return notebook


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted((ROOT / "docs" / "examples").glob("*.ipynb"))
    for path in paths:
        start = time.monotonic()
        print(f"run_notebooks: executing {path}", flush=True)
        nbformat.write(execute(path), path)
        print(f"run_notebooks: wrote {path} ({time.monotonic() - start:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
