"""The packaged spec database, loaded once per process, and the core-shaped ConfigError: the
layer below model resolution and the public API, so that both can use it."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from typing import Any

from . import _core
from ._resources import model_specs_dir


@functools.lru_cache(maxsize=1)
def spec_database() -> _core.SpecDatabase:
    """The packaged database, loaded once per process."""
    return _core.SpecDatabase.load_directory(str(model_specs_dir()))


def config_error(field: str, value: object, allowed: str, problem: str) -> _core.ConfigError:
    """A ConfigError worded and shaped as the core's (`.field`, `.value`, `.allowed`)."""
    err = _core.ConfigError(f"{field}: {problem} (got {value!r}; allowed: {allowed})")
    err.field, err.value, err.allowed = field, repr(value), allowed
    return err


def sweep_rows(lists: Sequence[Sequence[Any]]) -> int:
    """Rows of the grid whose axes are `lists` (an empty list: one row, the base value), or a
    ConfigError past the core's MAX_SWEEP_POINTS (the core refuses it too, but each chunk a
    sweep hands it is below it)."""
    rows = math.prod(max(1, len(values)) for values in lists)
    if rows > _core.MAX_SWEEP_POINTS:
        raise config_error(
            "sweep grid",
            f"{rows} points",
            f"<= {_core.MAX_SWEEP_POINTS} points",
            "grid too large: split it into several sweeps",
        )
    return rows


def sweep_chunks(
    lists: Sequence[Sequence[Any]], chunk_points: int
) -> Iterator[tuple[list[Sequence[Any]], int, int]]:
    """The grid in chunks of about `chunk_points` rows along its outermost listed axis, so the
    rows keep their nesting order: (the axes of the chunk, its first row, rows done after it)."""
    rows = math.prod(max(1, len(values)) for values in lists)
    split = next((i for i, values in enumerate(lists) if len(values) > 1), 0)
    inner = math.prod(max(1, len(values)) for values in lists[split + 1 :])
    step = max(1, chunk_points // inner)
    outer = max(1, len(lists[split]))
    for start in range(0, outer, step):
        chunk = list(lists)
        chunk[split] = lists[split][start : start + step]
        yield chunk, start * inner, min(rows, (start + step) * inner)
