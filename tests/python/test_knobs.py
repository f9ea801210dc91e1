"""The knob registry: one declaration per knob drives the bindings, the CLI and the flags."""

from __future__ import annotations

import math
import shlex

import pytest
import vramplan
from vramplan import cli

NUMERIC = [k for k in vramplan.KNOBS if k["type"] in ("int", "float", "bytes")]


def test_registry_lists_every_knob_once_with_help() -> None:
    names = [k["name"] for k in vramplan.KNOBS]
    assert len(names) == len(set(names))
    assert {"gpu_memory_utilization", "max_model_len", "max_num_seqs", "block_size"} <= set(names)
    assert all(k["help"] and k["default"] for k in vramplan.KNOBS)


@pytest.mark.parametrize("knob", [k["name"] for k in NUMERIC])
@pytest.mark.parametrize("bad", [-1, math.nan, "4096", 2**63, [1]])
def test_numeric_knobs_refuse_minus_one_nan_strings_and_overflow(knob: str, bad: object) -> None:
    with pytest.raises(vramplan.ConfigError) as info:
        vramplan.breakdown("meta-llama/Llama-3.1-8B", "H100", **{knob: bad})
    assert info.value.field == knob


def test_none_means_unset_and_takes_the_engine_default() -> None:
    b = vramplan.breakdown("meta-llama/Llama-3.1-8B", "H100", gpu_memory_utilization=None)
    assert b.gpu_memory_utilization == 0.92  # the newest engine row's default


# A value per rendered knob, and the flag text vLLM takes for it (GiB flags in GiB).
SAMPLES = {
    "gpu_memory_utilization": (0.85, "--gpu-memory-utilization 0.85"),
    "max_model_len": (8192, "--max-model-len 8192"),
    "max_num_seqs": (32, "--max-num-seqs 32"),
    "max_num_batched_tokens": (4096, "--max-num-batched-tokens 4096"),
    "tensor_parallel_size": (2, "--tensor-parallel-size 2"),
    "kv_cache_dtype": ("fp8", "--kv-cache-dtype fp8"),
    "dtype": ("float16", "--dtype float16"),
    "block_size": (32, "--block-size 32"),
    "enforce_eager": (True, "--enforce-eager"),
    "max_loras": (2, "--enable-lora --max-loras 2"),
    "cpu_offload_bytes": (3 << 30, "--cpu-offload-gb 3.00"),
    "safetensors_load_strategy": ("eager", "--safetensors-load-strategy eager"),
}


@pytest.mark.parametrize("knob", sorted(SAMPLES))
def test_knob_round_trips_cli_core_flag(knob: str) -> None:
    value, flag_text = SAMPLES[knob]
    spec = next(k for k in vramplan.KNOBS if k["name"] == knob)
    flag = spec["flag"]
    if spec["type"] == "bool":
        argv = [flag]
    elif spec["type"] == "bytes":
        argv = [flag, str(value / spec["flag_unit_bytes"])]
    else:
        argv = [flag, str(value)]
    args = cli.build_parser().parse_args(
        ["plan", "meta-llama/Llama-3.1-8B", "--num-gpus", "2", *argv]
    )
    knobs = cli._knobs(args)  # CLI -> the core's units
    assert knobs == {knob: value}
    plan = vramplan.plan("meta-llama/Llama-3.1-8B", "H100", num_gpus=2, **knobs)
    assert flag_text in plan.to_vllm_args()  # core -> `vllm serve` flag
    rendered = shlex.split(plan.to_vllm_args())
    assert rendered[0] == "--gpu-memory-utilization"


@pytest.mark.parametrize(
    ("flag", "knob"),
    [
        ("--host-mem-free-gb", "host_mem_free_bytes"),
        ("--host-mem-available-gb", "host_mem_available_bytes"),
        ("--lmcache-local-cpu-gb", "lmcache_local_cpu_bytes"),
    ],
)
def test_planner_only_gib_flags_are_named_in_gib(flag: str, knob: str) -> None:
    # A knob with no engine flag takes its name as the flag; one that takes GiB says so (as
    # vLLM's --cpu-offload-gb), never "-bytes" for a figure in GiB.
    args = cli.build_parser().parse_args(["plan", "Qwen/Qwen3-8B", "--gpu", "GB10", flag, "2.5"])
    assert cli._knobs(args)[knob] == round(2.5 * 2**30)
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(
            ["plan", "Qwen/Qwen3-8B", "--" + knob.replace("_", "-"), "2.5"]
        )
