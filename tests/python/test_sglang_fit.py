"""vramplan.fit(engine="sglang"): the GPU x count x split search over SGLang's solver. The small
case (Qwen3-8B, 8192-token sequences, one L4 or two) is derived by hand below. And calibrate's
refusal of SGLang (tests/data/sglang/logs: provenance in tests/data/README.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import vramplan
from vramplan import api
from vramplan.fit import fit, fit_models

MODEL = "Qwen/Qwen3-8B"


def test_one_l4_holds_four_sequences_of_8192_not_five() -> None:
    frame = fit(MODEL, context=8192, concurrency=5, gpus=["L4"], max_gpus=2, engine="sglang")
    one = frame[frame["num_gpus"] == 1].iloc[0]
    f = one["mem_fraction_static"]  # the solver's largest f that starts
    # By hand at that f: Qwen3-8B's cell is 8 KV heads x (128 + 128) x 2 B x 36 layers =
    # 147 456 B/token; rest = B - W - round(B (1 - f)); tokens = floor(rest / cell).
    single = api.breakdown(MODEL, "L4", engine="sglang", mem_fraction_static=float(f))
    assert single["cell_bytes"] == 8 * 256 * 2 * 36
    baseline, weights = single["baseline_free_bytes"], single["weights_bytes"]
    tokens = (baseline - weights - round(baseline * (1 - f))) // 147456
    assert one["kv_tokens"] == tokens
    # 40 788 tokens at f = 0.959 hold floor(tokens / 8192) = 4 sequences: not the 5 asked.
    assert tokens // 8192 == 4
    assert one["max_concurrency"] == 4
    assert not one["fits"]
    assert "holds 4 of the 5" in one["verdict"]
    # Two L4s at TP = 2 halve the weights per rank and the KV heads: they hold the five.
    tp2 = frame[(frame["num_gpus"] == 2) & (frame["tp_size"] == 2)].iloc[0]
    assert tp2["fits"]
    assert tp2["max_concurrency"] >= 5
    # DP = 2: two replicas of one L4, each with ceil(5 / 2) = 3 sequences: 4 each hold them.
    dp2 = frame[frame["dp_size"] == 2].iloc[0]
    assert dp2["fits"]
    assert dp2["max_concurrency"] == 2 * 4
    assert dp2["kv_tokens"] == 2 * tokens
    # Fitting options first, fewest GPUs first among them.
    assert list(frame["fits"]) == [True, True, True, False]
    assert tp2["launch"].startswith(
        "python -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp-size 2"
    )


def test_four_sequences_fit_one_l4() -> None:
    frame = fit(MODEL, context=8192, concurrency=4, gpus=["L4"], num_gpus=1, engine="sglang")
    assert bool(frame.iloc[0]["fits"])
    assert frame.iloc[0]["max_context"] >= 8192


def test_invalid_splits_and_refusals() -> None:
    # TP = 3 does not divide Qwen3-8B's 32 query heads: an invalid split, named.
    frame = fit(MODEL, context=4096, concurrency=1, gpus=["L4"], num_gpus=3, engine="sglang")
    tp3 = frame[frame["tp_size"] == 3].iloc[0]
    assert not tp3["fits"]
    assert "num_attention_heads" in tp3["verdict"]
    with pytest.raises(vramplan.Error, match="host_ram_bytes"):
        fit(MODEL, context=4096, concurrency=1, engine="sglang", host_ram_bytes=1 << 30)
    with pytest.raises(vramplan.Error, match="does not search SGLang launches"):
        fit_models("L4", context=4096, concurrency=1, engine="sglang")


def test_cli_fit_engine_sglang() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "vramplan",
            "fit",
            MODEL,
            "--engine",
            "sglang",
            "--context",
            "8192",
            "--concurrency",
            "4",
            "--gpus",
            "L4",
            "--num-gpus",
            "1",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "mem_fraction_static" in done.stdout


def test_calibrate_refuses_sglang_by_name() -> None:
    # SGLang's constants are not calibrated (its plan takes no fitted row): refused with the
    # reason, and an SGLang log is never read as a vLLM one.
    log = Path(__file__).resolve().parents[1] / "data" / "sglang" / "logs" / "sgl-r01.log"
    with pytest.raises(vramplan.Error, match="SGLang's breakdown and plan take no calibrated"):
        vramplan.calibrate(log, gpu="L4", engine="sglang")
    with pytest.raises(vramplan.Error, match=r"sgl-r01\.log: an SGLang startup log"):
        vramplan.calibrate(log, gpu="L4")
