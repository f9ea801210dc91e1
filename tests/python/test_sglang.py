"""SGLang through Python and the CLI: engine="sglang" in the API, `--engine sglang` commands,
SGLang's argv, diagnose and validate on real log excerpts (tests/data/sglang/logs, provenance
in tests/data/README.md). Expected numbers are the logs' own figures or derived by hand here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import vramplan
from vramplan import _render, api, sglang
from vramplan.diagnose import diagnose as diagnose_log
from vramplan.engines import engine_named, without_engine
from vramplan.validate import validate_sglang_log as validate

LOGS = Path(__file__).resolve().parents[1] / "data" / "sglang" / "logs"
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
GIB = 1 << 30


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vramplan", *args], capture_output=True, text=True, check=False
    )


def test_default_fraction_h100_tp2_is_the_user_report() -> None:
    # 0.5.23 on H100 (81559 MiB) at TP=2, chunk 8192, max_bs 256, 58 prefill sizes:
    # reserve = 512 + 1.5 x 8192 + 128 x 2 + 2 x 256 + 8 x 58 = 14032 MiB, below the 10 GiB
    # floor? no (14032 > 10240); f = round((81559 - 14032) / 81559, 3) = round(0.82795, 3)
    # = 0.828, the value a user reported (issue 23).
    result = api.breakdown(MODEL, "H100-80GB", engine="sglang", tp_size=2)
    assert result["mem_fraction_static"] == 0.828
    assert result["mem_fraction_static_default"] is True
    assert result["prefill_graph_count"] == 58
    assert result["sglang_version"] == result["rules_release"] == "0.5.23"
    assert result["version_note"] is None


def test_kv_pool_of_a_given_fraction_by_hand() -> None:
    # B = 85030076416 (H100 CUDA total) - 311385129 (context) = 84718691287 B at TP=1;
    # slack = round(B x 0.2) = 16943738257; rest = B - W - slack; Llama-3.1-8B's cell is
    # 8 KV heads x (128 + 128) x 2 B x 32 layers = 131072 B; tokens = floor(rest / cell).
    result = api.breakdown(MODEL, "H100-80GB", engine="sglang", mem_fraction_static=0.8)
    baseline = 85030076416 - 311385129
    assert result["baseline_free_bytes"] == baseline
    assert result["slack_bytes"] == round(baseline * 0.2)
    rest = baseline - result["weights_bytes"] - round(baseline * 0.2)
    assert result["cell_bytes"] == 8 * 256 * 2 * 32
    assert result["max_total_num_tokens"] == rest // 131072
    assert result["mem_fraction_static_default"] is False


def test_vllm_knob_names_are_refused_naming_sglangs() -> None:
    with pytest.raises(vramplan.Error, match="mem_fraction_static"):
        api.plan(MODEL, "H100-80GB", engine="sglang", gpu_memory_utilization=0.9)
    with pytest.raises(vramplan.Error, match="context_length"):
        api.breakdown(MODEL, "H100-80GB", engine="sglang", max_model_len=8192)
    # Arguments only the vLLM planner takes are refused, not ignored.
    with pytest.raises(vramplan.Error, match="num_gpus"):
        api.plan(MODEL, "H100-80GB", engine="sglang", num_gpus=2)  # type: ignore[call-overload]
    with pytest.raises(vramplan.Error, match="engine"):
        api.plan(MODEL, "H100-80GB", engine="tgi")  # type: ignore[call-overload]


def test_older_release_says_whose_rules_were_assumed() -> None:
    result = api.breakdown(MODEL, "H100-80GB", engine="sglang", sglang_version="0.4.9")
    assert result["rules_release"] == "0.4.10.post2"
    assert "0.4.10.post2" in result["version_note"]
    assert "assumed" in result["version_note"]
    text = sglang.breakdown_text(result.data)
    assert "(SGLang 0.4.9, rules read from the 0.4.10.post2 wheel)" in text.splitlines()[0]
    assert "assumed" in text.splitlines()[1]


def test_plan_renders_through_the_descriptor() -> None:
    planned = api.plan(MODEL, "H100-80GB", engine="sglang", tp_size=2, context_length=32768)
    assert planned.fits
    f = planned["safe_mem_fraction_static"]
    assert planned.to_argv() == [
        "--tp-size",
        "2",
        "--mem-fraction-static",
        f"{f:.3f}",
        "--context-length",
        "32768",
    ]
    assert planned.launch_line == (
        f"python -m sglang.launch_server --model-path {MODEL} " + " ".join(planned.to_argv())
    )
    assert planned.to_engine_kwargs() == {
        "model_path": MODEL,
        "tp_size": 2,
        "mem_fraction_static": f,
        "context_length": 32768,
    }

    # The planned f leaves the safety margin in the slack; a thousandth more does not (the
    # solver's own check, re-asked through the breakdown's figures).
    def spare(fraction: float) -> int:
        b = api.breakdown(
            MODEL,
            "H100-80GB",
            engine="sglang",
            tp_size=2,
            context_length=32768,
            mem_fraction_static=fraction,
        )
        assert b.started
        return int(b["free_after_graphs_bytes"]) - int(b["activation_bytes"])

    assert spare(f) >= 512 << 20 > spare(f + 0.001)
    assert planned.safety_margin_bytes == 512 << 20
    assert "over-predicted by up to 8.8%" in planned.error_band  # sgl-r01, docs/sglang.md


def test_given_fraction_is_kept_and_remedies_are_offered() -> None:
    kept = api.plan("Qwen/Qwen3-8B", "L40S", engine="sglang", mem_fraction_static=0.7)
    assert kept.planned["mem_fraction_static"] == 0.7
    assert kept.to_argv() == ["--mem-fraction-static", "0.700"]
    # Qwen3-32B's 65.5 GB of bf16 weights do not fit an L40S at any f; TP 2 does.
    tight = api.plan("Qwen/Qwen3-32B", "L40S", engine="sglang")
    assert not tight.fits
    fitting = [r for r in tight.remedies if r["fits"]]
    assert fitting
    assert fitting[0]["change"] == "--tp-size 2"
    assert "--tp-size 2" in fitting[0]["flags"]


def test_parse_command_reads_sglangs_argv() -> None:
    launch = sglang.parse_command(
        [
            "python",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "Qwen/Qwen3-8B",
            "--tp",
            "2",
            "--mem-fraction-static=0.85",
            "--disable-cuda-graph",
            "--enable-metrics",
            "--log-level",
            "info",
        ]
    )
    assert launch.model_path == "Qwen/Qwen3-8B"
    assert launch.knobs == {"tp_size": 2, "mem_fraction_static": 0.85, "disable_cuda_graph": True}
    assert launch.unmodelled == ["--enable-metrics", "--log-level info"]
    with pytest.raises(vramplan.Error, match="model"):
        sglang.parse_command(["python", "-m", "sglang.launch_server", "--tp", "2"])
    with pytest.raises(vramplan.Error, match="not an SGLang launch line"):
        sglang.parse_command(["vllm", "serve", "m"])


def test_engine_flag_is_read_before_the_launch_words() -> None:
    assert engine_named(["plan", "--engine", "sglang"]) == "sglang"
    assert engine_named(["plan", "--engine=vllm"]) == "vllm"
    assert engine_named(["check", "--", "python", "-m", "sglang.launch_server"]) == "sglang"
    assert engine_named(["check", "--", "vllm", "serve", "m", "--engine", "sglang"]) == "vllm"
    assert without_engine(["plan", "--engine", "vllm", "m"]) == ["plan", "m"]


def diagnose(text: str) -> Any:
    """SGLang's diagnosis, through the one diagnose every engine takes."""
    return diagnose_log(text, engine="sglang")


