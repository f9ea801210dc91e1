"""`probe` and `auto_gpu`: NVML through a fake `pynvml` module, `nvidia-smi` through a faked
subprocess and saved CSVs, host RAM through fake /proc and cgroup trees. No test touches a
real GPU or driver. CSV provenance: tests/data/diagnose/README.md."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import vramplan
from vramplan import probe as probe_module

MIB = 1 << 20
H100_CUDA_TOTAL = 85030076416  # model_specs/gpus.yaml: 79.19 GiB as vLLM 0.19 logs it
H100_NVML_TOTAL = 81559 * MIB  # nvidia-smi's "81559MiB" for an NVIDIA H100 80GB HBM3


class _Memory:
    def __init__(self, total: int, used: int, free: int) -> None:
        self.total, self.used, self.free = total, used, free


class _Process:
    def __init__(self, pid: int, used: int | None) -> None:
        self.pid, self.usedGpuMemory = pid, used


class NVMLError(Exception):
    """pynvml's base error; the driver's failures are subclasses."""


def fake_nvml(gpus: list[dict[str, Any]], *, fail: Exception | None = None) -> types.ModuleType:
    """A stand-in for nvidia-ml-py's `pynvml` with the calls probe.py makes."""
    module = types.ModuleType("pynvml")
    module.NVMLError = NVMLError  # type: ignore[attr-defined]
    calls: list[str] = []

    def init() -> None:
        calls.append("init")
        if fail is not None:
            raise fail

    module.nvmlInit = init  # type: ignore[attr-defined]
    module.nvmlShutdown = lambda: calls.append("shutdown")  # type: ignore[attr-defined]
    module.nvmlDeviceGetCount = lambda: len(gpus)  # type: ignore[attr-defined]
    module.nvmlDeviceGetHandleByIndex = lambda i: gpus[i]  # type: ignore[attr-defined]
    module.nvmlDeviceGetName = lambda h: h["name"]  # type: ignore[attr-defined]
    module.nvmlDeviceGetMemoryInfo = lambda h: _Memory(*h["memory"])  # type: ignore[attr-defined]
    module.nvmlDeviceGetComputeRunningProcesses = lambda h: [  # type: ignore[attr-defined]
        _Process(*p) for p in h["processes"]
    ]
    module.calls = calls  # type: ignore[attr-defined]
    return module


@pytest.fixture
def host_tree(tmp_path: Path) -> dict[str, Path]:
    """/proc with 100 GiB MemAvailable, a cgroup v2 tree with a 32 GiB limit, 8 GiB in use."""
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "meminfo").write_text("MemTotal: 131072000 kB\nMemAvailable: 104857600 kB\n")
    (proc / "self" / "cgroup").write_text("0::/docker/abc\n")
    cgroup = tmp_path / "cgroup"
    (cgroup / "docker" / "abc").mkdir(parents=True)
    (cgroup / "docker" / "abc" / "memory.max").write_text(f"{32 << 30}\n")
    (cgroup / "docker" / "abc" / "memory.current").write_text(f"{8 << 30}\n")
    return {"proc_root": proc, "cgroup_root": cgroup}


def no_nvidia_smi(monkeypatch: pytest.MonkeyPatch) -> None:
    def run(*args: Any, **kwargs: Any) -> None:
        raise FileNotFoundError("nvidia-smi")

    monkeypatch.setattr(probe_module, "_run_bounded", run)


