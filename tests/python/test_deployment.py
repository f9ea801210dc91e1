"""MIG slices as GPUs, and the pod / container resources (deployment.py): each figure derived
by hand here from its source, each manifest parsed and validated against the schema subsets in
tests/data/schemas."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from vramplan import _core, api
from vramplan.cli import main
from vramplan.deployment import deployment, mig_profile, shm_queue_bytes
from vramplan.launchers import render_launch

MIB = 1 << 20
GIB = 1 << 30
SCHEMAS = Path(__file__).resolve().parents[1] / "data" / "schemas"
QWEN = "Qwen/Qwen3-8B"


def _schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMAS / name).read_text())
    return loaded


@pytest.mark.parametrize(
    ("profile", "lgip_gib"),
    [("1g.10gb", 9.75), ("1g.20gb", 19.62), ("3g.40gb", 39.50), ("7g.80gb", 79.25)],
)
def test_mig_slice_total_is_lgip_memory_less_the_driver_gap(profile: str, lgip_gib: float) -> None:
    # nvidia-smi mig -lgip's GiB column in MiB, less gpus.yaml's 450 MiB nvidia-smi/CUDA gap.
    gpu = api.load_gpu(f"NVIDIA H100 80GB HBM3 MIG {profile}")  # NVML's name for the slice
    assert gpu.id == f"H100-80GB-MIG-{profile}"
    assert gpu.total_memory_bytes == (round(lgip_gib * 1024) - 450) * MIB
    assert mig_profile(gpu.name) == profile


def test_3g40gb_total_by_hand() -> None:
    # 39.50 GiB = 40448 MiB; 40448 - 450 = 39998 MiB = 41,940,942,848 bytes.
    assert api.load_gpu("H100-80GB-MIG-3g.40gb").total_memory_bytes == 41_940_942_848
    assert mig_profile("NVIDIA H100 80GB HBM3") is None


@pytest.mark.parametrize("field", ["tensor_parallel_size", "pipeline_parallel_size"])
def test_parallelism_across_mig_slices_is_refused_by_name(field: str) -> None:
    with pytest.raises(_core.ConfigError) as err:
        api.plan(QWEN, "H100-80GB-MIG-3g.40gb", num_gpus=2, **{field: 2})
    assert err.value.field == field  # type: ignore[attr-defined]
    assert "MIG slices have no P2P/NCCL path" in str(err.value)


def test_shm_queues_by_hand() -> None:
    # 0.33, TP 4: broadcast 10 x 16 MiB + 4 workers x 10 x 24 MiB + one TP group 6 x 4 MiB.
    assert shm_queue_bytes("0.33.0", 4, 1, 1) == (160 + 960 + 24) * MIB
    # 0.19, TP 2 x PP 2: 160 + 4 x 240 + two TP groups x 24.
    assert shm_queue_bytes("0.19.0", 2, 2, 1) == (160 + 960 + 48) * MIB
    # 0.11, TP 2: response queues 10 x 10 MiB each: 160 + 200 + 24.
    assert shm_queue_bytes("0.11.0", 2, 1, 1) == 384 * MIB
    # PP 2 alone: queues, no TP broadcaster (160 + 2 x 240); two DP engines double it.
    assert shm_queue_bytes("0.33.0", 1, 2, 2) == 2 * 640 * MIB
    # World size 1 runs the uni executor: no queues.
    assert shm_queue_bytes("0.33.0", 1, 1, 4) == 0


def test_kv_offload_region_is_in_dev_shm_from_027_on_cuda() -> None:
    base = {"tp": 2, "pp": 1, "dp": 1, "host_required_bytes": 100 * GIB}
    cuda = deployment(
        gpu_name="NVIDIA H100 80GB HBM3",
        vendor="nvidia",
        engine_version="0.33.0",
        kv_offloading_bytes=75 * GIB,
        **base,
    )
    assert cuda.shm_offload_bytes == 75 * GIB
    assert cuda.shm_bytes == 75 * GIB + 664 * MIB  # 160 + 2 x 240 + 24
    # The region is already in the host need (pinned): only the queues are added.
    assert cuda.host_memory_request_bytes == 100 * GIB + 664 * MIB
    assert cuda.gpu_resource == "nvidia.com/gpu"
    assert cuda.gpu_count == 2
    old = deployment(
        gpu_name="NVIDIA H100 80GB HBM3",
        vendor="nvidia",
        engine_version="0.26.0",
        kv_offloading_bytes=75 * GIB,
        **base,
    )
    rocm = deployment(
        gpu_name="AMD Instinct MI300X",
        vendor="amd",
        engine_version="0.33.0",
        kv_offloading_bytes=75 * GIB,
        **base,
    )
    assert old.shm_offload_bytes == rocm.shm_offload_bytes == 0


def _flags(*argv: str) -> str:
    """`vramplan ARGV`'s stdout, the command having succeeded."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(list(argv)) == 0
    return out.getvalue()


