"""Two installed vramplan packages timed side by side, alternating, and their ratios.

Run through benchmarks/compare_python.sh REV, which installs REV and this tree in their own
virtual environments; or directly with two interpreters that each import a vramplan:
  python3 benchmarks/compare_python.py --old OLD_PYTHON --new NEW_PYTHON [--rounds N]
Figures: Python `vramplan.plan` CPU µs per call (each in a fresh child, median of the rounds),
`vramplan.sweep` CPU ns per row at 10^5, 10^6 and 10^7 rows (100 utilizations each),
the CLI's cold start (`vramplan plan`, `vramplan flags`: median wall and CPU ms of --cold-runs
runs over `python -c pass`), and the wall and CPU ms of `fit` and `colocate` commands (median
of --rounds). CPU ms (the child's user + system) is the figure to trust on a loaded machine.
Every figure alternates old, new, old, new... so that load on the machine hits both alike;
the load average before and after is printed with the table. Asserts nothing.
--instructions: instead, the plan calls' instructions per call under callgrind (load-proof):
(Ir at --high calls - Ir at --low calls) / (high - low), each child after two warm calls.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
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
# One `vramplan.sweep` of 100 utilizations x `points` (length, sequences) points in a fresh
# child, after a small warm-up sweep (compile): CPU ns per row.
SWEEP = """
import time, vramplan
lens = list(range(1024, 1024 + 12 * {lengths}, 12))
grid = dict(gpu_memory_utilization=[0.5 + 0.005 * i for i in range(100)],
            max_model_len=lens, max_num_seqs=[1, 2, 4, 8, 16, 32, 64, 128, 256, 512])
vramplan.sweep({model!r}, 'H100-80GB', max_model_len=lens[:2])
start = time.process_time()
frame = vramplan.sweep({model!r}, 'H100-80GB', **grid)
print((time.process_time() - start) / len(frame) * 1e9)
"""
# A fixed number of calls after two warm ones, counted under callgrind. The child runs in an
# empty folder (`-c` puts the working directory first on sys.path, and a busy folder's listing
# changes the import's count from one run to the next) with one BLAS thread (numpy's idle
# workers spin for as long as the machine's load lets them).
COUNTED = """
import vramplan
f = lambda: {call}
f(); f()
for _ in range({calls}):
    f()
"""
SWEEP_LENGTHS = {"10^5": 100, "10^6": 1000, "10^7": 10000}  # x 10 sequences x 100 utilizations
COLD = {
    "vramplan plan": ["plan", LLAMA, "--gpu", "H100-80GB"],
    "vramplan flags": ["flags", LLAMA, "--gpu", "H100-80GB"],
    "vramplan plan --json": ["plan", LLAMA, "--gpu", "H100-80GB", "--json"],
}
WALL = {
    "fit MODEL --context 32768 --concurrency 16": [
        "fit", QWEN, "--context", "32768", "--concurrency", "16",
    ],
    "fit MODEL --context 32768 --concurrency 16 --json": [
        "fit", QWEN, "--context", "32768", "--concurrency", "16", "--json",
    ],
    "fit --gpu L4 --num-gpus 2": ["fit", "--gpu", "L4", "--num-gpus", "2"],
    "colocate (text)": ["colocate", QWEN, LLAMA, "--gpu", "H100-80GB", "--num-gpus", "2"],
    "colocate --json": [
        "colocate", QWEN, LLAMA, "--gpu", "H100-80GB", "--num-gpus", "2", "--json",
    ],
}  # fmt: skip
ENV = {**os.environ, "HF_HUB_OFFLINE": "1"}
ENV.pop("VRAMPLAN_MODEL_SPECS", None)  # each package its own installed database
COUNTED_ENV = {**ENV, "PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def run_ms(argv: list[str]) -> tuple[float, float]:
    """Wall ms of one run, and the child's CPU ms (user + system: less sensitive to other
    load on the machine than the wall clock)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = (time.perf_counter() - start) * 1e3
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1e3
    return wall, cpu


def alternate(pythons: dict[str, str], runs: int, measure: Any) -> dict[str, tuple[float, ...]]:
    """Medians of `runs` measurements (each a tuple of figures) per interpreter, taken old,
    new, old, new..."""
    taken: dict[str, list[tuple[float, ...]]] = {name: [] for name in pythons}
    for _ in range(runs):
        for name, python in pythons.items():
            taken[name].append(tuple(measure(python)))
    return {
        name: tuple(statistics.median(column) for column in zip(*values))
        for name, values in taken.items()
    }