def test_fake_nvml_second_tenant_binds(
    monkeypatch: pytest.MonkeyPatch, host_tree: dict[str, Path]
) -> None:
    # GPU 0 idle; GPU 1 holds another tenant's 20 GiB. NVML free excludes the driver's
    # reservation, so the idle GPU's free equals CUDA's total.
    tenant = 20 << 30
    nvml = fake_nvml(
        [
            {
                "name": b"NVIDIA H100 80GB HBM3",  # older nvidia-ml-py returns bytes
                "memory": (H100_NVML_TOTAL, 0, H100_CUDA_TOTAL),
                "processes": [],
            },
            {
                "name": "NVIDIA H100 80GB HBM3",
                "memory": (H100_NVML_TOTAL, tenant, H100_CUDA_TOTAL - tenant),
                "processes": [(4242, tenant), (4243, None)],
            },
        ]
    )
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    found = probe_module.probe(**host_tree)
    assert found.source == "nvml"
    assert [g.database_id for g in found.gpus] == ["H100-80GB", "H100-80GB"]
    assert found.gpus[1].processes == [
        probe_module.GpuProcess(4242, tenant),
        probe_module.GpuProcess(4243, None),
    ]
    assert nvml.calls == ["init", "shutdown"]
    auto = vramplan.auto_gpu(**host_tree)
    # The least-free GPU (index 1) binds: others = CUDA total - its free = the tenant's bytes.
    # This fake driver has no NVLink call: the interconnect stays the database's.
    assert auto[:4] == ("H100-80GB", tenant, (32 - 8) << 30, None)
    # Only GPU 0 in the launch: nothing held by others.
    assert vramplan.auto_gpu(gpu_indices=[0], **host_tree).memory_used_by_others_bytes == 0


def test_nvml_failure_falls_back_to_nvidia_smi(
    monkeypatch: pytest.MonkeyPatch, data_dir: Path, host_tree: dict[str, Path]
) -> None:
    error = type("NVMLError_DriverNotLoaded", (NVMLError,), {})
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml([], fail=error("Driver Not Loaded")))
    csv = (data_dir / "diagnose" / "nvidia_smi_two_h100_second_tenant.csv").read_text()
    seen: list[tuple[str, ...]] = []

    def run(argv: tuple[str, ...], *args: Any) -> tuple[int, str, str]:
        seen.append(tuple(argv))
        return 0, csv, ""

    monkeypatch.setattr(probe_module, "_run_bounded", run)
    found = probe_module.probe(**host_tree)
    assert found.source == "nvidia-smi"
    assert seen == [probe_module.NVIDIA_SMI_QUERY]
    assert found.tried == ["NVML: NVMLError_DriverNotLoaded: Driver Not Loaded"]
    assert found.gpus[1].processes is None  # the CSV query lists no processes


