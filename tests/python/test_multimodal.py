"""Multimodal knobs through the Python facade: limit_mm_per_prompt renders as vLLM takes it (a
JSON word on the command line, a dict for LLM()), bad values name the knob, and the encoder
term shows apart in the breakdown. The byte derivations are in tests/cpp/test_multimodal.cpp."""

from __future__ import annotations

import shlex

import pytest
import vramplan
from vramplan import cli

GEMMA = "google/gemma-3-12b-it"


def test_limit_renders_as_json_flag_and_dict_kwarg() -> None:
    plan = vramplan.plan(GEMMA, "H100", context=8192, limit_mm_per_prompt='{"image": 2}')
    words = shlex.split(plan.to_vllm_args())
    at = words.index("--limit-mm-per-prompt")
    assert words[at + 1] == '{"image":2}'
    assert plan.to_llm_kwargs()["limit_mm_per_prompt"] == {"image": 2}
    # The flag line replays to the same knob.
    args = cli.build_parser().parse_args(["plan", GEMMA, "--gpu", "H100", *words])
    assert cli._knobs(args)["limit_mm_per_prompt"] == '{"image":2}'


def test_language_model_only_drops_the_encoder_and_its_weights() -> None:
    full = vramplan.breakdown(GEMMA, "H100", max_model_len=8192)
    text = vramplan.breakdown(GEMMA, "H100", max_model_len=8192, language_model_only=True)
    encoder = {t.name: t.bytes for t in full.ranks[0].terms}["mm_encoder"]
    assert encoder > 0
    assert {t.name: t.bytes for t in text.ranks[0].terms}["mm_encoder"] == 0
    # SigLIP + projector: 421,290,864 parameters in bf16 stay on disk.
    assert full.weights_bytes - text.weights_bytes == 2 * 421290864
    assert (
        "--language-model-only"
        in vramplan.plan(GEMMA, "H100", context=8192, language_model_only=True).to_vllm_args()
    )


@pytest.mark.parametrize("bad", ["image=2", '{"image": -1}', '{"image": 1.5}', "[2]"])
def test_bad_limits_name_the_knob(bad: str) -> None:
    with pytest.raises(vramplan.Error) as info:
        vramplan.breakdown(GEMMA, "H100", limit_mm_per_prompt=bad)
    assert info.value.field == "limit_mm_per_prompt"


def test_text_only_model_refuses_the_multimodal_knobs() -> None:
    with pytest.raises(vramplan.Error) as info:
        vramplan.breakdown("Qwen/Qwen3-8B", "H100", language_model_only=True)
    assert info.value.field == "language_model_only"


def test_encoder_term_is_explained() -> None:
    assert "encoder cache" in vramplan.explain("mm_encoder").what
