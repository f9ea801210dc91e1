"""`vramplan.diagnose` and `vramplan diagnose`: the cause per bucket through the binding, the
solver's fixing flags checked against the same model, bounded reading, hostile input.
Provenance of every fixture (real or reconstructed): tests/data/diagnose/README.md."""

from __future__ import annotations

import importlib
import json
import random
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import vramplan

diagnose_module = importlib.import_module("vramplan.diagnose")

GIB = 1 << 30

BUCKETS = [
    ("v019_gpt_oss_20b_sampler_warmup.log", None, "sampler_warmup_oom"),  # real, dev-032
    ("v019_llama4_scout_startup_free.log", None, "gpu_memory_utilization_overshoot"),  # real
    ("github_qwen36_35b_nvfp4_cudagraph_profiling.log", None, "cudagraph_profiling_oom"),  # real
    ("reconstructed_qwen36_27b_rtx5090_cudagraph_profiling.log", None, "cudagraph_profiling_oom"),
    ("vllm28143_weights_create_oom.log", None, "weights_do_not_fit"),  # real
    ("vllm16199_v0_insufficient_kv.log", None, "max_model_len_exceeds_kv"),  # real
    ("vllm16199_capture_oom.log", None, "cudagraph_capture_oom"),  # real
    ("vllm34643_runtime_logprobs_oom.log", None, "runtime_oom"),  # real
    # frames real, the final OOM line reconstructed
    ("vllm7854_v0_profile_run.reconstructed_oom_line.log", None, "activation_peak_oom"),
    (None, "geak398_memcg_kill.dmesg", "host_ram_oom_killer"),  # real kernel lines
    (None, "vllm54237_global_oom.dmesg", "host_ram_oom_killer"),  # real kernel lines
    (None, "reconstructed_memcg_engine_kill.dmesg", "host_ram_oom_killer"),
    ("v019_gemma2_hf_forbidden.log", None, "not_memory"),  # real
    ("v019_llama8b_dp2_local_rank.log", None, "not_memory"),  # real
    ("v019_llama8b_started.log", None, "unknown"),  # real
]


@pytest.fixture(scope="module")
def diag_dir() -> Path:
    return Path(__file__).resolve().parents[1] / "data" / "diagnose"


@pytest.mark.parametrize(("log", "dmesg", "cause"), BUCKETS)
def test_cause_per_bucket(diag_dir: Path, log: str | None, dmesg: str | None, cause: str) -> None:
    result = vramplan.diagnose(
        diag_dir / log if log else "", dmesg=diag_dir / dmesg if dmesg else None
    )
    assert result.cause == cause
    assert result.cause in diagnose_module.CAUSES
    assert result.explanation
    if cause != "unknown":
        assert result.evidence


def test_negative_kv_from_parser_fixture(data_dir: Path) -> None:
    # Real: vllm-project/vllm#23278 (dev-008), "Available KV cache memory: -2.14 GiB".
    result = vramplan.diagnose(data_dir / "vllm_logs" / "v1_010_dev008_negative_kv.log")
    assert result.cause == "kv_budget_exhausted"


def _knobs_from_args(args: str) -> dict[str, Any]:
    """`--gpu-memory-utilization 0.9 --max-model-len 8192 --enforce-eager ...` as knobs."""
    knobs: dict[str, Any] = {}
    tokens = args.split()
    i = 0
    while i < len(tokens):
        name = tokens[i].removeprefix("--").replace("-", "_")
        if i + 1 < len(tokens) and not tokens[i + 1].startswith("--"):
            value = tokens[i + 1]
            try:
                knobs[name] = float(value) if "." in value else int(value)
            except ValueError:
                knobs[name] = value
            i += 2
        else:
            knobs[name] = True
            i += 1
    return knobs


