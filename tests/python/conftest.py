from __future__ import annotations

from pathlib import Path

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
