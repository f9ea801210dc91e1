"""Two installed vramplan packages timed side by side, alternating, and their ratios.

Run through benchmarks/compare_python.sh REV, which installs REV and this tree in their own
virtual environments; or directly with two interpreters that each import a vramplan:
  python3 benchmarks/compare_python.py --old OLD_PYTHON --new NEW_PYTHON [--rounds N]
Figures: Python `vramplan.plan` CPU µs per call (each in a fresh child, median of the rounds),
the CLI's cold start (`vramplan plan`, `vramplan flags`: median wall ms of --cold-runs runs
over `python -c pass`), and the wall of `fit` and `colocate` commands (median of --rounds).
Every figure alternates old, new, old, new... so that load on the machine hits both alike;
the load average before and after is printed with the table. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from typing import Any

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
QWEN = "Qwen/Qwen3-8B"

# Each child warms the call once (compile, caches), then runs it for ~0.2 s of CPU five times
# and prints the median µs per call.
PER_CALL = """
import time, vramplan
f = lambda: {call}
f()
runs = []
for _ in range(5):
    n, start = 0, time.process_time()
    while time.process_time() - start < 0.2:
        f(); n += 1
    runs.append((time.process_time() - start) / n * 1e6)
print(sorted(runs)[2])
"""
CALLS = {
    "plan µs (Llama-3.1-8B, H100, context 32768)": (
        f"vramplan.plan({LLAMA!r}, 'H100-80GB', context=32768)"
    ),
    "plan µs (DeepSeek-V3, H200, TP 8)": (
        "vramplan.plan('deepseek-ai/DeepSeek-V3', 'H200', context=32768, tensor_parallel_size=8)"
    ),
    "plan µs (workload percentiles)": (
        f"vramplan.plan({LLAMA!r}, 'H100-80GB', context=32768, prompt_tokens=(1000, 8000), "
        "output_tokens=(200, 1500))"
    ),
}
COLD = {
    "vramplan plan": ["plan", LLAMA, "--gpu", "H100-80GB"],
    "vramplan flags": ["flags", LLAMA, "--gpu", "H100-80GB"],
    "vramplan plan --json": ["plan", LLAMA, "--gpu", "H100-80GB", "--json"],
}
WALL = {
    "fit MODEL --context 32768 --concurrency 16": [
        "fit", QWEN, "--context", "32768", "--concurrency", "16",
    ],
    "fit --gpu L4 --num-gpus 2": ["fit", "--gpu", "L4", "--num-gpus", "2"],
    "colocate (text)": ["colocate", QWEN, LLAMA, "--gpu", "H100-80GB", "--num-gpus", "2"],
    "colocate --json": [
        "colocate", QWEN, LLAMA, "--gpu", "H100-80GB", "--num-gpus", "2", "--json",
    ],
}  # fmt: skip
ENV = {**os.environ, "HF_HUB_OFFLINE": "1"}
ENV.pop("VRAMPLAN_MODEL_SPECS", None)  # each package its own installed database


def wall_ms(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return (time.perf_counter() - start) * 1e3


def alternate(pythons: dict[str, str], runs: int, measure: Any) -> dict[str, float]:
    """Median of `runs` measurements per interpreter, taken old, new, old, new..."""
    taken: dict[str, list[float]] = {name: [] for name in pythons}
    for _ in range(runs):
        for name, python in pythons.items():
            taken[name].append(measure(python))
    return {name: statistics.median(values) for name, values in taken.items()}


def per_call_us(python: str, call: str) -> float:
    done = subprocess.run(
        [python, "-c", PER_CALL.format(call=call)],
        env=ENV,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout.split()[-1])


def figures(
    pythons: dict[str, str], rounds: int, cold_runs: int
) -> list[tuple[str, dict[str, float]]]:
    rows: list[tuple[str, dict[str, float]]] = []
    for label, call in CALLS.items():
        rows.append((label, alternate(pythons, rounds, lambda py, c=call: per_call_us(py, c))))
    for python in pythons.values():  # untimed: bytecode caches written, files in page cache
        for argv in [*COLD.values(), *WALL.values()]:
            wall_ms([python, "-m", "vramplan", *argv])
    base = alternate(pythons, cold_runs, lambda py: wall_ms([py, "-c", "pass"]))
    rows.append(("python -c pass ms", base))
    for label, argv in COLD.items():
        cold = alternate(pythons, cold_runs, lambda py, a=argv: wall_ms([py, "-m", "vramplan", *a]))
        rows.append((f"{label}: ms over python -c pass", {k: cold[k] - base[k] for k in cold}))
    for label, argv in WALL.items():
        rows.append(
            (
                f"{label}: wall ms",
                alternate(pythons, rounds, lambda py, a=argv: wall_ms([py, "-m", "vramplan", *a])),
            )
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--old", required=True, help="the interpreter of the earlier package")
    parser.add_argument("--new", required=True, help="the interpreter of this tree's package")
    parser.add_argument("--old-name", default="old")
    parser.add_argument("--new-name", default="new")
    parser.add_argument(
        "--rounds", type=int, default=5, help="runs of the per-call and fit figures"
    )
    parser.add_argument("--cold-runs", type=int, default=15, help="runs of each cold start")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    pythons = {args.old_name: args.old, args.new_name: args.new}
    load_before = os.getloadavg()
    rows = figures(pythons, args.rounds, args.cold_runs)
    load_after = os.getloadavg()
    if args.json:
        print(json.dumps({"load": [load_before, load_after], "figures": dict(rows)}, indent=2))
        return
    print(
        f"{os.cpu_count()} cores; load average (1, 5, 15 min) before "
        f"{', '.join(f'{x:.2f}' for x in load_before)}, after "
        f"{', '.join(f'{x:.2f}' for x in load_after)}\n"
    )
    print(f"| figure | {args.old_name} | {args.new_name} | new / old |")
    print("|---|---:|---:|---:|")
    for label, values in rows:
        old, new = values[args.old_name], values[args.new_name]
        ratio = f"{new / old:.2f}" if old > 0 else "-"
        print(f"| {label} | {old:,.1f} | {new:,.1f} | {ratio} |")


if __name__ == "__main__":
    main()
