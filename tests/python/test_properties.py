"""Property tests over random database models x GPUs x knobs (hypothesis, derandomized).

Properties that hold by construction of the accounting (cpp/src/compiled_evaluate.cpp, solver.cpp):
- more GPU memory never turns a started launch into a failed one, nor a fitting plan into one
  that does not fit (on the same side of vLLM's 70 GiB batch-default threshold);
- a higher gpu_memory_utilization never lowers a rank's KV cache;
- a longer max_model_len never raises the maximum concurrency;
- a plan that fits, and every remedy marked fits, starts when its own `vllm serve` flag line is
  parsed back through the CLI and evaluated.
"""

from __future__ import annotations

import shlex
from typing import Any

import pytest
import vramplan
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from vramplan import cli

GIB = 1 << 30
LARGE_GPU_BYTES = 70 * GIB  # vLLM's batch defaults change at 70 GiB (EngineArgs)
VERSIONS = ["0.6.4", "0.8.5", "0.10.1", "0.11.0", "0.17.0", "0.19.0", "0.21.0"]

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
)


@st.composite
def launches(draw: st.DrawFn) -> dict[str, Any]:
    """A model, a GPU and knobs, some left unset; values vLLM accepts but need not fit."""
    model = draw(st.sampled_from(vramplan.models()))
    spec = vramplan.load_model(model)
    optional = {
        "engine_version": st.sampled_from(VERSIONS),
        "gpu_memory_utilization": st.floats(0.3, 0.99),
        "max_model_len": st.integers(1, spec.max_position_embeddings),
        "max_num_seqs": st.integers(1, 1024),
        "kv_cache_dtype": st.sampled_from(["auto", "fp8"]),
        "block_size": st.sampled_from([16, 32, 64, 128]),
        "tensor_parallel_size": st.sampled_from([1, 2, 4, 8]),
        "enforce_eager": st.just(True),
        "quantization": st.just("fp8"),
        "cpu_offload_bytes": st.integers(1, 64 * GIB),
    }
    knobs = {name: draw(strategy) for name, strategy in optional.items() if draw(st.booleans())}
    return {
        "model": model,
        "max_position_embeddings": spec.max_position_embeddings,
        "gpu": draw(st.sampled_from(vramplan.gpus())),
        "knobs": knobs,
        "host_ram_bytes": draw(st.sampled_from([0, 64 * GIB, 256 * GIB, 2048 * GIB])),
        "memory_used_by_others_bytes": draw(st.sampled_from([0, GIB // 2, 4 * GIB])),
    }


def _breakdown(launch: dict[str, Any], gpu: Any = None, **knobs: Any) -> vramplan.Breakdown:
    return vramplan.breakdown(
        launch["model"],
        launch["gpu"] if gpu is None else gpu,
        host_ram_bytes=launch["host_ram_bytes"],
        memory_used_by_others_bytes=launch["memory_used_by_others_bytes"],
        **{**launch["knobs"], **knobs},
    )


def _plan(launch: dict[str, Any], gpu: Any = None, **targets: int) -> vramplan.Plan:
    return vramplan.plan(
        launch["model"],
        launch["gpu"] if gpu is None else gpu,
        host_ram_bytes=launch["host_ram_bytes"],
        memory_used_by_others_bytes=launch["memory_used_by_others_bytes"],
        **targets,
        **launch["knobs"],
    )


def _accepted(call: Any, *args: Any, **kwargs: Any) -> Any:
    """The call's result; a launch vLLM refuses (a vramplan.Error) is not an example."""
    try:
        return call(*args, **kwargs)
    except vramplan.Error:
        assume(False)
        raise


def _replay(launch: dict[str, Any], flags: str) -> vramplan.Breakdown:
    """The breakdown of a `vllm serve` flag line parsed by the CLI's own parser. Planner-only
    knobs (engine version) are not flags: they come from the launch."""
    args = cli.build_parser().parse_args(
        ["breakdown", launch["model"], "--gpu", launch["gpu"], *shlex.split(flags)]
    )
    knobs = cli._knobs(args)
    if "engine_version" in launch["knobs"]:
        knobs["engine_version"] = launch["knobs"]["engine_version"]
    return vramplan.breakdown(
        launch["model"],
        launch["gpu"],
        host_ram_bytes=launch["host_ram_bytes"],
        memory_used_by_others_bytes=launch["memory_used_by_others_bytes"],
        **knobs,
    )


def _same_batch_defaults(total: int, more: int) -> bool:
    return (total >= LARGE_GPU_BYTES) == (total + more >= LARGE_GPU_BYTES)


@SETTINGS
@given(launch=launches(), context_share=st.floats(0, 1), concurrency=st.integers(0, 64))
def test_fitting_plans_and_remedies_start_from_their_own_flags(
    launch: dict[str, Any], context_share: float, concurrency: int
) -> None:
    context = int(context_share * launch["max_position_embeddings"])
    plan = _accepted(_plan, launch, context=context, concurrency=concurrency)
    event(f"plan fits: {plan.fits}")
    if plan.fits:
        replay = _replay(launch, plan.to_vllm_args())
        assert replay.outcome == "started", (plan.to_vllm_args(), replay.messages)
    for remedy in plan.remedies:
        if remedy.fits:
            event(f"remedy fits: {remedy.kind}")
            assert remedy.flags
            replay = _replay(launch, remedy.flags)
            assert replay.outcome == "started", (remedy.kind, remedy.flags, replay.messages)


@SETTINGS
@given(launch=launches(), more_gib=st.integers(1, 64), context_share=st.floats(0, 1))
def test_more_gpu_memory_never_breaks_a_launch_or_a_plan(
    launch: dict[str, Any], more_gib: int, context_share: float
) -> None:
    gpu = vramplan.load_gpu(launch["gpu"])
    assume(_same_batch_defaults(gpu.total_memory_bytes, more_gib * GIB))
    bigger = vramplan.load_gpu(
        launch["gpu"], total_memory_bytes=gpu.total_memory_bytes + more_gib * GIB
    )
    if _accepted(_breakdown, launch).outcome == "started":
        assert _breakdown(launch, bigger).outcome == "started"
    context = int(context_share * launch["max_position_embeddings"])
    if _plan(launch, context=context).fits:
        assert _plan(launch, bigger, context=context).fits


@SETTINGS
@given(launch=launches(), low=st.floats(0.05, 1.0), high=st.floats(0.05, 1.0))
def test_higher_utilization_never_lowers_the_kv_cache(
    launch: dict[str, Any], low: float, high: float
) -> None:
    low, high = sorted((low, high))
    at_low = _accepted(_breakdown, launch, gpu_memory_utilization=low)
    assume(at_low.outcome == "started")
    at_high = _breakdown(launch, gpu_memory_utilization=high)
    for rank_low, rank_high in zip(at_low.ranks, at_high.ranks):
        assert rank_high.kv_cache_bytes >= rank_low.kv_cache_bytes


@SETTINGS
@given(launch=launches(), shorter_share=st.floats(0, 1), longer_share=st.floats(0, 1))
def test_longer_context_never_raises_the_maximum_concurrency(
    launch: dict[str, Any], shorter_share: float, longer_share: float
) -> None:
    top = launch["max_position_embeddings"]
    shorter, longer = sorted(max(1, int(s * top)) for s in (shorter_share, longer_share))
    at_short = _accepted(_breakdown, launch, max_model_len=shorter)
    at_long = _accepted(_breakdown, launch, max_model_len=longer)
    assert at_long.max_concurrency <= at_short.max_concurrency


def test_pinned_utilization_is_rendered_exactly_in_the_flags() -> None:
    """Found by the property above: a pinned utilization of 0.34375 was printed as 0.34, so the
    cpu_offload remedy marked fits got "No available memory for the cache blocks" when run
    with its own flag line."""
    launch = {
        "model": "Qwen/Qwen2.5-72B-Instruct-AWQ",
        "gpu": "H100-80GB",
        "knobs": {
            "engine_version": "0.6.4",
            "gpu_memory_utilization": 0.34375,
            "max_model_len": 1,
            "max_num_seqs": 1,
        },
        "host_ram_bytes": 0,
        "memory_used_by_others_bytes": 0,
    }
    plan = _plan(launch)
    offload = next(r for r in plan.remedies if r.kind == "cpu_offload")
    assert offload.fits
    assert "--gpu-memory-utilization 0.34375 " in offload.flags
    assert _replay(launch, offload.flags).outcome == "started"
    # Values the solver picks (0.01 steps) keep their two decimals (0.98 for this launch).
    assert (
        "--gpu-memory-utilization 0.98 " in vramplan.plan("meta-llama/Llama-3.1-8B").to_vllm_args()
    )


@pytest.mark.parametrize("knob", ["max_num_batched_tokens", "max_model_len"])
def test_token_counts_beyond_int32_are_refused(knob: str) -> None:
    """Found by fuzz_plan: max_num_batched_tokens = 281474943156736 (Mistral-7B on A10G, vLLM
    0.6.4) overflowed int64 in the activation peak (tokens x 135168 bytes per token), a signed
    overflow instead of an answer. Token counts now stop at 2^31 - 1."""
    with pytest.raises(vramplan.ConfigError) as info:
        vramplan.breakdown(
            "mistralai/Mistral-7B-Instruct-v0.3", "A10G", engine_version="0.6.4", **{knob: 2**31}
        )
    assert info.value.field == knob
    assert vramplan.breakdown(
        "mistralai/Mistral-7B-Instruct-v0.3", "A10G", max_num_batched_tokens=2**31 - 1
    ).outcome
