"""MIG profiles as GPUs of their own (gpus.yaml `mig:`), and HAMi / MPS memory limits as the
GPU's budget under `--gpu auto` (probe.py). Each figure derived by hand here: slice totals from
NVIDIA's MIG user guide fractions ("Supported MIG Profiles") and gpus.yaml's rule, the limits
from the environment variables' own syntax."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import jsonschema
import pytest
import vramplan
import yaml
from vramplan import api
from vramplan import probe as probe_module
from vramplan.cli import main
from vramplan.deployment import mig_profile

MIB = 1 << 20
GIB = 1 << 30
QWEN = "Qwen/Qwen3-8B"
SCHEMAS = Path(__file__).resolve().parents[1] / "data" / "schemas"
DERIVED_GAP_MIB = 640  # gpus.yaml: eighths/8 of the parent's total less 640 MiB


@pytest.mark.parametrize(
    ("nvml_name", "slice_id", "total_mib"),
    [
        # A100-SXM4-40GB: 40339 MiB total; 1g.5gb is 1/8 of the memory: 40339 // 8 = 5042.
        ("NVIDIA A100-SXM4-40GB MIG 1g.5gb", "A100-40GB-MIG-1g.5gb", 5042 - DERIVED_GAP_MIB),
        # A100 80GB: 84987084800 B = 81050 MiB; 3g.40gb is 4/8: 40525.
        ("NVIDIA A100-SXM4-80GB MIG 3g.40gb", "A100-80GB-MIG-3g.40gb", 40525 - DERIVED_GAP_MIB),
        # H100 NVL 94GB: 95232 MiB; 3g.47gb is 4/8: 47616.
        ("NVIDIA H100 NVL MIG 3g.47gb", "H100-NVL-MIG-3g.47gb", 47616 - DERIVED_GAP_MIB),
        # H200: 143073 MiB; 1g.35gb is 2/8: 143073 * 2 // 8 = 35768.
        ("NVIDIA H200 MIG 1g.35gb", "H200-MIG-1g.35gb", 35768 - DERIVED_GAP_MIB),
        # B200: 182630 MiB; 7g.180gb is the whole memory.
        ("NVIDIA B200 MIG 7g.180gb", "B200-MIG-7g.180gb", 182630 - DERIVED_GAP_MIB),
        # GB200: 190014 MiB; 2g.47gb is 2/8: 47503.
        ("NVIDIA GB200 MIG 2g.47gb", "GB200-MIG-2g.47gb", 47503 - DERIVED_GAP_MIB),
    ],
)
def test_slice_memory_is_nvidias_fraction_of_the_card(
    nvml_name: str, slice_id: str, total_mib: int
) -> None:
    gpu = api.load_gpu(nvml_name)  # NVML's / nvidia-smi's name for the slice
    assert gpu.id == slice_id
    assert gpu.total_memory_bytes == total_mib * MIB
    assert gpu.mig_profile == nvml_name.rsplit(" ", 1)[1]
    assert gpu.mig_parent == slice_id.split("-MIG-")[0]
    assert gpu.to_dict()["total_memory_derived"] is True


def test_fraction_rule_sits_under_the_one_measured_lgip_table() -> None:
    """The rule for slices without an lgip figure, applied to the H100 80GB (81091 MiB), against
    that card's `nvidia-smi mig -lgip` GiB less 450 MiB: never above, at most 251 MiB below."""
    lgip_gib = {1: 9.75, 2: 19.62, 4: 39.50, 8: 79.25}
    for eighths, gib in lgip_gib.items():
        rule_mib = 81091 * eighths // 8 - DERIVED_GAP_MIB
        lgip_mib = round(gib * 1024) - 450
        assert 0 <= lgip_mib - rule_mib <= 251, eighths
    # The H100 80GB's slices use the lgip figures themselves.
    assert api.load_gpu("H100 MIG 1g.10gb").total_memory_bytes == (9984 - 450) * MIB


