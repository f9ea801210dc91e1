"""Accuracy report: replay measured vLLM startups through the planner and write Markdown, CSV
and PNG scatter plots (predicted vs measured, one per term).

Run: python3 benchmarks/validate.py [--records FILE.jsonl ...] [--out DIR] [--loso]
(default ../shared/measured/dev.jsonl beside the repository when present, else its copy
tests/data/measured/dev.jsonl, plus the public records tests/data/public_records.jsonl;
docs/validation/). `--loso` writes only docs/validation/loso.md: leave-one-source-out
validation, each source predicted by the engine row calibrated on every other source. The report splits accuracy by GPU
family and vLLM era, with coverage (records, records expressed, figures measured) per group.
Deterministic: the same records give byte-identical report.md and records.csv. The PNGs need
matplotlib and are skipped, with a note, without it.
"""

from __future__ import annotations

import argparse
import csv
import importlib
import json
import math
import re
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import vramplan
from vramplan import _core, validate
from vramplan._units import GIB, MIB

# `vramplan.calibrate` is the function; the module holds the record -> sample mapping.
_calibration = importlib.import_module("vramplan.calibrate")

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
        (r"nemotron", "Nemotron"),
        (r"^yi-", "Yi"),
    ):
        if re.search(pattern, name):
            return label
    return "other"


def version_group(record: dict[str, Any]) -> str:
    version = _core.Version.find(str(record.get("vllm_version") or ""))
    return f"{version.major}.{version.minor}" if version else "V0 (unstated)"


def gpu_group(record: dict[str, Any]) -> str:
    name = str(record.get("gpu") or "")
    for pattern, label in (
        (r"h200", "H200"),
        (r"h100", "H100"),
        (r"a100", "A100"),
        (r"3090", "RTX 3090"),
        (r"4090", "RTX 4090"),
        (r"5090", "RTX 5090"),
        (r"l40", "L40S"),
        (r"\bl4\b", "L4"),
        (r"mi300", "MI300X"),
        (r"\bt4\b", "T4"),
    ):
        if re.search(pattern, name, re.IGNORECASE):
            return label
    return "other"


# A record's GPU family is its GPU's gpus.yaml `family`, found by the core's GPU lookup as the
# replay finds the GPU: the planner groups a launch's error band by the same field.
# A prediction this far (percent of the measurement) from a term is listed on its own line.
LARGE_ERROR_PCT = 10.0
ERAS = ("pre-0.5", "V0", "v1-early", "v1", "v1-latest", "unknown")


def family_of(text: str) -> str:
    """The gpus.yaml family of the GPU a free-text `gpu` field names; unknown where the
    database lacks the GPU or gives it no family."""
    name = validate._gpu_name(text)
    return (vramplan.spec_database().gpu(name).family or "unknown") if name else "unknown"


def gpu_family(record: dict[str, Any]) -> str:
    return family_of(str(record.get("gpu") or ""))


def era_of(major: int, minor: int) -> str:
    """The era of vLLM major.minor as the error bands name it, read from its engines.yaml row
    (the planner takes a launch's era from its row); pre-0.5 below the oldest row."""
    try:
        return _core.error_band_era(f"{major}.{minor}.0")
    except _core.ConfigError:
        return "pre-0.5"


def era(record: dict[str, Any]) -> str:
    """The engines.yaml era of the record's vLLM version: V0 (<= 0.7, or a build the record
    says ran V0), v1-early (0.8-0.10), v1 (0.11-0.20), v1-latest (>= 0.21)."""
    text = str(record.get("vllm_version") or "")
    if re.search(r"\bV0\b", text):
        return "V0"
    version = _core.Version.find(text)
    if version is None:
        return "V0" if re.search(r"\bV0\b", str(record.get("notes") or "")) else "unknown"
    return era_of(version.major, version.minor)


def record_reason(record: dict[str, Any]) -> str | None:
    """The record's own 'Not expressible: ...' sentence from its notes, where it has one (what
    the source lacks or the planner does not model, beyond the replay's first reason)."""
    match = re.search(r"Not expressible(?: yet)?: (.*?\.)(?=\s|$)", str(record.get("notes") or ""))
    return match.group(1) if match else None


# config.json copies (with their sources in SOURCES.md) a record may name for a model the
# database lacks.
CONFIG_DIR = ROOT / "tests" / "data" / "configs"


def replay_form(record: dict[str, Any]) -> dict[str, Any]:
    """The record as the planner replays it: where it names a config.json copy in
    tests/data/configs (`model_config`, a bare file name) for a model the database lacks, the
    model is read from that file; the record's own `model` id stays for its groups and reports.
    Raises vramplan.Error naming the record, the field and the value when the file is not
    there."""
    name = record.get("model_config")
    if name is None:
        return record
    path = CONFIG_DIR / str(name)
    if not isinstance(name, str) or Path(name).name != name or not path.is_file():
        msg = (
            f"record {record.get('id')!s:.200}: model_config: {name!r:.200} is not a file "
            f"name in {CONFIG_DIR}"
        )
        raise _core.ConfigError(msg)
    return {**record, "model": str(path)}