def _fixed_launch_outcome(result: Any) -> str:
    """The planner's outcome for the fixed flags on the same model, GPU and tenants."""
    fix, launch = result.fix, result["launch"]
    planned = fix["vllm_argv"][: len(fix["vllm_argv"]) - len(fix["passthrough"])]
    knobs = {**fix["pinned"], **_knobs_from_args(shlex.join(planned))}
    return vramplan.breakdown(
        launch["model"],
        launch["gpu"],
        memory_used_by_others_bytes=fix["memory_used_by_others_bytes"],
        **knobs,
    ).outcome


def test_sampler_warmup_dev032_fix_passes_same_model(diag_dir: Path) -> None:
    result = vramplan.diagnose(diag_dir / "v019_gpt_oss_20b_sampler_warmup.log")
    assert result["launch"]["model"] == "openai/gpt-oss-20b"
    # The log prints total_memory=79.19GiB: the database H100.
    assert result["launch"]["gpu"] == "H100-80GB"
    assert result.fix is not None
    assert result.fix["fits"]
    assert _fixed_launch_outcome(result) == "started"


def test_overshoot_counts_other_tenants(diag_dir: Path) -> None:
    # Real Llama-4-Scout TP4 log: 60.33 of 79.19 GiB free -> 18.86 GiB held by others.
    result = vramplan.diagnose(diag_dir / "v019_llama4_scout_startup_free.log")
    assert result.fix is not None
    assert result.fix["memory_used_by_others_bytes"] == round(18.86 * GIB)
    assert result.fix["pinned"]["tensor_parallel_size"] == 4


def test_overshoot_fix_fits_below_free_fraction() -> None:
    # Reconstructed: Llama-3.1-8B at utilization 0.95 with the startup check's text (the
    # figures of the real Scout log above); the fix must stay under 60.33/79.19 = 0.762.
    log = (
        "(APIServer pid=1) INFO 04-22 01:29:59 [entrypoints/utils.py:233] non-default args: "
        "{'model': 'meta-llama/Llama-3.1-8B-Instruct', 'max_model_len': 8192, "
        "'gpu_memory_utilization': 0.95}\n"
        "(Worker pid=670) ERROR 04-22 01:30:33 [v1/executor/multiproc_executor.py:857] "
        "ValueError: Free memory on device cuda:0 (60.33/79.19 GiB) on startup is less than "
        "desired GPU memory utilization (0.95, 75.23 GiB). Decrease GPU memory utilization or "
        "reduce GPU memory used by other processes.\n"
    )
    result = vramplan.diagnose(log)
    assert result.cause == "gpu_memory_utilization_overshoot"
    assert result.fix is not None
    assert result.fix["fits"]
    utilization = _knobs_from_args(result.fix["vllm_args"])["gpu_memory_utilization"]
    assert utilization <= 60.33 / 79.19
    assert _fixed_launch_outcome(result) == "started"


def test_cudagraph_profiling_fix_is_eager() -> None:
    # Reconstructed: the real frames of the Qwen3.6 hybrid log, for a database model on an
    # RTX 4090 (the GPU given, as the excerpt prints no total).
    log = (
        "non-default args: {'model': 'Qwen/Qwen3-8B', 'max_model_len': 16384, "
        "'gpu_memory_utilization': 0.8}\n"
        "Traceback (most recent call last):\n"
        '  File "gpu_model_runner.py", line 5904, in profile_cudagraph_memory\n'
        "    self._init_minimal_kv_cache_for_profiling()\n"
        "torch.AcceleratorError: CUDA error: out of memory\n"
    )
    result = vramplan.diagnose(log, gpu="RTX-4090")
    assert result.cause == "cudagraph_profiling_oom"
    # The advice the fix reads is data, the same the explanation says in words.
    # In the engine's own flag too; its reason is the explanation (no `why` of its own).
    eager = {"knob": "enforce_eager", "flag": "--enforce-eager", "action": "set", "value": True}
    assert {**eager, "why": None} in result["advice"]
    assert "--enforce-eager" in result.explanation
    assert result.fix is not None
    # Graphs stay when fewer sequences let graph profiling fit (issue 19: the fix keeps the
    # user's launch and lowers what they left at vLLM's default); eager is the fallback.
    if result.fix["pinned"].get("enforce_eager"):
        assert "--enforce-eager" in result.fix["vllm_args"]
    else:
        assert "max_num_seqs" in {c["knob"] for c in result.fix["changed"]}
    assert "--max-model-len 16384" in result.fix["vllm_args"]
    assert "--gpu-memory-utilization 0.80" in result.fix["vllm_args"]
    assert _fixed_launch_outcome(result) == "started"


