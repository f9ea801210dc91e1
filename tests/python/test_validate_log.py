"""`vramplan validate LOGFILE`: the C++ log parser's figures replayed through the planner."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import vramplan
from vramplan import validate

LOGS_019 = Path(__file__).resolve().parents[1] / "data" / "measured" / "logs" / "vllm-0.19.0"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vramplan", *args], capture_output=True, text=True, check=False
    )


def log_019(name: str) -> Path:
    path = LOGS_019 / name
    assert path.exists(), f"missing test data {path}"
    return path


def test_parse_vllm_log_is_exported_and_reads_the_oom_excerpt(data_dir: Path) -> None:
    text = (data_dir / "vllm_logs" / "v019_gpt_oss_20b_sampler_oom.log").read_text()
    figures = vramplan.parse_vllm_log(text)
    # The excerpt prints "Available KV cache memory: 58.47 GiB" and "Tried to allocate 786.00 MiB".
    assert figures["kv_cache_gib"] == pytest.approx(58.47)
    assert figures["oom_tried_gib"] == pytest.approx(786 / 1024)
    assert figures["outcome"] == "oom_kv_alloc"


def test_validate_log_predicts_the_logged_llama_launch() -> None:
    path = log_019("meta-llama-llama-3-1-8b---h100-80gb--tp1pp1dp1--8192.log")
    out = run("validate", str(path), "--json")
    assert out.returncode == 0, out.stderr
    replay = json.loads(out.stdout)
    assert replay["unsupported"] is None
    measured, predicted = replay["measured"], replay["predicted"]
    # The log prints "Model loading took 14.99 GiB" and "GPU KV cache size: 476,016 tokens".
    assert measured["weights_gib"] == pytest.approx(14.99)
    assert measured["kv_tokens"] == 476016
    assert abs(predicted["weights_gib"] - 14.99) < 0.01  # 16,060,522,496 B + rotary cache
    assert abs(predicted["kv_tokens"] - 476016) / 476016 < 0.01
    assert predicted["outcome"] == measured["outcome"] == "started"
    table = run("validate", str(path))
    assert "kv_cache_gib" in table.stdout
    assert "MISMATCH" not in table.stdout


def test_validate_log_replays_data_parallel() -> None:
    # DP=2 (issue 19: records replay DP): the launch failed for a reason outside memory
    # ("DP adjusted local rank 1 is out of bounds"), but its weights line is measured:
    # "Model loading took 14.99 GiB", the 8B checkpoint's bf16 bytes, per DP rank.
    path = log_019("meta-llama-llama-3-1-8b---h100-80gb--tp1pp1dp2--8192.FAILED.log")
    out = run("validate", str(path), "--json")
    assert out.returncode == 0
    data = json.loads(out.stdout)
    assert data["launch"]["data_parallel_size"] == 2
    assert abs(data["predicted"]["weights_gib"] - 14.99) < 0.01


def test_record_from_log_prefers_the_callers_model_and_gpu() -> None:
    figures = {
        "model": "/models/llama",
        "vllm_version": "0.19.0",
        "tensor_parallel_size": 1,
        "weights_gib": 14.99,
        "outcome": "unknown",
    }
    record = validate.record_from_log(figures, model="meta-llama/Llama-3.1-8B", gpu="H100")
    assert record["model"] == "meta-llama/Llama-3.1-8B"
    assert record["gpu"] == "H100"
    assert record["outcome"] is None  # "unknown" is not a measured outcome
    replay = validate.replay_record(record)
    assert replay.unsupported is None
    assert replay.predicted is not None
    assert replay.predicted["weights_gib"] == pytest.approx(14.99, abs=0.01)


def test_unreadable_log_is_a_clean_error(tmp_path: Path) -> None:
    out = run("validate", str(tmp_path / "missing.log"))
    assert out.returncode == 2
    assert "missing.log" in out.stderr
    assert "Traceback" not in out.stderr
