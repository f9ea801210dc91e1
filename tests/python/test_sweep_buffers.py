"""The sweep's output columns: allocated once in C++, written in place chunk by chunk, handed to
NumPy and pandas without a copy."""

from __future__ import annotations

import numpy as np
import pytest
import vramplan
from vramplan import _core, api

GRID = {
    "gpu_memory_utilization": [0.6, 0.8, 0.9, 0.95],
    "max_model_len": [1024 * k for k in range(1, 41)],
    "max_num_seqs": [1, 16, 256],
}


def test_chunked_sweep_equals_one_call_and_fills_every_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    whole = vramplan.sweep("meta-llama/Llama-3.1-8B", "H100", **GRID)
    # 40 x 3 = 120 points, each under 4 utilizations: chunks of 240 rows are points 0-59 and
    # 60-119, each finished under every utilization (rows 0-59, 120-179, ... then the rest).
    monkeypatch.setattr(api, "SWEEP_CHUNK_POINTS", 240)
    calls: list[tuple[int, int]] = []
    chunked = vramplan.sweep(
        "meta-llama/Llama-3.1-8B",
        "H100",
        progress=lambda done, rows: calls.append((done, rows)),
        **GRID,
    )
    assert calls == [(240, 480), (480, 480)]
    assert len(chunked) == 480
    for column in whole.columns:
        assert (chunked[column] == whole[column]).all(), column
    # Row order: utilization outermost, then length, then sequences.
    assert list(chunked["gpu_memory_utilization"][118:122]) == [0.6, 0.6, 0.8, 0.8]
    assert list(chunked["max_model_len"][:4]) == [1024, 1024, 1024, 2048]
    assert list(chunked["outcome"].cat.categories) == list(whole["outcome"].cat.categories)


def _owner(values: np.ndarray) -> object:
    """What finally owns an array's memory: views are followed to the array they view."""
    owner: object = values
    while isinstance(owner, np.ndarray) and owner.base is not None:
        owner = owner.base
    return owner


def test_frame_columns_are_the_cxx_buffers() -> None:
    frame = vramplan.sweep("meta-llama/Llama-3.1-8B", "H100", **GRID)
    for column in frame.columns.drop("outcome"):
        # A copy (np.concatenate, pandas consolidation) would be owned by an ndarray.
        assert type(_owner(frame[column].to_numpy())).__name__ == "PyCapsule", column
    # The outcome codes (one byte a row) are copied by pandas into its Categorical column.
    assert frame["outcome"].cat.codes.dtype == np.int8


def test_columns_of_two_mib_or_more_start_on_a_huge_page_boundary() -> None:
    columns = _core.Launch.sweep_columns(300_000)  # 2.4 MB per 8-byte column
    assert columns["kv_cache_bytes"].ctypes.data % (2 << 20) == 0
    assert columns["outcome"].dtype == np.int8
    assert len(columns["max_concurrency"]) == 300_000
    assert len(_core.Launch.sweep_columns(0)["kv_tokens"]) == 0


def test_out_columns_are_checked_never_converted() -> None:
    launch, knobs = api._launch("meta-llama/Llama-3.1-8B", "H100", None, 0, 0, {})
    columns = _core.Launch.sweep_columns(4)
    columns["kv_tokens"] = np.zeros(4, dtype=np.int32)
    with pytest.raises(vramplan.ConfigError) as error:
        launch.sweep(knobs, [0.9], [4096, 8192], [1, 2], [], out=columns)
    assert error.value.field == 'out["kv_tokens"]'
    with pytest.raises(vramplan.ConfigError, match="too short"):
        launch.sweep(knobs, [0.9], [4096, 8192], [1, 2], [], out=_core.Launch.sweep_columns(3))
    with pytest.raises(vramplan.ConfigError):
        _core.Launch.sweep_columns(-1)
    columns = _core.Launch.sweep_columns(4)
    written = launch.sweep(knobs, [0.9], [4096, 8192], [1, 2], [], out=columns)
    assert written is columns
    assert list(columns["max_model_len"]) == [4096, 4096, 8192, 8192]


def test_a_range_of_points_writes_its_rows_under_every_utilization() -> None:
    launch, knobs = api._launch("meta-llama/Llama-3.1-8B", "H100", None, 0, 0, {})
    grid = ([0.8, 0.9], [4096, 8192], [1, 2], [])  # 4 points, 8 rows
    whole = launch.sweep(knobs, *grid)
    columns = _core.Launch.sweep_columns(8)
    columns["max_num_seqs"][:] = -7  # rows the range does not cover keep what they held
    launch.sweep(knobs, *grid, out=columns, points=(1, 3))
    # Points 1 and 2 (4096 x 2 sequences, 8192 x 1) are rows 1, 2 (u = 0.8) and 5, 6 (u = 0.9).
    assert list(columns["max_num_seqs"]) == [-7, 2, 1, -7, -7, 2, 1, -7]
    for row in (1, 2, 5, 6):
        for name in whole:
            assert columns[name][row] == whole[name][row], (name, row)
    for bad in [(-1, 2), (3, 1), (0, 5)]:
        with pytest.raises(vramplan.ConfigError) as error:
            launch.sweep(knobs, *grid, out=columns, points=bad)
        assert error.value.field == "points"
