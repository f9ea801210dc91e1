from __future__ import annotations

import json
import subprocess
import sys


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
