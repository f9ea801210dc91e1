"""A breakdown drawn as a matplotlib Figure (the `vramplan[plot]` extra) and the colours of its
terms, shared with the notebook HTML view. Only draws: every number comes from the core's
breakdown. Built without pyplot, so nothing is shown twice and no global state changes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from . import _core
from ._units import GIB

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .api import Plan


# Breakdown terms in stacking order, with their colours (shared with the HTML view).
TERM_COLOURS = {
    "weights": "#4c72b0",
    "activation_peak": "#dd8452",
    "mm_encoder": "#da8bc3",
    "mrv2_persistent_buffers": "#c44e52",
    "non_torch": "#937860",
    "cudagraph": "#8172b3",
    "kv_cache": "#55a868",
    "cuda_context": "#8c8c8c",
    # SGLang's terms (sglang_rank_terms), alike where they match vLLM's.
    "nccl": "#a5a5a5",
    "kv_pool": "#55a868",
    "mamba_pool": "#8fd19e",
    "req_to_token": "#ccb974",
    "decode_cudagraph": "#8172b3",
    "prefill_cudagraph": "#b3a6d9",
    "activation": "#dd8452",
    "free": "#e8e8e8",
}


def figure_class() -> type[Figure]:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        msg = "plots need matplotlib: pip install 'vramplan[plot]' (or matplotlib>=3.5)"
        raise _core.Error(msg) from None
    return Figure


class _Bars(NamedTuple):
    """What a breakdown's figure draws, the same for every engine: the title, the budget line's
    label and per rank (pipeline rank, GPU total, budget, [(term, bytes), ...])."""

    title: str
    budget_label: str
    ranks: list[tuple[int, int, int, list[tuple[str, int]]]]


_VLLM_BUDGET = "budget (total x utilization)"
# Each engine's breakdown JSON (by its "engine" key): the key of its verdict and what its
# budget line is.
_VERDICT_AND_BUDGET = {
    "vllm": ("outcome", _VLLM_BUDGET),
    "sglang": ("verdict", "weights and pools (total - slack)"),
}


def _bars(breakdown: _core.Breakdown | dict[str, Any]) -> _Bars:
    """A vLLM breakdown (the core's object) or a breakdown's JSON (SGLang's, or vLLM's) as
    bars."""
    if isinstance(breakdown, dict):
        verdict_key, budget_label = _VERDICT_AND_BUDGET[breakdown["engine"]]
        return _Bars(
            f"{breakdown['model']} on {breakdown['gpu']}: {breakdown[verdict_key]}",
            budget_label,
            [
                (
                    int(r["pipeline_rank"]),
                    int(r["total_memory_bytes"]),
                    int(r["requested_memory_bytes"]),
                    [(str(t["name"]), int(t["bytes"])) for t in r["terms"]],
                )
                for r in breakdown["ranks"]
            ],
        )
    return _Bars(
        f"{breakdown.model_id} on {breakdown.gpu_id}: {breakdown.outcome}",
        _VLLM_BUDGET,
        [
            (
                r.pipeline_rank,
                r.total_memory_bytes,
                r.requested_memory_bytes,
                [(t.name, t.bytes) for t in r.terms],
            )
            for r in breakdown.ranks
        ],
    )


def breakdown_figure(breakdown: _core.Breakdown | dict[str, Any]) -> Figure:
    """One horizontal stacked bar per pipeline rank: the breakdown's terms in GiB against the
    GPU's total and the budget (vLLM: total x utilization; SGLang: what the slack leaves)."""
    bars = _bars(breakdown)
    figure = figure_class()(figsize=(8, 1.2 + 0.6 * len(bars.ranks)), layout="constrained")
    ax = figure.add_subplot()
    labels = []
    for row, (pipeline_rank, _, _, terms) in enumerate(bars.ranks):
        left = 0.0
        for name, term_bytes in terms:
            width = max(0, term_bytes) / GIB
            ax.barh(
                row,
                width,
                left=left,
                color=TERM_COLOURS.get(name, "#cccccc"),
                label=name if row == 0 else None,
                gid=f"rank{pipeline_rank}:{name}",
            )
            left += width
        labels.append(f"PP rank {pipeline_rank}")
    _, total_bytes, budget_bytes, _ = bars.ranks[0]
    ax.axvline(total_bytes / GIB, color="black", linewidth=1, label="GPU total")
    ax.axvline(
        budget_bytes / GIB, color="black", linestyle="--", linewidth=1, label=bars.budget_label
    )
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_xlabel("GiB per GPU")
    ax.set_title(bars.title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small", frameon=False)
    return figure


def preemption_figure(plan: Plan) -> Figure:
    """The probability that max_num_seqs busy slots of the plan's workload overflow the KV cache
    (vLLM preempts), against max_num_seqs on a log axis, with the plan's choice and the target
    marked."""
    chosen = int(plan.max_num_seqs)
    seqs = sorted({1 << i for i in range(max(chosen, 1).bit_length() + 2)} | {chosen})
    probabilities = plan.preemption_curve(seqs)
    target = float(plan.workload["preemption_target"])
    figure = figure_class()(figsize=(7, 3.5), layout="constrained")
    ax = figure.add_subplot()
    ax.plot(seqs, probabilities, marker="o", color="#4c72b0", label="preemption probability")
    ax.axhline(target, color="#c44e52", linestyle="--", linewidth=1, label=f"target {target:g}")
    ax.axvline(chosen, color="black", linewidth=1, label=f"max_num_seqs {chosen}")
    ax.set_xscale("log", base=2)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("max_num_seqs (busy slots)")
    ax.set_ylabel("P(KV cache overflows)")
    ax.set_title(str(plan.workload["description"]), fontsize="small")
    ax.legend(loc="upper left", fontsize="small", frameon=False)
    return figure
