"""The Python API takes what a caller holds: numpy scalars and arrays, vLLM's own types
(`limit_mm_per_prompt={"image": 2}`, what `plan.to_llm_kwargs()` gives back); non-finite
numbers and empty sweep axes are named errors; a model path whose files change between two
calls is read again; `./~/m` is a folder named `~`, not the home directory."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import vramplan
from vramplan import validate

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
GPU = "H100-80GB"
GEMMA = "google/gemma-3-12b-it"
LLAMA_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "torch_dtype": "bfloat16",
}


@pytest.mark.parametrize(
    ("knob", "numpy_value", "value"),
    [
        ("max_model_len", np.int64(8192), 8192),
        ("max_model_len", np.int32(8192), 8192),
        ("gpu_memory_utilization", np.float32(0.875), 0.875),
        ("gpu_memory_utilization", np.float64(0.9), 0.9),
        ("enforce_eager", np.bool_(True), True),
        ("tensor_parallel_size", np.int64(2), 2),
        ("cpu_offload_gb", np.float64(4), 4),
    ],
)
def test_numpy_scalars_plan_as_the_python_values(
    knob: str, numpy_value: object, value: object
) -> None:
    expected = vramplan.plan(MODEL, GPU, **{knob: value})
    got = vramplan.plan(MODEL, GPU, **{knob: numpy_value})
    assert got.to_vllm_argv() == expected.to_vllm_argv()


def test_numpy_integers_for_the_api_arguments() -> None:
    got = vramplan.plan(
        MODEL, GPU, num_gpus=np.int64(2), memory_used_by_others_bytes=np.int64(1 << 30)
    )
    assert (
        got.to_vllm_argv()
        == vramplan.plan(MODEL, GPU, num_gpus=2, memory_used_by_others_bytes=1 << 30).to_vllm_argv()
    )


def test_limit_mm_per_prompt_as_vllms_dict_and_to_llm_kwargs_round_trip() -> None:
    as_dict = vramplan.plan(GEMMA, GPU, limit_mm_per_prompt={"image": 2})
    as_json = vramplan.plan(GEMMA, GPU, limit_mm_per_prompt='{"image": 2}')
    assert as_dict.to_vllm_argv() == as_json.to_vllm_argv()
    again = vramplan.plan(GEMMA, GPU, **as_dict.to_llm_kwargs())
    assert again.to_vllm_argv() == as_dict.to_vllm_argv()


@pytest.mark.parametrize("value", [float("nan"), float("inf"), np.float64("nan")])
def test_non_finite_offload_is_a_named_error(value: float) -> None:
    with pytest.raises(vramplan.Error, match=r"cpu-offload-gb: expected a finite number"):
        vramplan.plan(MODEL, GPU, cpu_offload_gb=value)


@pytest.mark.parametrize("axis", ["max_model_len", "max_num_seqs", "gpu_memory_utilization"])
def test_an_empty_sweep_axis_is_a_named_error(axis: str) -> None:
    with pytest.raises(vramplan.Error, match=f"{axis}: an empty list"):
        vramplan.sweep(MODEL, GPU, **{axis: []})


def test_a_numpy_array_is_a_sweep_axis() -> None:
    frame = vramplan.sweep(MODEL, GPU, max_model_len=np.array([4096, 8192]))
    assert list(frame["max_model_len"]) == [4096, 8192]


def _write_config(folder: Path, **changes: object) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({**LLAMA_CONFIG, **changes}))


def test_a_model_path_whose_files_change_is_read_again(tmp_path: Path) -> None:
    folder = tmp_path / "ckpt"
    _write_config(folder)
    before = vramplan.plan(str(folder), GPU, max_model_len=8192)
    _write_config(folder, num_hidden_layers=16)  # same path, same name, other files
    after = vramplan.plan(str(folder), GPU, max_model_len=8192)
    assert after.breakdown.kv_tokens > before.breakdown.kv_tokens
    assert validate.record_model(str(folder)).to_dict()["num_hidden_layers"] == 16


def test_a_tilde_inside_a_relative_path_is_not_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    _write_config(home / "m", num_hidden_layers=16)
    _write_config(tmp_path / "work" / "~" / "m")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path / "work")
    here = vramplan.load_model("./~/m")
    assert here.to_dict()["num_hidden_layers"] == 32  # ./~/m, the folder named ~
    assert vramplan.load_model("~/m").to_dict()["num_hidden_layers"] == 16  # $HOME/m
    assert Path("~/m").expanduser() == home / "m"
