"""What this machine really has: the GPUs (through NVML, else `nvidia-smi`, or a saved
`nvidia-smi` CSV) with what other processes already hold on each, and the host RAM a launch can
use (`MemAvailable`, capped by the memory cgroup's limit, since containers are killed at the
cgroup line, not at the machine's).

`auto_gpu()` is the `--gpu auto` answer: the GPUs vLLM would take (CUDA_VISIBLE_DEVICES, device
0 first), their database GPU, the memory other processes hold on the least-free of them (it
binds: every rank must fit the fullest GPU) and the host RAM.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from . import _core, _io, api
from ._units import MIB

NVIDIA_SMI_QUERY = (
    "nvidia-smi",
    "--query-gpu=index,name,memory.total,memory.used,memory.free",
    "--format=csv,noheader,nounits",
)
# A probed total (NVML, nvidia-smi) includes memory the driver reserves; CUDA reports up to a
# few percent less (H100 80GB: 81559 MiB vs 79.19 GiB; L4: 23034 MiB vs 22.05 GiB).
_TOTAL_BELOW_PROBED = 0.05
_TOTAL_ABOVE_PROBED = 0.005
# A MIG slice's database total is derived (gpus.yaml `mig:`), up to ~1 GiB under what NVML
# prints for the slice: on a 1g.5gb, 4402 MiB against the 4864 MiB of a 1/8 A100 40GB slice.
_SLICE_TOTAL_BELOW_PROBED = 0.15
_MAX_TEXT_BYTES = 1 << 20  # a CSV for 1000 GPUs is ~60 KiB
_MAX_GPU_BYTES = 1 << 50  # 1 PiB: far above any GPU, far inside int64
_CGROUP_UNLIMITED = 1 << 60  # cgroup v1 writes "no limit" as 2^63 rounded to a page


@dataclass(frozen=True)
class GpuProcess:
    pid: int
    used_bytes: int | None  # None where the driver does not say (MIG, some containers)


@dataclass(frozen=True)
class ProbedGpu:
    index: int
    name: str
    total_bytes: int
    used_bytes: int
    free_bytes: int
    processes: list[GpuProcess] | None = None  # None: the source does not list processes
    database_id: str | None = None  # the matching GPU in model_specs/gpus.yaml
    nvlink: bool | None = None  # an NVLink link is up; None: the source cannot say

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "total_bytes": self.total_bytes,
            "used_bytes": self.used_bytes,
            "free_bytes": self.free_bytes,
            "processes": None
            if self.processes is None
            else [{"pid": p.pid, "used_bytes": p.used_bytes} for p in self.processes],
            "database_id": self.database_id,
            "nvlink": self.nvlink,
        }


@dataclass(frozen=True)
class HostMemory:
    mem_available_bytes: int | None  # /proc/meminfo MemAvailable
    cgroup_limit_bytes: int | None  # memory.max (v2) / memory.limit_in_bytes (v1); None: none
    cgroup_usage_bytes: int | None  # memory.current / memory.usage_in_bytes
    cgroup_file: str | None  # the file the limit came from
    # /proc/meminfo MemTotal, MemFree and Cached (the page cache): on a unified-memory GPU
    # vLLM's startup check counts MemFree or MemAvailable as the GPU's free memory, by release.
    mem_total_bytes: int | None = None
    mem_free_bytes: int | None = None
    cached_bytes: int | None = None

    @property
    def usable_bytes(self) -> int | None:
        """What a launch can still take: MemAvailable, capped by the cgroup's headroom."""
        candidates = []
        if self.mem_available_bytes is not None:
            candidates.append(self.mem_available_bytes)
        if self.cgroup_limit_bytes is not None:
            candidates.append(max(0, self.cgroup_limit_bytes - (self.cgroup_usage_bytes or 0)))
        return min(candidates) if candidates else None

    def to_json(self) -> dict[str, Any]:
        return {
            "mem_available_bytes": self.mem_available_bytes,
            "cgroup_limit_bytes": self.cgroup_limit_bytes,
            "cgroup_usage_bytes": self.cgroup_usage_bytes,
            "cgroup_file": self.cgroup_file,
            "usable_bytes": self.usable_bytes,
            "mem_total_bytes": self.mem_total_bytes,
            "mem_free_bytes": self.mem_free_bytes,
            "cached_bytes": self.cached_bytes,
        }


