"""SGLang's HiCache host pools through Python: the knobs under SGLang's names, a pasted launch
line, the breakdown's host figures and text. Expected numbers are derived by hand here from
SGLang's code (0.5.23 mem_cache/pool_host/base.py:HostKVCache, 0.4.x HostKVCache)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import vramplan
from vramplan import api, sglang
from vramplan.diagnose import diagnose

MODEL = "Qwen/Qwen3-8B"
GIB = 1 << 30
# Qwen3-8B: 36 layers x 8 KV heads x (128 + 128) x 2 B per token on one rank.
CELL = 36 * 8 * 256 * 2


def test_ratio_two_on_one_h100_is_twice_the_device_pool() -> None:
    # --max-total-tokens 300000 pins the device pool at (300000 + 1) x CELL (its padding page);
    # 0.5.23: host tokens = int(300000 x 2) // 1 + 1 = 600001 -> 600001 x CELL bytes.
    result = api.breakdown(
        MODEL, "H100-80GB", engine="sglang", mem_fraction_static=0.85, max_total_tokens=300000,
        enable_hierarchical_cache=True, hicache_ratio=2.0,
    )  # fmt: skip
    assert result["verdict"] == "started"
    hicache = result["hicache"]
    assert hicache["full_pool"]["tokens"] == 600001
    assert hicache["host_bytes_per_rank"] == 600001 * CELL == 2 * 300001 * CELL - CELL
    assert hicache["pinned_bytes_per_node"] == 600001 * CELL
    assert hicache["mem_layout"] == "page_first"
    text = sglang.breakdown_text(result.to_dict())
    assert "host memory (HiCache, ratio 2.000, layout page_first)" in text


def test_size_is_decimal_gb_and_tp2_counts_two_pools() -> None:
    # --hicache-size 100 at TP 2 (4 KV heads a rank, CELL / 2 = 73728 B a token):
    # floor(100e9 / 73728) = 1356336 tokens (x 73728 = 99 999 940 608 <= 1e11), + 1 padding
    # page = 1356337 -> 100 000 014 336 B a rank, two ranks on the host.
    result = api.breakdown(
        MODEL, "H100-80GB", engine="sglang", tp_size=2, mem_fraction_static=0.85,
        max_total_tokens=400000, enable_hierarchical_cache=True, hicache_size=100,
    )  # fmt: skip
    hicache = result["hicache"]
    assert hicache["full_pool"]["tokens"] == 1356337
    assert hicache["host_bytes_per_rank"] == 1356337 * 73728 == 100000014336
    assert hicache["ranks_per_node"] == 2
    assert hicache["pinned_bytes_per_node"] == 2 * 100000014336


def test_host_refusal_is_sglangs_own_words() -> None:
    # TP 2, 800000 device tokens, ratio 2: 1600001 x 73728 = 117 964 873 728 B a rank; the
    # rank's share of 200 GiB MemAvailable is (200 - 10) GiB // 2 = 102 005 473 280 B.
    result = api.breakdown(
        MODEL, "H100-80GB", engine="sglang", tp_size=2, mem_fraction_static=0.85,
        max_total_tokens=800000, enable_hierarchical_cache=True, hicache_ratio=2.0,
        host_mem_available_bytes=200 * GIB,
    )  # fmt: skip
    assert result["verdict"] == "hicache_refused"
    assert result["error"] == (
        "Not enough host memory available. Requesting 117.96 GB but only have 102.01 GB free. "
        "Please reduce the size of the hierarchical cache."
    )


def test_pasted_launch_line_sets_the_hicache_knobs() -> None:
    launch = sglang.parse_command(
        ["python", "-m", "sglang.launch_server", "--model-path", MODEL, "--enable-hicache",
         "--hicache-ratio", "3", "--hicache-mem-layout", "layer_first", "--hicache-size", "64"]
    )  # fmt: skip
    assert launch.knobs == {
        "enable_hierarchical_cache": True,
        "hicache_ratio": 3.0,
        "hicache_mem_layout": "layer_first",
        "hicache_size": 64,
    }
    assert launch.unmodelled == []


def test_a_layout_the_release_lacks_is_refused_by_name() -> None:
    with pytest.raises(vramplan.ConfigError, match="hicache_mem_layout"):
        api.breakdown(
            MODEL, "H100-80GB", engine="sglang", sglang_version="0.4.10.post2",
            enable_hierarchical_cache=True, hicache_mem_layout="page_head",
        )  # fmt: skip


def test_cli_takes_the_host_in_gib_and_prints_the_host_pools() -> None:
    # MemAvailable 100 GiB, one rank, no ratio given: 0.5.23 auto-sizes the default 2.0 to
    # int((100 - 10) GiB x 0.8) x 0.95 / (300001 x CELL) = 77309411328 x 0.95 / 44236947456.
    out = subprocess.run(
        [sys.executable, "-m", "vramplan", "breakdown", "--engine", "sglang", MODEL, "--gpu",
         "H100-80GB", "--mem-fraction-static", "0.85", "--max-total-tokens", "300000",
         "--enable-hierarchical-cache", "--host-mem-available-gb", "100", "--json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    hicache = json.loads(out.stdout)["hicache"]
    assert hicache["ratio_auto_sized"] is True
    assert hicache["ratio"] == pytest.approx(77309411328 * 0.95 / 44236947456, rel=1e-12)
    assert hicache["budget_bytes"] == 77309411328


def test_diagnose_reads_the_host_refusal_and_advises_sglangs_flags() -> None:
    # HostKVCache's ValueError (pool_host/base.py), as the scheduler logs it.
    log = (
        "[2026-11-28 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call "
        "last):\nValueError: Not enough host memory available. Requesting 117.96 GB but only "
        "have 102.01 GB free. Please reduce the size of the hierarchical cache.\n"
    )
    result = diagnose(log, engine="sglang")
    assert result["cause"] == "hicache_refused"
    flags = [(a["flag"], a["action"]) for a in result["advice"]]
    assert flags == [("--hicache-ratio", "lower"), ("--hicache-size", "set")]
