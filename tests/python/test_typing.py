"""A typed package: stubs that match the compiled module, and every wrong-typed argument a
vramplan.Error naming the argument (never a raw pybind11 TypeError)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import vramplan

ROOT = Path(__file__).resolve().parents[2]


def test_the_package_ships_its_types() -> None:
    package = resources.files("vramplan")
    assert package.joinpath("py.typed").is_file()
    assert package.joinpath("_core.pyi").is_file()


def test_stubs_match_the_compiled_module() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy.stubtest",
            "vramplan._core",
            "--allowlist",
            str(ROOT / "scripts" / "stubtest-allowlist.txt"),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        cwd=ROOT / "tests",
    )
    assert out.returncode == 0, out.stdout + out.stderr


CASES: list[tuple[str, Callable[[], Any]]] = [
    ("context", lambda: vramplan.plan(context="32k")),
    ("concurrency", lambda: vramplan.plan(concurrency=1.5)),
    ("model", lambda: vramplan.plan(42)),
    ("gpu", lambda: vramplan.plan(gpu=3)),
    ("gpu", lambda: vramplan.breakdown(gpu=None)),
    ("max_model_len", lambda: vramplan.breakdown(max_model_len="4096")),
    ("tensor_parallel_size", lambda: vramplan.breakdown(tensor_parallel_size=[2])),
    ("num_gpus", lambda: vramplan.breakdown(num_gpus="2")),
    ("max_model_len", lambda: vramplan.sweep(max_model_len=["x"])),
    ("max_model_len", lambda: vramplan.sweep(max_model_len=4096)),
    ("max_num_seqs", lambda: vramplan.sweep(max_num_seqs=[1.5])),
    ("gpu_memory_utilization", lambda: vramplan.sweep(gpu_memory_utilization="0.9")),
    ("total_memory_bytes", lambda: vramplan.load_gpu("H100", total_memory_bytes="80")),
    ("safety_margin_bytes", lambda: vramplan.plan(safety_margin_bytes="1")),
    ("gpu", lambda: vramplan.plot_frontier("Qwen/Qwen3-8B", 5)),
    (
        "gpu_memory_utilization",
        lambda: vramplan.plot_frontier("Qwen/Qwen3-8B", "L4", gpu_memory_utilization=[True]),
    ),
    ("term", lambda: vramplan.explain(3)),
]


@pytest.mark.parametrize(("name", "call"), CASES, ids=[f"{i}-{c[0]}" for i, c in enumerate(CASES)])
def test_wrong_typed_arguments_are_named_errors(name: str, call: Callable[[], Any]) -> None:
    with pytest.raises(vramplan.Error) as info:
        call()
    assert name in str(info.value)
