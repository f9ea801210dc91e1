"""Where the packaged spec database lives."""

from __future__ import annotations

import functools
import os
from pathlib import Path


def model_specs_dir() -> Path:
    """The model_specs/ folder: $VRAMPLAN_MODEL_SPECS if set, else the installed copy."""
    return Path(model_specs_file(""))


def model_specs_file(name: str) -> str:
    """The path of `name` inside model_specs_dir() (the folder itself for ""), as a string: the
    planner asks for error_bands.json on every plan, so the answer is kept per environment."""
    return _specs_file(os.environ.get("VRAMPLAN_MODEL_SPECS") or "", name)


@functools.lru_cache(maxsize=64)
def _specs_file(override: str, name: str) -> str:
    # The installed copy sits beside this module, as the wheel lays it out (what
    # importlib.resources.files("vramplan") finds for a package on disk, without its import).
    folder = Path(override) if override else Path(__file__).parent / "model_specs"
    return str(folder / name) if name else str(folder)
