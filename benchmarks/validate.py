"""Accuracy report: replay measured vLLM startups through the planner and write Markdown, CSV
and PNG scatter plots (predicted vs measured, one per term).

Run: python3 benchmarks/validate.py [--records FILE.jsonl] [--out DIR]
(default ../shared/measured/dev.jsonl beside the repository, and docs/validation/).
Deterministic: the same records give byte-identical report.md and records.csv. The PNGs need
matplotlib and are skipped, with a note, without it.
"""

from __future__ import annotations

import argparse
import csv
import re
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from vramplan import validate

ROOT = Path(__file__).resolve().parents[1]
TERMS = {  # term -> (label, unit)
    "weights_gib": ("weights", "GiB"),
    "activation_peak_gib": ("activation peak", "GiB"),
    "non_torch_gib": ("non-torch", "GiB"),
    "cudagraph_gib": ("CUDA graphs", "GiB"),
    "kv_cache_gib": ("available KV cache", "GiB"),
    "kv_tokens": ("KV tokens", "tokens"),
    "max_concurrency": ("max concurrency", "x"),
}
# The published planner's figures on vLLM 0.19 H100 runs (issue 4): MAE % for weights, KV and
# concurrency; signed mean % for activation and non-torch.
PUBLISHED = {
    "weights_gib": ("mean abs error %", 0.89),
    "kv_cache_gib": ("mean abs error %", 6.62),
    "activation_peak_gib": ("mean signed error %", 195.0),
    "non_torch_gib": ("mean signed error %", -44.0),
    "max_concurrency": ("mean abs error %", 15.3),
}


def family(model: str) -> str:
    name = model.split("/")[-1].lower()
    for pattern, label in (
        (r"deepseek", "DeepSeek"),
        (r"gpt-oss", "gpt-oss"),
        (r"llama-4", "Llama-4"),
        (r"llama", "Llama"),
        (r"qwen3", "Qwen3"),
        (r"qwen2", "Qwen2.5"),
        (r"gemma", "Gemma"),
        (r"mixtral|mistral", "Mistral"),
        (r"phi", "Phi"),
    ):
        if re.search(pattern, name):
            return label
    return "other"


def version_group(record: dict[str, Any]) -> str:
    match = re.search(r"(\d+)\.(\d+)", str(record.get("vllm_version") or ""))
    return f"{match.group(1)}.{match.group(2)}" if match else "V0 (unstated)"


def gpu_group(record: dict[str, Any]) -> str:
    name = str(record.get("gpu") or "")
    for pattern, label in (
        (r"h200", "H200"),
        (r"h100", "H100"),
        (r"a100", "A100"),
        (r"3090", "RTX 3090"),
        (r"4090", "RTX 4090"),
        (r"l40", "L40S"),
    ):
        if re.search(pattern, name, re.IGNORECASE):
            return label
    return "other"


def rows_of(records: list[dict[str, Any]], replays: list[validate.Replay]) -> list[dict[str, Any]]:
    rows = []
    for record, replay in zip(records, replays):
        if replay.predicted is None:
            continue
        for term in TERMS:
            measured = replay.measured.get(term) if term in replay.measured else record.get(term)
            if measured is None:
                continue
            predicted = replay.predicted[term]
            error = predicted - measured
            rows.append(
                {
                    "id": replay.id,
                    "family": family(str(record.get("model"))),
                    "gpu": gpu_group(record),
                    "version": version_group(record),
                    "parallelism": f"TP{record.get('tensor_parallel_size') or 1}"
                    f"xPP{record.get('pipeline_parallel_size') or 1}",
                    "term": term,
                    "predicted": predicted,
                    "measured": measured,
                    "abs_error": abs(error),
                    "error": error,
                    "pct_error": 100.0 * error / measured if measured else None,
                }
            )
    return rows


def fmt(value: float, unit: str) -> str:
    return f"{value:,.0f}" if unit == "tokens" else f"{value:.3f}"


def summary_table(rows: list[dict[str, Any]], key: str | None) -> list[str]:
    lines = []
    for term, (label, unit) in TERMS.items():
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in rows:
            if row["term"] == term:
                groups[row[key] if key else "all"].append(row)
        for group in sorted(groups):
            members = groups[group]
            errors = [r["abs_error"] for r in members]
            pcts = [abs(r["pct_error"]) for r in members if r["pct_error"] is not None]
            lines.append(
                f"| {label} | {group} | {len(members)} | {fmt(statistics.median(errors), unit)} | "
                f"{fmt(max(errors), unit)} | {statistics.median(pcts):.2f} | {max(pcts):.2f} |"
            )
    return lines


