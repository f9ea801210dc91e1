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
LOGS_PUBLIC = Path(__file__).resolve().parents[1] / "data" / "public_logs"
LLAMA = "meta-llama/Llama-3.1-8B"


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


def _record(gpu: str, **extra: object) -> dict[str, object]:
    return {
        "id": "r",
        "model": "meta-llama/Llama-3.1-8B",
        "vllm_version": "0.19.0",
        "gpu": gpu,
        "weights_gib": 14.99,
        **extra,
    }


@pytest.mark.parametrize(
    ("written", "gpu_id"),
    [
        # nvidia-smi / rocm-smi names, as records copy them, then their qualifiers.
        ("NVIDIA A100-SXM4-40GB", "A100-40GB"),
        ("NVIDIA H100 80GB HBM3 x2 (the fused_moe config names it)", "H100-80GB"),
        ("Tesla T4 x2 (the notebook's 'GPU 0 : Tesla T4 (14.6 GB)')", "T4"),
        ("AMD Instinct MI300X x2 (stated)", "MI300X"),
        ("RTX 3090 class (a 16x3090 rig)", "RTX-3090"),
        ("H100-80G (stated)", "H100-80GB"),
        # Cards a name pattern took for their neighbours: the H100 NVL has 94 GB, the H200 NVL
        # and GH200 are not the H200 SXM, the 4090 D is its own SKU, the L40 is not the L40S.
        ("NVIDIA H100 NVL", "H100-NVL"),
        ("NVIDIA H200 NVL x2, one node", "H200-NVL"),
        ("NVIDIA GeForce RTX 4090 D (title)", "RTX-4090-D"),
        ("NVIDIA L40 (title)", "L40"),
        ("NVIDIA H800", "H800"),
    ],
)
def test_records_name_gpus_through_the_one_lookup(written: str, gpu_id: str) -> None:
    replay = validate.replay_record(_record(written))
    assert replay.unsupported is None, replay.unsupported
    assert replay.launch["gpu"] == gpu_id
    assert replay.note is None


def test_a_shared_gpu_name_takes_the_records_total_or_says_what_it_assumed() -> None:
    # "NVIDIA A100" is the 40 GB and the 80 GB card. With no total the 80 GB is assumed, and
    # the replay says so; the log's total (39.38 GiB: the 40 GB card's CUDA total) decides.
    replay = validate.replay_record(_record("NVIDIA A100 (post title)"))
    assert replay.launch["gpu"] == "A100-80GB"
    assert replay.note is not None
    assert "assumed A100-80GB" in replay.note
    assert "A100-40GB" in replay.note
    assert "gpu_total_gib" in replay.note
    replay = validate.replay_record(_record("NVIDIA A100 (post title)", gpu_total_gib=39.38))
    assert replay.launch["gpu"] == "A100-40GB"
    assert replay.note is None
    replay = validate.replay_record(_record("NVIDIA A100 x2", gpu_total_gib=79.15))
    assert replay.launch["gpu"] == "A100-80GB"


def test_validate_records_warns_on_a_shared_gpu_name(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    lines = [_record("NVIDIA A100"), {**_record("NVIDIA A100-SXM4-80GB"), "id": "s"}]
    path.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    out = run("validate", "--records", str(path), "--json")
    assert "Traceback" not in out.stderr
    assert "r: GPU 'NVIDIA A100'" in out.stderr
    assert "assumed A100-80GB" in out.stderr
    assert "s: " not in out.stderr
    replays = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r["launch"]["gpu"] for r in replays] == ["A100-80GB", "A100-80GB"]
    assert replays[0]["note"]
    assert replays[1]["note"] is None


