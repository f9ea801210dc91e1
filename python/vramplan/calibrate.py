"""Calibrate an engine version's fitted constants from a user's own vLLM startup logs.

The fit runs in the C++ core (`_core.calibrate`, bounded least squares with Eigen, the design
matrix taken from the planner's own terms); this module turns logs and records into launches
through the same mapping `vramplan validate` replays them with, and carries the result as a
`Profile`: the fitted engine row, what it was fitted on, and its YAML file.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _core, _io, api, engines, validate
from ._resources import model_specs_dir
from ._units import GIB

_MAX_PROFILE_BYTES = 1 << 20  # a profile is a few KiB of YAML (a priors file too)


def priors_file() -> Path:
    """The packaged priors: model_specs/calibration_priors.yaml."""
    return model_specs_dir() / "calibration_priors.yaml"


def read_priors(path: str | Path, engine_version: str) -> list[dict[str, Any]]:
    """The priors a priors YAML gives at `engine_version`: [{name, value, sigma, source}]."""
    path = Path(path)
    text = _io.read_text(path, what="priors", max_bytes=_MAX_PROFILE_BYTES)
    return list(_core.parse_calibration_priors(text, str(path), engine_version))


# Raised when the launches cannot identify a constant; a vramplan.Error (ValueError).
CalibrationError = _core.CalibrationError

# Measured record fields (GiB, or tokens) -> the core's measured keys (bytes, or tokens).
_MEASURED = (
    ("activation_peak_gib", "activation_peak_bytes"),
    ("non_torch_gib", "non_torch_bytes"),
    ("cudagraph_gib", "cudagraph_bytes"),
    ("kv_cache_gib", "kv_cache_bytes"),
    ("startup_free_gib", "startup_free_bytes"),
    ("cudagraph_estimate_gib", "cudagraph_estimate_bytes"),
)


@dataclass
class Profile:
    """A calibrated engine row: pass it as `profile=` to `vramplan.plan` / `breakdown`."""

    engine_profile: _core.EngineProfile
    engine_version: str
    gpu: str
    fitted_on: list[str]
    yaml_text: str
    # From a fresh fit (empty after `load`): each constant before/after with its standard
    # error and status, and each measured figure's prediction before/after per launch.
    constants: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    condition_number: float | None = None

    @classmethod
    def load(cls, path: str | Path) -> Profile:
        """Read a profile YAML written by `save` (or by hand: `engine_version` + `overrides`)."""
        path = Path(path)
        text = _io.read_text(path, what="profile", max_bytes=_MAX_PROFILE_BYTES)
        loaded = _core.parse_calibration_profile(text, str(path))
        return cls(
            engine_profile=loaded["profile"],
            engine_version=loaded["engine_version"],
            gpu=loaded["gpu"],
            fitted_on=list(loaded["fitted_on"]),
            yaml_text=text,
        )

    def save(self, path: str | Path) -> None:
        _io.write_text_atomic(path, self.yaml_text, what="profile")

    def format_report(self) -> str:
        """Constants before and after, then every measured figure's error before and after."""
        lines = [
            (
                f"calibrated vLLM {self.engine_version} on {self.gpu} from "
                f"{len(self.fitted_on)} launches: {', '.join(self.fitted_on)}"
            ),
        ]
        if self.condition_number is not None:
            lines.append(
                f"condition number of the fitted design matrix: {self.condition_number:.3g}"
            )
        lines += ["", f"{'constant':<38}{'before':>14}{'after':>14}{'+-':>11}  status"]
        for c in self.constants:
            # Byte constants read in MiB; the others in their own unit.
            scale, unit = (float(1 << 20), " MiB") if c["unit"] == "bytes" else (1.0, "")
            se = f"{c['standard_error'] / scale:.3g}" if c["fitted"] else ""
            before = f"{c['before'] / scale:.6g}{unit}"
            after = f"{c['after'] / scale:.6g}{unit}"
            lines.append(f"{c['name']:<38}{before:>14}{after:>14}{se:>11}  {c['status']}")
        width = max([8, *(len(e["id"]) + 2 for e in self.errors)])
        lines += [
            "",
            (
                f"{'launch':<{width}}{'term':<20}{'measured':>11}{'before':>11}{'after':>11}"
                f"{'err before':>12}{'err after':>11}"
            ),
        ]
        for e in self.errors:
            tokens = e["term"] == "kv_tokens"
            fmt = "{:>11,.0f}" if tokens else "{:>11.3f}"
            efmt = "{:>+12,.0f}" if tokens else "{:>+12.3f}"
            tag = " (held out)" if e["held_out"] else ""
            lines.append(
                f"{e['id']:<{width}}{e['term']:<20}"
                + fmt.format(e["measured"])
                + fmt.format(e["before"])
                + fmt.format(e["after"])
                + efmt.format(e["before"] - e["measured"])
                + efmt.format(e["after"] - e["measured"])[1:]
                + tag
            )
        return "\n".join(lines)