def test_fix_unavailable_says_why(diag_dir: Path) -> None:
    # The Qwen3.6 models are not in model_specs/: no flags, and the reason names the model.
    result = vramplan.diagnose(
        diag_dir / "reconstructed_qwen36_27b_rtx5090_cudagraph_profiling.log"
    )
    assert result.fix is None
    assert "Qwen/Qwen3.6-27B-AWQ" in result["fix_unavailable"]
    assert vramplan.diagnose(diag_dir / "v019_gemma2_hf_forbidden.log").fix is None


def test_host_kill_fix_reports_host_need(diag_dir: Path) -> None:
    result = vramplan.diagnose(
        "",
        dmesg=diag_dir / "reconstructed_memcg_engine_kill.dmesg",
        model="meta-llama/Llama-3.1-8B-Instruct",
        gpu="H100-80GB",
        host_ram_bytes=16 * GIB,
    )
    assert result.cause == "host_ram_oom_killer"
    assert result["oom_kills"][0]["anon_rss_bytes"] == 30408704 * 1024
    assert result.fix is not None
    assert result.fix["host_ram_required_bytes"] > 0


def test_random_bytes_never_raise() -> None:
    rng = random.Random(12)
    pieces = [
        b"CUDA out of memory",
        b"Killed process 12 (x) anon-rss:1kB",
        b"Traceback (most recent call last)",
        b"non-default args: {'model': ",
        b"\x1b[31m",
        b"\xff\xfe\x00",
        b"\n",
    ]
    for _ in range(200):
        blob = b"".join(
            rng.choice(pieces)
            if rng.random() < 0.3
            else bytes(rng.randrange(256) for _ in range(20))
            for _ in range(rng.randrange(60))
        )
        text = blob.decode("utf-8", "replace")
        result = vramplan.diagnose(text, dmesg=text)
        assert result.cause in diagnose_module.CAUSES
        json.dumps(result.data)


def test_bounded_reading_keeps_head_and_tail(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(diagnose_module, "MAX_READ_BYTES", 64 << 10)
    monkeypatch.setattr(diagnose_module, "HEAD_BYTES", 8 << 10)
    path = tmp_path / "big.log"
    head = b"non-default args: {'model': 'openai/gpt-oss-20b'}\n"
    tail = b"RuntimeError: CUDA out of memory occurred when warming up sampler with 1024 dummy\n"
    path.write_bytes(head + b"x" * 100 + b"\n" + (b"filler line\n" * 200_000) + tail)
    text = diagnose_module.read_text(path, what="log")
    assert len(text.encode()) <= (64 << 10) + 1
    assert text.startswith(head.decode())
    assert text.endswith(tail.decode())
    result = vramplan.diagnose(path)
    assert result.cause == "sampler_warmup_oom"
    assert result["figures"]["model"] == "openai/gpt-oss-20b"


def _run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vramplan", *args],
        capture_output=True,
        text=True,
        input=stdin,
        check=False,
    )


