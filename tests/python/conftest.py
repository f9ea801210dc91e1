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