def test_diagnose_weights_leave_no_memory_r08() -> None:
    # sgl-r08: "avail mem=12.25 GB, mem usage=125.65 GB" then 0.5.23's "Loaded weights leave no
    # GPU memory". B ~ 12.25 + 125.65 = 137.90 GiB; the pool needs f > 1 - 12.25 / 137.90 =
    # 0.91117; advised with 0.02 of margin, rounded up to the hundredth: 0.94.
    result = diagnose((LOGS / "sgl-r08.log").read_text())
    assert result["fix_unavailable"]  # SGLang plans no fix yet: its advice carries the values
    assert result["cause"] == "weights_leave_no_memory"
    first = result["advice"][0]
    assert (first["knob"], first["flag"], first["action"]) == (
        "mem_fraction_static",
        "--mem-fraction-static",
        "raise",
    )
    assert first["value"] == 0.94
    assert "0.9112" in first["why"]


def test_diagnose_graph_capture_oom_advises_sglang_flags() -> None:
    log = (
        "[2025-01-01 00:00:00 TP0] Load weight begin. avail mem=78.50 GB\n"
        "server_args=ServerArgs(model_path='m', tp_size=1, mem_fraction_static=0.9, "
        "cuda_graph_max_bs=256)\n"
        "[2025-01-01 00:00:09 TP0] Capture cuda graph begin. This can take up to several "
        "minutes.\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB.\n"
        "Exception: Capture cuda graph failed: CUDA out of memory.\n"
    )
    result = diagnose(log)
    assert result["cause"] == "oom_cuda_graph_capture"
    by_knob = {a["knob"]: a for a in result["advice"]}
    # (1.50 + 0.5) GiB / 78.50 GiB = 0.0255 below 0.9: 0.8745 floored to 0.87.
    assert by_knob["mem_fraction_static"]["value"] == 0.87
    assert by_knob["cuda_graph_max_bs"]["value"] == 128
    assert by_knob["disable_cuda_graph"]["flag"] == "--disable-cuda-graph"