@dataclass(frozen=True)
class Probe:
    source: str  # "nvml", "nvidia-smi" or "csv:<path>"
    gpus: list[ProbedGpu]
    host: HostMemory
    tried: list[str] = field(default_factory=list)  # sources that failed first, with why

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "gpus": [g.to_json() for g in self.gpus],
            "host": self.host.to_json(),
            "tried": self.tried,
        }


@dataclass(frozen=True)
class MemoryLimit:
    """A per-process GPU memory limit set in the environment (HAMi's CUDA_DEVICE_MEMORY_LIMIT,
    MPS's CUDA_MPS_PINNED_DEVICE_MEM_LIMIT): the memory the launch can use on each GPU.

    HAMi-core clamps what cudaMemGetInfo reports (HAMi-core#181), so vLLM takes the limit as
    the GPU's total; MPS fails allocations past its limit, taken the same way here (assumed).
    vLLM's CUDA-graph memory profiling sizes against the physical capacity, not the clamp
    (vllm#40937 on 0.19.1, HAMi-core#181): with CUDA graphs on, the launch can overshoot the
    limit by up to the physical total less the limit (`overshoot_bytes`, an upper bound the
    threads state, not measured); --enforce-eager, or a fixed --kv-cache-memory-bytes (which
    skips the profiler, vllm/v1/worker/gpu_worker.py), avoids it."""

    limit_bytes: int
    variable: str  # the environment variable that set it
    physical_total_bytes: int  # the GPU's CUDA total without the limit

    @property
    def overshoot_bytes(self) -> int:
        return max(0, self.physical_total_bytes - self.limit_bytes)

    def note(self) -> str:
        gib = 1 << 30
        return (
            f"{self.variable}: {self.limit_bytes / gib:.2f} GiB per GPU is the plan's GPU total "
            f"(of {self.physical_total_bytes / gib:.2f} GiB); vLLM's CUDA-graph memory "
            f"profiling ignores the clamp (vllm#40937) and can overshoot it by up to "
            f"{self.overshoot_bytes / gib:.2f} GiB: use --enforce-eager or a fixed "
            "--kv-cache-memory-bytes"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "limit_bytes": self.limit_bytes,
            "variable": self.variable,
            "physical_total_bytes": self.physical_total_bytes,
            "graph_profiling_overshoot_bytes": self.overshoot_bytes,
        }


_LIMIT_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def _limit_bytes(variable: str, text: str) -> int:
    """'24576m', '10g', '1G', '512MB' or plain bytes (binary units, as HAMi-core and MPS read
    them)."""
    value = text.strip().lower().removesuffix("b").removesuffix("i")
    unit = value[-1:] if value[-1:] in _LIMIT_UNITS else ""
    digits = value[: len(value) - len(unit)]
    if not digits.isdigit() or int(digits) == 0:
        msg = f"{variable}={text!r}: expected a size such as 24576m, 10g or a byte count"
        raise _core.ConfigError(msg)
    return min(int(digits) * _LIMIT_UNITS[unit], _MAX_GPU_BYTES)


def memory_limit_env(env: Mapping[str, str], ranks: int) -> tuple[int, str] | None:
    """(the smallest limit over the launch's `ranks` devices, the variable that set it), from
    HAMi's CUDA_DEVICE_MEMORY_LIMIT (every device) / CUDA_DEVICE_MEMORY_LIMIT_<i> (device i)
    and MPS's CUDA_MPS_PINNED_DEVICE_MEM_LIMIT ("0=1G,1=2G"); None where none is set."""
    found: list[tuple[int, str]] = []
    for i in range(ranks):
        for name in (f"CUDA_DEVICE_MEMORY_LIMIT_{i}", "CUDA_DEVICE_MEMORY_LIMIT"):
            if env.get(name):
                found.append((_limit_bytes(name, env[name]), name))
                break
    mps = "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"
    for entry in filter(None, (e.strip() for e in env.get(mps, "").split(","))):
        device, sep, size = entry.partition("=")
        if not sep or not device.strip().isdigit():
            msg = f"{mps}={env[mps]!r}: expected <device>=<size>[,...] (0=1G,1=2G)"
            raise _core.ConfigError(msg)
        if int(device) < ranks:
            found.append((_limit_bytes(mps, size), mps))
    return min(found) if found else None