def test_cli_diagnose_json_and_text(diag_dir: Path) -> None:
    out = _run("diagnose", str(diag_dir / "v019_gpt_oss_20b_sampler_warmup.log"), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["cause"] == "sampler_warmup_oom"
    assert data["fix"]["vllm_args"].startswith("--gpu-memory-utilization")
    text = _run("diagnose", str(diag_dir / "v019_gpt_oss_20b_sampler_warmup.log"))
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("cause: sampler_warmup_oom")
    assert re.search(r"vllm serve openai/gpt-oss-20b --gpu-memory-utilization", text.stdout)


def test_cli_diagnose_dmesg_from_stdin(diag_dir: Path) -> None:
    dmesg = (diag_dir / "geak398_memcg_kill.dmesg").read_text()
    out = _run(
        "diagnose",
        str(diag_dir / "v019_llama8b_started.log"),
        "--dmesg",
        "-",
        "--json",
        stdin=dmesg,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["cause"] == "host_ram_oom_killer"
    assert data["oom_kills"][0]["cgroup"] is True


def test_cli_diagnose_errors(tmp_path: Path) -> None:
    out = _run("diagnose", str(tmp_path / "missing.log"))
    assert out.returncode == 2
    assert "missing.log: cannot read the log" in out.stderr
    both = _run("diagnose", "-", "--dmesg", "-")
    assert both.returncode == 2
    assert "only one of LOG and --dmesg" in both.stderr


def test_fix_carries_the_logged_flags_with_no_memory_effect(diag_dir: Path) -> None:
    # dev-032's real log, its "non-default args" line extended with server flags as a user
    # would pass them (vLLM logs them in the same dict); the log's own 'enable_prefix_caching':
    # False is one too. The fix command keeps them all, in vLLM's argv form: a list argument
    # as separate words (nargs="+"), not the model (the command's own word).
    text = (diag_dir / "v019_gpt_oss_20b_sampler_warmup.log").read_text()
    logged = "'enable_prefix_caching': False}"
    assert logged in text
    extra = "'host': '0.0.0.0', 'served_model_name': ['gpt', 'oss'], 'tool_call_parser': 'openai'"
    result = vramplan.diagnose(text.replace(logged, f"'enable_prefix_caching': False, {extra}}}"))
    fix = result.fix
    assert fix is not None
    carried = ["--no-enable-prefix-caching", "--host", "0.0.0.0"]
    carried += ["--served-model-name", "gpt", "oss", "--tool-call-parser", "openai"]
    assert fix["passthrough"] == carried
    assert shlex.split(fix["vllm_args"])[-len(carried) :] == carried
    assert "--model" not in fix["vllm_argv"]
    for remedy in fix["remedies"]:
        assert shlex.split(remedy["flags"])[-len(carried) :] == carried
    # An override replaces the logged value, once.
    result = vramplan.diagnose(
        text.replace(logged, f"'enable_prefix_caching': False, {extra}}}"),
        overrides={"tool_call_parser": "hermes"},
    )
    assert result.fix is not None
    words = result.fix["passthrough"]
    assert words.count("--tool-call-parser") == 1
    assert words[-2:] == ["--tool-call-parser", "hermes"]


def test_seed_003_runtime_oom_fix_keeps_what_ran(data_dir: Path) -> None:
    """Seed 003 (tests/data/seeds/003_burst.log): an OOM under a burst after a healthy start,
    vLLM 0.5/0.6 era, no flags in the log. The failed request places it at run time; the fix is
    planned for the release the user names (the log prints none) and never takes more of the
    GPU than the 0.90 default that ran (raising it would make a runtime OOM likelier)."""
    log = (data_dir / "seeds" / "003_burst.log").read_text()
    result = vramplan.diagnose(
        log,
        model="Qwen/Qwen2-7B-Instruct",  # the story's 72B has no spec here; the rule is the same
        gpu="A100-80GB",
        engine_version="0.6.0",
        overrides={"tensor_parallel_size": 4},
    )
    assert result["cause"] == "runtime_oom"
    assert result["launch"]["engine_version"] == "0.6.0"
    assert result.fix is not None
    argv = result.fix["vllm_argv"]
    assert float(argv[argv.index("--gpu-memory-utilization") + 1]) <= 0.90
    assert "--tensor-parallel-size" in argv
    out = _run(
        "diagnose",
        str(data_dir / "seeds" / "003_burst.log"),
        "--model",
        "Qwen/Qwen2-7B-Instruct",
        "--gpu",
        "A100-80GB",
        "--engine-version",
        "0.6.0",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["launch"]["engine_version"] == "0.6.0"


def test_the_sampler_the_log_names_is_the_one_evaluated(diag_dir: Path, tmp_path: Path) -> None:
    # The V1 worker prints which top-k/top-p sampler it built (topk_topp_sampler.py). With
    # "Using FlashInfer ..." (VLLM_USE_FLASHINFER_SAMPLER=1, or 0.8-0.12 with FlashInfer
    # installed) the profile pass takes 12 B per logit, not the native sort's 36.9 or 0.19's
    # Triton 13.2: the launch diagnose evaluates must say so, and stay as it was without the line.
    line = (
        "(EngineCore_DP0 pid=1) INFO 04-22 01:30:01 [topk_topp_sampler.py:40] "
        "Using FlashInfer for top-p & top-k sampling.\n"
    )
    log = (diag_dir / "v019_gpt_oss_20b_sampler_warmup.log").read_text()
    path = tmp_path / "with_sampler_line.log"
    path.write_text(line + log)
    result = vramplan.diagnose(path)
    assert result["cause"] == "sampler_warmup_oom"
    assert result["launch"]["vllm_use_flashinfer_sampler"] == "1"
    plain = vramplan.diagnose(diag_dir / "v019_gpt_oss_20b_sampler_warmup.log")
    assert "vllm_use_flashinfer_sampler" not in plain["launch"]


def test_seed_003_fix_keeps_the_batch_limits_given_on_top(data_dir: Path) -> None:
    """The article behind seed 003 serves with --max-num-seqs 64 --max-num-batched-tokens 24576
    and chunked prefill: flags given after the log are what ran, so the replay and the fix keep
    them (the diagnosis advises lowering them only if nothing fits with them)."""
    out = _run(
        "diagnose",
        str(data_dir / "seeds" / "003_burst.log"),
        "--model",
        "Qwen/Qwen2-7B-Instruct",
        "--gpu",
        "A100-80GB",
        "--engine-version",
        "0.6.0",
        "--tensor-parallel-size",
        "4",
        "--max-num-seqs",
        "64",
        "--max-num-batched-tokens",
        "24576",
        "--enable-chunked-prefill",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    fix = json.loads(out.stdout)["fix"]
    argv = fix["vllm_argv"]
    assert argv[argv.index("--max-num-seqs") + 1] == "64"
    assert argv[argv.index("--max-num-batched-tokens") + 1] == "24576"
    assert fix["drops"] == []


def test_a_patch_release_log_is_judged_with_its_own_row(data_dir: Path) -> None:
    """tests/data/vllm_logs/v0102_qwen3_14b_startup_free_memory.log prints "Initializing a V1 LLM
    engine (v0.10.2)". engines.yaml has a 0.10.2 row: it drops the fallback to the V0 engine below
    compute capability 8.0 that 0.8.0-0.10.1 have (docs/engine-versions.md). The diagnosis plans
    at 0.10.2, so the launch on a T4 (7.5) is the V1 engine; read as 0.10.0 (the patch dropped)
    it would be judged as V0."""
    log = data_dir / "vllm_logs" / "v0102_qwen3_14b_startup_free_memory.log"
    launch = vramplan.diagnose(log, gpu="H100-80GB")["launch"]
    assert launch["engine_version"] == "0.10.2"
    small = {"model": "Qwen/Qwen2.5-3B", "gpu": "T4", "max_model_len": 4096}
    as_logged = vramplan.breakdown(**small, engine_version=launch["engine_version"])
    assert as_logged.engine_era.startswith("v1-early")
    assert vramplan.breakdown(**small, engine_version="0.10.0").engine_era == "v0"
