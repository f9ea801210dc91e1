"""The all-to-all backend knob as each vLLM version takes it: the VLLM_ALL2ALL_BACKEND
environment variable before 0.12, `--all2all-backend` from 0.12 (vllm#26732; 0.11.0 refuses the
flag, vllm#27347). Byte values are derived by hand in tests/cpp/test_expert_parallel.cpp."""

from __future__ import annotations

import json

import pytest
import vramplan
from vramplan.cli import main

LAUNCH = {
    "num_gpus": 2,
    "data_parallel_size": 2,
    "enable_expert_parallel": True,
    "all2all_backend": "deepep_low_latency",
    "context": 8192,
}


def test_backend_is_an_environment_variable_before_0_12() -> None:
    plan = vramplan.plan("Qwen/Qwen3-30B-A3B", "H100", engine_version="0.11.0", **LAUNCH)
    assert plan.fits
    assert plan.to_vllm_env() == {"VLLM_ALL2ALL_BACKEND": "deepep_low_latency"}
    assert "all2all" not in plan.to_vllm_args()
    assert "all2all_backend" not in plan.to_llm_kwargs()
    assert plan["vllm_env"] == {"VLLM_ALL2ALL_BACKEND": "deepep_low_latency"}


def test_backend_is_a_flag_from_0_12() -> None:
    plan = vramplan.plan("Qwen/Qwen3-30B-A3B", "H100", engine_version="0.19.0", **LAUNCH)
    assert plan.to_vllm_env() == {}
    assert "--all2all-backend deepep_low_latency" in plan.to_vllm_args()
    assert plan.to_llm_kwargs()["all2all_backend"] == "deepep_low_latency"


def test_breakdown_names_the_all2all_terms() -> None:
    b = vramplan.breakdown(
        "Qwen/Qwen3-30B-A3B",
        "H100",
        num_gpus=8,
        data_parallel_size=8,
        enable_expert_parallel=True,
        all2all_backend="deepep_low_latency",
        engine_version="0.19.0",
        max_model_len=8192,
    )
    terms = {t.name: t.bytes for t in b.ranks[0].terms}
    assert terms["all2all_buffers"] == 1652556928
    assert terms["all2all_dispatch"] == 0
    assert vramplan.explain("all2all_buffers").kind == "GPU term"
    assert vramplan.explain("all2all_dispatch").kind == "GPU term"


def test_unmodelled_backend_is_refused_by_name() -> None:
    with pytest.raises(vramplan.Error, match="all2all_backend"):
        vramplan.breakdown(
            "Qwen/Qwen3-30B-A3B",
            "H100",
            num_gpus=2,
            data_parallel_size=2,
            enable_expert_parallel=True,
            all2all_backend="mori_low_latency",
        )


def test_flags_command_names_the_environment_variable(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["flags", "Qwen/Qwen3-30B-A3B", "--gpu", "H100", "--num-gpus", "2"]
    args += ["--data-parallel-size", "2", "--enable-expert-parallel"]
    args += ["--all2all-backend", "deepep_low_latency", "--engine-version", "0.11.0"]
    args += ["--context", "8192"]
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert "all2all" not in out
    assert "VLLM_ALL2ALL_BACKEND=deepep_low_latency" in err
    assert main([*args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["vllm_env"] == {"VLLM_ALL2ALL_BACKEND": "deepep_low_latency"}


def test_plan_command_prefixes_the_environment_variable(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["plan", "Qwen/Qwen3-30B-A3B", "--gpu", "H100", "--num-gpus", "2"]
    args += ["--data-parallel-size", "2", "--enable-expert-parallel"]
    args += ["--all2all-backend", "deepep_low_latency", "--engine-version", "0.11.0"]
    assert main([*args, "--context", "8192"]) == 0
    assert "VLLM_ALL2ALL_BACKEND=deepep_low_latency vllm serve" in capsys.readouterr().out