class AutoGpu(NamedTuple):
    gpu_id: str  # database id
    memory_used_by_others_bytes: int  # on the least-free GPU, against the database total
    host_ram_bytes: int  # 0 when unknown (the planner's "not given")
    # "nvlink" where every chosen GPU has an NVLink link up, "pcie" where none has; None
    # where the source cannot say or the GPUs differ (the database's default then applies).
    interconnect: str | None = None
    chosen: str = ""  # which probed GPUs were taken, and why, for the person
    # A HAMi / MPS memory limit below the GPU's total (memory_limit): the plan's GPU total.
    memory_limit: MemoryLimit | None = None
    # A unified-memory GPU (GB10, GH200): the host's MemFree and MemAvailable, the knobs
    # host_mem_free_bytes / host_mem_available_bytes; None elsewhere or where not read.
    host_mem_free_bytes: int | None = None
    host_mem_available_bytes: int | None = None


# ---------------------------------------------------------------------------------------
# GPUs


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _nvlink_up(nvml: Any, handle: Any) -> bool | None:
    """Whether one of the GPU's NVLink links is up: False where the driver says the GPU has
    no NVLink (NVMLError_NotSupported on link 0), None where this nvidia-ml-py or the driver
    cannot say."""
    get_state = getattr(nvml, "nvmlDeviceGetNvLinkState", None)
    links = getattr(nvml, "NVML_NVLINK_MAX_LINKS", None)
    not_supported = getattr(nvml, "NVMLError_NotSupported", None)
    if get_state is None or not isinstance(links, int) or links <= 0:
        return None
    for link in range(min(links, 64)):
        try:
            if get_state(handle, link):
                return True
        except nvml.NVMLError as err:
            if link > 0:
                return False  # past the GPU's last link
            return False if not_supported is not None and isinstance(err, not_supported) else None
    return False


def _from_nvml(nvml: Any) -> list[ProbedGpu]:
    nvml.nvmlInit()
    try:
        gpus = []
        for index in range(int(nvml.nvmlDeviceGetCount())):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            memory = nvml.nvmlDeviceGetMemoryInfo(handle)
            _check_memory(
                f"NVML GPU {index}", int(memory.total), int(memory.used), int(memory.free)
            )
            processes = [
                GpuProcess(int(p.pid), None if p.usedGpuMemory is None else int(p.usedGpuMemory))
                for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle)
            ]
            gpus.append(
                ProbedGpu(
                    index=index,
                    name=_text(nvml.nvmlDeviceGetName(handle)).strip(),
                    total_bytes=int(memory.total),
                    used_bytes=int(memory.used),
                    free_bytes=int(memory.free),
                    processes=processes,
                    nvlink=_nvlink_up(nvml, handle),
                )
            )
        return gpus
    finally:
        nvml.nvmlShutdown()


def _check_memory(where: str, total: int, used: int, free: int) -> None:
    """A GPU's figures must fit inside its total: a driver (or file) that says otherwise is
    named, not planned from."""
    if used > total or free > total:
        msg = (
            f"{where}: memory.used {used // MIB} MiB and memory.free {free // MIB} MiB do not fit "
            f"in memory.total {total // MIB} MiB: not a GPU's figures"
        )
        raise _core.ParseError(msg)


