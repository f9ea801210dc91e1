"""Planning for traffic from Python and the CLI: workloads read from what users have, the same
answer through every surface, and the runtime-OOM headroom fed back into a plan."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import vramplan
from vramplan import _core, cli
from vramplan.workload import load_workload, make_workload

DATA = Path(__file__).resolve().parents[1] / "data"


def test_a_fixed_workload_holds_the_pool_over_its_blocks(tmp_path: Path) -> None:
    """2048 + 512-token requests hold cdiv(2559, 16) = 160 blocks each at their peak."""
    trace = tmp_path / "trace.csv"
    trace.write_text("prompt_tokens,output_tokens\n" + "2048,512\n" * 5)
    plan = vramplan.plan(vramplan.DEFAULT_MODEL, "H100", context=8192, workload=trace)
    w = plan.workload
    assert w["blocks_p50"] == w["blocks_p99"] == 160
    assert w["pool_blocks"] == plan.breakdown.num_blocks - 1
    assert w["requests_held_p50"] == w["pool_blocks"] // 160
    assert plan.max_num_seqs == min(1024, w["requests_held_p50"])


def test_workload_files_in_every_form_give_the_same_shapes(tmp_path: Path) -> None:
    rows = [(1000, 100), (1000, 100), (3000, 500)]
    csv_file = tmp_path / "w.csv"
    csv_file.write_text("input_tokens,completion_tokens\n" + "".join(f"{p},{o}\n" for p, o in rows))
    histogram = tmp_path / "h.csv"
    histogram.write_text("prompt_len,output_len,count\n1000,100,2\n3000,500,1\n")
    jsonl = tmp_path / "w.jsonl"
    jsonl.write_text(
        "".join(json.dumps({"prompt_tokens": p, "output_tokens": o}) + "\n" for p, o in rows)
    )
    bench = tmp_path / "bench.json"
    bench.write_text(
        json.dumps({"input_lens": [r[0] for r in rows], "output_lens": [r[1] for r in rows]})
    )
    expected = [(1000, 100, pytest.approx(2 / 3)), (3000, 500, pytest.approx(1 / 3))]
    for path in (csv_file, histogram, jsonl, bench):
        assert load_workload(path).shapes == expected, path.name
    listed = make_workload([(1000, 100, 2), (3000, 500)])
    assert listed is not None
    assert listed.shapes == expected


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("prompt_tokens,output_tokens\n1000,-5\n", "row 1: output_tokens"),
        ("prompt_tokens,output_tokens\n10x,5\n", "row 1: prompt_tokens"),
        ("prompt_tokens,answer\n10,5\n", "columns"),
        ("prompt_tokens,output_tokens\n", "empty workload"),
        ('{"prompt_tokens": 5, "output_tokens": 1}\n{oops\n', "line 2"),
    ],
)
def test_a_bad_workload_file_names_the_file_row_and_field(
    tmp_path: Path, text: str, field: str
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(_core.ConfigError) as err:
        load_workload(path)
    assert str(path) in str(err.value)
    assert field in str(err.value)


def test_workload_arguments_are_checked_by_their_python_names() -> None:
    with pytest.raises(_core.ConfigError, match="output_tokens"):
        make_workload(prompt_tokens=(100, 200))
    with pytest.raises(_core.ConfigError, match="p50 <= p99"):
        make_workload(prompt_tokens="300,200", output_tokens="10,20")
    with pytest.raises(_core.ConfigError, match="preemption_target"):
        make_workload(prompt_tokens=(100, 200), output_tokens=(10, 20), preemption_target=1.5)
    with pytest.raises(_core.ConfigError, match="prefix_tokens"):
        make_workload(prefix_tokens=100)
    # A preemption target without a workload would change nothing: refused, not ignored.
    with pytest.raises(_core.ConfigError, match="no workload given") as error:
        vramplan.plan("Qwen/Qwen3-8B", "L4", context=16384, preemption_target=0.2)
    assert error.value.field == "preemption_target"
    with pytest.raises(_core.ConfigError, match="request_seconds"):
        make_workload(prompt_tokens=(1, 2), output_tokens=(1, 2), request_seconds=math.nan)


def test_preemption_curve_rises_and_the_choice_is_the_last_under_target() -> None:
    plan = vramplan.plan(
        "Qwen/Qwen3-8B", "L4", context=16384, prompt_tokens=(1000, 8000), output_tokens=(200, 1000)
    )
    chosen = plan.max_num_seqs
    below, at, above = plan.preemption_curve([max(1, chosen // 2), chosen, chosen + 1])
    assert below <= at <= plan.workload["preemption_target"] < above
    assert plan.workload["max_num_seqs_for_target"] == chosen


def test_preemption_plot_marks_the_choice() -> None:
    pytest.importorskip("matplotlib")
    plan = vramplan.plan(
        "Qwen/Qwen3-8B", "L4", context=16384, prompt_tokens=(1000, 8000), output_tokens=(200, 1000)
    )
    figure = plan.plot_preemption()
    ax = figure.axes[0]
    assert ax.get_xlabel().startswith("max_num_seqs")
    assert any(line.get_label() == f"max_num_seqs {plan.max_num_seqs}" for line in ax.lines)


def test_littles_law_bound_is_resident_requests_over_seconds() -> None:
    plan = vramplan.plan(
        "Qwen/Qwen3-8B",
        "L40S",
        context=8192,
        prompt_tokens=(500, 2000),
        output_tokens=(200, 800),
        request_seconds=10,
    )
    w = plan.workload
    resident = min(plan.max_num_seqs, w["requests_held_p50"])
    assert w["requests_per_second_bound"] == pytest.approx(resident / 10)


def test_python_and_cli_search_the_same_splits(capsys: pytest.CaptureFixture[str]) -> None:
    """num_gpus=2 without a split: Python searches TP x PP as the CLI does."""
    from_python = vramplan.plan("Qwen/Qwen3-32B", "RTX-4090", num_gpus=2, context=32768)
    assert from_python.split_search is not None
    assert cli.main(
        [
            "plan",
            "Qwen/Qwen3-32B",
            "--gpu",
            "RTX-4090",
            "--num-gpus",
            "2",
            "--context",
            "32768",
            "--json",
        ]
    ) in (0, 1)
    from_cli = json.loads(capsys.readouterr().out)
    assert from_cli["split_search"] == from_python.split_search
    assert from_cli["vllm_args"] == from_python.to_vllm_args()


def test_cli_prints_the_workload_and_the_capacity_line(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(
        [
            "plan",
            "Qwen/Qwen3-8B",
            "--gpu",
            "L40S",
            "--context",
            "16384",
            "--prompt-tokens",
            "1000,6000",
            "--output-tokens",
            "200,1500",
            "--prefix-tokens",
            "512",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "Maximum concurrency for 16384 tokens per request" in out
    assert "preemption:" in out
    assert "shared prefix's 32 blocks once" in out  # 512 // 16


def test_a_runtime_oom_plan_keeps_what_the_log_lacked() -> None:
    """vllm#34643: "Tried to allocate 1.71 GiB ... of which 1.52 GiB is free" while serving
    logprobs. The plan keeps free, beside its budget, what that launch left plus the 0.19 GiB it
    lacked, so its utilization is at least 0.19 GiB / total below the one that ran."""
    result = vramplan.diagnose(
        DATA / "diagnose" / "vllm34643_runtime_logprobs_oom.log", model="Qwen/Qwen3-4B", gpu="L4"
    )
    assert result["cause"] == "runtime_oom"
    fix = result.fix
    assert fix is not None
    total = vramplan.load_gpu("L4").total_memory_bytes
    # The log states no utilization: the release's default ran.
    ran = vramplan.breakdown("Qwen/Qwen3-4B", "L4")["config"]["gpu_memory_utilization"]
    planned = float(fix["vllm_argv"][fix["vllm_argv"].index("--gpu-memory-utilization") + 1])
    lacked = round((1.71 - 1.52) * (1 << 30))
    assert planned <= ran - lacked / total + 1e-9
    assert fix["runtime_headroom_bytes"] > 0


def test_seed_003_fix_keeps_the_headroom_and_never_raises_the_utilization() -> None:
    """Seed 003: a burst OOM after a healthy start, no sizes in the log (the 72B of the story
    has no spec; the rule is the model's own). The plan keeps at least what the failing launch
    left outside its 0.90 budget."""
    result = vramplan.diagnose(
        DATA / "seeds" / "003_burst.log",
        model="Qwen/Qwen2-7B-Instruct",
        gpu="A100-80GB",
        engine_version="0.6.0",
        overrides={"tensor_parallel_size": 4},
    )
    assert result["cause"] == "runtime_oom"
    fix = result.fix
    assert fix is not None
    planned = float(fix["vllm_argv"][fix["vllm_argv"].index("--gpu-memory-utilization") + 1])
    assert planned <= 0.90
    total = vramplan.load_gpu("A100-80GB").total_memory_bytes
    context = (
        vramplan.breakdown(
            "Qwen/Qwen2-7B-Instruct", "A100-80GB", tensor_parallel_size=4, engine_version="0.6.0"
        )
        .ranks[0]
        .cuda_context_bytes
    )
    left = total - math.ceil(0.9 * total) - context
    assert fix["runtime_headroom_bytes"] == left - _core.DEFAULT_SAFETY_MARGIN_BYTES


@pytest.mark.parametrize(
    ("flag", "version"),
    [
        ("--cpu-offload-gb", "0.33.0"),
        ("--swap-space", "0.11.0"),
        ("--kv-offloading-size", "0.33.0"),
    ],
)
def test_check_scales_gib_flags_once(
    capsys: pytest.CaptureFixture[str], flag: str, version: str
) -> None:
    """`check -- vllm serve M --cpu-offload-gb 4` plans 4 GiB, not 4 x 2^60 bytes (refused as
    out of range before): seed 003's production script passes --swap-space 8, and every
    --cpu-offload-gb remedy vramplan prints must be checkable."""
    argv = ["check", "--gpu", "L4", "--engine-version", version, "--json", "--"]
    code = cli.main([*argv, "vllm", "serve", "Qwen/Qwen3-8B", flag, "4"])
    data = json.loads(capsys.readouterr().out)
    assert code in (0, 1)
    assert f"{flag} 4.00" in data["vllm_args"]
    if flag == "--cpu-offload-gb":
        # vLLM moves whole parameters until 4 GiB are reached: 11 Qwen3-8B layers of 368 MiB
        # + 16,896 B of norms (4,048 MiB), then layer 12's 48 MiB qkv_proj reaches 4,096 MiB.
        plain = vramplan.breakdown("Qwen/Qwen3-8B", "L4", engine_version=version)
        offloaded = data["breakdown"]["ranks"][0]["weights_bytes"]
        assert plain.ranks[0].weights_bytes - offloaded == (4 << 30) + 11 * 16_896
