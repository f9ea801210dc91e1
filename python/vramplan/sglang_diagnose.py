"""SGLang startup logs: `diagnose` (the cause of a failed launch and advice as (knob, action,
value) data under SGLang's flags) and `validate` (the log's figures against the breakdown of
the same launch, per term). The figures come from the core's parser (parse_sglang_log)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from . import _core, api, sglang
from ._units import GIB

# A cause per parsed outcome: (cause, what happened).
_CAUSES = {
    "weights_leave_no_memory": (
        "weights_leave_no_memory",
        (
            "the weights leave no GPU memory for the KV pool at this --mem-fraction-static: "
            "free after the weights is below the slack B x (1 - f)"
        ),
    ),
    "not_enough_memory": (
        "kv_pool_too_small",
        (
            "not enough memory for the KV pool: after the weights and the slack B x (1 - f), no "
            "token (or no Mamba state slot) fits"
        ),
    ),
    "hicache_refused": (
        "hicache_refused",
        (
            "SGLang refused HiCache's host pool: each rank's pool is larger than its share of "
            "the host's available memory less a 10 GiB reserve"
        ),
    ),
    "oom_cuda_graph_capture": (
        "oom_cuda_graph_capture",
        (
            "CUDA out of memory while capturing CUDA graphs: the slack B x (1 - f) left after the "
            "pools cannot hold the graphs"
        ),
    ),
}

# Lines that say the kernel killed the process for host memory.
_HOST_OOM = ("Out of memory: Killed process", "oom-kill", "oom_reaper", "Killed process")


def _advice(knob: str, action: str, value: Any, why: str) -> dict[str, Any]:
    flag = next((k["flag"] for k in sglang.knobs() if k["name"] == knob), "")
    return {"knob": knob, "flag": flag, "action": action, "value": value, "why": why}


def _up(value: float, step: float = 0.01) -> float:
    return round(math.ceil(value / step - 1e-9) * step, 3)


def _down(value: float, step: float = 0.01) -> float:
    return round(math.floor(value / step + 1e-9) * step, 3)


def diagnose(text: str) -> dict[str, Any]:
    """The cause of an SGLang launch's failure from its log, with advice as data."""
    figures = dict(_core.parse_sglang_log(text))
    outcome = str(figures["outcome"])
    f = figures["mem_fraction_static"]
    advice: list[dict[str, Any]] = []
    if any(phrase in text for phrase in _HOST_OOM):
        cause, what = (
            "host_oom",
            ("the kernel killed the process for host RAM (loading weights through host memory)"),
        )
        advice.append(
            _advice(
                "tp_size",
                "keep",
                figures["tp_size"],
                "host RAM is not a GPU knob: add host RAM or swap, or run fewer ranks per node",
            )
        )
    elif outcome in _CAUSES:
        cause, what = _CAUSES[outcome]
        free = figures["avail_after_weights_gib"]
        weights = figures["weights_gib"]
        if outcome == "hicache_refused":
            advice += [
                _advice("hicache_ratio", "lower", None, "host tokens per device KV token"),
                _advice("hicache_size", "set", None, "a fixed host pool per rank, decimal GB"),
            ]
        elif outcome in ("weights_leave_no_memory", "not_enough_memory"):
            if free is not None and weights is not None and free + weights > 0:
                # B taken as free + weights (docs/sglang.md): the pool needs f > 1 - free / B.
                minimum = 1.0 - free / (free + weights)
                advice.append(
                    _advice(
                        "mem_fraction_static",
                        "raise",
                        min(0.99, _up(minimum + 0.02)),
                        f"the smallest f that leaves the pool memory is {minimum:.4f} "
                        "(1 - free after the weights / baseline); the slack shrinks with it",
                    )
                )
            else:
                advice.append(
                    _advice("mem_fraction_static", "raise", None, "the log prints no weights")
                )
            tp = figures["tp_size"] or 1
            advice.append(_advice("tp_size", "raise", tp * 2, "halves the weights per rank"))
            advice.append(
                _advice("kv_cache_dtype", "set", "fp8_e4m3", "halves the bytes per KV token")
            )
        else:
            tried = figures["oom_tried_gib"] or 0.0
            if f is not None:
                base = (figures["load_begin_avail_gib"] or 0.0) or None
                step = (tried + 0.5) / base if base else 0.02
                advice.append(
                    _advice(
                        "mem_fraction_static",
                        "lower",
                        _down(f - max(step, 0.01)),
                        "a larger slack B x (1 - f) for the graphs",
                    )
                )
            bs = figures["cuda_graph_max_bs"]
            advice.append(
                _advice(
                    "cuda_graph_max_bs",
                    "lower",
                    max(1, bs // 2) if bs else None,
                    "fewer and smaller graphs",
                )
            )
            advice.append(_advice("disable_cuda_graph", "set", True, "no graphs at all (slower)"))
    elif outcome == "oom":
        graphs_done = (
            figures["decode_graph_gib"] is not None or figures["avail_after_graphs_gib"] is not None
        )
        cause = "oom_first_prefill" if graphs_done else "oom"
        what = (
            "CUDA out of memory after the graphs were captured: the first (chunked) prefill's "
            "activations do not fit in what the slack has left"
            if graphs_done
            else "CUDA out of memory outside the pool sizing and the graph capture"
        )
        chunk = figures["chunked_prefill_size"]
        advice.append(
            _advice(
                "chunked_prefill_size",
                "lower",
                max(512, chunk // 2) if chunk and chunk > 0 else 4096,
                "smaller prefill activations",
            )
        )
        if f is not None:
            advice.append(
                _advice("mem_fraction_static", "lower", _down(f - 0.03), "a larger slack")
            )
    elif outcome == "started":
        cause, what = "started", "the launch started: no failure in this log"
    else:
        cause, what = "unknown", "no SGLang failure this parser knows was found"
    return {
        "engine": "sglang",
        "cause": cause,
        "explanation": what,
        "advice": advice,
        "error_lines": list(figures["error_lines"]),
        "figures": figures,
    }


def format_text(result: dict[str, Any]) -> str:
    lines = [f"cause: {result['cause']}", f"  {result['explanation']}"]
    for line in result["error_lines"][:3]:
        lines.append(f"  log: {line}")
    for item in result["advice"]:
        value = "" if item["value"] is None else f" {item['value']}"
        flag = item["flag"] or item["knob"]
        lines.append(f"  {item['action']} {flag}{value}: {item['why']}")
    return "\n".join(lines)


# --- validate -----------------------------------------------------------------------------

# (term, the log's figure, the breakdown's bytes or count, unit).
_TERMS = (
    ("baseline_free", "load_begin_avail_gib", "baseline_free_bytes", "GiB"),
    ("weights", "weights_gib", "weights_bytes", "GiB"),
    ("free_after_weights", "avail_after_weights_gib", "free_after_weights_bytes", "GiB"),
    ("k_size", "k_size_gib", "k_size_bytes", "GiB"),
    ("max_total_num_tokens", "max_total_num_tokens", "max_total_num_tokens", "tokens"),
    ("free_after_pool", "avail_after_pool_gib", "free_after_pool_bytes", "GiB"),
    ("decode_cuda_graphs", "decode_graph_gib", "decode_graph_bytes", "GiB"),
    ("max_running_requests", "max_running_requests", "max_running_requests", "requests"),
)
# The launch settings server_args prints, as SGLang knobs.
_LAUNCH = (
    "tp_size",
    "pp_size",
    "dp_size",
    "mem_fraction_static",
    "chunked_prefill_size",
    "max_running_requests",
    "context_length",
    "cuda_graph_max_bs",
    "kv_cache_dtype",
)


def validate(
    log: str | Path, *, model: str | None, gpu: str, sglang_version: str | None
) -> dict[str, Any]:
    """The log's figures against the breakdown of the launch it printed, per term."""
    figures = dict(_core.parse_sglang_log(Path(log)))
    model_id = model or figures["model_path"]
    if not model_id:
        raise api.config_error(
            "--model", "''", "a model id", "the log prints no model_path: name the model"
        )
    knobs: dict[str, Any] = {k: figures[k] for k in _LAUNCH if figures.get(k) is not None}
    if knobs.get("kv_cache_dtype") == "auto":
        del knobs["kv_cache_dtype"]
    if sglang_version:
        knobs["sglang_version"] = sglang_version
    # max_running_requests printed by the scheduler is the result, not the user's setting.
    knobs.pop("max_running_requests", None)
    result = api.breakdown(model_id, gpu, engine="sglang", **knobs)
    predicted = result.to_dict()
    notes = []
    missing = [k for k in ("tp_size", "mem_fraction_static") if figures.get(k) is None]
    if missing:
        # Never replay a different launch silently: say which settings were SGLang's defaults.
        notes.append(
            "the log prints no " + ", ".join(missing) + " (no server_args line): replayed with "
            "SGLang's defaults for them, so the comparison may be of a different launch"
        )
    rows = []
    for term, measured_key, predicted_key, unit in _TERMS:
        measured = figures.get(measured_key)
        if measured is None:
            continue
        value = predicted[predicted_key]
        guess = value / GIB if unit == "GiB" else float(value)
        error = None if measured == 0 else (guess - measured) / abs(measured)
        rows.append(
            {"term": term, "unit": unit, "measured": measured, "predicted": guess, "error": error}
        )
    return {
        "engine": "sglang",
        "model": model_id,
        "gpu": gpu,
        "launch": knobs,
        "outcome": figures["outcome"],
        "verdict": predicted["verdict"],
        "terms": rows,
        "notes": notes,
        "breakdown": predicted,
    }


def format_validation(result: dict[str, Any]) -> str:
    head = (
        f"SGLang {result['breakdown']['sglang_version']}: {result['model']} on {result['gpu']} "
        f"(log outcome {result['outcome']}, predicted {result['verdict']})"
    )
    lines = [head, f"  {'term':<22} {'measured':>12} {'predicted':>12} {'error':>8}"]
    for row in result["terms"]:
        error = "" if row["error"] is None else f"{row['error'] * 100:+.1f}%"
        fmt = "{:>12.2f}" if row["unit"] == "GiB" else "{:>12.0f}"
        lines.append(
            f"  {row['term']:<22} {fmt.format(row['measured'])} {fmt.format(row['predicted'])}"
            f" {error:>8}"
        )
    lines += [f"  note: {note}" for note in result["notes"]]
    return "\n".join(lines)
