"""The search over whole plans: which TP x PP split of N GPUs to use.

The solver is C++ and answers one launch at a time (the longest context for a concurrency
target included: context 0); this search only calls it in order and keeps the first answer
that fits (orchestration, not arithmetic), so it lives in Python under `vramplan.plan`, which calls it for `num_gpus` > 1.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from . import _core
from ._database import config_error

if TYPE_CHECKING:
    from .api import Plan

# Pipeline stages tried at most: beyond this a split search of N GPUs stops adding stages.
MAX_SEARCH_PIPELINE_STAGES = 64


class Attempt(NamedTuple):  # not a dataclass: a split search loads no `dataclasses`
    """One split the search tried and what the planner said."""

    tensor_parallel_size: int
    pipeline_parallel_size: int
    result: str  # "fits", "does not fit: ..." or "invalid: <the core's error>"

    def to_json(self) -> dict[str, Any]:
        return {
            "tensor_parallel_size": self.tensor_parallel_size,
            "pipeline_parallel_size": self.pipeline_parallel_size,
            "result": self.result,
        }


def candidate_splits(num_gpus: int) -> list[tuple[int, int]]:
    """(TP, PP) pairs for `num_gpus` GPUs in the order a split search tries them: tensor
    parallelism alone first (TP = 1, 2, 4, ... and N itself), fewest GPUs first; then pipeline
    stages over TP groups (PP splits layers, so it spans nodes and costs pipeline bubbles, which
    is why it comes second), fewest GPUs first and fewer stages first at equal count."""
    if isinstance(num_gpus, bool) or not isinstance(num_gpus, int) or num_gpus < 1:
        raise config_error("num_gpus", num_gpus, "an integer >= 1", "wrong value")
    powers = [1 << i for i in range(num_gpus.bit_length()) if 1 << i <= num_gpus]
    tensor_only = sorted({*powers, num_gpus})
    splits = [(tp, 1) for tp in tensor_only]
    with_stages = [
        (tp, pp)
        for tp in powers
        for pp in range(2, min(num_gpus, MAX_SEARCH_PIPELINE_STAGES) + 1)
        if tp * pp <= num_gpus
    ]
    splits += sorted(with_stages, key=lambda s: (s[0] * s[1], s[1]))
    return splits


def plan_on_gpus(plan_for: Callable[[int, int], Plan], num_gpus: int) -> tuple[Plan, list[Attempt]]:
    """The first split of `num_gpus` GPUs (see `candidate_splits`) whose plan fits, with every
    split tried. `plan_for(tp, pp)` plans one split. When none fits, the plan of the largest
    valid tensor-parallel split is returned (its verdict and remedies say why)."""
    attempts: list[Attempt] = []
    fallback: Plan | None = None
    for tp, pp in candidate_splits(num_gpus):
        try:
            result = plan_for(tp, pp)
        except _core.ConfigError as err:
            if getattr(err, "field", "") not in ("tensor_parallel_size", "pipeline_parallel_size"):
                raise
            attempts.append(Attempt(tp, pp, f"invalid: {err}"))
            continue
        attempts.append(Attempt(tp, pp, "fits" if result.fits else str(result.verdict)))
        if result.fits:
            return result, attempts
        if pp == 1:
            fallback = result
    if fallback is None:
        msg = f"num_gpus: no valid tensor-parallel split of {num_gpus} GPUs: {attempts[-1].result}"
        raise _core.ConfigError(msg)
    return fallback, attempts
