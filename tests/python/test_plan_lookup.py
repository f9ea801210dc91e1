"""A plan without traffic or split search looks its compiled launch up once per model, GPU and
pinned knobs (api._known_launch): the answers are the ones the path without the lookup gives
(offline=True takes it), a knob's type is part of the key, and an error is raised every time."""

from __future__ import annotations

import pytest
import vramplan
from vramplan import api

MODEL, GPU = "Qwen/Qwen3-8B", "H100-80GB"


def _figures(plan: vramplan.Plan) -> tuple[object, ...]:
    return (
        plan.fits,
        plan.verdict,
        plan.as_written_verdict,
        plan.gpu_memory_utilization,
        plan.max_model_len,
        plan.max_num_seqs,
        plan.max_num_batched_tokens,
        plan.breakdown.kv_tokens,
    )


@pytest.mark.parametrize(
    "knobs",
    [
        {},
        {"tensor_parallel_size": 2},
        {"max_num_seqs": 64, "kv_cache_dtype": "fp8"},
        {"enforce_eager": True, "gpu_memory_utilization": 0.8},
    ],
)
def test_a_looked_up_plan_answers_as_the_path_without_the_lookup(knobs: dict[str, object]) -> None:
    looked_up = [vramplan.plan(MODEL, GPU, context=16384, **knobs) for _ in range(2)]
    without = vramplan.plan(MODEL, GPU, context=16384, offline=True, **knobs)
    assert _figures(looked_up[0]) == _figures(looked_up[1]) == _figures(without)


def test_different_knobs_are_different_launches() -> None:
    one = vramplan.plan(MODEL, GPU, context=16384, tensor_parallel_size=1)
    two = vramplan.plan(MODEL, GPU, context=16384, tensor_parallel_size=2)
    # Half the weights on each of two ranks: more KV room per rank at the same utilization.
    assert two.breakdown.kv_tokens > one.breakdown.kv_tokens


def test_a_knob_s_type_is_part_of_the_key() -> None:
    assert api._pinned_key({"max_num_seqs": 64}) != api._pinned_key({"max_num_seqs": 64.0})
    assert api._pinned_key({"enforce_eager": True}) != api._pinned_key({"enforce_eager": 1})
    # The order knobs are given in is not.
    assert api._pinned_key({"a": 1, "b": 2}) == api._pinned_key({"b": 2, "a": 1})
    # An unhashable value, or a drafter (whose files the key would have to follow), is not
    # looked up.
    assert api._pinned_key({"speculative_config": {"method": "ngram"}}) is None
    assert api._pinned_key({"speculative_model": "some/drafter"}) is None


def test_an_error_is_raised_on_every_call_not_kept() -> None:
    for _ in range(2):
        with pytest.raises(vramplan.ConfigError, match="tensor_parallel_size"):
            vramplan.plan(MODEL, GPU, tensor_parallel_size=0)
