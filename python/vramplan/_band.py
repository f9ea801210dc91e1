"""The expected available-KV error of a launch: its (GPU family, era) row of the
leave-one-source-out table, which `benchmarks/validate.py --loso` writes to
model_specs/error_bands.json (the one copy; docs/accuracy.md explains the rule)."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

from . import _core
from ._io import read_text
from ._resources import model_specs_dir

GIB = 1 << 30
BANDS_FILE = "error_bands.json"
MAX_BANDS_BYTES = 1 << 20

# GPU families whose memory behaviour differs (architecture, interconnect, default batch
# sizes), matched in this order on a GPU's database id and name or a record's `gpu` text.
GPU_FAMILIES = (
    (r"h100|h200|gh200", "H100/H200"),
    (r"a100", "A100"),
    (r"l40|\bl4\b", "L40S/L4"),
    (r"rtx|geforce|3090|4090|5090", "RTX consumer"),
    (r"mi300|instinct", "MI300X"),
    (r"\bt4\b|v100", "T4/V100"),
)


def gpu_family(name: str) -> str:
    for pattern, label in GPU_FAMILIES:
        if re.search(pattern, name, re.IGNORECASE):
            return label
    return "unknown"


def era_of(major: int, minor: int) -> str:
    """The engines.yaml era of vLLM major.minor: V0 (<= 0.7), v1-early (0.8-0.10), v1
    (0.11-0.20), v1-latest (>= 0.21)."""
    version = (major, minor)
    if version < (0, 5):
        return "pre-0.5"
    if version < (0, 8):
        return "V0"
    if version < (0, 11):
        return "v1-early"
    if version < (0, 21):
        return "v1"
    return "v1-latest"


@functools.lru_cache(maxsize=4)
def _bands_at(file: str) -> dict[str, Any]:
    """The table, read once per file (plan() consults it on every call)."""
    path = Path(file)
    try:
        data = json.loads(read_text(path, what="error-band table", max_bytes=MAX_BANDS_BYTES))
    except (OSError, ValueError) as why:
        msg = f"{path}: cannot read the error-band table ({why})"
        raise _core.SpecError(msg) from None
    groups = data.get("groups") if isinstance(data, dict) else None
    if not isinstance(groups, dict):
        msg = f"{path}: groups: expected an object of 'family x era' rows"
        raise _core.SpecError(msg)
    return groups


def error_band(gpu: str, engine_version: str) -> dict[str, Any]:
    """The launch's band: family, era, held-out records, band_bytes (p90 absolute error;
    None: no measured band), over_prediction_bytes (the largest held-out over-prediction) and
    a sentence saying it."""
    return dict(_error_band_in(str(model_specs_dir() / BANDS_FILE), gpu, engine_version))


@functools.lru_cache(maxsize=256)
def _error_band_in(file: str, gpu: str, engine_version: str) -> dict[str, Any]:
    match = re.match(r"(\d+)\.(\d+)", engine_version)
    era = era_of(int(match.group(1)), int(match.group(2))) if match else "unknown"
    group = f"{gpu_family(gpu)} x {era}"
    row = _bands_at(file).get(group)
    held_out = int(row.get("held_out", 0)) if isinstance(row, dict) else 0
    band = _bytes(row, "band_bytes")
    over = _bytes(row, "over_prediction_bytes")
    if band is None:
        statement = (
            f"no measured band for {group}: {held_out} held-out record"
            f"{'' if held_out == 1 else 's'} (docs/accuracy.md)"
        )
    else:
        statement = (
            f"available KV cache +/- {band / GIB:.2f} GiB per GPU, 90% "
            f"({group}, {held_out} held-out records, docs/accuracy.md)"
        )
    return {
        "group": group,
        "held_out_records": held_out,
        "band_bytes": band,
        "over_prediction_bytes": over,
        "statement": statement,
    }


def _bytes(row: Any, key: str) -> int | None:
    value = row.get(key) if isinstance(row, dict) else None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value