SGLANG_REFUSAL = engines.SGLANG_CALIBRATE_REFUSAL
# Figures only SGLang's startup prints (parse_log("sglang", ...)): a log with any is SGLang's.
_SGLANG_ONLY_FIGURES = ("max_total_num_tokens", "load_begin_avail_gib", "k_size_gib", "model_path")


def _refuse_sglang_log(path: Path) -> None:
    figures = _core.parse_log("sglang", path)
    if any(figures.get(key) is not None for key in _SGLANG_ONLY_FIGURES):
        msg = f"{path}: an SGLang startup log: {SGLANG_REFUSAL}"
        raise _core.ConfigError(msg)


def _records_from_logs(
    paths: Iterable[str | Path], model: str | None, gpu: str | None
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    out = []
    for item in paths:
        path = Path(item)
        figures = _core.parse_log("vllm", path)  # streamed and bounded by the C++ reader
        if figures.get("vllm_version") is None:
            _refuse_sglang_log(path)  # never read an SGLang log as a vLLM one
        record = validate.record_from_log(figures, log_id=path.name, model=model, gpu=gpu)
        out.append((record, figures))
    return out


def _sample(record: dict[str, Any], figures: dict[str, Any]) -> tuple[dict[str, Any], str, str]:
    """The core's sample for one record: its compiled launch and measured figures; with the
    engine version and GPU label it needs."""
    rid = str(record.get("id"))
    try:
        spec = validate.record_model(str(record.get("model") or ""))
        gpu, gpu_note = validate._gpu(record)
        knobs = validate._knobs(record, spec)
    except validate.Unsupported as why:
        msg = f"{rid}: cannot replay this launch (give --model): {why}"
        raise _core.ConfigError(msg) from why
    if gpu_note:  # a GPU name several memory sizes share: which one the sample assumes
        warnings.warn(f"{rid}: {gpu_note}", UserWarning, stacklevel=3)
    tp = int(knobs.get("tensor_parallel_size", 1))
    pp = int(knobs.get("pipeline_parallel_size", 1))
    dp = int(knobs.get("data_parallel_size", 1))
    build = knobs.pop("profile", None)  # a pre-release build's row (validate.build_profile)
    launch = _core.Launch(
        spec, gpu, api._resolve_draft(knobs), num_gpus=tp * pp * dp, profile=build
    )
    measured: dict[str, Any] = {}
    for term, key in _MEASURED:
        value = figures.get(term, validate.record_number(record, term))
        if value is not None:
            measured[key] = round(float(value) * GIB)
    kv_tokens = validate.record_number(record, "kv_tokens")
    if kv_tokens is not None:
        measured["kv_tokens"] = int(kv_tokens)
    gpu_label = (
        gpu.id if gpu.id != "unnamed" else f"unnamed ({gpu.total_memory_bytes / GIB:.2f} GiB)"
    )
    sample = {"id": rid, "launch": launch, "measured": measured}
    if build is not None:  # evaluated with the build's row, sharing the fitted constants
        sample["own_row"] = True
    return sample, knobs["engine_version"], gpu_label


def _one(values: dict[str, list[str]], what: str) -> str:
    if len(values) != 1:
        listed = "; ".join(f"{v} ({', '.join(ids)})" for v, ids in sorted(values.items()))
        msg = f"calibrate one {what} at a time: the launches mix {listed}"
        raise _core.ConfigError(msg)
    return next(iter(values))


def calibrate(
    *logs: str | Path,
    records: str | Path | Sequence[dict[str, Any]] | None = None,
    ids: Sequence[str] | None = None,
    model: str | None = None,
    gpu: str | None = None,
    terms: Sequence[str] | None = None,
    held_out: Sequence[str | Path] = (),
    profile: Profile | None = None,
    engine: str = "vllm",
    priors: str | Path | None = None,
) -> Profile:
    """Fit the engine row's constants (CUDA context, non-torch memory, activation and sampler
    coefficients, CUDA-graph pool) to startup logs or measured records of one GPU and one vLLM
    version.

    `logs`: vLLM startup log files; `model` / `gpu` name what a log cannot (a local model path,
    the GPU's name). `records`: a JSONL file (shared/measured format) or a list of records, of
    which `ids` picks some and `model` / `gpu` select the ones of that model / GPU. `terms`:
    groups (context, non_torch, activation, cudagraph) or constant names to fit; by default
    every constant the launches identify. `held_out`: log paths or record ids predicted before
    and after but not fitted on. `profile`: start from this profile instead of the engines.yaml
    row. `priors`: a priors YAML (the packaged one is priors_file(): device measurements and
    vLLM's code, no record): each constant starts at its prior and moves only as far as the
    launches demand (a maximum a posteriori fit; one launch is then enough). Raises
    vramplan.CalibrationError (a vramplan.Error) naming the constants the launches cannot
    identify. engine="sglang" (or an SGLang log) is refused with the reason
    (SGLANG_REFUSAL).
    """
    # Calibration fits engines.yaml rows: an engine without them is refused with its reason.
    refusal = engines.get(engine).calibrate_refusal
    if refusal is not None:
        calibrated = (n for n in engines.names() if engines.get(n).calibrate_refusal is None)
        raise api.config_error("engine", engine, ", ".join(calibrated), refusal)
    pairs: list[tuple[dict[str, Any], dict[str, Any]]] = []
    held: set[str] = set()
    if logs:
        pairs += _records_from_logs(logs, model, gpu)
    held_logs = [h for h in held_out if Path(h).is_file()]
    if held_logs:
        extra = _records_from_logs(held_logs, model, gpu)
        pairs += extra
        held |= {r["id"] for r, _ in extra}
    held |= {str(h) for h in held_out if not Path(h).is_file()}
    if records is not None:
        rows = validate.read_records(records) if isinstance(records, (str, Path)) else records
        for number, record in enumerate(rows):
            if not isinstance(record, dict):
                msg = f"records[{number}]: expected a record (a dict), got {type(record).__name__}"
                raise _core.ConfigError(msg)
            rid = str(record.get("id"))
            if ids is not None and rid not in ids and rid not in held:
                continue
            if model and record.get("model") != model:
                continue
            if gpu and validate._gpu(record)[0].id != api.load_gpu(gpu).id:
                continue
            pairs.append((record, {}))
    if not pairs:
        msg = "give vLLM startup logs or --records FILE.jsonl (none selected)"
        raise _core.ConfigError(msg)
    samples = []
    versions: dict[str, list[str]] = {}
    gpus: dict[str, list[str]] = {}
    for record, figures in pairs:
        sample, version, gpu_label = _sample(record, figures)
        sample["held_out"] = sample["id"] in held
        samples.append(sample)
        versions.setdefault(version, []).append(sample["id"])  # "M.m.p", as replays name it
        gpus.setdefault(gpu_label, []).append(sample["id"])
    version = _one(versions, "vLLM version")
    gpu_label = _one(gpus, "GPU")
    base = _core.engine_profile(version)
    if profile is not None:
        started, ran = (_core.Version.parse(v) for v in (profile.engine_version, version))
        if (started.major, started.minor) != (ran.major, ran.minor):
            msg = (
                f"the starting profile is for vLLM {profile.engine_version}, "
                f"the launches ran {version}"
            )
            raise _core.ConfigError(msg)
        base = profile.engine_profile
    fitted, report, yaml_text = _core.calibrate(
        base,
        samples,
        engine_version=version,
        gpu=gpu_label,
        terms=list(terms or []),
        priors=read_priors(priors, version) if priors is not None else [],
    )
    return Profile(
        engine_profile=fitted,
        engine_version=version,
        gpu=gpu_label,
        fitted_on=list(report["fitted_on"]),
        yaml_text=yaml_text,
        constants=report["constants"],
        errors=report["errors"],
        condition_number=report["condition_number"],
    )