def per_call_us(python: str, call: str) -> tuple[float]:
    """nan where the package cannot make the call (an earlier release without the option)."""
    done = subprocess.run(
        [python, "-c", PER_CALL.format(call=call)],
        env=ENV,
        capture_output=True,
        text=True,
        check=False,
    )
    return (float(done.stdout.split()[-1]) if done.returncode == 0 else math.nan,)


def sweep_ns(python: str, lengths: int) -> tuple[float]:
    done = subprocess.run(
        [python, "-c", SWEEP.format(lengths=lengths, model=LLAMA)],
        env=ENV,
        capture_output=True,
        text=True,
        check=True,
    )
    return (float(done.stdout.split()[-1]),)


def callgrind_total(python: str, code: str, quiet: str, out: str) -> int:
    """Instructions of one child under callgrind (its whole run)."""
    subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", python, "-c", code],
        cwd=quiet,
        env=COUNTED_ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    with Path(out).open(encoding="utf-8") as profile:
        for line in profile:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise RuntimeError(f"{out}: no totals line")


def instructions_per_call(python: str, call: str, low: int, high: int) -> tuple[float]:
    """nan where the package cannot make the call (an earlier release without the option)."""
    with tempfile.TemporaryDirectory() as quiet, tempfile.TemporaryDirectory() as outputs:
        try:
            counts = [
                callgrind_total(
                    python, COUNTED.format(call=call, calls=calls), quiet, f"{outputs}/{calls}.out"
                )
                for calls in (low, high)
            ]
        except subprocess.CalledProcessError:
            return (math.nan,)
    return ((counts[1] - counts[0]) / (high - low),)


def instruction_figures(
    pythons: dict[str, str], low: int, high: int
) -> list[tuple[str, dict[str, float]]]:
    rows: list[tuple[str, dict[str, float]]] = []
    for label, call in CALLS.items():
        values = {
            name: instructions_per_call(python, call, low, high)[0]
            for name, python in pythons.items()
        }
        rows.append((label.replace("plan µs", "plan instructions"), values))
    return rows


def figures(
    pythons: dict[str, str], rounds: int, cold_runs: int
) -> list[tuple[str, dict[str, float]]]:
    rows: list[tuple[str, dict[str, float]]] = []

    def add(label: str, values: dict[str, tuple[float, ...]], names: tuple[str, ...]) -> None:
        for i, name in enumerate(names):
            rows.append((f"{label}{name}", {k: v[i] for k, v in values.items()}))

    for label, call in CALLS.items():
        add(label, alternate(pythons, rounds, lambda py, c=call: per_call_us(py, c)), ("",))
    for label, lengths in SWEEP_LENGTHS.items():
        add(
            f"sweep ns/row ({label} rows, Llama-3.1-8B)",
            alternate(pythons, rounds, lambda py, n=lengths: sweep_ns(py, n)),
            ("",),
        )
    for python in pythons.values():  # untimed: bytecode caches written, files in page cache
        for argv in [*COLD.values(), *WALL.values()]:
            run_ms([python, "-m", "vramplan", *argv])
    base = alternate(pythons, cold_runs, lambda py: run_ms([py, "-c", "pass"]))
    add("python -c pass", base, (": wall ms", ": CPU ms"))
    for label, argv in COLD.items():
        cold = alternate(pythons, cold_runs, lambda py, a=argv: run_ms([py, "-m", "vramplan", *a]))
        over = {k: tuple(c - b for c, b in zip(v, base[k])) for k, v in cold.items()}
        add(label, over, (": wall ms over python -c pass", ": CPU ms over python -c pass"))
    for label, argv in WALL.items():
        timed = alternate(pythons, rounds, lambda py, a=argv: run_ms([py, "-m", "vramplan", *a]))
        add(label, timed, (": wall ms", ": CPU ms"))
    return rows


def figure(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:,.1f}"


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
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="the plan calls' instructions per call under callgrind instead of times",
    )
    parser.add_argument("--low", type=int, default=20, help="--instructions: the fewer calls")
    parser.add_argument("--high", type=int, default=520, help="--instructions: the more calls")
    args = parser.parse_args()
    # Absolute (the counted children run in a folder of their own), links kept (a venv's).
    pythons = {
        args.old_name: str(Path(args.old).absolute()),
        args.new_name: str(Path(args.new).absolute()),
    }
    load_before = os.getloadavg()
    if args.instructions:
        rows = instruction_figures(pythons, args.low, args.high)
    else:
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
        ratio = f"{new / old:.2f}" if old > 0 and not math.isnan(new) else "-"
        print(f"| {label} | {figure(old)} | {figure(new)} | {ratio} |")


if __name__ == "__main__":
    main()
