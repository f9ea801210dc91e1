"""Notebook views of a Plan and a Breakdown: a compact table and a stacked bar per rank, as
inline HTML and SVG (no scripts, no external assets)."""

from __future__ import annotations

from html import escape
from typing import Any

from ._figures import TERM_COLOURS
from ._units import gib_text

BAR_WIDTH_PX = 480
BAR_HEIGHT_PX = 18

_STYLE = "font-family: sans-serif; font-size: 12px; border-collapse: collapse"
_CELL = "padding: 1px 8px; text-align: {align}"


def _cell(text: object, align: str = "left", tag: str = "td") -> str:
    return f'<{tag} style="{_CELL.format(align=align)}">{escape(str(text))}</{tag}>'


def rank_bar(rank: dict[str, Any]) -> str:
    """An SVG bar: the rank's terms stacked over the GPU's total, the budget as a dashed line."""
    total = max(1, int(rank["total_memory_bytes"]))
    scale = BAR_WIDTH_PX / total
    parts = []
    x = 0.0
    for term in rank["terms"]:
        width = max(0, int(term["bytes"])) * scale
        colour = TERM_COLOURS.get(term["name"], "#cccccc")
        parts.append(
            f'<rect x="{x:.1f}" y="0" width="{width:.1f}" height="{BAR_HEIGHT_PX}" '
            f'fill="{colour}"><title>{escape(term["name"])}: {gib_text(term["bytes"])}</title></rect>'
        )
        x += width
    budget = int(rank["requested_memory_bytes"]) * scale
    parts.append(
        f'<line x1="{budget:.1f}" y1="0" x2="{budget:.1f}" y2="{BAR_HEIGHT_PX}" stroke="black" '
        f'stroke-dasharray="3,2"><title>budget {gib_text(rank["requested_memory_bytes"])}</title>'
        "</line>"
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{BAR_WIDTH_PX}" '
        f'height="{BAR_HEIGHT_PX}" role="img" '
        f'aria-label="memory of pipeline rank {rank["pipeline_rank"]}">'
        f'<rect x="0" y="0" width="{BAR_WIDTH_PX}" height="{BAR_HEIGHT_PX}" fill="#f0f0f0"/>'
        + "".join(parts)
        + "</svg>"
    )


def _vllm_head_foot(data: dict[str, Any]) -> tuple[str, str, list[str]]:
    """A vLLM breakdown's headline, its host-RAM line and its messages."""
    outcome = data["outcome"]
    colour = "#2a7a2a" if outcome == "started" else "#b22222"
    head = (
        f"<div><b>{escape(data['model'])}</b> on <b>{escape(data['gpu'])}</b> "
        f"(vLLM {escape(data['engine_version'])}): "
        f'<span style="color: {colour}"><b>{escape(outcome)}</b></span>, '
        f"{data['kv_tokens']:,} KV tokens, {data['max_concurrency']:.2f}x concurrency at "
        f"{data['config']['max_model_len']:,} tokens</div>"
    )
    host = data["host"]
    foot = (
        f"<div><small>host RAM required {gib_text(host['required_bytes'])} "
        f"(+ {gib_text(host['page_cache_bytes'])} page cache)</small></div>"
    )
    return head, foot, list(data.get("messages", []))


def _sglang_head_foot(data: dict[str, Any]) -> tuple[str, str, list[str]]:
    """An SGLang breakdown's headline, its HiCache host line (if any), its error and notes."""
    verdict = data["verdict"]
    colour = "#2a7a2a" if verdict == "started" else "#b22222"
    head = (
        f"<div><b>{escape(data['model'])}</b> on <b>{escape(data['gpu'])}</b> "
        f"(SGLang {escape(data['release'])}): "
        f'<span style="color: {colour}"><b>{escape(verdict)}</b></span>, '
        f"{data['max_total_num_tokens']:,} KV tokens, {data['max_running_requests']:,} running "
        f"requests at {data['context_length']:,} tokens, mem_fraction_static "
        f"{data['mem_fraction_static']:.3f}</div>"
    )
    hicache = data.get("hicache")
    foot = (
        f"<div><small>HiCache host RAM pinned {gib_text(hicache['pinned_bytes_per_rank'])} "
        "per rank</small></div>"
        if hicache
        else ""
    )
    return head, foot, [data["error"], *data["notes"]] if data["error"] else list(data["notes"])


