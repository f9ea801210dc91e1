"""vramplan.sweep(engine="sglang"): a grid of SGLang launches evaluated in the core. Each row
must equal the single breakdown at its knobs; one row is derived by hand below."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import pytest
import vramplan
from vramplan import api

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
VERDICTS = [
    "started",
    "weights_leave_no_memory",
    "not_enough_memory",
    "oom_cuda_graph_capture",
    "oom_first_prefill",
    "hicache_refused",
]


def test_rows_equal_single_breakdowns() -> None:
    fractions = [0.15, 0.6, 0.85, 0.99]
    requests = [16, 1 << 20]
    chunks = [2048, 8192]
    frame = api.sweep(
        MODEL,
        "L4",
        engine="sglang",
        mem_fraction_static=fractions,
        max_running_requests=requests,
        chunked_prefill_size=chunks,
        context_length=8192,  # one value: a knob, not a grid list
    )
    assert len(frame) == len(fractions) * len(requests) * len(chunks)
    assert list(frame["outcome"].cat.categories) == VERDICTS
    for row, (f, r, c) in zip(
        frame.itertuples(index=False), itertools.product(fractions, requests, chunks), strict=True
    ):
        single = api.breakdown(
            MODEL,
            "L4",
            engine="sglang",
            mem_fraction_static=f,
            max_running_requests=r,
            chunked_prefill_size=c,
            context_length=8192,
        )
        assert row.mem_fraction_static == single["mem_fraction_static"] == f
        assert row.context_length == single["context_length"] == 8192
        assert row.max_running_requests == single["max_running_requests"]
        assert row.chunked_prefill_size == single["chunked_prefill_size"] == c
        assert row.kv_pool_bytes == single["kv_pool_bytes"]
        assert row.max_total_num_tokens == single["max_total_num_tokens"]
        assert row.outcome == single["verdict"]
    # The grid crosses verdicts: a test over identical rows could not fail on the order.
    assert {"started", "weights_leave_no_memory"} <= set(frame["outcome"])


def test_one_row_by_hand() -> None:
    # H100 at f = 0.8: B = 85 030 076 416 - 311 385 129 = 84 718 691 287; slack = round(0.2 B)
    # = 16 943 738 257; weights = 8 030 261 248 x 2 B = 16 060 522 496 (the bf16 checkpoint)
    # + the rotary cos/sin cache [131 072, 128] bf16 (32 MiB) = 16 094 076 928; rest =
    # 51 680 876 102; cell = 8 x (128 + 128) x 2 B x 32 = 131 072 B -> 394 293 tokens, the pool
    # one padding page more: 394 294 x 131 072 B.
    frame = api.sweep(MODEL, "H100-80GB", engine="sglang", mem_fraction_static=[0.8, 0.9])
    row = frame.iloc[0]
    assert row["max_total_num_tokens"] == 394293
    assert row["kv_pool_bytes"] == 394294 * 131072
    assert row["context_length"] == 131072  # unset: the model's maximum
    assert row["outcome"] == "started"
    # max_running_requests as SGLang resolves it (0.5.23): the pool estimate
    # clamp(floor(394293 / 131072 x 512), 2048, 4096) = 2048, below tokens / 2.
    assert row["max_running_requests"] == 2048


def test_unlisted_knobs_resolve_to_sglangs_defaults() -> None:
    # No list at all: one row, the launch's own defaults (0.5.23 H100 TP=1: f 0.830, chunk 8192).
    frame = api.sweep(MODEL, "H100-80GB", engine="sglang")
    assert len(frame) == 1
    assert frame["mem_fraction_static"][0] == 0.83
    assert frame["chunked_prefill_size"][0] == 8192


def test_progress_and_refusals() -> None:
    seen: list[tuple[int, int]] = []
    api.sweep(
        MODEL,
        "L4",
        engine="sglang",
        mem_fraction_static=[0.7, 0.8, 0.9],
        progress=lambda done, rows: seen.append((done, rows)),
    )
    assert seen[-1] == (3, 3)
    with pytest.raises(vramplan.Error, match="mem_fraction_static"):
        api.sweep(MODEL, "L4", engine="sglang", mem_fraction_static=[0.8, 1.5])
    with pytest.raises(vramplan.Error, match="context_length"):
        api.sweep(MODEL, "L4", engine="sglang", context_length=[4096, 0])
    with pytest.raises(vramplan.Error, match="context_length"):
        api.sweep(MODEL, "L4", engine="sglang", context_length=[4096, "long"])
    # The vLLM grid is refused by name with engine="sglang", never ignored.
    with pytest.raises(vramplan.Error, match="gpu_memory_utilization"):
        api.sweep(MODEL, "L4", engine="sglang", gpu_memory_utilization=[0.9])


def test_cli_sweep_engine_sglang() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "vramplan",
            "sweep",
            "--engine",
            "sglang",
            MODEL,
            "--gpu",
            "H100-80GB",
            "--mem-fraction-static",
            "0.8,0.9",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    records = json.loads(done.stdout)
    assert [r["mem_fraction_static"] for r in records] == [0.8, 0.9]
    assert records[0]["max_total_num_tokens"] == 394293  # the row derived by hand above
    bad = subprocess.run(
        [sys.executable, "-m", "vramplan", "sweep", "--engine", "sglang", MODEL, "--tp-size", "0"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2
    assert "tp_size" in bad.stderr
