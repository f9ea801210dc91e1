"""vramplan's CLI cold start beside its peers' (kvfit, hf-mem, vllm-wizard, vramscout), one job:
Llama-3.1-8B at 32k on an H100, from a local config.json, the Hub off.

    python3 -m venv --system-site-packages /tmp/peers
    /tmp/peers/bin/pip install kvfit hf-mem vllm-wizard vramscout
    python3 benchmarks/compare_peers.py --peers /tmp/peers/bin [--runs 15]

kvfit and hf-mem read the Hub even for a local folder, so offline they are timed on `--help`:
a lower bound of any run of theirs (their imports and parser). Each figure is the median of
--runs wall and CPU ms over `python -c pass`, the commands alternating. Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONFIG = (
    Path(__file__).resolve().parents[1] / "tests/data/configs/meta-llama__Meta-Llama-3.1-8B.json"
)


def run_ms(argv: list[str]) -> tuple[float, float]:
    """Wall ms of one run and the child's CPU ms (user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = (time.perf_counter() - start) * 1e3
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--peers", required=True, help="the bin/ folder the peers are installed in")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    peers = Path(args.peers)
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "config.json").write_bytes(CONFIG.read_bytes())
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "vramplan plan (text)": [
                sys.executable, "-m", "vramplan", "plan", folder, "--gpu", "H100-80GB",
                "--max-model-len", "32768",
            ],
            "vramplan flags": [
                sys.executable, "-m", "vramplan", "flags", folder, "--gpu", "H100-80GB",
                "--max-model-len", "32768",
            ],
            "vramscout (plan)": [
                str(peers / "vramscout"), folder, "--context", "32768", "--vram-gib", "80",
            ],
            "vllm-wizard plan": [
                str(peers / "vllm-wizard"), "plan", "--model", folder, "--gpu", "H100",
                "--max-model-len", "32768",
            ],
            "kvfit --help (lower bound)": [str(peers / "kvfit"), "--help"],
            "hf-mem --help (lower bound)": [str(peers / "hf-mem"), "--help"],
        }  # fmt: skip
        for argv in commands.values():  # untimed: bytecode caches, page cache
            run_ms(argv)
        taken: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, argv in commands.items():
                taken[name].append(run_ms(argv))
    medians = {
        name: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
        for name, v in taken.items()
    }
    base_wall, base_cpu = medians["python -c pass"]
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; median of {args.runs}\n")
    print("| command | wall ms | over python -c pass | CPU ms over |")
    print("|---|---:|---:|---:|")
    for name, (wall, cpu) in medians.items():
        print(f"| {name} | {wall:.1f} | {wall - base_wall:+.1f} | {cpu - base_cpu:+.1f} |")


if __name__ == "__main__":
    main()