def test_replay_runs_the_model_runner_the_log_names() -> None:
    # vLLM's worker logs "Using V2 Model Runner" (gpu_worker.py, logger.info_once) when Model
    # Runner V2 runs. Below 0.29 vLLM routes only some models to it (0.22: Qwen3 dense), so a
    # Llama log with the line ran V2 because VLLM_USE_V2_MODEL_RUNNER=1 was set.
    figures = {"vllm_version": "0.22.0", "tensor_parallel_size": 1, "outcome": "unknown"}
    plain = validate.replay_record(validate.record_from_log(figures, model=LLAMA, gpu="H100"))
    figures["model_runner_v2"] = True
    forced = validate.replay_record(validate.record_from_log(figures, model=LLAMA, gpu="H100"))
    assert "vllm_use_v2_model_runner" not in plain.launch
    assert forced.launch["vllm_use_v2_model_runner"] == "1"
    runner = {}
    for name, replay in (("plain", plain), ("forced", forced)):
        launch = dict(replay.launch)
        model, gpu = launch.pop("model"), launch.pop("gpu")
        runner[name] = vramplan.breakdown(model, gpu, **launch).to_dict()["model_runner"]
    assert runner == {"plain": "v1", "forced": "v2"}
    # From the log text: pub-308 (vLLM 0.22.0, verbatim excerpt) with the worker's line added.
    text = (LOGS_PUBLIC / "pub-308.log").read_text()
    line = "(EngineCore_DP0 pid=1) INFO 06-04 05:34:10 [gpu_worker.py:385] Using V2 Model Runner\n"
    replay = validate.replay_log(line + text, model="Qwen/Qwen3-8B", gpu="Tesla T4")
    assert replay.unsupported is None
    assert replay.launch["vllm_use_v2_model_runner"] == "1"
    assert "vllm_use_v2_model_runner" not in validate.replay_log(text, model="Qwen/Qwen3-8B").launch
    bad = {"id": "b", "model": LLAMA, "gpu": "H100", "vllm_version": "0.29.0"}
    rejected = validate.replay_record({**bad, "model_runner_v2": "yes"})
    assert rejected.unsupported is not None
    assert "record b: model_runner_v2" in rejected.unsupported


def test_replay_samples_with_the_sampler_the_log_names() -> None:
    # pub-300 (A100 80GB, vLLM 0.10.1.1; verbatim excerpt) ran with FlashInfer installed, and
    # its worker says so at init ("Using FlashInfer for top-p & top-k sampling.", from the
    # original log at the same commit). vLLM 0.8-0.12 then sample on FlashInfer's kernels: 12 B
    # per logit instead of the PyTorch-native sort's 36.9 (engines.yaml, 0.8.0 row), which
    # over 256 requests x 152064 vocab is 24.9 x 38,928,384 B = 0.903 GiB more KV cache.
    text = (LOGS_PUBLIC / "pub-300.log").read_text()
    line = (
        "(EngineCore_0 pid=1812) INFO 09-04 01:02:57 [topk_topp_sampler.py:50] "
        "Using FlashInfer for top-p & top-k sampling.\n"
    )
    assert vramplan.parse_vllm_log(line)["flashinfer_sampler"] is True
    fallback = (
        "WARNING 09-04 01:02:57 [topk_topp_sampler.py:60] FlashInfer is not available. Falling "
        "back to the PyTorch-native implementation of top-p & top-k sampling. For the best "
        "performance, please install FlashInfer.\n"
    )
    assert vramplan.parse_vllm_log(fallback)["flashinfer_sampler"] is False
    assert vramplan.parse_vllm_log(text)["flashinfer_sampler"] is None
    model, gpu = "Qwen/Qwen2-7B-Instruct", "A100-80GB"
    with_line = validate.replay_log(line + text, model=model, gpu=gpu)
    without = validate.replay_log(text, model=model, gpu=gpu)
    assert with_line.unsupported is None
    assert with_line.launch["vllm_use_flashinfer_sampler"] == "1"
    assert "vllm_use_flashinfer_sampler" not in without.launch
    # The record (tests/data/public_records.jsonl, utilization 0.25 from the launch's
    # non-default args, which this hard-wrapped copy of the log splits over two lines).
    records = (LOGS_PUBLIC.parent / "public_records.jsonl").read_text().splitlines()
    record = next(r for r in map(json.loads, records) if r["id"] == "pub-300")
    kv = {}
    for name, sampler in (("flashinfer", True), ("native", False)):
        replay = validate.replay_record({**record, "flashinfer_sampler": sampler})
        launch = dict(replay.launch)
        launch.pop("model"), launch.pop("gpu")
        kv[name] = vramplan.breakdown(model, gpu, **launch).to_dict()["ranks"][0]["kv_cache_bytes"]
    assert abs(kv["flashinfer"] - kv["native"] - 24.9 * 256 * 152064) < 2
    # The log's "Available KV cache memory: 5.01 GiB", to the display precision.
    assert abs(kv["flashinfer"] / 2**30 - 5.01) < 0.02
    bad = {"id": "b", "model": LLAMA, "gpu": "H100", "vllm_version": "0.10.1"}
    rejected = validate.replay_record({**bad, "flashinfer_sampler": "yes"})
    assert rejected.unsupported is not None
    assert "record b: flashinfer_sampler" in rejected.unsupported