def test_validate_r01_against_its_log_figures() -> None:
    # sgl-r01 (0.4.3.post4, QwQ-32B = Qwen2.5-32B's shape, 4x L4, TP=4): the measured column is
    # the log's own figures; max_running_requests 2049 is exact by the 0.4.x pool rule.
    result = validate(
        LOGS / "sgl-r01.log", model="Qwen/Qwen2.5-32B", gpu="L4", sglang_version="0.4.3"
    )
    rows = {row["term"]: row for row in result["terms"]}
    assert rows["max_total_num_tokens"]["measured"] == 46611
    assert rows["weights"]["measured"] == 15.54
    assert rows["max_running_requests"]["measured"] == rows["max_running_requests"]["predicted"]
    assert result["outcome"] == result["verdict"] == "started"
    # The weights' error (-1.6 %) is within 2 %; the token error follows from it (docs/sglang.md).
    assert abs(rows["weights"]["error"]) < 0.02


def test_cli_flags_check_and_vllm_unchanged() -> None:
    out = run("flags", "--engine", "sglang", MODEL, "--gpu", "H100-80GB", "--tp", "2")
    assert out.returncode == 0, out.stderr
    planned = api.plan(MODEL, "H100-80GB", engine="sglang", tp_size=2)
    assert out.stdout.split() == planned.to_argv()
    out = run(
        "check",
        "--gpu",
        "H100-80GB",
        "--json",
        "--",
        "python",
        "-m",
        "sglang.launch_server",
        "--model-path",
        MODEL,
        "--tp-size",
        "2",
        "--mem-fraction-static",
        "0.9",
        "--enable-metrics",
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert (data["tp_size"], data["mem_fraction_static"]) == (2, 0.9)
    assert data["unmodelled_flags"] == ["--enable-metrics"]
    assert "--enable-metrics" in out.stderr
    out = run("breakdown", "--engine", "sglang", MODEL, "--gpu-memory-utilization", "0.9")
    assert out.returncode == 2
    assert "--mem-fraction-static" in out.stderr
    assert "Traceback" not in out.stderr
    # `--engine vllm` is the default spelled out: the same flag line.
    plain = run("flags", MODEL, "--gpu", "H100-80GB")
    named = run("flags", "--engine", "vllm", MODEL, "--gpu", "H100-80GB")
    assert plain.returncode == named.returncode == 0
    assert plain.stdout == named.stdout


def test_cli_diagnose_and_validate_on_real_logs() -> None:
    out = run("diagnose", "--engine", "sglang", str(LOGS / "sgl-r08.log"), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["cause"] == "weights_leave_no_memory"
    out = run(
        "validate",
        "--engine",
        "sglang",
        str(LOGS / "sgl-r01.log"),
        "--model",
        "Qwen/Qwen2.5-32B",
        "--gpu",
        "L4",
        "--sglang-version",
        "0.4.3",
    )
    assert out.returncode == 0, out.stderr
    assert "max_total_num_tokens" in out.stdout
    assert "46611" in out.stdout


def test_validate_says_when_the_log_prints_no_launch() -> None:
    # sgl-r06 quotes the pool and graph lines only: no server_args, so the replay is SGLang's
    # defaults and the result says so rather than comparing a different launch silently.
    result = validate(
        LOGS / "sgl-r06.log", model="Qwen/Qwen2.5-7B", gpu="B200", sglang_version=None
    )
    assert result["notes"]
    assert "mem_fraction_static" in result["notes"][0]
    full = validate(
        LOGS / "sgl-r01.log", model="Qwen/Qwen2.5-32B", gpu="L4", sglang_version="0.4.3"
    )
    assert full["notes"] == []


@pytest.mark.parametrize(
    ("fraction", "verdict"),
    [(0.90, "started"), (0.97, "oom_first_prefill"), (0.985, "oom_cuda_graph_capture")],
)
def test_slack_thresholds_agree_with_the_verdict(fraction: float, verdict: str) -> None:
    # Llama-3.1-70B at TP=2 on H100: the slack B x (1 - f) shrinks as f grows; the breakdown
    # says which OOM follows below which slack, and the verdict must be the one it names.
    result = api.breakdown(
        "meta-llama/Llama-3.1-70B-Instruct",
        "H100-80GB",
        engine="sglang",
        tp_size=2,
        mem_fraction_static=fraction,
    )
    data = result.to_dict()
    capture = data["req_to_token_bytes"] + data["decode_graph_bytes"] + data["prefill_graph_bytes"]
    prefill = capture + data["activation_bytes"]
    slack = data["slack_bytes"]
    expected = (
        "oom_cuda_graph_capture"
        if slack < capture
        else "oom_first_prefill"
        if slack < prefill
        else "started"
    )
    assert expected == result.verdict == verdict
    assert "oom_first_prefill" in _render.slack_consequence(data)
