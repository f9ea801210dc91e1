"""Database specs against independent figures: "Model loading took" lines (dev.jsonl) and
published checkpoint sizes (the project's reference sizes.md, quoted beside each case)."""

from __future__ import annotations

import pytest
import vramplan

GIB = float(1 << 30)


@pytest.mark.parametrize(
    ("model", "knobs", "measured_gib", "tolerance"),
    [
        ("meta-llama/Llama-3.1-8B-Instruct", {}, 14.99, 0.005),  # dev-021 bf16
        ("RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w8a8", {}, 8.49, 0.005),  # dev-048 int8
        (
            "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16",
            {},
            5.38,
            0.01,
        ),  # dev-047 GPTQ-style 4-bit
        (
            "RedHatAI/Llama-3.3-70B-Instruct-fp8-dynamic",
            {"tensor_parallel_size": 2},
            33.88,
            0.005,
        ),  # dev-011
        ("Qwen/Qwen3-30B-A3B", {}, 56.88, 0.005),  # dev-044 MoE
        ("deepseek-ai/DeepSeek-V2-Lite-Chat", {}, 29.43, 0.01),  # dev-010 MLA + MoE
        ("google/gemma-2-9b-it", {}, 17.22, 0.005),  # dev-012
        ("microsoft/phi-4", {}, 27.39, 0.005),  # dev-030
    ],
)
def test_weights_match_model_loading_line(
    model: str, knobs: dict, measured_gib: float, tolerance: float
) -> None:
    b = vramplan.breakdown(model, "H100-80GB", engine_version="0.19.0", max_model_len=8192, **knobs)
    assert abs(b.weights_bytes / GIB - measured_gib) <= tolerance * measured_gib


def test_published_checkpoint_sizes() -> None:
    db = vramplan.spec_database()
    # sizes.md: Meta-Llama-3.1-8B shards 4.98 + 5 + 4.92 + 1.17 GB = 16.07 GB (rounded).
    assert db.model("meta-llama/Meta-Llama-3.1-8B").checkpoint_bytes() / 1e9 == pytest.approx(
        16.07, rel=0.005
    )
    # neuralmagic Meta-Llama-3.1-8B-quantized.w8a8: 5 + 4.08 GB = 9.08 GB.
    w8a8 = db.model("RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w8a8")
    assert w8a8.checkpoint_bytes() / 1e9 == pytest.approx(9.08, rel=0.01)
    # DeepSeek-V2-Lite f16: 31.4 GB; Qwen3-30B-A3B: 30.5B parameters.
    assert db.model("deepseek-ai/DeepSeek-V2-Lite").checkpoint_bytes() / 1e9 == pytest.approx(
        31.4, rel=0.01
    )
    assert db.model("Qwen/Qwen3-30B-A3B").parameter_count() / 1e9 == pytest.approx(30.5, rel=0.005)


def test_database_size() -> None:
    assert len(vramplan.models()) >= 30
    assert len(vramplan.gpus()) >= 15
