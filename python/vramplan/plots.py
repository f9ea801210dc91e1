"""Figures for notebooks (the `vramplan[plot]` extra): the max_model_len x max_num_seqs
frontier and a fit's cost against capacity (a breakdown's stacked bars per rank are in
_figures). Every number comes from the core (`sweep`, `fit`); these functions only draw. They return `matplotlib.figure.Figure` objects built
without pyplot, so nothing is shown twice in a notebook and no global state changes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import _core, api
from ._figures import figure_class

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure


# Context lengths and sequence counts a frontier tries when none are given.
DEFAULT_FRONTIER_SEQS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
DEFAULT_UTILIZATIONS = (0.85, 0.9, 0.95)


def _powers_of_two_up_to(limit: int, start: int = 1024) -> list[int]:
    lengths = []
    length = start
    while length <= limit:
        lengths.append(length)
        length *= 2
    if not lengths or lengths[-1] != limit:
        lengths.append(limit)
    return lengths


def frontier(
    model: str | _core.ModelSpec,
    gpu: str | _core.GpuSpec,
    *,
    max_model_len: Sequence[int] | None = None,
    max_num_seqs: Sequence[int] = DEFAULT_FRONTIER_SEQS,
    gpu_memory_utilization: float = 0.9,
    **knobs: Any,
) -> list[tuple[int, int]]:
    """(max_model_len, the most sequences of that length that start and fit in the KV cache
    at once), from one `vramplan.sweep`; lengths where not even one fits are left out."""
    spec = model if isinstance(model, _core.ModelSpec) else api.load_model(model)
    lengths = list(max_model_len or _powers_of_two_up_to(int(spec.max_position_embeddings)))
    grid = api.sweep(
        spec,
        gpu,
        gpu_memory_utilization=[gpu_memory_utilization],
        max_model_len=lengths,
        max_num_seqs=list(max_num_seqs),
        **knobs,
    )
    fits = grid[(grid["outcome"] == "started") & (grid["max_concurrency"] >= grid["max_num_seqs"])]
    best = fits.groupby("max_model_len")["max_num_seqs"].max()
    return [(int(length), int(seqs)) for length, seqs in zip(best.index.tolist(), best.tolist())]


def plot_frontier(
    model: str | _core.ModelSpec,
    gpu: str | _core.GpuSpec | Sequence[str],
    *,
    gpu_memory_utilization: float | Sequence[float] = DEFAULT_UTILIZATIONS,
    max_model_len: Sequence[int] | None = None,
    max_num_seqs: Sequence[int] = DEFAULT_FRONTIER_SEQS,
    **knobs: Any,
) -> Figure:
    """The max_model_len x max_num_seqs frontier: for each context length, the most sequences
    that fit at once. One line per utilization, or per GPU when `gpu` is a list of GPUs (then
    at the first utilization given). Computed with `vramplan.sweep`; needs matplotlib."""
    figure_type = figure_class()
    utilizations = api._values(
        "gpu_memory_utilization",
        [gpu_memory_utilization]
        if isinstance(gpu_memory_utilization, (int, float))
        else gpu_memory_utilization,
        float,
    )
    if not utilizations:
        raise api.config_error("gpu_memory_utilization", [], "one value or more", "empty")
    if isinstance(gpu, (str, _core.GpuSpec)):
        lines = [(gpu, u, f"utilization {u:g}") for u in utilizations]
        title_gpu = gpu if isinstance(gpu, str) else gpu.id
    else:
        if not isinstance(gpu, Sequence) or not all(isinstance(g, str) for g in gpu):
            raise api.config_error(
                "gpu", gpu, "a GPU id, a GpuSpec or a list of GPU ids", "wrong type"
            )
        gpus = list(gpu)
        if not gpus:
            raise api.config_error("gpu", [], "one GPU or more", "empty")
        lines = [(g, utilizations[0], str(g)) for g in gpus]
        title_gpu = f"utilization {utilizations[0]:g}"
    spec = model if isinstance(model, _core.ModelSpec) else api.load_model(model)
    figure = figure_type(figsize=(7, 4.5), layout="constrained")
    ax = figure.add_subplot()
    for line_gpu, utilization, label in lines:
        points = frontier(
            spec,
            line_gpu,
            max_model_len=max_model_len,
            max_num_seqs=max_num_seqs,
            gpu_memory_utilization=utilization,
            **knobs,
        )
        ax.plot(
            [p[0] for p in points],
            [p[1] for p in points],
            marker="o",
            drawstyle="steps-post",
            label=label,
        )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("max_model_len (tokens)")
    ax.set_ylabel("max_num_seqs that fit at once")
    ax.set_title(f"{spec.id}: {title_gpu}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    return figure


def plot_fit(options: pd.DataFrame | str | _core.ModelSpec, **fit_kwargs: Any) -> Figure:
    """Cost against capacity for the options of `vramplan.fit` (its DataFrame, or a model and
    `fit`'s keyword arguments): one point per fitting option, sequences of the target context
    held at once (all replicas) across, $/hour up (GPUs when the options carry no prices), one
    colour per GPU type. Needs matplotlib."""
    import pandas as pd

    figure_type = figure_class()
    if isinstance(options, (str, _core.ModelSpec)):
        from .fit import fit

        options = fit(options, **fit_kwargs)
    elif fit_kwargs:
        raise api.config_error(
            "fit_kwargs", sorted(fit_kwargs), "none with a DataFrame", "given twice"
        )
    if not isinstance(options, pd.DataFrame) or "max_concurrency" not in options.columns:
        raise api.config_error("options", type(options).__name__, "vramplan.fit's DataFrame", "")
    fitting = options[options["fits"].astype(bool)]
    priced = bool(fitting["usd_per_hour"].notna().any())
    y_column = "usd_per_hour" if priced else "num_gpus"
    figure = figure_type(figsize=(7, 4.5), layout="constrained")
    ax = figure.add_subplot()
    for gpu, rows in fitting.groupby("gpu", sort=True):
        rows = rows[rows[y_column].notna()]
        ax.scatter(
            rows["max_concurrency"].astype(float),
            rows[y_column].astype(float),
            label=str(gpu),
            gid=f"fit:{gpu}",
        )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("sequences of the target context held at once")
    ax.set_ylabel("$/hour" if priced else "GPUs")
    ax.set_title("vramplan fit: cost against capacity")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small", frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return figure