def test_no_driver_error_names_what_was_tried(
    monkeypatch: pytest.MonkeyPatch, host_tree: dict[str, Path]
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    no_nvidia_smi(monkeypatch)
    with pytest.raises(vramplan.Error) as err:
        probe_module.probe(**host_tree)
    text = str(err.value)
    assert "nvidia-ml-py" in text
    assert "nvidia-smi: not found on PATH" in text
    assert "--nvidia-smi-csv" in text


def test_saved_csv_second_tenant(data_dir: Path, host_tree: dict[str, Path]) -> None:
    csv = data_dir / "diagnose" / "nvidia_smi_two_h100_second_tenant.csv"
    found = probe_module.probe(nvidia_smi_csv=csv, **host_tree)
    assert found.source == f"csv:{csv}"
    assert [(g.index, g.free_bytes) for g in found.gpus] == [(0, 81091 * MIB), (1, 60611 * MIB)]
    auto = vramplan.auto_gpu(nvidia_smi_csv=csv, **host_tree)
    # CUDA total 85030076416 B = 81091 MiB; minus GPU 1's free 60611 MiB = 20480 MiB =
    # 21474836480 B: the second tenant.
    assert auto.gpu_id == "H100-80GB"
    assert auto.memory_used_by_others_bytes == 21474836480
    # The planner then sees the free memory vLLM's startup check will see.
    plan = vramplan.plan(
        "meta-llama/Llama-3.1-8B-Instruct",
        auto.gpu_id,
        memory_used_by_others_bytes=auto.memory_used_by_others_bytes,
        context=8192,
    )
    assert plan.fits
    assert plan["gpu_memory_utilization"] <= 60611 * MIB / H100_CUDA_TOTAL


def test_saved_csv_rtx5090_maps_by_name(data_dir: Path, host_tree: dict[str, Path]) -> None:
    found = probe_module.probe(
        nvidia_smi_csv=data_dir / "diagnose" / "nvidia_smi_rtx5090_desktop.csv", **host_tree
    )
    assert found.gpus[0].database_id == "RTX-5090"
    assert found.gpus[0].total_bytes == 32607 * MIB


def test_csv_errors_name_file_and_line(data_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(vramplan.Error, match=r"nvidia_smi_mig_na\.csv:1: .*\[N/A\]"):
        probe_module.read_nvidia_smi_csv(data_dir / "diagnose" / "nvidia_smi_mig_na.csv")
    bad = tmp_path / "smi.csv"
    bad.write_text("index, name, memory.total [MiB]\n")
    with pytest.raises(vramplan.Error, match=r"smi\.csv:1: expected 'index, name"):
        probe_module.read_nvidia_smi_csv(bad)
    bad.write_bytes(b"")
    with pytest.raises(vramplan.Error, match="no GPU rows"):
        probe_module.read_nvidia_smi_csv(bad)
    with pytest.raises(vramplan.Error, match="cannot read"):
        probe_module.read_nvidia_smi_csv(tmp_path / "missing.csv")


def test_match_gpu_by_name_and_capacity() -> None:
    assert probe_module.match_gpu("NVIDIA H100 80GB HBM3", H100_NVML_TOTAL) == "H100-80GB"
    assert probe_module.match_gpu("NVIDIA GeForce RTX 5090", 32607 * MIB) == "RTX-5090"
    # A vLLM log's CUDA total alone (79.19 GiB) finds the H100 too.
    assert probe_module.match_gpu(None, H100_CUDA_TOTAL, probed_total=False) == "H100-80GB"
    with pytest.raises(vramplan.Error, match="by name but not by capacity"):
        probe_module.match_gpu("NVIDIA H100 80GB HBM3", 40 << 30)
    with pytest.raises(vramplan.Error, match=r"not in model_specs/gpus\.yaml"):
        probe_module.match_gpu("Imaginary GPU 9000", 16 << 30)


def test_match_gpu_wraps_the_core_lookup_for_every_name_form() -> None:
    # nvidia-smi, rocm-smi and lspci name forms go through the core's one lookup.
    assert probe_module.match_gpu("NVIDIA GeForce RTX 4090 D", 24564 * MIB) == "RTX-4090-D"
    assert probe_module.match_gpu("AMD Instinct MI300X", 192 << 30) == "MI300X"
    lspci = "NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)"
    assert probe_module.match_gpu(lspci, H100_NVML_TOTAL) == "H100-80GB"
    # A shared name: the probed capacity picks the size (nvidia-smi's 40960 MiB, an A100 40GB,
    # modal-labs/modal-client#2797).
    assert probe_module.match_gpu("NVIDIA A100", 40960 * MIB) == "A100-40GB"
    assert probe_module.match_gpu("NVIDIA A100", 81920 * MIB) == "A100-80GB"


def test_load_gpu_warns_which_size_a_shared_name_assumed() -> None:
    with pytest.warns(UserWarning, match=r"assumed A100-80GB .*A100-40GB"):
        gpu = vramplan.load_gpu("NVIDIA A100")
    assert gpu.id == "A100-80GB"
    assert vramplan.load_gpu("NVIDIA GeForce RTX 4090 D").id == "RTX-4090-D"  # no warning


def test_host_memory_cgroup_v2_v1_and_none(tmp_path: Path, host_tree: dict[str, Path]) -> None:
    host = probe_module.probe_host(**host_tree)
    assert host.mem_available_bytes == 104857600 * 1024
    assert host.cgroup_limit_bytes == 32 << 30
    assert host.usable_bytes == 24 << 30  # the cgroup's headroom is below MemAvailable
    # "max": no v2 limit; a v1 hierarchy then gives the limit.
    (host_tree["cgroup_root"] / "docker" / "abc" / "memory.max").write_text("max\n")
    v1 = host_tree["cgroup_root"] / "memory"
    v1.mkdir()
    (v1 / "memory.limit_in_bytes").write_text(f"{16 << 30}\n")
    (v1 / "memory.usage_in_bytes").write_text(f"{1 << 30}\n")
    host = probe_module.probe_host(**host_tree)
    assert (host.cgroup_limit_bytes, host.usable_bytes) == (16 << 30, 15 << 30)
    # v1's "unlimited" (2^63 rounded down to a page) is no limit: MemAvailable alone.
    (v1 / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    host = probe_module.probe_host(**host_tree)
    assert host.cgroup_limit_bytes is None
    assert host.usable_bytes == 104857600 * 1024
    # Nothing readable at all.
    empty = probe_module.probe_host(proc_root=tmp_path / "none", cgroup_root=tmp_path / "none")
    assert empty.usable_bytes is None


def test_cli_probe_json_gives_free_bytes(data_dir: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "vramplan",
            "probe",
            "--nvidia-smi-csv",
            str(data_dir / "diagnose" / "nvidia_smi_two_h100_second_tenant.csv"),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert [g["free_bytes"] for g in data["gpus"]] == [81091 * MIB, 60611 * MIB]
    assert [g["database_id"] for g in data["gpus"]] == ["H100-80GB", "H100-80GB"]
    bad = subprocess.run(
        [sys.executable, "-m", "vramplan", "probe", "--nvidia-smi-csv", "/nonexistent.csv"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2
    assert "/nonexistent.csv: cannot read" in bad.stderr


class NVMLError_NotSupported(NVMLError):  # pynvml's own name
    """pynvml's error for a query the GPU does not support (NVLink on a PCIe-only card)."""


def with_nvlink(nvml: types.ModuleType, links_up: dict[int, int]) -> types.ModuleType:
    """The fake driver answering NVLink state: GPU index -> links up (0: the GPU has NVLink
    links, all down); a GPU missing from the dict has no NVLink (NotSupported on link 0)."""
    nvml.NVML_NVLINK_MAX_LINKS = 18  # type: ignore[attr-defined]
    nvml.NVMLError_NotSupported = NVMLError_NotSupported  # type: ignore[attr-defined]

    def state(handle: dict[str, Any], link: int) -> int:
        index = handle["index"]
        if index not in links_up:
            raise NVMLError_NotSupported
        if link >= 12:  # an H100 SXM has 18 links; pretend 12 here, the rest not supported
            raise NVMLError_NotSupported
        return 1 if link < links_up[index] else 0

    nvml.nvmlDeviceGetNvLinkState = state  # type: ignore[attr-defined]
    return nvml


@pytest.mark.parametrize(
    ("links_up", "expected"),
    [
        ({0: 12, 1: 12}, "nvlink"),  # an HGX board: every link up
        ({}, "pcie"),  # no NVLink on either card
        ({0: 1}, None),  # one bridged card, one without: the database's default
        ({0: 0, 1: 0}, "pcie"),  # links present but none up
    ],
)
def test_auto_gpu_reads_the_interconnect_from_nvml(
    monkeypatch: pytest.MonkeyPatch,
    host_tree: dict[str, Path],
    links_up: dict[int, int],
    expected: str | None,
) -> None:
    gpus = [
        {
            "index": i,
            "name": "NVIDIA H100 80GB HBM3",
            "memory": (H100_NVML_TOTAL, 0, H100_CUDA_TOTAL),
            "processes": [],
        }
        for i in range(2)
    ]
    monkeypatch.setitem(sys.modules, "pynvml", with_nvlink(fake_nvml(gpus), links_up))
    auto = vramplan.auto_gpu(**host_tree)
    assert auto.interconnect == expected
    found = probe_module.probe(**host_tree)
    assert [g.nvlink for g in found.gpus] == [
        (links_up[i] > 0) if i in links_up else False for i in range(2)
    ]
    # One GPU alone has no interconnect to speak of.
    assert vramplan.auto_gpu(gpu_indices=[0], **host_tree).interconnect is None