def parse_nvidia_smi_csv(text: str, *, source: str = "nvidia-smi") -> list[ProbedGpu]:
    """Rows of `index, name, memory.total, memory.used, memory.free` in MiB (the
    `--format=csv,noheader,nounits` output)."""
    if len(text) > _MAX_TEXT_BYTES:
        msg = f"{source}: {len(text)} bytes is not nvidia-smi CSV output (over {_MAX_TEXT_BYTES})"
        raise _core.ParseError(msg)
    gpus = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        # The name may hold commas; the index leads and the three numbers trail.
        fields = [f.strip() for f in line.split(",")]
        if len(fields) < 5:
            msg = (
                f"{source}:{number}: expected 'index, name, memory.total, memory.used, "
                f"memory.free' (MiB), got {line[:120]!r}"
            )
            raise _core.ParseError(msg)
        index_text, name = fields[0], ", ".join(fields[1:-3])
        try:
            index = int(index_text)
            total, used, free = (int(float(v)) * MIB for v in fields[-3:])
        except (ValueError, OverflowError) as err:  # text, nan, inf
            msg = (
                f"{source}:{number}: index and memory.total/used/free must be numbers in MiB "
                f"(--format=csv,noheader,nounits), got {line[:120]!r}"
            )
            raise _core.ParseError(msg) from err
        if min(index, total, used, free) < 0 or total == 0 or max(index, total) > _MAX_GPU_BYTES:
            msg = f"{source}:{number}: negative, zero or impossible figures in {line[:120]!r}"
            raise _core.ParseError(msg)
        _check_memory(f"{source}:{number}", total, used, free)
        gpus.append(ProbedGpu(index, name, total, used, free))
    if not gpus:
        msg = f"{source}: no GPU rows (expected nvidia-smi --query-gpu CSV output)"
        raise _core.ParseError(msg)
    return gpus


_NVIDIA_SMI_SECONDS = 20.0