# Each engine's breakdown JSON (by its "engine" key) to its heading, footer and messages.
_HEAD_FOOT = {"vllm": _vllm_head_foot, "sglang": _sglang_head_foot}


def breakdown_html(data: dict[str, Any]) -> str:
    """A Breakdown's JSON, vLLM's or SGLang's, as a table (one column per pipeline rank) with a
    bar per rank."""
    head, foot, messages = _HEAD_FOOT[data["engine"]](data)
    ranks = data["ranks"]
    header = _cell("term", tag="th") + "".join(
        _cell(f"rank {r['pipeline_rank']}", "right", "th") for r in ranks
    )
    rows = []
    for index, term in enumerate(ranks[0]["terms"]):
        swatch = (
            f'<span style="display:inline-block;width:10px;height:10px;margin-right:4px;'
            f'background:{TERM_COLOURS.get(term["name"], "#cccccc")}"></span>'
        )
        values = "".join(_cell(gib_text(r["terms"][index]["bytes"]), "right") for r in ranks)
        rows.append(
            f'<tr><td style="{_CELL.format(align="left")}">{swatch}{escape(term["name"])}'
            f"</td>{values}</tr>"
        )
    rows.append(
        "<tr>"
        + _cell("total / budget")
        + "".join(
            _cell(
                f"{gib_text(r['total_memory_bytes'])} / {gib_text(r['requested_memory_bytes'])}",
                "right",
            )
            for r in ranks
        )
        + "</tr>"
    )
    bars = "".join(
        f"<div>{rank_bar(r)} <small>rank {r['pipeline_rank']}</small></div>" for r in ranks
    )
    table = f'<table style="{_STYLE}"><tr>{header}</tr>{"".join(rows)}</table>'
    # The notes (the generic path's assumptions, class defaults used, SGLang's error, ...), as
    # the text and JSON outputs carry them.
    notes = "".join(f"<li><small>{escape(m)}</small></li>" for m in messages)
    if notes:
        notes = f"<ul>{notes}</ul>"
    return f"<div>{head}{table}{bars}{foot}{notes}</div>"


# An SGLang plan's largest safe knobs, in its JSON's names (each with the others as given).
_SGLANG_PLAN_KNOBS = (
    "safe_mem_fraction_static",
    "max_mem_fraction_static",
    "max_running_requests",
    "max_context_length",
    "max_chunked_prefill_size",
    "max_cuda_graph_max_bs",
)


def plan_html(data: dict[str, Any]) -> str:
    """A Plan's JSON, vLLM's or SGLang's: verdict, the knobs (vLLM: with why each binds), the
    launch line, the remedies and the (planned) breakdown."""
    colour = "#2a7a2a" if data["fits"] else "#b22222"
    verdict = f'<div style="color: {colour}"><b>{escape(data["verdict"])}</b></div>'
    if "launch_line" in data:  # SGLang's plan
        rows = "".join(
            f"<tr>{_cell(knob)}{_cell('-' if data[knob] is None else data[knob], 'right')}</tr>"
            for knob in _SGLANG_PLAN_KNOBS
        )
        command = escape(data["launch_line"])
        breakdown = data["planned"]
    else:
        rows = "".join(
            f"<tr>{_cell(knob)}{_cell(data[knob], 'right')}{_cell(why)}</tr>"
            for knob, why in data["binding"].items()
        )
        command = f"vllm serve {escape(data['breakdown']['model'])} {escape(data['vllm_args'])}"
        breakdown = data["breakdown"]
    knobs = f'<table style="{_STYLE}">{rows}</table>'
    command = f'<pre style="white-space: pre-wrap">{command}</pre>'
    remedies = ""
    if data["remedies"]:
        items = "".join(
            f"<li>{escape(r['change'])}: {'fits' if r['fits'] else 'not enough alone'}</li>"
            for r in data["remedies"]
        )
        remedies = f"<div>remedies (cheapest first):<ul>{items}</ul></div>"
    return f"<div>{verdict}{knobs}{command}{remedies}{breakdown_html(breakdown)}</div>"
