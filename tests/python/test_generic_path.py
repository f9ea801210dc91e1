"""The generic path for a model_type with no architecture-table row: every output (Python,
JSON, text, HTML) says the model was planned as a standard decoder and what was assumed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import vramplan

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"
NOTE = "generic: model_type unmapped_llama is not mapped; assumed "


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


@pytest.fixture
def llama_renamed(tmp_path: Path) -> Path:
    """Llama-3.1-8B's real config.json with its model_type out of the table's reach."""
    config = json.loads((CONFIGS / "meta-llama__Meta-Llama-3.1-8B.json").read_text())
    config["model_type"] = "unmapped_llama"
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vramplan", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_every_output_states_the_generic_path(llama_renamed: Path) -> None:
    spec = vramplan.load_model(llama_renamed)
    assert spec.model_type == "unmapped_llama"
    assert spec.to_dict()["generic_assumptions"] == spec.generic_assumptions
    # Llama-3.1-8B by hand: 2 (K, V) x 32 layers x 8 KV heads x 128 x 2 B per token.
    assert any("8 KV heads x head_dim 128" in a for a in spec.generic_assumptions)
    breakdown = vramplan.breakdown(str(llama_renamed), "H100", max_model_len=4096)
    notes = [m for m in breakdown.to_dict()["messages"] if m.startswith(NOTE)]
    assert len(notes) == 1
    assert "no tensor headers read" in notes[0]
    assert NOTE in breakdown._repr_html_()
    text = _run("breakdown", str(llama_renamed), "--gpu", "H100", "--max-model-len", "4096")
    assert text.returncode == 0, text.stderr
    assert NOTE in text.stdout + text.stderr
    as_json = _run(
        "breakdown", str(llama_renamed), "--gpu", "H100", "--max-model-len", "4096", "--json"
    )
    assert as_json.returncode == 0, as_json.stderr
    assert any(m.startswith(NOTE) for m in json.loads(as_json.stdout)["messages"])


def test_weights_come_from_the_headers_where_they_are_read(tmp_path: Path) -> None:
    config = {
        "model_type": "unmapped_tiny",
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
        layer + "self_attn.q_norm.weight": [16],  # per-head norms the fields do not name
        layer + "self_attn.k_norm.weight": [16],
        layer + "mlp.gate_proj.weight": [128, 64],
        layer + "mlp.up_proj.weight": [128, 64],
        layer + "mlp.down_proj.weight": [64, 128],
        layer + "input_layernorm.weight": [64],
        layer + "post_attention_layernorm.weight": [64],
    }
    written = _write_safetensors(tmp_path / "model.safetensors", tensors)
    data = vramplan.breakdown(str(tmp_path), "H100", max_model_len=256).to_dict()
    notes = [m for m in data["messages"] if "model_type unmapped_tiny is not mapped" in m]
    assert len(notes) == 1
    assert "exact from the checkpoint's tensor headers" in notes[0]
    rank = data["ranks"][0]
    weights = next(t["bytes"] for t in rank["terms"] if t["name"] == "weights")
    # The header sum, plus the rows vLLM pads the vocabulary to (100 -> 128, a multiple of 64,
    # in embed_tokens and lm_head: 2 x 28 x 64 x 2 B) and the rotary cos/sin cache (256
    # positions x head_dim 16 x 2 B).
    assert weights == written + 2 * 28 * 64 * 2 + 256 * 16 * 2


def test_a_hybrid_or_latent_config_is_refused_by_name(tmp_path: Path) -> None:
    for name, key in (
        ("Qwen__Qwen3-Next-80B-A3B-Thinking.json", "full_attention_interval"),
        ("deepseek-ai__DeepSeek-V3.json", "kv_lora_rank"),
    ):
        config = json.loads((CONFIGS / name).read_text())
        config["model_type"] = "unmapped"
        path = tmp_path / name
        path.write_text(json.dumps(config))
        with pytest.raises(vramplan.SpecError, match=rf"{key}: .*model_type unmapped is not"):
            vramplan.load_model(path)


def _kv_per_token(path: Path) -> int:
    return vramplan.breakdown(str(path), "H100", max_model_len=4096).ranks[0].kv_bytes_per_token


def test_every_real_config_renamed_plans_its_kv_as_its_row_or_is_refused(tmp_path: Path) -> None:
    # Every config copy here, its model_type renamed: the generic path either plans the same
    # KV bytes per token as the family's row, or refuses by a key's name (never a third way).
    planned, refused = [], []
    for config in sorted(CONFIGS.glob("*.json")):
        text = config.read_text()
        fields = json.loads(text.replace("Infinity", "1e999"))
        if "model_type" not in fields:
            continue  # LongCat-Flash names none (vLLM maps its architecture): nothing to rename
        model_type = fields["model_type"]
        renamed = tmp_path / config.name
        renamed.write_text(
            text.replace(f'"model_type": "{model_type}"', f'"model_type": "x_{model_type}"', 1)
        )
        try:
            vramplan.load_model(renamed)
            refusal = ""
        except vramplan.SpecError as e:
            refusal = str(e)
        if refusal:
            assert f"model_type x_{model_type} is not mapped" in refusal, refusal
            refused.append(config.name)
            continue
        try:
            mapped_kv = _kv_per_token(config)
        except vramplan.ConfigError:  # a format vLLM 0.33 cannot load (bitsandbytes)
            continue
        assert _kv_per_token(renamed) == mapped_kv, config.name
        planned.append(config.name)
    assert {
        "meta-llama__Meta-Llama-3.1-8B.json",
        "Qwen__Qwen3-8B.json",
        "LGAI-EXAONE__EXAONE-4.0-32B.json",
    } <= set(planned)
    assert {
        "Qwen__Qwen3-Next-80B-A3B-Thinking.json",
        "nvidia__Nemotron-H-56B-Base-8K.json",
        "deepseek-ai__DeepSeek-V3.json",
    } <= set(refused)