def _run_bounded(argv: tuple[str, ...], max_bytes: int, seconds: float) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of a program that must finish within `seconds` and print
    at most `max_bytes` on each stream; RuntimeError (or TimeoutExpired) otherwise, with the
    program killed. Nothing beyond `max_bytes` is kept in memory."""
    import select
    import subprocess  # only a probe runs a program
    import time

    deadline = time.monotonic() + seconds
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        out_fd, err_fd = (s.fileno() for s in (process.stdout, process.stderr) if s is not None)
        kept = {out_fd: bytearray(), err_fd: bytearray()}
        streams = [out_fd, err_fd]
        try:
            while streams:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise subprocess.TimeoutExpired(list(argv), seconds)
                ready, _, _ = select.select(streams, [], [], left)
                for fd in ready:
                    chunk = os.read(fd, 1 << 16)
                    if not chunk:
                        streams.remove(fd)
                    elif len(kept[fd]) + len(chunk) > max_bytes:
                        msg = f"printed over {max_bytes} bytes (not --query-gpu CSV output)"
                        raise RuntimeError(msg)
                    else:
                        kept[fd] += chunk
            code = process.wait(timeout=max(deadline - time.monotonic(), 0.1))
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    out, err = (bytes(kept[fd]).decode("utf-8", "replace") for fd in (out_fd, err_fd))
    return code, out, err


def _from_nvidia_smi() -> list[ProbedGpu]:
    code, out, err = _run_bounded(NVIDIA_SMI_QUERY, _MAX_TEXT_BYTES, _NVIDIA_SMI_SECONDS)
    if code != 0:
        why = (err or out).strip().splitlines()
        raise RuntimeError(f"exit status {code}: {why[0] if why else 'no output'}")
    return parse_nvidia_smi_csv(out)


def read_nvidia_smi_csv(path: str | Path) -> list[ProbedGpu]:
    """A saved `nvidia-smi --query-gpu=... --format=csv,noheader,nounits` output."""
    path = Path(path)
    data = _io.read_bytes(path, what="nvidia-smi CSV", max_bytes=_MAX_TEXT_BYTES)
    return parse_nvidia_smi_csv(data.decode("utf-8", "replace"), source=str(path))


def probe_gpus(
    *, nvidia_smi_csv: str | Path | None = None
) -> tuple[str, list[ProbedGpu], list[str]]:
    """(source, GPUs, what failed before it). NVML first, then nvidia-smi."""
    import subprocess

    if nvidia_smi_csv is not None:
        return f"csv:{nvidia_smi_csv}", read_nvidia_smi_csv(nvidia_smi_csv), []
    tried = []
    try:
        import pynvml  # nvidia-ml-py (the `probe` extra)
    except ImportError:
        tried.append("NVML: the nvidia-ml-py package (import pynvml) is not installed")
    else:
        try:
            gpus = _from_nvml(pynvml)
        except (pynvml.NVMLError, OSError) as err:  # no driver, no GPU, no libnvidia-ml
            tried.append(f"NVML: {type(err).__name__}: {err}")
        else:
            if gpus:
                return "nvml", gpus, tried
            tried.append("NVML: the driver reports 0 GPUs")
    try:
        gpus = _from_nvidia_smi()
    except FileNotFoundError:
        tried.append("nvidia-smi: not found on PATH")
    except subprocess.TimeoutExpired:
        tried.append(f"nvidia-smi: no answer within {_NVIDIA_SMI_SECONDS:g} s")
    except (OSError, RuntimeError, _core.ParseError) as err:
        tried.append(f"nvidia-smi: {err}")
    else:
        return "nvidia-smi", gpus, tried
    msg = "no GPU found; tried " + "; ".join(tried) + " (or pass --nvidia-smi-csv FILE)"
    raise _core.ConfigError(msg)


def match_gpu(name: str | None, total_bytes: int | None, *, probed_total: bool = True) -> str:
    """The database GPU id for a probed GPU, by name (database name, id or alias) and capacity.

    `probed_total`: `total_bytes` comes from NVML / nvidia-smi (a little above CUDA's total);
    False when it is CUDA's own figure (a vLLM log's `total_memory`), matched within 0.5%.
    """
    db = api.spec_database()
    rows = [db.gpu(g).to_dict() for g in api.gpus()]

    def fits(row: dict[str, Any]) -> bool:
        if total_bytes is None:
            return True
        cuda_total = int(row["total_memory_bytes"])
        below = _SLICE_TOTAL_BELOW_PROBED if row["mig_profile"] else _TOTAL_BELOW_PROBED
        if probed_total:
            return (
                total_bytes * (1 - below) <= cuda_total <= total_bytes * (1 + _TOTAL_ABOVE_PROBED)
            )
        return abs(cuda_total - total_bytes) <= 0.005 * total_bytes

    if name:
        # The core's one GPU lookup names the candidates (several for a shared name such as
        # "NVIDIA A100"); the probed capacity picks among them.
        named = [g.to_dict() for g in db.gpu_candidates(name)]
        sized = [r for r in named if fits(r)]
        if sized:
            return str(sized[0]["id"])
        if named:
            msg = (
                f"GPU {name!r} matches database GPU {named[0]['id']!r} by name but not by "
                f"capacity ({total_bytes} bytes probed, "
                f"{named[0]['total_memory_bytes']} in model_specs/gpus.yaml); a MIG slice or "
                "a different memory size: give --gpu and --gpu-total-bytes"
            )
            raise _core.ConfigError(msg)
    if total_bytes is not None and not name:
        sized = [r for r in rows if fits(r)]
        if sized:
            return str(sized[0]["id"])
    msg = (
        f"GPU {name or '(unnamed)'!r} with {total_bytes} bytes is not in model_specs/gpus.yaml; "
        "give --gpu ID (see `vramplan gpus`) or add it to the database"
    )
    raise _core.ConfigError(msg)


# ---------------------------------------------------------------------------------------
# Host RAM


def _read_small(path: Path) -> str | None:
    try:
        data = _io.read_bytes(path, what="kernel file", max_bytes=_MAX_TEXT_BYTES)
    except _core.ConfigError:
        return None
    return data.decode("utf-8", "replace")


MEMINFO_FIELDS = ("MemTotal", "MemFree", "MemAvailable", "Cached")


def read_meminfo(proc_root: str | Path = "/proc") -> dict[str, int]:
    """/proc/meminfo's MemTotal, MemFree, MemAvailable and Cached in bytes, those present (a
    bounded read; none where the file cannot be read, as off Linux). A field whose value is not
    "<digits> kB" is a ConfigError naming the file, the field and the line."""
    path = Path(proc_root) / "meminfo"
    found: dict[str, int] = {}
    for line in (_read_small(path) or "").splitlines():
        name, _, rest = line.partition(":")
        if name not in MEMINFO_FIELDS or name in found:
            continue
        parts = rest.split()
        unit = parts[1].lower() if len(parts) == 2 else "kb"  # the kernel writes " kB"
        if not 1 <= len(parts) <= 2 or not parts[0].isdigit() or unit != "kb":
            msg = f"{path}: {name}: expected '<number> kB', got {rest.strip()[:80]!r}"
            raise _core.ConfigError(msg)
        found[name] = int(parts[0]) * 1024
    return found


def _cgroup_number(path: Path) -> int | None:
    text = _read_small(path)
    if text is None:
        return None
    value = text.strip()
    if not value.isdigit():
        return None  # "max": no limit
    number = int(value)
    return None if number >= _CGROUP_UNLIMITED else number


def _cgroup_dirs(proc_root: Path, cgroup_root: Path) -> tuple[list[Path], list[Path]]:
    """Candidate v2 and v1 memory-controller directories, this process's own first."""
    v2, v1 = [], []
    for line in (_read_small(proc_root / "self" / "cgroup") or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        relative = parts[2].lstrip("/")
        if parts[0] == "0" and parts[1] == "":
            v2.append(cgroup_root / relative)
        elif "memory" in parts[1].split(","):
            v1.append(cgroup_root / "memory" / relative)
    v2.append(cgroup_root)
    v1.append(cgroup_root / "memory")
    return v2, v1


def probe_host(
    *, proc_root: str | Path = "/proc", cgroup_root: str | Path = "/sys/fs/cgroup"
) -> HostMemory:
    proc_root, cgroup_root = Path(proc_root), Path(cgroup_root)
    meminfo = read_meminfo(proc_root)
    available = meminfo.get("MemAvailable")
    kernel = {
        "mem_total_bytes": meminfo.get("MemTotal"),
        "mem_free_bytes": meminfo.get("MemFree"),
        "cached_bytes": meminfo.get("Cached"),
    }
    v2, v1 = _cgroup_dirs(proc_root, cgroup_root)
    for directory in v2:
        limit = _cgroup_number(directory / "memory.max")
        if limit is not None:
            usage = _cgroup_number(directory / "memory.current")
            return HostMemory(available, limit, usage, str(directory / "memory.max"), **kernel)
    for directory in v1:
        limit = _cgroup_number(directory / "memory.limit_in_bytes")
        if limit is not None:
            usage = _cgroup_number(directory / "memory.usage_in_bytes")
            file = str(directory / "memory.limit_in_bytes")
            return HostMemory(available, limit, usage, file, **kernel)
    return HostMemory(available, None, None, None, **kernel)


# ---------------------------------------------------------------------------------------
# Together


def probe(
    *,
    nvidia_smi_csv: str | Path | None = None,
    proc_root: str | Path = "/proc",
    cgroup_root: str | Path = "/sys/fs/cgroup",
) -> Probe:
    """The GPUs (each mapped to the database when it can be) and the host memory."""
    source, gpus, tried = probe_gpus(nvidia_smi_csv=nvidia_smi_csv)
    mapped = []
    for gpu in gpus:
        try:
            gpu_id = match_gpu(gpu.name, gpu.total_bytes)
        except _core.ConfigError:
            gpu_id = None
        mapped.append(ProbedGpu(**{**gpu.__dict__, "database_id": gpu_id}))
    return Probe(source, mapped, probe_host(proc_root=proc_root, cgroup_root=cgroup_root), tried)


def launch_devices(count: int, visible: str | None) -> list[int] | None:
    """The probed GPU indices a launch of `count` GPUs runs on, as vLLM takes them: the first
    `count` devices CUDA shows it, which are CUDA_VISIBLE_DEVICES's in order where it is set,
    else 0, 1, ...; None where CUDA_VISIBLE_DEVICES names GPUs by UUID or MIG instance (not
    mapped here: every probed GPU is considered)."""
    if visible is None:
        return list(range(count))
    entries = [entry.strip() for entry in visible.split(",") if entry.strip()]
    if not all(entry.isdigit() for entry in entries):
        return None
    if len(entries) < count:
        msg = (
            f"CUDA_VISIBLE_DEVICES={visible!r} shows {len(entries)} GPU(s), and the launch "
            f"needs {count}: vLLM would stop at startup"
        )
        raise _core.ConfigError(msg)
    return [int(entry) for entry in entries[:count]]


def auto_gpu(
    *,
    count: int | None = None,
    gpu_indices: list[int] | None = None,
    nvidia_smi_csv: str | Path | None = None,
    proc_root: str | Path = "/proc",
    cgroup_root: str | Path = "/sys/fs/cgroup",
) -> AutoGpu:
    """`--gpu auto`: (database GPU id, memory other processes hold on the least-free GPU, host
    RAM usable now). `gpu_indices` limits the choice to the GPUs the launch will use; else
    `count` GPUs are taken as vLLM takes them (launch_devices: CUDA_VISIBLE_DEVICES, device 0
    first); with neither, every probed GPU. The GPUs taken must be one model.

    Memory used by others is counted against the database (CUDA) total, so the planner sees
    the free memory vLLM's startup check will see: database total - probed free."""
    found = probe(nvidia_smi_csv=nvidia_smi_csv, proc_root=proc_root, cgroup_root=cgroup_root)
    gpus = found.gpus
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    why = "every probed GPU"
    if gpu_indices is None and count is not None:
        gpu_indices = launch_devices(count, visible)
        why = (
            f"CUDA_VISIBLE_DEVICES={visible}"
            if visible is not None
            else "CUDA_VISIBLE_DEVICES unset: device 0 first, as vLLM takes them"
        )
    if gpu_indices is not None:
        wanted = set(gpu_indices)
        gpus = [g for g in gpus if g.index in wanted]
        missing = wanted - {g.index for g in gpus}
        if missing:
            msg = f"GPU index {sorted(missing)} not found (probed {[g.index for g in found.gpus]})"
            raise _core.ConfigError(msg)
    if not gpus:
        msg = "no GPU to plan for"
        raise _core.ConfigError(msg)
    models = {g.database_id or g.name for g in gpus}
    if count is not None and len(models) > 1:
        listed = ", ".join(f"GPU {g.index} {g.name}" for g in gpus)
        msg = (
            f"--gpu auto: the GPUs the launch would use differ ({listed}); vLLM plans one GPU "
            "model: set CUDA_VISIBLE_DEVICES to GPUs of one model, or give --gpu"
        )
        raise _core.ConfigError(msg)
    binding = min(gpus, key=lambda g: (g.free_bytes, g.index))
    gpu_id = match_gpu(binding.name, binding.total_bytes)
    chosen = f"GPU {', '.join(str(g.index) for g in gpus)} ({binding.name}; {why})"
    database_gpu = api.load_gpu(gpu_id)
    cuda_total = int(database_gpu.total_memory_bytes)
    limit = None
    env_limit = memory_limit_env(os.environ, len(gpus))
    if env_limit is not None and env_limit[0] < cuda_total:
        limit = MemoryLimit(env_limit[0], env_limit[1], cuda_total)
        cuda_total = limit.limit_bytes  # what vLLM sees as the total inside the limit
    # Short of the limit only where the GPU's free memory is below it.
    others = max(0, cuda_total - binding.free_bytes)
    links = {g.nvlink for g in gpus}
    interconnect = None
    if len(gpus) > 1 and links == {True}:
        interconnect = "nvlink"
    elif len(gpus) > 1 and links == {False}:
        interconnect = "pcie"
    host = found.host.usable_bytes or 0
    unified = bool(database_gpu.to_dict()["unified_memory"])
    return AutoGpu(
        gpu_id,
        others,
        host,
        interconnect,
        chosen,
        limit,
        found.host.mem_free_bytes if unified else None,
        found.host.mem_available_bytes if unified else None,
    )