def write_plots(rows: list[dict[str, Any]], out: Path) -> list[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: PNG plots skipped (pip install matplotlib)")
        return []
    names = []
    for term, (label, unit) in TERMS.items():
        points = [(r["measured"], r["predicted"]) for r in rows if r["term"] == term]
        if not points:
            continue
        fig, ax = plt.subplots(figsize=(4.2, 4.2), dpi=100)
        xs, ys = zip(*points)
        ax.scatter(xs, ys, s=14)
        low, high = min(min(xs), min(ys)), max(max(xs), max(ys))
        ax.plot([low, high], [low, high], linewidth=0.8, color="gray")
        ax.set_xlabel(f"measured ({unit})")
        ax.set_ylabel(f"predicted ({unit})")
        ax.set_title(label)
        fig.tight_layout()
        name = f"{term}.png"
        fig.savefig(out / name, metadata={"Software": None})
        plt.close(fig)
        names.append(name)
    return names


def published_comparison(rows: list[dict[str, Any]]) -> list[str]:
    subset = [r for r in rows if r["version"] == "0.19" and r["gpu"] == "H100"]
    lines = [
        "| term | statistic | published planner | vramplan | records |",
        "|---|---|---|---|---|",
    ]
    for term, (statistic, theirs) in PUBLISHED.items():
        pcts = [r["pct_error"] for r in subset if r["term"] == term and r["pct_error"] is not None]
        if not pcts:
            continue
        ours = (
            statistics.mean(abs(p) for p in pcts) if "abs" in statistic else statistics.mean(pcts)
        )
        lines.append(
            f"| {TERMS[term][0]} | {statistic} | {theirs:+.2f}% | {ours:+.2f}% | {len(pcts)} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", default=str(ROOT.parent / "shared" / "measured" / "dev.jsonl"))
    parser.add_argument("--out", default=str(ROOT / "docs" / "validation"))
    args = parser.parse_args()
    records = validate.read_records(args.records)
    replays = [validate.replay_record(r) for r in records]
    rows = rows_of(records, replays)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    with (out / "records.csv").open("w", newline="", encoding="utf-8") as handle:
        fields = [
            "id",
            "family",
            "gpu",
            "version",
            "parallelism",
            "term",
            "predicted",
            "measured",
            "abs_error",
            "pct_error",
        ]
        writer = csv.DictWriter(handle, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        for row in sorted(rows, key=lambda r: (r["id"], r["term"])):
            writer.writerow(
                {k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in row.items()}
            )

    expressed = [r for r in replays if r.predicted is not None]
    with_outcome = [r for r in expressed if r.measured.get("outcome")]
    agree = [r for r in with_outcome if r.predicted["outcome"] == r.measured["outcome"]]
    plots = write_plots(rows, out)
    header = "| term | group | n | median abs error | max abs error | median % | max % |"
    rule = "|---|---|---|---|---|---|---|"
    lines = [
        "# Accuracy on measured vLLM startups",
        "",
        (
            f"Generated by `python3 benchmarks/validate.py` from `{Path(args.records).name}`. "
            "Errors are predicted minus measured; GiB = 2^30 bytes."
        ),
        "",
        f"- Coverage: {len(expressed)} of {len(replays)} records expressed.",
        f"- Outcome agreement: {len(agree)} of {len(with_outcome)}.",
        "",
        "## Per term",
        "",
        header,
        rule,
        *summary_table(rows, None),
        "",
        "## Against the published planner (vLLM 0.19 on H100)",
        "",
        *published_comparison(rows),
        "",
    ]
    for key, title in (
        ("family", "model family"),
        ("gpu", "GPU"),
        ("version", "vLLM version"),
        ("parallelism", "parallelism"),
    ):
        lines += [f"## By {title}", "", header, rule, *summary_table(rows, key), ""]
    lines += ["## Outcome mismatches", ""]
    lines += [
        f"- {r.id}: predicted `{r.predicted['outcome']}`, measured `{r.measured['outcome']}`"
        for r in with_outcome
        if r.predicted["outcome"] != r.measured["outcome"]
    ] or ["- none"]
    lines += ["", "## Records not expressed", ""]
    lines += [f"- {r.id}: {r.unsupported}" for r in replays if r.unsupported] or ["- none"]
    if plots:
        lines += ["", "## Predicted vs measured", ""]
        lines += [f"![{TERMS[Path(p).stem][0]}]({p})" for p in plots]
    (out / "report.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {out / 'report.md'}, {out / 'records.csv'} and {len(plots)} plots")


if __name__ == "__main__":
    main()
