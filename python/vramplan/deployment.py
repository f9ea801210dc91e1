"""What a pod or container needs around the launch: the GPU resource Kubernetes schedules on
(a whole GPU or one MIG slice), a memory request and limit from the plan's host need, and the
/dev/shm size multiprocess vLLM and the KV-offload region use. One formula, used by
`plan --json` (the `deployment` object) and by `flags --format k8s / compose`.

Sources (vLLM, shared/reference/vllm-scheduler-and-host.md section 4):
- the mp executor (world size > 1; world size 1 runs `uni`, with no queues) makes one
  scheduler->workers broadcast queue per engine, 10 x 16 MiB
  (v1/executor/multiproc_executor.py:MultiprocExecutor._init_executor), one response queue per
  worker, 10 x 24 MiB from 0.19 and 10 x 10 MiB at 0.11 (WorkerProc._init_message_queues), and
  one 6 x 4 MiB broadcaster per TP group with more than one rank
  (distributed/parallel_state.py:GroupCoordinator.__init__);
- from 0.27 on CUDA, `--kv-offloading-size` G GiB is one /dev/shm region of G per engine
  (v1/kv_offload/cpu/shared_offload_region.py:SharedOffloadRegion); that region is also pinned
  host memory, already inside the plan's host need.
A memory-backed emptyDir counts against the container's memory limit, so the limit is the host
need plus the queues (the offload region is in the host need already)."""

from __future__ import annotations

from typing import Any, NamedTuple

from . import _core
from ._database import config_error, spec_database
from ._units import MIB

SCHEDULER_BROADCAST_BYTES = 10 * 16 * MIB
TP_GROUP_BROADCAST_BYTES = 6 * 4 * MIB
# Response queue per worker: 10 chunks of 24 MiB from 0.19, of 10 MiB before.
_RESPONSE_QUEUE_BYTES = (_core.Version(0, 19), 10 * 10 * MIB, 10 * 24 * MIB)
# The release from which --kv-offloading-size lives in /dev/shm on CUDA.
_SHM_OFFLOAD_REGION_FROM = _core.Version(0, 27)


def mig_profile(gpu: str | _core.GpuSpec) -> str | None:
    """The MIG profile ("3g.40gb") of a GPU that gpus.yaml lists as a MIG slice (by spec, or by
    any of its names: NVML names a slice "<card> MIG <profile>"); None for a whole GPU or a
    GPU not in the database. The NVIDIA device plugin's mixed strategy advertises the slice as
    nvidia.com/mig-<profile>."""
    if isinstance(gpu, str):
        db = spec_database()
        if not db.has_gpu(gpu):
            return None
        gpu = db.gpu(gpu)
    return gpu.mig_profile or None


def _release(version: str) -> _core.Version:
    return _core.Version.parse(version, "engine_version")


class Deployment(NamedTuple):  # not a dataclass: the CLI's `plan` starts without `dataclasses`
    gpu_resource: str  # nvidia.com/gpu or nvidia.com/mig-<profile>
    gpu_count: int
    shm_bytes: int  # /dev/shm size: message queues plus the KV-offload region
    shm_queue_bytes: int
    shm_offload_bytes: int
    # Memory request, and the limit too (a pod that bursts past its request is the first one
    # evicted): the host need plus the queues.
    host_memory_request_bytes: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpu_resource": self.gpu_resource,
            "gpu_count": self.gpu_count,
            "shm_bytes": self.shm_bytes,
            "shm_queue_bytes": self.shm_queue_bytes,
            "shm_offload_bytes": self.shm_offload_bytes,
            "host_memory_request_bytes": self.host_memory_request_bytes,
        }


def shm_queue_bytes(engine_version: str, tp: int, pp: int, dp: int) -> int:
    """/dev/shm the mp executor's message queues reserve, over the node's DP engines."""
    if tp * pp <= 1:
        return 0
    since, before, after = _RESPONSE_QUEUE_BYTES
    response = after if _release(engine_version) >= since else before
    per_engine = SCHEDULER_BROADCAST_BYTES + tp * pp * response
    if tp > 1:
        per_engine += pp * TP_GROUP_BROADCAST_BYTES
    return dp * per_engine


def deployment(
    *,
    gpu_name: str,
    vendor: str,
    engine_version: str,
    tp: int,
    pp: int,
    dp: int,
    host_required_bytes: int,
    kv_offloading_bytes: int,
    num_gpus: int | None = None,
) -> Deployment:
    """The pod's resources for a planned launch (see the module docstring for each term): the
    GPUs the node is given (`num_gpus`), else the launch's TP x PP x DP."""
    profile = mig_profile(gpu_name)
    queues = shm_queue_bytes(engine_version, tp, pp, dp)
    offload = 0
    # ROCm keeps private pinned tensors (no /dev/shm region) at every release.
    shared_region = vendor == "nvidia" and _release(engine_version) >= _SHM_OFFLOAD_REGION_FROM
    if kv_offloading_bytes > 0 and shared_region:
        offload = dp * kv_offloading_bytes
    return Deployment(
        gpu_resource=f"nvidia.com/mig-{profile}" if profile else "nvidia.com/gpu",
        gpu_count=num_gpus or tp * pp * dp,
        shm_bytes=queues + offload,
        shm_queue_bytes=queues,
        shm_offload_bytes=offload,
        host_memory_request_bytes=host_required_bytes + queues,
    )


def k8s_quantity(n_bytes: int) -> str:
    """A byte count as a Kubernetes quantity in whole MiB, rounded up."""
    return f"{-(-n_bytes // MIB)}Mi"


def compose_bytes(n_bytes: int) -> str:
    """A byte count as Compose's byte value (`m` is MiB there), in whole MiB, rounded up."""
    return f"{-(-n_bytes // MIB)}m"


def check_mig_parallel(gpu: _core.GpuSpec, knobs: dict[str, Any]) -> None:
    """Refuse TP or PP > 1 on a MIG slice: slices have no P2P path between them
    (`nvidia-smi mig -lgip` lists P2P No for every profile) and NCCL cannot join them into one
    group. Data parallelism (one replica per slice) stays possible."""
    if not gpu.mig_profile:
        return
    gpu_id = gpu.id
    for field in ("tensor_parallel_size", "pipeline_parallel_size"):
        size = knobs.get(field)
        if isinstance(size, int) and size > 1:
            raise config_error(
                field,
                size,
                f"1 on a MIG slice ({gpu_id})",
                "MIG slices have no P2P/NCCL path between them: no tensor or pipeline "
                "parallelism across slices (use whole GPUs, or one replica per slice)",
            )
