"""The planner timed from Python, beside a pure-Python peer and (optionally) a previous build.

Run: python3 benchmarks/bench_python.py [--previous DIR] [--cold-previous DIR] [--json]
  --previous DIR: a directory holding an older build of the package importable as
  `vramplan_old` (copy an installed `vramplan/` there under that name), timed in the same
  process on the same jobs.
  --cold-previous DIR: a directory holding an older `vramplan/` package (importable as
  `vramplan`, its _core built) and its `model_specs/`: the cold starts are timed for both in
  the same run, alternating, e.g. for the commit before HEAD:
    git archive HEAD~1 python model_specs | tar -x -C /tmp/base
    ln -s $PWD/python/vramplan/_core*.so /tmp/base/python/vramplan/
    python3 benchmarks/bench_python.py --cold-previous /tmp/base
  --cold-only: only the cold starts.
Reports CPU time per call (process_time), sweep throughput and cold starts (wall clock of a
fresh interpreter, median of 9, against `python3 -c pass`); asserts nothing.
Needs `pip install vramscout` for the peer column (skipped with a note when absent).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
ROOT = Path(__file__).resolve().parents[1]
COLD_RUNS = 9
# Fresh interpreters: Python's own start, the import, and the two commands a shell script runs
# (`vllm serve M $(vramplan flags ...)`), offline (no Hub), output discarded.
COLD_COMMANDS = {
    "python -c pass": ["-c", "pass"],
    "import vramplan": ["-c", "import vramplan"],
    "vramplan flags": ["-m", "vramplan", "flags", LLAMA, "--gpu", "H100-80GB"],
    "vramplan plan": ["-m", "vramplan", "plan", LLAMA, "--gpu", "H100-80GB"],
    "vramplan plan --json": ["-m", "vramplan", "plan", LLAMA, "--gpu", "H100-80GB", "--json"],
}


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


def _cold_env(python_dir: Path, specs_dir: Path, pycache: str) -> dict[str, str]:
    """An installed package's start: bytecode cached (in `pycache`, outside the trees), the
    database given, the Hub never asked."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {
        **env,
        "PYTHONPATH": str(python_dir),
        "PYTHONPYCACHEPREFIX": pycache,
        "VRAMPLAN_MODEL_SPECS": str(specs_dir),
        "HF_HUB_OFFLINE": "1",
    }


def _entry_point() -> list[str] | None:
    """The installed `vramplan` console script, run by this interpreter (PYTHONPATH then picks
    the package timed), or None where it is not installed."""
    script = shutil.which("vramplan")
    if script is None:
        return None
    with Path(script).open(encoding="utf-8", errors="replace") as text:
        if "python" not in text.readline():
            return None  # a binary launcher: not this interpreter's script
    return [script]


def cold_starts(previous: str | None) -> dict[str, float]:
    """Median wall-clock ms of each COLD_COMMANDS entry in a fresh interpreter (and the same
    for the package in `previous`), runs alternating between the two so that load on the
    machine hits both alike; `..._over_python_ms` subtracts `python -c pass`."""
    pycache = tempfile.mkdtemp(prefix="vramplan-bench-pycache-")
    trees = {"": _cold_env(ROOT / "python", ROOT / "model_specs", pycache)}
    if previous:
        trees["previous_"] = _cold_env(
            Path(previous) / "python", Path(previous) / "model_specs", pycache
        )
    commands = {name: [sys.executable, *argv] for name, argv in COLD_COMMANDS.items()}
    entry = _entry_point()
    if entry is not None:
        commands["vramplan flags (entry point)"] = [*entry, *COLD_COMMANDS["vramplan flags"][2:]]
    times: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    for argv in commands.values():  # untimed: writes the bytecode caches
        for env in trees.values():
            subprocess.run(argv, env=env, capture_output=True, check=False)
    for _ in range(COLD_RUNS):
        for name, argv in commands.items():
            for prefix, env in trees.items():
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.perf_counter()
                subprocess.run(
                    argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
                )
                times.setdefault(prefix + name, []).append((time.perf_counter() - start) * 1e3)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                used = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
                cpu.setdefault(prefix + name, []).append(used * 1e3)
    # Wall clock is the target; the child's CPU time (user + system) is less sensitive to
    # other load on the machine.
    out = {f"cold_{name}_ms": statistics.median(runs) for name, runs in times.items()}
    out.update({f"cold_{name}_cpu_ms": statistics.median(runs) for name, runs in cpu.items()})
    for prefix in trees:
        base = out[f"cold_{prefix}python -c pass_ms"]
        for name in commands:
            if name != "python -c pass":
                out[f"cold_{prefix}{name}_over_python_ms"] = out[f"cold_{prefix}{name}_ms"] - base
                out[f"cold_{prefix}{name}_cpu_over_python_ms"] = (
                    out[f"cold_{prefix}{name}_cpu_ms"] - out[f"cold_{prefix}python -c pass_cpu_ms"]
                )
    return out


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
    parser.add_argument("--cold-previous", help="directory holding an older python/ tree")
    parser.add_argument("--cold-only", action="store_true", help="only the cold starts")
    parser.add_argument("--previous-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.previous_child:
        print(json.dumps(time_previous(args.previous_child)))
        return
    if args.cold_only:
        _report(cold_starts(args.cold_previous), as_json=args.json)
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
    out["plan_workload_us"] = per_call_us(
        lambda: vramplan.plan(
            LLAMA, "H100-80GB", context=32768, prompt_tokens=(1000, 8000), output_tokens=(200, 1500)
        )
    )
    # The whole catalogue for one model (every GPU x 1..8 x split) with a concurrency target.
    start = time.perf_counter()
    vramplan.fit(LLAMA, context=32768, concurrency=16)
    out["fit_catalogue_s"] = time.perf_counter() - start
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
    out.update(cold_starts(args.cold_previous))
    _report(out, as_json=args.json)


def _report(out: dict[str, Any], *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(out, indent=2))
        return
    for key, value in out.items():
        print(f"{key:<56} {value:,.2f}" if isinstance(value, float) else f"{key:<56} {value}")


if __name__ == "__main__":
    main()
