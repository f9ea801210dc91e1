"""Where the packaged spec database lives."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path


def model_specs_dir() -> Path:
    """The model_specs/ folder: $VRAMPLAN_MODEL_SPECS if set, else the installed copy."""
    override = os.environ.get("VRAMPLAN_MODEL_SPECS")
    if override:
        return Path(override)
    return Path(str(resources.files("vramplan") / "model_specs"))
