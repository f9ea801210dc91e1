"""Notebook use: HTML views of Plan and Breakdown, matplotlib figures (Agg), the DataFrame
from sweep, and docs/examples/sizing.ipynb executed end to end."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import matplotlib
import pandas as pd
import pytest
import vramplan

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[2]
# The default version (the newest known) runs Llama on Model Runner V2: its sampler state is a term.
TERMS = [
    "weights",
    "activation_peak",
    "mrv2_persistent_buffers",
    "non_torch",
    "cudagraph",
    "kv_cache",
    "cuda_context",
]


@pytest.fixture(scope="module")
def two_stage_plan() -> vramplan.Plan:
    return vramplan.plan("meta-llama/Llama-3.1-8B", "H100", pipeline_parallel_size=2)


def test_breakdown_html_has_a_table_and_a_bar_per_rank(two_stage_plan: vramplan.Plan) -> None:
    b = two_stage_plan.breakdown
    html = b._repr_html_()
    assert html.count("<svg") == len(b.ranks) == 2
    assert "<table" in html
    for term in TERMS:
        assert term in html
    assert "<script" not in html
    assert not re.search(r"\b(src|href)=", html)  # no external assets
    # Each bar segment is the term's share of the GPU's total, 480 px wide in all.
    rank = b.ranks[0]
    weights = re.search(r'width="([0-9.]+)" height="18" fill="#4c72b0"', html)
    assert weights is not None
    share = rank.weights_bytes / rank.total_memory_bytes
    assert float(weights.group(1)) == pytest.approx(480 * share, abs=0.05)


def test_plan_html_has_verdict_knobs_and_flags(two_stage_plan: vramplan.Plan) -> None:
    html = two_stage_plan._repr_html_()
    assert two_stage_plan.verdict in html
    assert two_stage_plan.to_vllm_args() in html
    for knob in two_stage_plan.binding:
        assert knob in html
    assert html.count("<svg") == 2
    # The attribute access the facade had keeps working.
    assert two_stage_plan.fits is True
    assert two_stage_plan["max_model_len"] == two_stage_plan.max_model_len


def test_plan_plot_stacks_every_term_per_rank(two_stage_plan: vramplan.Plan) -> None:
    from matplotlib.figure import Figure

    figure = two_stage_plan.plot()
    assert isinstance(figure, Figure)
    ax = figure.axes[0]
    gids = [patch.get_gid() for patch in ax.patches]
    assert gids == [f"rank{r}:{t}" for r in (0, 1) for t in TERMS]
    weights = next(p for p in ax.patches if p.get_gid() == "rank0:weights")
    assert weights.get_width() == pytest.approx(
        two_stage_plan.breakdown.ranks[0].weights_bytes / (1 << 30)
    )
    assert [line.get_label() for line in ax.get_lines()] == [
        "GPU total",
        "budget (total x utilization)",
    ]
    legend = [text.get_text() for text in ax.get_legend().get_texts()]
    assert set(TERMS) <= set(legend)


def test_plot_frontier_one_line_per_utilization_and_per_gpu() -> None:
    figure = vramplan.plot_frontier(
        "Qwen/Qwen3-8B",
        "L4",
        gpu_memory_utilization=[0.85, 0.95],
        max_model_len=[1024, 4096, 16384],
    )
    lines = figure.axes[0].get_lines()
    assert [line.get_label() for line in lines] == ["utilization 0.85", "utilization 0.95"]
    # More budget never holds fewer sequences.
    for low, high in zip(lines[0].get_ydata(), lines[1].get_ydata()):
        assert high >= low
    figure = vramplan.plot_frontier(
        "Qwen/Qwen3-8B", ["L4", "H100"], gpu_memory_utilization=0.9, max_model_len=[1024, 4096]
    )
    assert [line.get_label() for line in figure.axes[0].get_lines()] == ["L4", "H100"]
    assert figure.axes[0].get_xlabel() == "max_model_len (tokens)"


def test_frontier_points_agree_with_single_breakdowns() -> None:
    from vramplan.plots import frontier

    seqs = [1, 2, 4, 8, 16, 32, 64]
    points = frontier("Qwen/Qwen3-8B", "L4", max_model_len=[2048, 8192], max_num_seqs=seqs)
    assert [p[0] for p in points] == [2048, 8192]
    for length, most in points:
        b = vramplan.breakdown(
            "Qwen/Qwen3-8B",
            "L4",
            gpu_memory_utilization=0.9,
            max_model_len=length,
            max_num_seqs=most,
        )
        assert b.outcome == "started"
        assert b.max_concurrency >= most
        bigger = seqs[seqs.index(most) + 1]
        b = vramplan.breakdown(
            "Qwen/Qwen3-8B",
            "L4",
            gpu_memory_utilization=0.9,
            max_model_len=length,
            max_num_seqs=bigger,
        )
        assert b.outcome != "started" or b.max_concurrency < bigger


def test_plots_without_matplotlib_are_a_named_error(
    two_stage_plan: vramplan.Plan, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(vramplan.Error, match=r"vramplan\[plot\]"):
        two_stage_plan.plot()
    with pytest.raises(vramplan.Error, match="matplotlib"):
        vramplan.plot_frontier("Qwen/Qwen3-8B", "L4")


def test_sweep_is_a_dataframe() -> None:
    grid = vramplan.sweep("Qwen/Qwen3-8B", "L4", max_model_len=[4096, 8192], max_num_seqs=[1, 8])
    assert isinstance(grid, pd.DataFrame)
    assert len(grid) == 4
    assert {"max_model_len", "max_num_seqs", "kv_tokens", "outcome"} <= set(grid.columns)


def test_example_notebook_runs(notebook_outputs: Any) -> None:
    outputs = notebook_outputs(ROOT / "docs" / "examples" / "sizing.ipynb")
    mimes = {m for o in outputs for m in o.get("data", {})}
    assert "text/html" in mimes  # the Plan / Breakdown / DataFrame views
    assert "image/png" in mimes  # the figures


def _deterministic(notebook: Any) -> list[list[dict[str, Any]]]:
    """Per code cell, what its outputs show that does not vary between machines: the output
    type, the stream name and text, and every MIME type's data except a PNG's bytes (the
    rasteriser's version moves pixels), of which only the presence counts. Execution counts
    are left out (a cell's place in the list says which cell it is)."""
    cells = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        shown = []
        for output in cell.outputs:
            item: dict[str, Any] = {"output_type": output.output_type}
            if output.output_type == "stream":
                item.update(name=output.name, text=output.text)
            else:
                data = dict(output.get("data", {}))
                if "image/png" in data:
                    data["image/png"] = "(a PNG)"
                item["data"] = data
            shown.append(item)
        cells.append(shown)
    return cells


@pytest.mark.parametrize("name", ["sizing.ipynb", "fit.ipynb"])
def test_committed_notebook_outputs_are_the_current_ones(name: str, notebook_executed: Any) -> None:
    """The notebooks are committed executed (scripts/run_notebooks.py), so that the README's
    worked examples show results; re-executed here, each cell shows what the commit holds."""
    import nbformat

    path = ROOT / "docs" / "examples" / name
    committed = _deterministic(nbformat.read(path, as_version=4))
    assert any(committed), f"{name} is committed without outputs"
    current = _deterministic(notebook_executed(path))
    assert len(current) == len(committed)
    for number, (now, then) in enumerate(zip(current, committed), start=1):
        assert now == then, (
            f"{name}: code cell {number} shows other outputs than the committed ones; "
            "run python3 scripts/run_notebooks.py and commit the notebooks"
        )
