"""Unified-memory GPUs: `--gpu auto` reads /proc/meminfo (MemTotal, MemFree, MemAvailable,
Cached) and hands MemFree / MemAvailable to the plan as host_mem_free_bytes /
host_mem_available_bytes; the release decides which one vLLM's startup check counts.
The figures are vllm#48140's (tests/cpp/test_unified_memory.cpp derives the verdicts)."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest
import vramplan
from vramplan import probe as probe_module

KIB = 1024
GIB = 1 << 30
# vllm#48140 (GB10, vLLM 0.24.0): "MemFree=27812140 kB", "MemAvailable=59063644 kB".
MEM_FREE_KB = 27812140
MEM_AVAILABLE_KB = 59063644
GB10_CUDA_TOTAL = 130664103936  # gpus.yaml GB10: 121.69 GiB, MemTotal on a DGX Spark


class _Memory:
    def __init__(self, total: int, used: int, free: int) -> None:
        self.total, self.used, self.free = total, used, free


def _nvml(name: str, total: int, free: int) -> types.ModuleType:
    module = types.ModuleType("pynvml")
    module.NVMLError = type("NVMLError", (Exception,), {})  # type: ignore[attr-defined]
    module.nvmlInit = lambda: None  # type: ignore[attr-defined]
    module.nvmlShutdown = lambda: None  # type: ignore[attr-defined]
    module.nvmlDeviceGetCount = lambda: 1  # type: ignore[attr-defined]
    module.nvmlDeviceGetHandleByIndex = lambda i: i  # type: ignore[attr-defined]
    module.nvmlDeviceGetName = lambda h: name  # type: ignore[attr-defined]
    module.nvmlDeviceGetMemoryInfo = lambda h: _Memory(total, total - free, free)  # type: ignore[attr-defined]
    module.nvmlDeviceGetComputeRunningProcesses = lambda h: []  # type: ignore[attr-defined]
    return module


def _host(tmp_path: Path, meminfo: str) -> dict[str, Any]:
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "meminfo").write_text(meminfo)
    (proc / "self" / "cgroup").write_text("0::/\n")
    cgroup = tmp_path / "cgroup"
    cgroup.mkdir()
    return {"proc_root": proc, "cgroup_root": cgroup}


MEMINFO = (
    "MemTotal:       127601664 kB\n"
    f"MemFree:        {MEM_FREE_KB} kB\n"
    f"MemAvailable:   {MEM_AVAILABLE_KB} kB\n"
    "Buffers:           12345 kB\n"
    "Cached:         30123456 kB\n"
    "SwapCached:            0 kB\n"
)


def test_read_meminfo_takes_the_four_fields_in_bytes(tmp_path: Path) -> None:
    host = _host(tmp_path, MEMINFO)
    assert probe_module.read_meminfo(host["proc_root"]) == {
        "MemTotal": 127601664 * KIB,
        "MemFree": MEM_FREE_KB * KIB,
        "MemAvailable": MEM_AVAILABLE_KB * KIB,
        "Cached": 30123456 * KIB,  # SwapCached is another field
    }
    found = probe_module.probe_host(**host)
    assert (found.mem_free_bytes, found.cached_bytes) == (MEM_FREE_KB * KIB, 30123456 * KIB)
    # No meminfo (not Linux): nothing read, nothing refused.
    assert probe_module.read_meminfo(tmp_path / "nowhere") == {}


@pytest.mark.parametrize("line", ["MemFree: lots kB", "MemFree: 12 MB", "MemFree: 1 2 kB"])
def test_a_malformed_meminfo_field_is_named(tmp_path: Path, line: str) -> None:
    host = _host(tmp_path, f"MemTotal: 1024 kB\n{line}\n")
    with pytest.raises(vramplan.Error, match=r"meminfo: MemFree: expected '<number> kB'"):
        probe_module.read_meminfo(host["proc_root"])


def test_auto_gpu_on_gb10_hands_the_meminfo_to_the_plan(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    nvml = _nvml("NVIDIA GB10", GB10_CUDA_TOTAL, MEM_FREE_KB * KIB)
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    auto = vramplan.auto_gpu(count=1, **_host(tmp_path, MEMINFO))
    assert auto.gpu_id == "GB10"
    assert auto.host_mem_free_bytes == MEM_FREE_KB * KIB
    assert auto.host_mem_available_bytes == MEM_AVAILABLE_KB * KIB
    knobs = {
        "host_mem_free_bytes": auto.host_mem_free_bytes,
        "host_mem_available_bytes": auto.host_mem_available_bytes,
        "gpu_memory_utilization": 0.45,
        "max_model_len": 8192,
    }
    # 0.11.0 counts MemFree (26.52 GiB) against 0.45 x 121.69 = 54.76 GiB: refused, with the
    # page cache between MemFree and MemAvailable (29.80 GiB) named and the fix.
    old = vramplan.breakdown("Qwen/Qwen3-8B", auto.gpu_id, engine_version="0.11.0", **knobs)
    assert old.outcome == "startup_free_memory"
    text = "\n".join(old.messages)
    assert "the 29.80 GiB of page cache" in text
    assert "sync; echo 1 > /proc/sys/vm/drop_caches" in text
    assert "vLLM 0.11.1 or later, which counts MemAvailable" in text
    # 0.11.1 counts MemAvailable (56.33 GiB) on compute capability 12.1: it starts.
    new = vramplan.breakdown("Qwen/Qwen3-8B", auto.gpu_id, engine_version="0.11.1", **knobs)
    assert new.outcome == "started"


def test_auto_gpu_on_a_discrete_gpu_leaves_the_meminfo_out(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    total = 85030076416  # H100 80GB, CUDA's total
    monkeypatch.setitem(sys.modules, "pynvml", _nvml("NVIDIA H100 80GB HBM3", total, total))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    auto = vramplan.auto_gpu(count=1, **_host(tmp_path, MEMINFO))
    assert (auto.host_mem_free_bytes, auto.host_mem_available_bytes) == (None, None)
