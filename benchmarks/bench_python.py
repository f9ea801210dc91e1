"""The planner timed from Python, beside a pure-Python peer and (optionally) a previous build.

Run: python3 benchmarks/bench_python.py [--previous DIR] [--json]
  --previous DIR: a directory holding an older build of the package importable as
  `vramplan_old` (copy an installed `vramplan/` there under that name), timed in the same
  process on the same jobs.
Reports CPU time per call (process_time) and sweep throughput; asserts nothing.
Needs `pip install vramscout` for the peer column (skipped with a note when absent).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import time
from typing import Any, Callable

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


def per_call_us(fn: Callable[[], Any], seconds: float = 1.0) -> float:
    """Median of 5 runs of CPU time per call, each run ~seconds/5 long."""
    fn()  # warm: caches, imports
    runs = []
    for _ in range(5):
        n, start = 0, time.process_time()
        while time.process_time() - start < seconds / 5:
            fn()
            n += 1
        runs.append((time.process_time() - start) / n * 1e6)
    return sorted(runs)[2]


def sweep_rate(model: str, gpu: str, **knobs: Any) -> tuple[int, float]:
    """Points and points per CPU second of one million-point sweep."""
    import vramplan

    grid = {
        "gpu_memory_utilization": [0.80 + 0.001 * i for i in range(100)],
        "max_model_len": list(range(1024, 131073, 128)),
        "max_num_seqs": [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
    }
    vramplan.sweep(model, gpu, **grid, **knobs)  # compile once
    start = time.process_time()
    frame = vramplan.sweep(model, gpu, **grid, **knobs)
    return len(frame), len(frame) / (time.process_time() - start)


def vramscout_job() -> Callable[[], Any] | None:
    try:
        from vramscout.planner import plan_inference
        from vramscout.types import GPUInfo, ModelSpec
    except ImportError:
        return None
    gpu = GPUInfo(
        index=0, name="NVIDIA H100 80GB HBM3", total_gib=79.19, used_gib=0.0, free_gib=79.19
    )
    spec = ModelSpec(
        model_id=LLAMA,
        model_type="llama",
        num_params=8_030_261_248,
        num_layers=32,
        hidden_size=4096,
        num_attention_heads=32,
        num_kv_heads=8,
        head_dim=128,
        max_context=131072,
        vocab_size=128256,
        torch_dtype="bfloat16",
    )
    return lambda: plan_inference(gpu, spec, context=32768)


def time_previous(directory: str) -> dict[str, float]:
    """The same jobs on an older build (its API took spec and GPU objects for sweeps)."""
    sys.path.insert(0, directory)
    old = importlib.import_module("vramplan_old")
    out = {
        "previous_plan_us": per_call_us(lambda: old.plan(LLAMA, "H100-80GB", context=32768)),
        "previous_plan_deepseek_v3_tp8_us": per_call_us(
            lambda: old.plan(
                "deepseek-ai/DeepSeek-V3", "H200", context=32768, tensor_parallel_size=8, num_gpus=8
            )
        ),
        "previous_breakdown_us": per_call_us(
            lambda: old.breakdown(LLAMA, "H100-80GB", max_model_len=8192)
        ),
    }
    spec, gpu = old.load_model(LLAMA), old.load_gpu("H100-80GB")
    start = time.process_time()
    grid = old.sweep(
        spec,
        gpu,
        gpu_memory_utilization=[0.8 + 0.01 * i for i in range(10)],
        max_model_len=list(range(1024, 131073, 1024)),
        max_num_seqs=[1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
    )
    out["previous_sweep_points_per_s"] = len(grid["outcome"]) / (time.process_time() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--previous", help="directory holding an older build as vramplan_old")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--previous-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.previous_child:
        print(json.dumps(time_previous(args.previous_child)))
        return
    import vramplan  # after the child branch: a previous build cannot share the process

    out: dict[str, Any] = {"cores": os.cpu_count(), "python": sys.version.split()[0]}

    start = time.process_time()
    vramplan.api.spec_database.cache_clear()
    vramplan.spec_database()
    out["spec_database_load_ms"] = (time.process_time() - start) * 1e3

    out["plan_us"] = per_call_us(lambda: vramplan.plan(LLAMA, "H100-80GB", context=32768))
    out["plan_deepseek_v3_tp8_us"] = per_call_us(
        lambda: vramplan.plan(
            "deepseek-ai/DeepSeek-V3", "H200", context=32768, tensor_parallel_size=8
        )
    )
    out["breakdown_us"] = per_call_us(
        lambda: vramplan.breakdown(LLAMA, "H100-80GB", max_model_len=8192)
    )
    points, rate = sweep_rate(LLAMA, "H100-80GB")
    out["sweep_points"], out["sweep_points_per_s"] = points, rate
    _, out["sweep_deepseek_v3_tp8_points_per_s"] = sweep_rate(
        "deepseek-ai/DeepSeek-V3", "H200", tensor_parallel_size=8
    )

    peer = vramscout_job()
    if peer is not None:
        out["vramscout_plan_us"] = per_call_us(peer)
        out["speedup_vs_vramscout_per_call"] = out["vramscout_plan_us"] / out["plan_us"]
        # The same job at one point each, one million times: a sweep against a loop of calls.
        out["speedup_vs_vramscout_per_point"] = out["vramscout_plan_us"] * 1e-6 * rate
    if args.previous:
        # Two builds of one pybind11 module cannot share a process (their types collide): the
        # previous one is timed in a child process of this same run, on the same jobs.
        child = subprocess.run(
            [sys.executable, __file__, "--previous-child", args.previous],
            capture_output=True,
            text=True,
            check=True,
        )
        out.update(json.loads(child.stdout))
    if args.json:
        print(json.dumps(out, indent=2))
        return
    for key, value in out.items():
        print(f"{key:<40} {value:,.2f}" if isinstance(value, float) else f"{key:<40} {value}")


if __name__ == "__main__":
    main()
