"""`vramplan fit`'s vLLM option loop in the core (`_core.fit_options`: each launch compiled
once, solved without remedies): the rows of the per-option path (`_split_plan`, one
`vramplan.plan` per option) key for key, value for value, in order; plan-level keywords keep
the per-option path; the JSON writer gives json.dumps' text."""

from __future__ import annotations

import importlib
import json
import math
from typing import Any

import pytest
import vramplan
from vramplan import _core, api

fit = importlib.import_module("vramplan.fit")  # the module, not the function vramplan.fit

GIB = 1 << 30
CALIBRATED = "overrides:\n  cuda_context_bytes: 2000000000\n"

# (model, GPUs, GPU counts, context, concurrency, node, knobs): MIG slices (no TP/PP across
# them), splits the heads do not divide, an MoE, a hybrid, DP replicas sharing a target, the
# node's other processes and host RAM, a compiled knob, an evaluated one, a vLLM spelling that
# translates (cpu_offload_gb), an older release (its flags differ), a knob set by the
# environment (the launch line's variables), a calibration profile.
CASES = [
    (
        "meta-llama/Llama-3.1-8B-Instruct",
        ["L4", "H100-80GB", "H100-80GB-MIG-3g.40gb"],
        range(1, 5),
        32768,
        16,
        {},
        {},
    ),
    (
        "Qwen/Qwen3-30B-A3B",
        ["RTX-4090", "MI300X"],
        range(1, 9),
        8192,
        40,
        {"memory_used_by_others_bytes": 2 * GIB, "host_ram_bytes": 64 * GIB},
        {"kv_cache_dtype": "fp8", "max_num_seqs": 64},
    ),
    (
        "Qwen/Qwen3-Next-80B-A3B-Thinking",
        ["H100-80GB", "L40S"],
        range(2, 5),
        65536,
        4,
        {},
        {"cpu_offload_gb": 4, "engine_version": "0.10.2", "vllm_use_flashinfer_sampler": "1"},
    ),
    (
        "deepseek-ai/DeepSeek-V2-Lite-Chat",
        ["A100-40GB", "H100-80GB-MIG-1g.10gb"],
        range(1, 4),
        4096,
        3,
        {},
        {"gpu_memory_utilization": 0.8, "enforce_eager": True},
    ),
    (
        "Qwen/Qwen3-8B",
        ["L4", "H100-80GB"],
        range(1, 3),
        16384,
        8,
        {},
        # A calibration profile: 2 GB of CUDA context (the release row's is under 1 GiB).
        {"profile": _core.apply_profile_overrides(_core.engine_profile(""), CALIBRATED, "test")},
    ),
]


def both_paths(
    model: str,
    gpus: list[str],
    counts: range,
    context: int,
    concurrency: int,
    node: dict[str, int],
    knobs: dict[str, Any],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    spec = api.load_model(model)
    db = api.spec_database()
    work = [(db.gpu(g), n, split) for g in gpus for n in counts for split in fit.splits(n)]
    target = fit._Target(context, concurrency)
    node = {"memory_used_by_others_bytes": 0, "host_ram_bytes": 0, **node}
    looped = fit._vllm_rows(model, spec, work, target, node, dict(knobs), None)
    assert looped is not None
    planned = [
        fit._split_plan(model, spec, gpu, n, split, target, node, dict(knobs))
        for gpu, n, split in work
    ]
    return looped, planned


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_core_loop_gives_the_per_option_rows(case: tuple[Any, ...]) -> None:
    looped, planned = both_paths(*case)
    assert [list(row) for row in looped] == [list(row) for row in planned]  # keys, in order
    assert looped == planned
    verdicts = [row["verdict"] for row in planned]
    assert any(v.startswith("fits") for v in verdicts)
    assert any(v.startswith("does not fit") for v in verdicts)


def test_cases_cover_refusals_and_fits() -> None:
    rows = [row for case in CASES for row in both_paths(*case)[1]]
    verdicts = [row["verdict"] for row in rows]
    assert any("MIG slices" in v for v in verdicts)
    assert any(v.startswith("invalid split: tensor_parallel_size") and "MIG" not in v
               for v in verdicts)  # fmt: skip
    assert any(row["fits"] and row["data_parallel_size"] > 1 for row in rows)
    assert any(not row["fits"] and row.get("max_concurrency") for row in rows)
    assert any(row.get("launch", "").startswith("VLLM_USE_FLASHINFER_SAMPLER=1 ") for row in rows)


def test_calibration_profile_reaches_the_core_loop() -> None:
    # 2 GB of CUDA context instead of the release's: each fitting option keeps fewer KV tokens.
    case = CASES[-1]
    calibrated = both_paths(*case)[0]
    released = both_paths(*case[:-1], {})[0]
    pairs = [(a, b) for a, b in zip(calibrated, released) if a["fits"] and b["fits"]]
    assert pairs
    assert all(a["kv_tokens"] < b["kv_tokens"] for a, b in pairs)


def test_plan_keywords_keep_the_per_option_path() -> None:
    spec = api.load_model("meta-llama/Llama-3.1-8B-Instruct")
    work = [(api.load_gpu("H100-80GB"), 1, (1, 1, 1))]
    node = {"memory_used_by_others_bytes": 0, "host_ram_bytes": 0}
    target = fit._Target(32768, 4)
    margin = {"safety_margin_bytes": 8 * GIB}
    assert fit._vllm_rows("m", spec, work, target, node, margin, None) is None
    # fit answers them through vramplan.plan: 8 GiB kept free shrinks the KV cache.
    wide, narrow = (
        vramplan.fit(spec, context=32768, concurrency=4, gpus="H100-80GB", num_gpus=1, **extra)
        for extra in ({}, margin)
    )
    assert int(narrow.kv_tokens[0]) < int(wide.kv_tokens[0])


def test_errors_of_other_knobs_are_raised_as_before() -> None:
    with pytest.raises(_core.ConfigError, match="kv_cache_dtype"):
        vramplan.fit("Qwen/Qwen3-8B", context=4096, concurrency=1, gpus="L4", kv_cache_dtype="x")


def test_records_json_is_json_dumps_text() -> None:
    rows: list[dict[str, Any]] = [
        {"a": "plain", "b": 1, "c": 0.1 + 0.2, "d": True, "e": None},
        {"a": 'quote " back\\ slash\n\x1b é 🚀', "b": -(2**70), "c": math.nan, "d": False},
        {"b": 0, "c": 1e-12, "e": 12345.678901234567},
        {"a": "", "c": 3.0},
    ]
    columns = ["a", "b", "c", "d", "e"]
    names = {"b": "renamed b"}

    def expected(rows: list[dict[str, Any]]) -> str:
        renamed = [{names.get(k, k): v for k, v in r.items()} for r in fit.records(rows, columns)]
        return json.dumps(renamed, indent=2)

    assert fit.records_json(rows, columns, names) == expected(rows)
    assert fit.records_json([], columns) == json.dumps([], indent=2)
    # Cells json writes its own way: infinities, a list.
    for odd in (math.inf, -math.inf, [1, "x"]):
        tricky = [*rows, {"a": odd}]
        assert fit.records_json(tricky, columns, names) == expected(tricky)
