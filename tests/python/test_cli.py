from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vramplan", *args], capture_output=True, text=True, check=False
    )


def test_breakdown_json_has_per_rank_terms() -> None:
    out = run("breakdown", "meta-llama/Llama-3.1-8B", "--gpu", "H100-80GB", "--tp", "2", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["kv_bytes_per_token"] == 2 * 32 * 4 * 128 * 2  # 4 KV heads per rank at TP=2
    assert data["weights_bytes"] > 0


def test_plan_json_and_flags() -> None:
    out = run("plan", "--context", "8192", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    for key in (
        "fits",
        "gpu_memory_utilization",
        "max_model_len",
        "max_num_seqs",
        "max_num_batched_tokens",
        "binding",
        "remedies",
        "breakdown",
    ):
        assert key in data
    flags = run("flags", "--context", "8192")
    assert flags.returncode == 0
    assert flags.stdout.strip() == data["vllm_args"]


def test_bad_input_is_a_clean_error() -> None:
    out = run("breakdown", "no/such-model")
    assert out.returncode == 2
    assert "unknown model" in out.stderr
    assert "Traceback" not in out.stderr


def test_validate_records_json(dev_records) -> None:
    out = run("validate", "--records", str(dev_records), "--json")
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    # Exit 1 when any record's outcome disagrees or cannot be expressed, else 0.
    problems = [
        r
        for r in rows
        if r["unsupported"]
        or r["predicted"]["outcome"] != r["measured"].get("outcome", r["predicted"]["outcome"])
    ]
    assert out.returncode == (1 if problems else 0), out.stderr
    assert len(rows) == sum(1 for line in dev_records.read_text().splitlines() if line.strip())
    for row in rows:
        assert (row["predicted"] is None) == (row["unsupported"] is not None)
    by_id = {row["id"]: row for row in rows}
    # dev-021: Llama-3.1-8B, vLLM 0.19, H100, util 0.95 -> outcome started.
    assert by_id["dev-021"]["predicted"]["outcome"] == "started"


def test_gpus_lists_at_least_45_with_measured_or_derived_totals() -> None:
    result = run("gpus", "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert len(rows) >= 45
    assert {"MI300X", "MI355X", "B300", "GB10", "RTX-PRO-6000", "RTX-4090-D"} <= {
        r["id"] for r in rows
    }
    assert all(isinstance(r["total_memory_derived"], bool) for r in rows)


def test_shared_gpu_name_is_noted_on_stderr_and_the_plan_goes_on() -> None:
    result = run("breakdown", "--gpu", "NVIDIA A100", "--json")
    assert result.returncode == 0, result.stderr
    assert "assumed A100-80GB" in result.stderr
    assert "A100-40GB" in result.stderr
    exact = run("breakdown", "--gpu", "NVIDIA A100-SXM4-40GB", "--json")
    assert "assumed" not in exact.stderr


def test_malformed_quantization_configs_exit_2_naming_field_and_value() -> None:
    cases = {
        "gptq_group_fraction.json": ("quantization_config.group_size", "1.99"),
        "gptq_group_not_dividing.json": ("quantization_config.group_size", "got 3"),
        "ct_mixed_groups.json": ("quantization_config.config_groups", "group_1"),
        "modelopt_mixed_algos.json": ("quantization_config.quantized_layers", "INT4_AWQ"),
    }
    for name, (field, value) in cases.items():
        result = run("breakdown", str(Path(__file__).parents[1] / "data" / "bad_configs" / name))
        assert result.returncode == 2, (name, result.stderr)
        assert field in result.stderr, (name, result.stderr)
        assert value in result.stderr, (name, result.stderr)
        assert "Traceback" not in result.stderr


def test_amd_gpu_plan_says_rocm_rules_are_not_modelled() -> None:
    result = run("breakdown", "--gpu", "AMD Instinct MI300X", "--json")
    assert result.returncode == 0, result.stderr
    assert "ROCm" in result.stderr
    assert "ROCm" not in run("breakdown", "--gpu", "H100", "--json").stderr
