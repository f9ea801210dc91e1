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
    return _specs_file(model_specs_override(), name)


_OVERRIDE = "VRAMPLAN_MODEL_SPECS"
# os.environ.get raises and catches a KeyError inside when the variable is unset (8k
# instructions, a ninth of a plan); on POSIX, CPython's os.environ keeps its encoded entries in
# the dict `_data`, which answers a missing key without an exception. Elsewhere: os.environ.
_ENCODED_ENVIRON: dict[bytes, bytes] | None = (
    getattr(os.environ, "_data", None) if os.name == "posix" else None
)


def model_specs_override() -> str:
    """$VRAMPLAN_MODEL_SPECS as set, or "" (every model_specs_file answer is a function of it)."""
    if _ENCODED_ENVIRON is not None:
        value = _ENCODED_ENVIRON.get(b"VRAMPLAN_MODEL_SPECS")
        return os.fsdecode(value) if value else ""
    return os.environ.get(_OVERRIDE) or ""


@functools.lru_cache(maxsize=64)
def _specs_file(override: str, name: str) -> str:
    # The installed copy sits beside this module, as the wheel lays it out (what
    # importlib.resources.files("vramplan") finds for a package on disk, without its import).
    folder = Path(override) if override else Path(__file__).parent / "model_specs"
    return str(folder / name) if name else str(folder)
