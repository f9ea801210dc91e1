"""An SGLang breakdown as terms, drawn as a vLLM one is: `terms` and `ranks`, the JSON, the
notebook HTML view and the figure. Expected numbers are derived by hand here (the launch of
test_sglang.py's test_kv_pool_of_a_given_fraction_by_hand)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from html import escape

import matplotlib
import pytest
import vramplan
from vramplan.sglang import SglangBreakdown

matplotlib.use("Agg")

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
H100_TOTAL = 85030076416  # CUDA total
CONTEXT = 311385129  # sglang.yaml cuda_context_bytes
MIB = 1 << 20
NAMES = [
    "cuda_context",
    "weights",
    "kv_pool",
    "req_to_token",
    "decode_cudagraph",
    "prefill_cudagraph",
    "activation",
    "free",
]


@pytest.fixture(scope="module")
def launch() -> SglangBreakdown:
    result = vramplan.breakdown(MODEL, "H100-80GB", engine="sglang", mem_fraction_static=0.8)
    assert isinstance(result, SglangBreakdown)
    return result


def test_terms_by_hand_add_up_to_the_gpu(launch: SglangBreakdown) -> None:
    # B = total - context (TP = 1: no NCCL term); slack = round(0.2 B); the pool's tokens
    # floor(rest / 131072), its bytes one padding token more; 0.5.23's H100 tier captures
    # decode graphs up to bs 256 (2 MiB each) and 58 prefill sizes (8 MiB each); one
    # 8192-token chunk's activation is 8192 x (4 x 4096 + 2 x 14336) x 2 B.
    terms = launch.terms
    assert [t["name"] for t in terms] == NAMES
    by_name = {t["name"]: t["bytes"] for t in terms}
    baseline = H100_TOTAL - CONTEXT
    slack = round(baseline * 0.2)
    rest = baseline - launch["weights_bytes"] - slack
    tokens = rest // 131072
    assert by_name["cuda_context"] == CONTEXT
    assert by_name["kv_pool"] == (tokens + 1) * 131072
    assert by_name["decode_cudagraph"] == 256 * 2 * MIB
    assert by_name["prefill_cudagraph"] == 58 * 8 * MIB
    assert by_name["activation"] == 8192 * (4 * 4096 + 2 * 14336) * 2
    assert by_name["free"] == (
        slack
        + rest
        - by_name["kv_pool"]
        - by_name["req_to_token"]
        - by_name["decode_cudagraph"]
        - by_name["prefill_cudagraph"]
        - by_name["activation"]
    )
    assert by_name["free"] == launch["free_after_graphs_bytes"] - launch["activation_bytes"]
    assert sum(by_name.values()) == H100_TOTAL
    kinds = {t["name"]: t["provenance"].split(":")[0] for t in terms}
    assert kinds["kv_pool"] == kinds["weights"] == kinds["req_to_token"] == "exact"
    assert kinds["decode_cudagraph"] == kinds["activation"] == "estimate"
    assert kinds["cuda_context"] == "calibrated"


def test_ranks_are_shaped_as_vllms_and_in_the_json(launch: SglangBreakdown) -> None:
    (rank,) = launch.ranks
    assert rank["pipeline_rank"] == 0
    assert rank["total_memory_bytes"] == H100_TOTAL
    assert rank["requested_memory_bytes"] == H100_TOTAL - launch["slack_bytes"]
    assert rank["terms"] == launch.terms
    data = json.loads(launch.to_json())
    assert data["ranks"][0]["terms"] == launch.terms
    assert data["kv_pool_bytes"] == launch.terms[2]["bytes"]  # the flat fields stay


def test_html_view_is_the_vllm_views_table_and_bar(launch: SglangBreakdown) -> None:
    html = launch._repr_html_()
    assert html.count("<svg") == 1
    assert "<table" in html
    for name in NAMES:
        assert name in html
    assert "SGLang 0.5.23" in html
    assert f"{launch['max_total_num_tokens']:,} KV tokens" in html
    assert "<script" not in html
    # The KV pool's segment is its share of the GPU's 480 px.
    pool = re.search(r'width="([0-9.]+)" height="18" fill="#55a868"', html)
    assert pool is not None
    assert float(pool.group(1)) == pytest.approx(
        480 * launch["kv_pool_bytes"] / H100_TOTAL, abs=0.05
    )


def test_html_of_a_failing_launch_says_sglangs_error() -> None:
    # Llama-3.1-70B in bf16 (~131 GiB) cannot load on one H100.
    result = vramplan.breakdown("meta-llama/Llama-3.1-70B", "H100-80GB", engine="sglang")
    assert result.verdict == "weights_leave_no_memory"
    free = next(t for t in result.terms if t["name"] == "free")
    assert free["bytes"] < 0
    html = result._repr_html_()
    assert "Loaded weights leave no GPU memory for the KV cache" in html
    assert "#b22222" in html


def test_plot_stacks_the_terms_of_the_rank(launch: SglangBreakdown) -> None:
    figure = launch.plot()
    ax = figure.axes[0]
    assert [patch.get_gid() for patch in ax.patches] == [f"rank0:{name}" for name in NAMES]
    pool = next(p for p in ax.patches if p.get_gid() == "rank0:kv_pool")
    assert pool.get_width() == pytest.approx(launch["kv_pool_bytes"] / (1 << 30))
    assert [line.get_label() for line in ax.get_lines()] == [
        "GPU total",
        "weights and pools (total - slack)",
    ]


def test_cli_json_carries_the_terms() -> None:
    args = ["breakdown", MODEL, "--gpu", "H100-80GB", "--engine", "sglang"]
    out = subprocess.run(
        [sys.executable, "-m", "vramplan", *args, "--mem-fraction-static", "0.8", "--json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    terms = json.loads(out)["ranks"][0]["terms"]
    assert [t["name"] for t in terms] == NAMES
    assert sum(t["bytes"] for t in terms) == H100_TOTAL


def test_plan_html_and_plot_show_the_planned_launch() -> None:
    plan = vramplan.plan(MODEL, "H100-80GB", engine="sglang", context=8192)
    html = plan._repr_html_()
    assert escape(plan.launch_line) in html
    assert plan.verdict in html
    assert f"{plan['safe_mem_fraction_static']}" in html
    assert html.count("<svg") == 1  # the planned launch's bar
    assert "SGLang 0.5.23" in html
    gids = [patch.get_gid() for patch in plan.plot().axes[0].patches]
    assert gids == [f"rank0:{t['name']}" for t in plan.planned.terms]


def test_cli_text_draws_the_terms_as_vllms_breakdown_does() -> None:
    # The same table renderer as `vramplan breakdown` (vLLM): a titled table of term, size and
    # how we know, one row a term in SGLang's order, then the KV row.
    args = ["breakdown", MODEL, "--gpu", "H100-80GB", "--engine", "sglang"]
    out = subprocess.run(
        [sys.executable, "-m", "vramplan", *args, "--mem-fraction-static", "0.8"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    title = next(i for i, line in enumerate(out) if line.startswith("per GPU rank, pipeline"))
    assert out[title].startswith("per GPU rank, pipeline stage 0: total 79.19 GiB")
    assert re.match(r"term +\| +size \| how we know$", out[title + 1])
    rows = [line.split("|")[0].strip() for line in out[title + 3 : title + 3 + len(NAMES) + 1]]
    assert rows == [*NAMES, "kv per token"]
    assert out[-1] == "verdict: started"