def test_slice_keeps_the_cards_facts_and_the_lgip_sm_count() -> None:
    card = api.load_gpu("H100-80GB").to_dict()
    slice_ = api.load_gpu("NVIDIA H100 80GB HBM3 MIG 3g.40gb").to_dict()
    assert (slice_["num_sms"], slice_["compute_capability"]) == (60, card["compute_capability"])
    # No lgip SM count for the H200: 132 SMs x 3 of 7 compute slices, floored = 56.
    assert api.load_gpu("H200-MIG-3g.71gb").to_dict()["num_sms"] == 56
    assert mig_profile("H100-80GB") is None
    assert mig_profile("H100 MIG 3g.40gb") == "3g.40gb"


def test_a_shared_card_name_gives_a_shared_slice_name() -> None:
    # "A100" is either size; so is "A100 MIG 1g.10gb" (1/8 of 80 GB or 2/8 of 40 GB).
    ids = {g.id for g in api.spec_database().gpu_candidates("A100 MIG 1g.10gb")}
    assert ids == {"A100-80GB-MIG-1g.10gb", "A100-40GB-MIG-1g.10gb"}


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_cli_refuses_tensor_parallel_across_slices_by_name() -> None:
    code, _, err = _run(
        "plan", QWEN, "--gpu", "H100 MIG 3g.40gb", "--tensor-parallel-size", "2", "--num-gpus", "2"
    )
    assert code != 0
    assert "tensor_parallel_size" in err
    assert "MIG slices have no P2P/NCCL path" in err


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"CUDA_DEVICE_MEMORY_LIMIT": "20480m"}, (20 * GIB, "CUDA_DEVICE_MEMORY_LIMIT")),
        ({"CUDA_DEVICE_MEMORY_LIMIT_0": "10g"}, (10 * GIB, "CUDA_DEVICE_MEMORY_LIMIT_0")),
        (
            {"CUDA_DEVICE_MEMORY_LIMIT": "30g", "CUDA_DEVICE_MEMORY_LIMIT_1": "12g"},
            (12 * GIB, "CUDA_DEVICE_MEMORY_LIMIT_1"),
        ),
        (
            {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=16G,1=8G"},
            (8 * GIB, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"),
        ),
        (
            {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=512MB"},
            (512 * MIB, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"),
        ),
        ({"CUDA_VISIBLE_DEVICES": "0"}, None),
    ],
)
def test_memory_limit_variables(env: dict[str, str], expected: tuple[int, str] | None) -> None:
    assert probe_module.memory_limit_env(env, 2) == expected


@pytest.mark.parametrize(
    ("name", "value"),
    [("CUDA_DEVICE_MEMORY_LIMIT", "lots"), ("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "16G")],
)
def test_bad_memory_limit_names_the_variable(name: str, value: str) -> None:
    with pytest.raises(vramplan.Error, match=name):
        probe_module.memory_limit_env({name: value}, 1)


@pytest.fixture
def host_tree(tmp_path: Path) -> dict[str, Path]:
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "meminfo").write_text("MemTotal: 131072000 kB\nMemAvailable: 104857600 kB\n")
    (proc / "self" / "cgroup").write_text("0::/\n")
    return {"proc_root": proc, "cgroup_root": tmp_path / "cgroup"}


def test_hami_limited_launch_budget_and_graph_profiling_overshoot(
    data_dir: Path, host_tree: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A HAMi pod given 20 GiB of an idle H100 80GB (CUDA total 79.19 GiB = 85030076416 B):
    vLLM sees 20 GiB as the total, so at 0.9 it may take 18 GiB; its CUDA-graph profiling
    sizes against the physical card (vllm#40937), up to 85030076416 - 20 GiB over the limit."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("CUDA_DEVICE_MEMORY_LIMIT", "20g")
    csv = data_dir / "diagnose" / "nvidia_smi_two_h100_second_tenant.csv"
    auto = vramplan.auto_gpu(count=1, nvidia_smi_csv=csv, **host_tree)
    assert auto.gpu_id == "H100-80GB"
    limit = auto.memory_limit
    assert limit is not None
    assert (limit.limit_bytes, limit.variable) == (20 * GIB, "CUDA_DEVICE_MEMORY_LIMIT")
    assert limit.overshoot_bytes == 85030076416 - 20 * GIB  # 59.19 GiB
    assert auto.memory_used_by_others_bytes == 0  # GPU 0 has 81091 MiB free, above the limit
    assert "vllm#40937" in limit.note()
    gpu = api.load_gpu(auto.gpu_id, total_memory_bytes=limit.limit_bytes)
    plan = api.plan(QWEN, gpu, context=4096, gpu_memory_utilization=0.9)
    rank = plan.to_dict()["breakdown"]["ranks"][0]
    assert rank["total_memory_bytes"] == 20 * GIB
    assert rank["requested_memory_bytes"] == 19_327_352_832  # 0.9 x 21474836480: the limit


def test_a_limit_above_the_card_changes_nothing(
    data_dir: Path, host_tree: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("CUDA_DEVICE_MEMORY_LIMIT", "100g")
    csv = data_dir / "diagnose" / "nvidia_smi_two_h100_second_tenant.csv"
    assert vramplan.auto_gpu(count=1, nvidia_smi_csv=csv, **host_tree).memory_limit is None


def test_cli_gpu_auto_plans_inside_the_hami_limit(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`plan --gpu auto` under HAMi's 24576m (24 GiB) on the nvidia-smi CSV's H100s: the plan's
    GPU total is the limit, and the JSON carries the limit and the overshoot bound."""
    csv = (data_dir / "diagnose" / "nvidia_smi_two_h100_second_tenant.csv").read_text()
    monkeypatch.setitem(sys.modules, "pynvml", None)  # no NVML: nvidia-smi answers
    monkeypatch.setattr(probe_module, "_run_bounded", lambda *a: (0, csv, ""))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("CUDA_DEVICE_MEMORY_LIMIT", "24576m")
    code, out, err = _run("plan", QWEN, "--gpu", "auto", "--json")
    assert code == 0, err
    assert "CUDA_DEVICE_MEMORY_LIMIT: 24.00 GiB per GPU" in err
    plan = json.loads(out)
    assert plan["breakdown"]["ranks"][0]["total_memory_bytes"] == 24 * GIB
    assert plan["model_source"]["gpu_memory_limit"] == {
        "limit_bytes": 24 * GIB,
        "variable": "CUDA_DEVICE_MEMORY_LIMIT",
        "physical_total_bytes": 85030076416,
        "graph_profiling_overshoot_bytes": 85030076416 - 24 * GIB,
    }


def test_probe_maps_a_slice_by_nvml_name_and_capacity() -> None:
    # NVML reports a 3g.40gb slice of an H100 80GB with lgip's 39.50 GiB = 40448 MiB.
    assert probe_module.match_gpu("NVIDIA H100 80GB HBM3 MIG 3g.40gb", 40448 * MIB) == (
        "H100-80GB-MIG-3g.40gb"
    )
    # A derived slice total sits further under NVML's: a 1g.5gb of an A100 40GB is 4864 MiB to
    # NVML (NVIDIA go-nvml's A100 mock, MemorySizeMB) against the rule's 4402 MiB (9.5% less).
    assert probe_module.match_gpu("NVIDIA A100-SXM4-40GB MIG 1g.5gb", 4864 * MIB) == (
        "A100-40GB-MIG-1g.5gb"
    )
    # A whole GPU keeps the 5% bound: 9.5% under is another card.
    with pytest.raises(vramplan.Error, match="not by capacity"):
        probe_module.match_gpu("NVIDIA A100-SXM4-40GB", 42298834944 * 100 // 90)


def test_h200_slice_manifest_requests_its_mig_resource() -> None:
    """The k8s resource comes from the slice's profile field (NVIDIA device plugin, mixed
    strategy: nvidia.com/mig-<profile>), and the manifest validates against the schema subset."""
    code, out, err = _run("flags", QWEN, "--gpu", "NVIDIA H200 MIG 3g.71gb", "--format", "k8s")
    assert code == 0, err
    manifest = yaml.safe_load(out)
    schema = json.loads((SCHEMAS / "k8s_deployment_subset.json").read_text())
    jsonschema.validate(manifest, schema)
    limits = manifest["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits["nvidia.com/mig-3g.71gb"] == 1
    assert "nvidia.com/gpu" not in limits
