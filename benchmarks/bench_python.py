"""The planner timed from Python: one breakdown, one solve, and a sweep of launch points.

Run: python3 benchmarks/bench_python.py [--points N]. Reports; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import timeit

import vramplan


def per_call_us(statement, number: int) -> float:
    return min(timeit.repeat(statement, number=number, repeat=3)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--points", type=int, default=20_000, help="sweep points (default 20000)")
    args = parser.parse_args()
    spec = vramplan.load_model("meta-llama/Llama-3.1-8B")
    gpu = vramplan.load_gpu("H100")
    breakdown_us = per_call_us(lambda: vramplan.breakdown(spec, gpu, max_model_len=8192), 2000)
    solve_us = per_call_us(lambda: vramplan.plan(spec, gpu, context=32768), 500)

    grid = [
        (u / 100, length, seqs)
        for u in range(80, 96)
        for length in (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
        for seqs in (8, 16, 32, 64, 128, 256, 512, 1024)
    ]

    def sweep() -> int:
        fitting = 0
        for i in range(args.points):
            util, length, seqs = grid[i % len(grid)]
            result = vramplan.breakdown(
                spec, gpu, gpu_memory_utilization=util, max_model_len=length, max_num_seqs=seqs
            )
            fitting += result.outcome == "started"
        return fitting

    seconds = min(timeit.repeat(sweep, number=1, repeat=1))

    def batched() -> int:  # the same kind of grid in one C++ call
        return len(
            vramplan.sweep(
                spec,
                gpu,
                gpu_memory_utilization=[u / 100 for u in range(50, 100)],
                max_model_len=[2**k for k in range(8, 18)],
                max_num_seqs=[2**k for k in range(11)] * 20,
            )["kv_tokens"]
        )

    start = timeit.default_timer()
    batched_points = batched()
    batched_seconds = timeit.default_timer() - start
    print(f"machine: {os.cpu_count()} cores; model Llama-3.1-8B on H100-80GB, from Python")
    print(f"breakdown: {breakdown_us:8.1f} us per call")
    print(f"solve:     {solve_us:8.1f} us per call")
    print(f"sweep, one call per point: {args.points / seconds:8.0f} points per second")
    print(
        f"sweep, vramplan.sweep:     {batched_points / batched_seconds:8.0f} points per second "
        f"({batched_points} points)"
    )


if __name__ == "__main__":
    main()
