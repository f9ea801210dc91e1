"""Stored checkpoint bytes of published quantized checkpoints against their published
model.safetensors.index.json "total_size" (the bytes of every stored tensor). The planner's figure
is the one `vramplan inspect` and config import use: the spec imported from the checkpoint's own
config.json (quantization_config included), then ModelSpec.checkpoint_bytes(). Each exact test
must match to the byte; provenance of the configs is in tests/data/configs/SOURCES.md."""

from __future__ import annotations

from pathlib import Path

import pytest
import vramplan

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"


@pytest.mark.parametrize(
    ("config_file", "total_size_bytes"),
    [
        # openai/gpt-oss-20b (mxfp4 experts, bf16 attention/router/embeddings/lm_head): the
        # index's "metadata": {"total_size": 13761264768}, quoted together with the same
        # config.json in a public copy of the repository files (code-index hit 31112482743).
        ("openai__gpt-oss-20b.json", 13_761_264_768),
    ],
)
def test_checkpoint_bytes_equal_published_total_size(
    config_file: str, total_size_bytes: int
) -> None:
    spec = vramplan.from_hf_config(CONFIGS / config_file)
    assert spec.checkpoint_bytes() == total_size_bytes
