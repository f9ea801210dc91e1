"""The Python surface hands the right arguments to the C++ core and reshapes, never computes."""

from __future__ import annotations

import json

import pytest
import vramplan
from vramplan import _core


def test_database_lists_models_and_gpus() -> None:
    assert "meta-llama/Llama-3.1-8B-Instruct" in vramplan.models()
    assert "H100-80GB" in vramplan.gpus()
    spec = vramplan.load_model("meta-llama/Meta-Llama-3.1-8B")  # an alias
    assert spec.id == "meta-llama/Llama-3.1-8B-Instruct"
    assert spec.parameter_count() == 8_030_261_248


def test_breakdown_is_exactly_the_core_result() -> None:
    spec = vramplan.load_model(vramplan.DEFAULT_MODEL)
    gpu = vramplan.load_gpu(vramplan.DEFAULT_GPU)
    knobs = {"max_model_len": 8192, "engine_version": "0.19.0", "gpu_memory_utilization": 0.95}
    via_api = vramplan.breakdown(spec, gpu, **knobs)
    launch = _core.Launch(spec, gpu, {"engine_version": "0.19.0"})
    via_core = launch.breakdown({"max_model_len": 8192, "gpu_memory_utilization": 0.95})
    # The core's JSON plus the error band of the launch's (GPU family, era), nothing else.
    band = via_api.to_dict().pop("error_band")
    assert band["group"] == "H100/H200 x v1"
    assert {k: v for k, v in via_api.to_dict().items() if k != "error_band"} == json.loads(
        via_core.to_json()
    )
    assert isinstance(via_api.ranks[0], _core.RankBreakdown)  # typed, no JSON on the way
    assert via_api.kv_bytes_per_token == 131072
    assert via_api.weights_bytes == 16_060_522_496 + 131072 * 128 * 2


def test_plan_is_exactly_the_core_result() -> None:
    spec = vramplan.load_model(vramplan.DEFAULT_MODEL)
    gpu = vramplan.load_gpu(vramplan.DEFAULT_GPU)
    via_api = vramplan.plan(spec, gpu, context=8192)
    via_core = _core.Launch(spec, gpu, {}).solve({}, context=8192)
    data = via_api.to_dict()
    band = data.pop("error_band")
    assert data["breakdown"].pop("error_band") == band
    assert data == json.loads(via_core.to_json())
    kwargs = via_api.to_llm_kwargs()
    assert kwargs["max_model_len"] == 8192
    assert via_api.to_vllm_args().startswith("--gpu-memory-utilization ")
    assert json.loads(via_api.to_json())["fits"] is True


def test_gpu_total_override() -> None:
    gpu = vramplan.load_gpu("H100-80GB", total_memory_bytes=40 << 30)
    assert gpu.total_memory_bytes == 40 << 30


def test_gpu_total_override_keeps_the_gpus_other_facts() -> None:
    """A logged total replaces only the total: a T4 stays a T4 (Turing, 40 SMs, PCIe, its
    family), so its CUDA context is the T4's, not the fallback of a GPU nobody knows."""
    t4 = vramplan.load_gpu("T4")
    given = vramplan.load_gpu("T4", total_memory_bytes=15_655_829_504)
    assert given.total_memory_bytes == 15_655_829_504
    for fact in ("id", "name", "pcie_only", "family"):
        assert getattr(given, fact) == getattr(t4, fact), fact
    facts = {k: v for k, v in t4.to_dict().items() if "total_memory" not in k}
    assert {k: v for k, v in given.to_dict().items() if "total_memory" not in k} == facts
    # The context follows the card: the same launch on the same total with the database entry.
    same_total = vramplan.load_gpu("T4")
    with_db = vramplan.breakdown("Qwen/Qwen3-8B", same_total, max_model_len=4096)
    with_given = vramplan.breakdown(
        "Qwen/Qwen3-8B",
        vramplan.load_gpu("T4", total_memory_bytes=t4.total_memory_bytes),
        max_model_len=4096,
    )
    assert with_given.startup_free_bytes == with_db.startup_free_bytes


@pytest.mark.parametrize(
    ("knobs", "field"),
    [
        ({"tensor_parallel_size": 3}, "tensor_parallel_size"),
        ({"gpu_memory_utilization": 1.5}, "gpu_memory_utilization"),
        ({"kv_cache_dtype": "int2"}, "kv_cache_dtype"),
        ({"engine_version": "banana"}, "engine_version"),
        ({"max_model_len": -5}, "max_model_len"),
        ({"max_num_seqz": 4}, "max_num_seqz"),
    ],
)
def test_bad_knobs_raise_config_error_naming_the_field(knobs: dict, field: str) -> None:
    with pytest.raises(vramplan.ConfigError) as info:
        vramplan.breakdown(**knobs)
    assert info.value.field == field
    assert isinstance(info.value, ValueError)


def test_speculative_drafter_by_id_reaches_the_flags() -> None:
    plain = vramplan.breakdown("meta-llama/Llama-3.1-8B-Instruct", "H100", max_model_len=8192)
    drafted = vramplan.breakdown(
        "meta-llama/Llama-3.1-8B-Instruct",
        "H100",
        max_model_len=8192,
        num_speculative_tokens=3,
        speculative_method="draft_model",
        speculative_model="meta-llama/Llama-3.2-1B-Instruct",
    )
    # Llama-3.2-1B adds 16 layers x 2 x 8 KV heads x 64 x 2 B = 32,768 B per token.
    assert drafted.kv_bytes_per_token - plain.kv_bytes_per_token == 32_768
    plan = vramplan.plan(
        "meta-llama/Llama-3.1-8B-Instruct",
        "H100",
        context=8192,
        num_speculative_tokens=3,
        speculative_method="draft_model",
        speculative_model="meta-llama/Llama-3.2-1B-Instruct",
    )
    assert plan.to_llm_kwargs()["speculative_config"] == {
        "method": "draft_model",
        "model": "meta-llama/Llama-3.2-1B-Instruct",
        "num_speculative_tokens": 3,
    }


def test_sweep_agrees_with_breakdown_and_is_monotone() -> None:
    grid = vramplan.sweep(
        "meta-llama/Llama-3.1-8B",
        "H100",
        gpu_memory_utilization=[0.5, 0.7, 0.9],
        max_model_len=[8192, 131072, 262144],
        max_num_seqs=[64, 256],
        engine_version="0.19.0",
    )
    assert len(grid) == 18
    # 262144 exceeds Llama-3.1-8B's 131072 positions: vLLM refuses it.
    rejected = grid[grid["max_model_len"] == 262144]
    assert len(rejected) == 6
    assert (rejected["outcome"] == "rejected").all()
    i = int(grid.index[grid["max_model_len"] == 131072][0])
    one = vramplan.breakdown(
        "meta-llama/Llama-3.1-8B",
        "H100",
        gpu_memory_utilization=float(grid["gpu_memory_utilization"][i]),
        max_model_len=131072,
        max_num_seqs=int(grid["max_num_seqs"][i]),
        engine_version="0.19.0",
    )
    assert grid["kv_tokens"][i] == one.kv_tokens
    tokens_8k = [
        t
        for t, n, s in zip(grid["kv_tokens"], grid["max_model_len"], grid["max_num_seqs"])
        if n == 8192 and s == 64
    ]
    assert tokens_8k == sorted(tokens_8k)
    assert tokens_8k[0] < tokens_8k[-1]
