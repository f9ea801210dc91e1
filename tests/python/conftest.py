from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA


@pytest.fixture(scope="session")
def dev_records() -> Path:
    """The development set of measured startups (a copy; provenance in tests/data/README.md)."""
    return DATA / "measured" / "dev.jsonl"


@pytest.fixture(autouse=True)
def _no_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never reach the real Hugging Face Hub: model names outside the database resolve
    offline (the fake-Hub tests lift this and point HF_ENDPOINT at 127.0.0.1)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@functools.cache
def executed_notebook(path: Path) -> Any:
    """A notebook executed in its own folder by scripts/run_notebooks.py's `execute` (the
    script that writes the committed outputs), once per session."""
    script = ROOT / "scripts" / "run_notebooks.py"
    spec = importlib.util.spec_from_file_location("run_notebooks", script)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.execute(path)


def run_notebook(path: Path) -> list[Any]:
    """Executes a notebook (once a session); returns its code cells' outputs, after checking
    that none is an error."""
    notebook = executed_notebook(path)
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"], path.name
    return outputs


@pytest.fixture(scope="session")
def notebook_outputs() -> Any:
    """`run_notebook` as a fixture (test modules are imported by path, not as a package)."""
    return run_notebook


@pytest.fixture(scope="session")
def notebook_executed() -> Any:
    """`executed_notebook` as a fixture."""
    return executed_notebook
