"""Planning straight from files on disk: a config.json, a checkpoint folder, offline."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import vramplan

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "reference" / "configs"


def config(name: str) -> Path:
    path = CONFIGS / name
    assert path.exists(), f"missing test data {path}"
    return path


def test_from_hf_config_matches_the_database(tmp_path: Path) -> None:
    folder = tmp_path / "Llama-3.1-8B"
    folder.mkdir()
    shutil.copy(config("meta-llama__Meta-Llama-3.1-8B.json"), folder / "config.json")
    spec = vramplan.from_hf_config(folder)
    hand = vramplan.load_model("meta-llama/Llama-3.1-8B")
    assert spec.to_dict()["parameter_count"] == hand.to_dict()["parameter_count"] == 8_030_261_248
    via_path = vramplan.breakdown(
        vramplan.load_model(folder), "H100", engine_version="0.19.0", max_model_len=8192
    )
    via_id = vramplan.breakdown(
        "meta-llama/Llama-3.1-8B", "H100", engine_version="0.19.0", max_model_len=8192
    )
    assert via_path.weights_bytes == via_id.weights_bytes
    assert via_path.kv_tokens == via_id.kv_tokens
    info = vramplan.inspect_checkpoint(folder)
    assert info["kind"] == "config"
    assert info["checkpoint_bytes"] == 0  # no shards in the folder


def test_cli_plans_a_folder(tmp_path: Path) -> None:
    folder = tmp_path / "qwen3-8b"
    folder.mkdir()
    shutil.copy(config("Qwen__Qwen3-8B.json"), folder / "config.json")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "vramplan",
            "plan",
            str(folder),
            "--gpu",
            "L40S",
            "--context",
            "32768",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["fits"] is True
    assert data["breakdown"]["model"] == str(folder)  # `vllm serve <folder>`


def test_unknown_layout_fails_closed(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(
        json.dumps(
            {
                "model_type": "rwkv7",
                "hidden_size": 64,
                "num_hidden_layers": 2,
                "num_attention_heads": 4,
                "intermediate_size": 128,
                "vocab_size": 100,
                "max_position_embeddings": 256,
                "attn_type_list": [0, 1],
            }
        )
    )
    # An unmapped model_type whose keys signal a layout the generic path cannot size.
    with pytest.raises(vramplan.SpecError, match=r"attn_type_list: .*model_type rwkv7 is not"):
        vramplan.load_model(tmp_path)


def _write_safetensors(path: Path, tensors: dict[str, list[int]]) -> int:
    """bf16 tensors of the given shapes, zero data; returns the data bytes written."""
    header, offset = {}, 0
    for name, shape in tensors.items():
        size = 2
        for dim in shape:
            size *= dim
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    path.write_bytes(len(text).to_bytes(8, "little") + text + bytes(offset))
    return offset


def test_inspect_reports_exact_checkpoint_bytes(tmp_path: Path) -> None:
    config = {
        "model_type": "llama",
        "hidden_size": 64,
        "num_hidden_layers": 1,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "intermediate_size": 128,
        "vocab_size": 100,
        "max_position_embeddings": 256,
        "torch_dtype": "bfloat16",
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    layer = "model.layers.0."
    tensors = {
        "model.embed_tokens.weight": [100, 64],
        "lm_head.weight": [100, 64],
        "model.norm.weight": [64],
        layer + "self_attn.q_proj.weight": [64, 64],
        layer + "self_attn.k_proj.weight": [32, 64],
        layer + "self_attn.v_proj.weight": [32, 64],
        layer + "self_attn.o_proj.weight": [64, 64],
        layer + "mlp.gate_proj.weight": [128, 64],
        layer + "mlp.up_proj.weight": [128, 64],
        layer + "mlp.down_proj.weight": [64, 128],
        layer + "input_layernorm.weight": [64],
        layer + "post_attention_layernorm.weight": [64],
        "extra_head.weight": [10, 64],
    }  # a tensor the config does not describe
    written = _write_safetensors(tmp_path / "model.safetensors", tensors)
    out = subprocess.run(
        [sys.executable, "-m", "vramplan", "inspect", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["kind"] == "safetensors"
    assert info["checkpoint_bytes"] == written
    assert info["checkpoint_bytes"] - info["spec_checkpoint_bytes"] == 10 * 64 * 2
