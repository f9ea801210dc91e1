from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return ROOT / "tests" / "data"


@pytest.fixture(scope="session")
def dev_records() -> Path:
    path = SHARED / "measured" / "dev.jsonl"
    if not path.exists():
        pytest.skip("shared/measured/dev.jsonl not present")
    return path


@pytest.fixture(autouse=True)
def _no_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never reach the real Hugging Face Hub: model names outside the database resolve
    offline (the fake-Hub tests lift this and point HF_ENDPOINT at 127.0.0.1)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
