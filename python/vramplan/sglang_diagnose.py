"""SGLang startup logs: `diagnose` (the cause of a failed launch and advice as (knob, flag,
action, value, why) data under SGLang's flags, from the core's diagnose_sglang_launch) and
`validate` (the log's figures against the breakdown of the same launch, per term). The figures
come from the core's parser (parse_sglang_log)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import _core, api
from ._units import GIB


def diagnose(text: str) -> dict[str, Any]:
    """The cause of an SGLang launch's failure from its log, with advice as data: engine, cause,
    explanation, advice ([{knob, flag, action, value, why}]), error_lines, figures."""
    return dict(_core.diagnose_sglang_launch(text))


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