def test_mig_plan_json_and_k8s_manifest_request_the_slice() -> None:
    plan = json.loads(_flags("plan", QWEN, "--gpu", "H100-80GB-MIG-3g.40gb", "--json"))
    host = plan["breakdown"]["host"]["required_bytes"]
    assert plan["deployment"] == {
        "gpu_resource": "nvidia.com/mig-3g.40gb",
        "gpu_count": 1,
        "shm_bytes": 0,
        "shm_queue_bytes": 0,
        "shm_offload_bytes": 0,
        "host_memory_request_bytes": host,
    }
    text = _flags("flags", QWEN, "--gpu", "H100-80GB-MIG-3g.40gb", "--format", "k8s")
    manifest = yaml.safe_load(text)
    jsonschema.validate(manifest, _schema("k8s_deployment_subset.json"))
    container = manifest["spec"]["template"]["spec"]["containers"][0]
    memory = f"{-(-host // MIB)}Mi"
    assert container["resources"] == {
        "requests": {"memory": memory},
        "limits": {"nvidia.com/mig-3g.40gb": 1, "memory": memory},
    }


def test_tp_manifests_size_dev_shm_and_validate() -> None:
    argv = ["--gpu", "H100", "--tensor-parallel-size", "2", "--kv-offloading-size", "10"]
    plan = json.loads(_flags("plan", QWEN, *argv, "--json"))
    engine = plan["breakdown"]["engine_version"]
    assert engine.startswith("0.33")
    shm = (160 + 2 * 240 + 24) * MIB + 10 * GIB  # 10904 MiB
    assert plan["deployment"]["shm_bytes"] == shm
    k8s = yaml.safe_load(_flags("flags", QWEN, *argv, "--format", "k8s"))
    jsonschema.validate(k8s, _schema("k8s_deployment_subset.json"))
    pod = k8s["spec"]["template"]["spec"]
    assert pod["volumes"] == [
        {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "10904Mi"}}
    ]
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 2
    compose = yaml.safe_load(_flags("flags", QWEN, *argv, "--format", "compose"))
    jsonschema.validate(compose, _schema("compose_subset.json"))
    service = compose["services"]["vllm"]
    assert service["shm_size"] == "10904m"
    assert "ipc" not in service  # docker ignores shm_size under ipc: host
    need = plan["breakdown"]["host"]["required_bytes"] + 664 * MIB
    assert service["mem_limit"] == service["mem_reservation"] == f"{-(-need // MIB)}m"


def test_manifests_without_a_plan_still_validate() -> None:
    for fmt, schema in (("k8s", "k8s_deployment_subset.json"), ("compose", "compose_subset.json")):
        text = render_launch(
            fmt,
            model=QWEN,
            argv=["--max-model-len", "4096"],
            env={"HF_HOME": "/x"},
            engine_version="0.33.0",
            gpus=1,
        )
        jsonschema.validate(yaml.safe_load(text), _schema(schema))


def test_node_gpu_count_and_mig_resource() -> None:
    slices = deployment(
        gpu_name="NVIDIA H100 80GB HBM3 MIG 1g.10gb",
        vendor="nvidia",
        engine_version="0.33.0",
        tp=1,
        pp=1,
        dp=1,
        host_required_bytes=GIB,
        kv_offloading_bytes=0,
        num_gpus=4,
    )
    assert (slices.gpu_resource, slices.gpu_count) == ("nvidia.com/mig-1g.10gb", 4)
    assert slices.shm_bytes == 0  # world size 1: the uni executor, no queues
    assert slices.host_memory_request_bytes == GIB


def test_a_mig_slice_is_offered_no_wider_parallel_group() -> None:
    """Qwen3-32B does not fit a 1g.10gb slice; the remedies it is offered launch there: none
    raises the tensor- or pipeline-parallel size, which a slice cannot join (found by the
    remedy-replay property test)."""
    plan = api.plan("Qwen/Qwen3-32B", "H100-80GB-MIG-1g.10gb", context=4096)
    assert not plan.fits
    kinds = [remedy.kind for remedy in plan.remedies]
    assert kinds
    assert not any("tensor_parallel" in kind for kind in kinds)
    assert [r["kind"] for r in plan.to_dict()["remedies"]] == kinds
    whole = api.plan("Qwen/Qwen3-32B", "H100", context=4096, gpu_memory_utilization=0.1)
    assert any("tensor_parallel" in r.kind for r in whole.remedies)