def usable(term: str, measured: float | None) -> bool:
    """A measured figure that can be compared: present, and for CUDA graphs positive (a log's
    'Graph capturing finished ..., took -0.41 GiB' is a free-memory difference that went the
    other way during capture, not a pool size)."""
    return measured is not None and not (term == "cudagraph_gib" and measured <= 0)


def rows_of(records: list[dict[str, Any]], replays: list[validate.Replay]) -> list[dict[str, Any]]:
    rows = []
    for record, replay in zip(records, replays):
        if replay.predicted is None:
            continue
        for term in TERMS:
            measured = replay.measured.get(term) if term in replay.measured else record.get(term)
            if not usable(term, measured):
                continue
            predicted = replay.predicted[term]
            error = predicted - measured
            rows.append(
                {
                    "id": replay.id,
                    "family": family(str(record.get("model"))),
                    "gpu": gpu_group(record),
                    "gpu_family": gpu_family(record),
                    "era": era(record),
                    "source": record["_source"],
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


def coverage_table(
    records: list[dict[str, Any]], replays: list[validate.Replay], key: Any
) -> list[str]:
    """Per group: records, records the planner expresses, and per term how many of those
    measured it."""
    lines = [
        "| group | records | expressed | " + " | ".join(TERMS[t][0] for t in TERMS) + " |",
        "|---|---|---|" + "---|" * len(TERMS),
    ]
    groups: dict[str, list[tuple[dict[str, Any], validate.Replay]]] = defaultdict(list)
    for record, replay in zip(records, replays):
        groups[key(record)].append((record, replay))
    for group in sorted(groups):
        members = groups[group]
        expressed = [(r, p) for r, p in members if p.predicted is not None]
        counts = [
            sum(1 for r, p in expressed if p.measured.get(t, r.get(t)) is not None) for t in TERMS
        ]
        lines.append(
            f"| {group} | {len(members)} | {len(expressed)} | "
            + " | ".join(str(c) for c in counts)
            + " |"
        )
    return lines


def per_source_coverage(records: list[dict[str, Any]], replays: list[validate.Replay]) -> list[str]:
    lines = []
    for source in dict.fromkeys(r["_source"] for r in records):
        mine = [x for r, x in zip(records, replays) if r["_source"] == source]
        expressed = sum(1 for x in mine if x.predicted is not None)
        lines.append(f"  - `{source}`: {expressed} of {len(mine)}")
    return lines


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


def source_key(record: dict[str, Any]) -> str:
    """The repository and thread a record came from: 'owner/repo' (a commit pinned with '@' is
    dropped), plus the issue or pull request ('#N', 'PR#N') where the source names one; a web
    page's address as written."""
    first, _, rest = str(record.get("source") or "unknown").partition(" ")
    thread = re.match(r"(PR#\d+|#\d+)\b", rest)
    return first.split("@")[0] + (f" {thread.group(1)}" if thread else "")


# Leave-one-source-out: the terms the calibration predicts (weights come from the model spec
# and the checkpoint format; no fitted constant touches them, so they are the plain replay).
LOSO_TERMS = tuple(term for term in validate.TERMS if term != "max_concurrency")
FEW_RECORDS = 3  # a (GPU family x era) group with fewer held-out KV figures is called too few


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile (no interpolation: with 5 values p90 is the largest)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def cited_record_ids(text: str) -> set[str]:
    """The record ids a text cites, with engines.yaml's shorthands expanded ("dev-049/050",
    "dev-049..051", "dev-025/026/031"): the records its fitted or checked constants came from."""
    ids: set[str] = set()
    for match in re.finditer(r"\b(dev|pub)-(\d{3})((?:(?:/|\.\.)\d{3}(?!\d))*)(?!\d)", text):
        prefix, previous = match.group(1), int(match.group(2))
        ids.add(f"{prefix}-{previous:03d}")
        for separator, digits in re.findall(r"(/|\.\.)(\d{3})", match.group(3)):
            number = int(digits)
            span = range(previous, number + 1) if separator == ".." else [number]
            ids.update(f"{prefix}-{i:03d}" for i in span)
            previous = number
    return ids


def nvlink_tensor_parallel_charge_bytes(records: list[dict[str, Any]]) -> int | None:
    """The TP > 1 non-torch charge over NVLink by engines.yaml's rule, not a fit: the largest
    non-torch figure a record logs at TP > 1 on a named GPU that is not pcie_only, from vLLM
    0.7 on (0.6.5's non-torch also counted the profile's cached activations, and so did the
    PR #10511 dev build of dev-003/004), rounded up to the MiB. NCCL's buffers depend on the
    machine (channels per peer, NVLS on NVSwitch), so the planner charges the most any machine
    was seen to hold. None without such a record."""
    db = vramplan.spec_database()
    largest = None
    for record in records:
        logged = record.get("non_torch_gib")
        if logged is None or int(record.get("tensor_parallel_size") or 1) < 2:
            continue
        try:
            version = _core.Version.parse(validate._version(record))
        except validate.Unsupported:
            continue
        name = validate._gpu_name(str(record.get("gpu") or ""))
        if version < _core.Version(0, 7) or name is None or db.gpu(name).pcie_only:
            continue
        largest = logged if largest is None else max(largest, logged)
    return None if largest is None else math.ceil(largest * GIB / MIB) * MIB


def discrepancy_sigma_gib(
    unseen: list[tuple[dict[str, Any], validate.Replay]], term: str = "kv_cache_gib"
) -> float:
    """How far the shipped row misses a machine it never saw, as a standard deviation: the
    normal-consistent median absolute deviation (1.4826 x the median) of its error in `term`
    on the records of sources engines.yaml cites none of. The leave-one-source-out fit weighs
    each figure by it, not by the log's 0.005 GiB rounding: between machines a term is off by
    far more than its printed digits. The available KV cache's weighs every figure but the
    CUDA graphs', which weigh by their own (a pool varies between machines of one GPU type)."""
    errors = [
        abs(replay.predicted[term] - record[term])
        for record, replay in unseen
        if replay.predicted is not None and usable(term, record.get(term))
    ]
    return 1.4826 * statistics.median(errors) if errors else 0.005  # else the log's rounding


TP_CHARGE = "non_torch_tensor_parallel_bytes"


def pinned(constants: list[dict[str, Any]], charge_bytes: int) -> list[dict[str, Any]]:
    """Priors no figure can move (a sigma of a millionth of the value): every fitted constant
    at its fitted value, and the NVLink TP > 1 charge at the rule's."""
    out = []
    for c in constants:
        value = float(charge_bytes) if c["name"] == TP_CHARGE else float(c["after"])
        out.append(
            {
                "name": c["name"],
                "value": value,
                "sigma": max(abs(value) * 1e-6, 1e-12),
                "source": "leave-one-source-out: fitted, or the NVLink rule",
            }
        )
    return out


def held_out_fit(
    version: str,
    samples: list[dict[str, Any]],
    sigmas_gib: tuple[float, float],
    priors: list[dict[str, Any]],
) -> dict[str, Any]:
    """The calibration report of `version`'s engine row fitted on `samples` (the held-out ones
    predicted, not fitted) from `priors`, each figure weighed by `sigmas_gib` (every term's, the
    CUDA graphs')."""
    _, report, _ = _core.calibrate(
        _core.engine_profile(version),
        samples,
        engine_version=version,
        gpu="leave-one-source-out",
        terms=[],
        measurement_sigma_gib=sigmas_gib[0],
        cudagraph_sigma_gib=sigmas_gib[1],
        priors=priors,
        # The shipped row may be fitted on the held-out source: a constant the other sources
        # leave unexercised takes its prior, never that row's value.
        unexercised_take_prior=True,
    )
    return dict(report)


def loso_rows(records: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """Each expressed record predicted without any constant fitted on its own source. A source
    none of whose records engines.yaml cites is predicted by the shipped row (its constants came
    from other sources, or from vLLM's code and device measurements). A cited source is
    predicted by its engine row fitted (vramplan's calibration, the C++ bounded least squares) on
    the records of every other source, all GPUs and versions together (a record of another
    version informs only the constants its own row shares with this one), starting from
    model_specs/calibration_priors.yaml (device measurements and vLLM's code: no record) and
    weighing each figure by discrepancy_sigma_gib; where no other source has that version, or
    the fit fails, the shipped row predicts it and the prediction is not counted as held out.
    Returns the rows, and the figure weight ("sigma X GiB") followed by one line per (source,
    version)."""
    cited = cited_record_ids((ROOT / "model_specs" / "engines.yaml").read_text())
    fitted_sources = {source_key(r) for r in records if r.get("id") in cited}
    expressed = []
    for record in records:
        replayed = replay_form(record)  # a missing config copy is an error, not "not expressed"
        try:
            sample, version, _ = _calibration._sample(replayed, {})
        except vramplan.Error:
            continue  # not expressible: listed in report.md with its reason
        expressed.append((record, sample, version))
    replays = {r["id"]: validate.replay_record(replay_form(r)) for r, _, _ in expressed}
    unseen = [(r, replays[r["id"]]) for r, _, _ in expressed if source_key(r) not in fitted_sources]
    sigmas_gib = (discrepancy_sigma_gib(unseen), discrepancy_sigma_gib(unseen, "cudagraph_gib"))
    fits: list[str] = [f"sigma {sigmas_gib[0]:.3f} GiB, CUDA graphs {sigmas_gib[1]:.3f} GiB"]
    rows: list[dict[str, Any]] = []
    for source in dict.fromkeys(source_key(r) for r, _, _ in expressed):
        held = [(r, s, v) for r, s, v in expressed if source_key(r) == source]
        for version in dict.fromkeys(v for _, _, v in held):
            mine = [(r, s) for r, s, v in held if v == version]
            # Every other source's records, each evaluated with its own version's row: a
            # constant that row shares with this version's is fitted on it (vramplan's
            # calibration, `own_row`), the others keep its own values.
            train = [(r, s) for r, s, _ in expressed if source_key(r) != source]
            after: dict[tuple[str, str], float] = {}
            basis = "fitted on other sources"
            held_out = True
            if source not in fitted_sources:
                basis = "shipped row (engines.yaml cites no record of this source)"
            elif not train:
                basis = "shipped row (no other source)"
                held_out = False
            else:
                samples = [{**s, "held_out": False, "own_row": True} for _, s in train]
                samples += [{**s, "held_out": True} for _, s in mine]
                charge = nvlink_tensor_parallel_charge_bytes(
                    [r for r in records if source_key(r) != source]
                )
                try:
                    priors = _calibration.read_priors(_calibration.priors_file(), version)
                    report = held_out_fit(version, samples, sigmas_gib, priors)
                    if charge is not None:
                        # The TP > 1 charge by engines.yaml's rule over the other sources, the
                        # other constants pinned where the fit put them with the charge free
                        # (so that they do not absorb one machine's NCCL memory): the shipped
                        # row's construction. Refitted from the same base row, so that the
                        # other versions' rows share what they shared in the fit.
                        report = held_out_fit(
                            version, samples, sigmas_gib, pinned(report["constants"], charge)
                        )
                except vramplan.Error as why:
                    basis = f"shipped row (fit failed: {why})"
                    held_out = False
                else:
                    after = {(e["id"], e["term"]): e["after"] for e in report["errors"]}
            fits.append(
                f"| `{source}` | {version} | {len(mine)} | {len(train)} | "
                f"{len({source_key(r) for r, _ in train})} | {basis} |"
            )
            for record, _ in mine:
                replay = replays[record["id"]]
                assert replay.predicted is not None  # _sample succeeded, so the replay did
                for term in LOSO_TERMS:
                    measured = record.get(term)
                    if not usable(term, measured):
                        continue
                    shipped = replay.predicted[term]
                    predicted = after.get((record["id"], term), shipped)
                    error = predicted - measured
                    rows.append(
                        {
                            "id": record["id"],
                            "source": source,
                            "gpu_family": gpu_family(record),
                            "era": era(record),
                            "term": term,
                            "predicted": predicted,
                            "measured": measured,
                            "error": error,
                            # Of the magnitude: a failed launch's KV figure is negative.
                            "pct_error": 100.0 * error / abs(measured) if measured else None,
                            "held_out": held_out,
                            "shipped": shipped,
                            "tensor_parallel_size": int(record.get("tensor_parallel_size") or 1),
                        }
                    )
    return rows, fits


def loso_stats(members: list[dict[str, Any]], unit: str) -> str:
    errors = [abs(r["error"]) for r in members]
    pcts = [abs(r["pct_error"]) for r in members if r["pct_error"] is not None]
    over = [r for r in members if r["error"] > 0]
    worst = max(members, key=lambda r: r["error"])
    worst_text = (
        f"{fmt(worst['error'], unit)} ({worst['pct_error']:+.1f}%, {worst['id']})"
        if worst["error"] > 0 and worst["pct_error"] is not None
        else "none"
    )
    return (
        f"{len(members)} | {fmt(statistics.median(errors), unit)} | "
        f"{fmt(percentile(errors, 0.9), unit)} | {statistics.median(pcts):.2f} | "
        f"{percentile(pcts, 0.9):.2f} | {len(over)} | {worst_text}"
    )


def band_of(members: list[dict[str, Any]]) -> float | None:
    """A group's available-KV band in GiB: the p90 absolute held-out error; None with fewer
    than FEW_RECORDS held-out figures."""
    held = [r for r in members if r["held_out"]]
    if len(held) < FEW_RECORDS:
        return None
    return percentile([abs(r["error"]) for r in held], 0.9)


def over_of(members: list[dict[str, Any]]) -> float | None:
    """A group's largest held-out over-prediction in GiB (0 if none), the part of the band
    that can undo a "fits"; None with fewer than FEW_RECORDS held-out figures."""
    held = [r for r in members if r["held_out"]]
    if len(held) < FEW_RECORDS:
        return None
    return max(0.0, *(r["error"] for r in held))


def band_failures(kv_rows: list[dict[str, Any]]) -> tuple[list[str], list[str], int]:
    """Held-out records over-predicted by more than their group's band: with the band of the
    whole table, and with the band (and over-prediction margin, the larger) recomputed without
    the record's own source (cross-validated as well). Returns both lists and the records
    checked."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in kv_rows:
        groups[f"{row['gpu_family']} x {row['era']}"].append(row)
    beyond, beyond_nested, checked = [], [], 0
    for members in groups.values():
        band = band_of(members)
        if band is None:
            continue
        for row in members:
            if not row["held_out"]:
                continue
            checked += 1
            if row["error"] > band:
                beyond.append(row["id"])
            others = [r for r in members if r["source"] != row["source"]]
            nested = band_of(others)
            nested_over = over_of(others)
            if nested is not None and nested_over is not None:
                nested = max(nested, nested_over)
            if nested is not None and row["error"] > nested:
                beyond_nested.append(row["id"])
    return beyond, beyond_nested, checked


DEFAULT_MARGIN_GIB = _core.DEFAULT_SAFETY_MARGIN_BYTES / GIB  # the solver's default margin


def margin_failures(kv_rows: list[dict[str, Any]]) -> list[str]:
    """Held-out records whose over-prediction would undo a "fits" verdict: larger than the
    margin the solver would keep for them with the table recomputed without their own source
    (the default 0.5 GiB, or the group's largest over-prediction of launches of the same kind
    where larger: its TP = 1 launches' for a TP = 1 launch where 3 or more were held out)."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in kv_rows:
        groups[f"{row['gpu_family']} x {row['era']}"].append(row)
    failed = []
    for members in groups.values():
        for row in members:
            if not row["held_out"] or row["error"] <= DEFAULT_MARGIN_GIB:
                continue
            others = [r for r in members if r["source"] != row["source"]]
            over = over_of(others)
            if row["tensor_parallel_size"] == 1:
                single = over_of([r for r in others if r["tensor_parallel_size"] == 1])
                over = single if single is not None else over
            if row["error"] > max(DEFAULT_MARGIN_GIB, over or 0.0):
                failed.append(row["id"])
    return failed


def graph_band_of(members: list[dict[str, Any]]) -> float | None:
    """A group's CUDA-graph band as a fraction of the logged pool: the p90 absolute held-out
    relative error, rounded up to a whole percent; None with fewer than FEW_RECORDS."""
    held = [r for r in members if r["held_out"] and r["pct_error"] is not None]
    if len(held) < FEW_RECORDS:
        return None
    return math.ceil(percentile([abs(r["pct_error"]) for r in held], 0.9)) / 100.0


def write_bands(
    kv_rows: list[dict[str, Any]], graph_rows: list[dict[str, Any]], path: Path
) -> None:
    """model_specs/error_bands.json: the band per (GPU family x era), read by the planner."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    graphs: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in kv_rows:
        groups[f"{row['gpu_family']} x {row['era']}"].append(row)
    for row in graph_rows:
        graphs[f"{row['gpu_family']} x {row['era']}"].append(row)
    table = {}
    for group in sorted(set(groups) | set(graphs)):
        band = band_of(groups[group]) if groups[group] else None
        over = over_of(groups[group]) if groups[group] else None
        single = over_of([r for r in groups[group] if r["tensor_parallel_size"] == 1])
        table[group] = {
            "held_out": sum(1 for r in groups[group] if r["held_out"]),
            "band_bytes": None if band is None else math.ceil(band * GIB),
            "over_prediction_bytes": None if over is None else math.ceil(over * GIB),
            "over_prediction_single_gpu_bytes": (
                None if single is None else math.ceil(single * GIB)
            ),
            "cudagraph_held_out": sum(1 for r in graphs[group] if r["held_out"]),
            "cudagraph_band_fraction": graph_band_of(graphs[group]),
        }
    document = {
        "generated_by": "python3 benchmarks/validate.py --loso (do not edit)",
        "rule": (
            "band = p90 |held-out available-KV error|, over_prediction = the largest held-out "
            "over-prediction (the solver's margin where it exceeds the default), per GPU "
            "family x era; over_prediction_single_gpu = the same over the TP = 1 launches (the "
            "margin of a TP = 1 launch: TP > 1 adds the interconnect's NCCL buffers); null "
            f"below {FEW_RECORDS} held-out records; cudagraph_band_fraction = p90 |held-out "
            "CUDA-graph pool error| / logged pool, stated beside the KV band"
        ),
        "groups": table,
    }
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def write_loso(
    records: list[dict[str, Any]], sources: list[str], out: Path, bands: Path | None = None
) -> None:
    rows, (sigma_line, *fits) = loso_rows(records)
    kv_rows = [r for r in rows if r["term"] == "kv_cache_gib"]
    if bands is not None:
        write_bands(kv_rows, [r for r in rows if r["term"] == "cudagraph_gib"], bands)
    expressed_ids = {r["id"] for r in rows}
    held_ids = {r["id"] for r in rows if r["held_out"]}
    header = (
        "| term | predictions | median abs error | p90 abs error | median % | p90 % | "
        "over-predictions | largest over-prediction |"
    )
    rule = "|---|---|---|---|---|---|---|---|"
    lines = [
        "# Leave-one-source-out validation",
        "",
        (
            "Generated by `python3 benchmarks/validate.py --loso` from "
            + ", ".join(f"`{s}`" for s in sources)
            + ". A source is the repository and thread a record came from (`source_key`: "
            "'owner/repo', plus '#N' / 'PR#N' where the record names an issue or pull request). "
            "No prediction uses a constant fitted on its own source. A source none of whose "
            "records engines.yaml cites (its fitted and checked constants name their records) "
            "is predicted by the shipped engine row. For a cited source, the engine row of each "
            "vLLM version it ran is calibrated "
            "(`vramplan calibrate`'s fit: the C++ bounded least squares over the planner's own "
            "terms) on the records of every other source, all GPUs and versions together, "
            "and the source's records are predicted with it. A record of another version is "
            "evaluated with its own engine row and informs only the constants that row shares "
            "with the held-out version's (the CUDA-graph pool's and the TP > 1 non-torch "
            "constants are one value in every row; a release's non-torch or sampler figure is "
            "not). The fit starts from the priors of "
            "`model_specs/calibration_priors.yaml` (device measurements and vLLM's code; no "
            "record), each constant moving from its prior only as far as the other sources' "
            "figures demand (maximum a posteriori), and weighs each figure by how far the "
            "shipped row misses machines it never saw: "
            + sigma_line.replace("sigma ", "")
            + " (1.4826 x the median absolute error of the shipped row on the sources "
            "engines.yaml cites none of: its available-KV error for every figure, its CUDA-graph "
            "error for the CUDA-graph figures, as a pool varies between machines of one GPU "
            "type), not by the log's 0.005 GiB rounding. "
            "The TP > 1 NVLink non-torch charge is not fitted in engines.yaml but set by a rule "
            "(the largest figure logged over NVLink from 0.7 on: NCCL's buffers depend on the "
            "machine), so the held-out prediction applies the same rule to the other sources' "
            "records, with the other constants as fitted with the charge free "
            "(`nvlink_tensor_parallel_charge_bytes`). A launch vLLM runs on its V0 fallback "
            "(compute capability below 8.0) is evaluated with the V0 row. "
            "Errors are predicted minus "
            "measured, per rank; GiB = 2^30 bytes; p90 is the nearest-rank 90th percentile. "
            "Weights are the plain replay (no fitted constant touches them). A CUDA-graph figure "
            "a log prints as zero or negative is left out (not a pool size)."
        ),
        "",
        (
            f"- Records: {len(records)}; expressed (a launch the planner replays): "
            f"{len(expressed_ids)}; sources: {len({source_key(r) for r in records})}."
        ),
        (
            f"- Held out properly (no constant fitted on their own source): {len(held_ids)} "
            f"records. The other {len(expressed_ids - held_ids)} belong to a source engines.yaml "
            "cites and are predicted by the shipped engine row, because there is no other "
            "source or the fit failed: those predictions are not independent of their records "
            "and are listed apart below."
        ),
        "",
        "## Per term, held-out predictions only",
        "",
        header,
        rule,
    ]

    def by_term(subset: list[dict[str, Any]]) -> list[str]:
        out = []
        for term in LOSO_TERMS:
            members = [r for r in subset if r["term"] == term]
            if members:
                out.append(f"| {TERMS[term][0]} | " + loso_stats(members, TERMS[term][1]) + " |")
        return out or ["| none | | | | | | | |"]

    held_rows = [r for r in rows if r["held_out"]]
    lines += by_term(held_rows)
    lines += ["", "## Against issue 25's targets (held-out predictions only)", ""]
    for term, statistic, fraction, limit in (
        ("kv_cache_gib", "median", 0.5, 2.0),
        ("kv_cache_gib", "p90", 0.9, 5.0),
        ("cudagraph_gib", "median", 0.5, 15.0),
    ):
        pcts = [abs(r["pct_error"]) for r in held_rows if r["term"] == term]
        if not pcts:
            lines.append(f"- {TERMS[term][0]} {statistic} <= {limit:g}%: no held-out figure")
            continue
        value = percentile(pcts, fraction)
        verdict = "met" if value <= limit else "not met"
        lines.append(
            f"- {TERMS[term][0]} {statistic} <= {limit:g}%: {value:.2f}% over {len(pcts)} "
            f"held-out figures, {verdict}"
        )
    lines += [
        "",
        "## Per term, the same held-out records predicted by the shipped row",
        "",
        "What the calibration on other sources changed: the engines.yaml row as shipped.",
        "",
        header,
        rule,
    ]
    shipped_rows = []
    for row in held_rows:
        error = row["shipped"] - row["measured"]
        pct = 100.0 * error / abs(row["measured"]) if row["measured"] else None
        shipped_rows.append({**row, "predicted": row["shipped"], "error": error, "pct_error": pct})
    lines += by_term(shipped_rows)
    lines += ["", "## Per term, every expressed record (held out or shipped row)", "", header]
    lines += [rule, *by_term(rows)]
    lines += [
        "",
        "## Available KV cache by GPU family x era",
        "",
        (
            f"Every expressed record with a measured available-KV figure. 'held out' counts the "
            f"predictions fitted on other sources only. A group with fewer than {FEW_RECORDS} "
            "held-out figures has too few records to state an error band."
        ),
        "",
        (
            "| GPU family x era | predictions | held out | median abs GiB | p90 abs GiB | "
            "median % | p90 % | over-predictions | largest over-prediction | band |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row["term"] == "kv_cache_gib":
            groups[f"{row['gpu_family']} x {row['era']}"].append(row)
    for group in sorted(groups):
        members = groups[group]
        held = sum(1 for r in members if r["held_out"])
        stats = loso_stats(members, "GiB").split(" | ", 1)
        band = band_of(members)
        band_text = f"± {band:.2f} GiB" if band is not None else f"none ({held} held out)"
        lines.append(f"| {group} | {stats[0]} | {held} | {stats[1]} | {band_text} |")
    beyond, beyond_nested, checked = band_failures(kv_rows)
    undone = margin_failures(kv_rows)
    lines += [
        "",
        (
            "Band: the p90 absolute held-out error (model_specs/error_bands.json, which plan and "
            "breakdown state); the solver keeps the group's largest held-out over-prediction "
            "free where it exceeds its default margin (for a TP = 1 launch, that of the group's "
            "TP = 1 launches where 3 or more were held out: TP > 1 adds the interconnect's NCCL "
            "buffers, which vary between machines). Held-out records in "
            f"a group with a band: {checked}. Over-predicted beyond the band: {len(beyond)}"
            f"{' (' + ', '.join(beyond) + ')' if beyond else ''}; beyond the band recomputed "
            f"without the record's own source: {len(beyond_nested)}"
            f"{' (' + ', '.join(beyond_nested) + ')' if beyond_nested else ''}. "
            '"Fits" verdicts a held-out over-prediction would undo (beyond the margin the solver '
            "would keep with the table recomputed without the record's own source, at least the "
            f"default {DEFAULT_MARGIN_GIB} GiB): {len(undone)}"
            f"{' (' + ', '.join(undone) + ')' if undone else ''}. The same "
            "statement gives the CUDA-graph pool's p90 absolute held-out error, relative to the "
            "logged pool, where a group has 3 or more held-out graph figures: the pool's "
            "per-layer piece depends on the machine's software stack "
            "(docs/validation/graph-and-non-torch.md), so it is said, not folded into the KV band."
        ),
    ]
    lines += [
        "",
        "## CUDA graphs by GPU family x era",
        "",
        "| GPU family x era | " + header.split("| ", 2)[2],
        rule,
    ]
    graph_groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row["term"] == "cudagraph_gib":
            graph_groups[f"{row['gpu_family']} x {row['era']}"].append(row)
    for group in sorted(graph_groups):
        lines.append(f"| {group} | " + loso_stats(graph_groups[group], "GiB") + " |")
    lines += [
        "",
        "## Fits",
        "",
        (
            "One line per held-out source and vLLM version: its expressed records, the records "
            "and sources the row was fitted on, and what predicted it."
        ),
        "",
        "| source | vLLM | records | fitted on | other sources | prediction |",
        "|---|---|---|---|---|---|",
        *fits,
        "",
        "## Per record (available KV cache)",
        "",
        (
            "| record | source | GPU family | era | predicted GiB | measured GiB | error % | "
            "held out | shipped row GiB |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in sorted(rows, key=lambda r: r["id"]):
        if row["term"] != "kv_cache_gib":
            continue
        pct = f"{row['pct_error']:+.1f}" if row["pct_error"] is not None else ""
        lines.append(
            f"| {row['id']} | `{row['source']}` | {row['gpu_family']} | {row['era']} | "
            f"{row['predicted']:.3f} | {row['measured']:.3f} | {pct} | "
            f"{'yes' if row['held_out'] else 'no'} | {row['shipped']:.3f} |"
        )
    (out / "loso.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {out / 'loso.md'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--records",
        action="append",
        help="records file (JSONL); repeatable (default: dev.jsonl if present + public records)",
    )
    parser.add_argument("--out", default=str(ROOT / "docs" / "validation"))
    parser.add_argument(
        "--loso", action="store_true", help="write only loso.md (leave-one-source-out)"
    )
    args = parser.parse_args()
    if not args.records:
        dev = ROOT.parent / "shared" / "measured" / "dev.jsonl"
        if not dev.exists():
            dev = ROOT / "tests" / "data" / "measured" / "dev.jsonl"
        args.records = [str(p) for p in (dev, ROOT / "tests" / "data" / "public_records.jsonl")]
        args.records = [p for p in args.records if Path(p).exists()]
    records = []
    for path in args.records:
        for record in validate.read_records(path):
            records.append({**record, "_source": Path(path).name})
    for record in records:
        try:
            replay_form(record)
        except vramplan.Error as why:
            parser.error(str(why))
    if args.loso:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        write_loso(
            records,
            [Path(p).name for p in args.records],
            out,
            bands=ROOT / "model_specs" / "error_bands.json",
        )
        return
    replays = [validate.replay_record(replay_form(r)) for r in records]
    rows = rows_of(records, replays)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    with (out / "records.csv").open("w", newline="", encoding="utf-8") as handle:
        fields = [
            "id",
            "family",
            "gpu",
            "gpu_family",
            "era",
            "source",
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
    # (replay, predicted outcome) of the expressed replays whose record states an outcome
    with_outcome = [
        (r, r.predicted["outcome"])
        for r in replays
        if r.predicted is not None and r.measured.get("outcome")
    ]
    agree = [r for r, predicted in with_outcome if predicted == r.measured["outcome"]]
    plots = write_plots(rows, out)
    header = "| term | group | n | median abs error | max abs error | median % | max % |"
    rule = "|---|---|---|---|---|---|---|"
    lines = [
        "# Accuracy on measured vLLM startups",
        "",
        (
            "Generated by `python3 benchmarks/validate.py` from "
            + ", ".join(f"`{Path(p).name}`" for p in args.records)
            + ". Errors are predicted minus measured; GiB = 2^30 bytes."
        ),
        "",
        f"- Coverage: {len(expressed)} of {len(replays)} records expressed.",
        *per_source_coverage(records, replays),
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
    for key, title, fn in (
        ("gpu_family", "GPU family", gpu_family),
        ("era", "vLLM era", era),
    ):
        lines += [
            f"## By {title}",
            "",
            (
                "Coverage: records, records the planner expresses, and how many of those "
                "measured each term."
            ),
            "",
            *coverage_table(records, replays, fn),
            "",
            header,
            rule,
            *summary_table(rows, key),
            "",
        ]
    lines += [
        "## Coverage by GPU family and era",
        "",
        *coverage_table(records, replays, lambda r: f"{gpu_family(r)}, {era(r)}"),
        "",
    ]
    for key, title in (
        ("family", "model family"),
        ("gpu", "GPU"),
        ("version", "vLLM version"),
        ("parallelism", "parallelism"),
    ):
        lines += [f"## By {title}", "", header, rule, *summary_table(rows, key), ""]
    lines += [
        f"## Terms off by more than {LARGE_ERROR_PCT:.0f}%",
        "",
        (
            "Each expressed record and term whose prediction misses the measurement by more "
            f"than {LARGE_ERROR_PCT:.0f}%; the likely mechanisms are discussed in docs/accuracy.md."
        ),
        "",
        "| record | GPU family | era | term | predicted | measured | error % |",
        "|---|---|---|---|---|---|---|",
    ]
    large = [
        r
        for r in sorted(rows, key=lambda r: (r["id"], r["term"]))
        if r["pct_error"] is not None and abs(r["pct_error"]) > LARGE_ERROR_PCT
    ]
    lines += [
        f"| {r['id']} | {r['gpu_family']} | {r['era']} | {TERMS[r['term']][0]} | "
        f"{fmt(r['predicted'], TERMS[r['term']][1])} | {fmt(r['measured'], TERMS[r['term']][1])} | "
        f"{r['pct_error']:+.1f} |"
        for r in large
    ] or ["| none | | | | | | |"]
    lines += ["", "## Outcome mismatches", ""]
    lines += [
        f"- {r.id}: predicted `{predicted}`, measured `{r.measured['outcome']}`"
        for r, predicted in with_outcome
        if predicted != r.measured["outcome"]
    ] or ["- none"]
    lines += ["", "## Records not expressed", ""]
    lines += [
        f"- {p.id}: {p.unsupported}" + (f" (record: {why})" if (why := record_reason(r)) else "")
        for r, p in zip(records, replays)
        if p.unsupported
    ] or ["- none"]
    if plots:
        lines += ["", "## Predicted vs measured", ""]
        lines += [f"![{TERMS[Path(p).stem][0]}]({p})" for p in plots]
    (out / "report.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {out / 'report.md'}, {out / 'records.csv'} and {len(plots)} plots")


if __name__ == "__main__":
    main()
