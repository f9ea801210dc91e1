"""Replay measured startups through the planner: vLLM's (shared/measured record format, or a
log) and SGLang's (a log).

Each record becomes a launch (model, GPU total, version, flags); the prediction of every term
is compared with what the log printed. A record the planner cannot express is reported with
its reason, never dropped or guessed.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _core, _io, api
from ._identity import path_identity
from ._units import GIB
from .resolve import resolve_model

if TYPE_CHECKING:
    from .calibrate import Profile

_MAX_RECORDS_BYTES = 256 << 20  # thousands of launches are a few MiB
_MAX_RECORD_BYTES = 1 << 20
_MAX_GPU_GIB = 1 << 20  # 1 PiB, as load_gpu allows in bytes
_MAX_RECORD_NUMBER = 2.0**53  # GiB and token counts; beyond it a double is not exact

TERMS = (
    "weights_gib",
    "activation_peak_gib",
    "non_torch_gib",
    "cudagraph_gib",
    "kv_cache_gib",
    "kv_tokens",
    "max_concurrency",
)

# Records name a CUDA OOM at the KV allocation and one just after it (graph capture, sampler
# warm-up) both oom_kv_alloc.
_RECORD_OUTCOMES = {"cudagraph_capture_oom": "oom_kv_alloc", "sampler_warmup_oom": "oom_kv_alloc"}


class Unsupported(Exception):
    """The record names something the planner cannot express; the message says what."""


@dataclass
class Replay:
    id: str
    predicted: dict[str, Any] | None
    measured: dict[str, Any]
    unsupported: str | None
    launch: dict[str, Any] = field(default_factory=dict)
    # What was assumed: a log holding several launches (the last one), the memory size a
    # shared GPU name stands for.
    note: str | None = None
    # The expected available-KV error of the launch's (GPU family x era), as `plan` states
    # it (Breakdown.error_band); None for a record the planner cannot express.
    error_band: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "predicted": self.predicted,
            "measured": self.measured,
            "unsupported": self.unsupported,
            "launch": self.launch,
            "note": self.note,
            "error_band": self.error_band,
        }


# Builds that are not releases, by the words of the record's vllm_version, and the engines.yaml
# fields in which they differ from the release they branch from: a record of such a build is
# replayed with its own rules, not the release's. PR #10511's pre-merge build (December 2024)
# measured non-torch memory against allocated bytes without emptying the cache after the
# profile run, so the profile's cached activations counted again (dev-003/004: 1.79 / 3.58 GiB
# non-torch beside a 1.26 GiB activation peak); the 0.6.5 release empties it first.
_DEV_BUILDS = (
    (re.compile(r"\bPR #10511 dev build\b"), "non_torch_counts_cached_activations: true"),
    # A main-branch build between 0.19 and 0.21 (pub-464): it already charges the graph
    # estimate before the KV cache ("CUDA graph memory profiling is enabled (default since
    # v0.21.0)"), so its KV is 0.51 GiB below pub-463's eager launch at the same settings.
    (re.compile(r"^0\.19\.2rc1\.dev100\+gf946659ff$"), "cudagraph_in_budget: true"),
)


def build_rules(record: dict[str, Any]) -> str | None:
    """The engines.yaml fields in which the pre-release build a record names differs from its
    release (_DEV_BUILDS), or None for a release."""
    text = str(record.get("vllm_version") or "")
    return next((rules for pattern, rules in _DEV_BUILDS if pattern.search(text)), None)


def build_profile(record: dict[str, Any]) -> _core.EngineProfile | None:
    """The engine row of the pre-release build a record names, or None for a release."""
    rules = build_rules(record)
    if rules is None:
        return None
    document = f'engine_version: "{_version(record)}"\noverrides:\n  {rules}\n'
    name = f"record {record.get('id')!s:.200}: vllm_version"
    return _core.parse_calibration_profile(document, name)["profile"]


def _version(record: dict[str, Any]) -> str:
    text = record.get("vllm_version")
    if text:
        # The patch release counts: engines.yaml has rows at 0.8.4, 0.8.5, 0.9.1, 0.10.2 and
        # 0.11.1 ("0.10.2" is not replayed with 0.10.0's rules).
        version = _core.Version.find(str(text))
        if version is not None:
            return str(version)
    notes = str(record.get("notes") or "")
    if re.search(r"\bV0\b", notes):
        return "0.6.4"  # a V0 log of late 2024
    msg = "vLLM version unknown (no version and no era stated in the record)"
    raise Unsupported(msg)


# Measured fields that may be negative: a failed launch logs negative available KV memory
# (shared/measured/README.md, kv_cache_gib), and the profile terms are differences of two
# readings.
_SIGNED_FIELDS = frozenset(
    {"kv_cache_gib", "activation_peak_gib", "non_torch_gib", "cudagraph_gib", "weights_gib"}
)


def record_number(record: dict[str, Any], key: str) -> float | None:
    """A numeric record field: None when absent, else a finite number (>= 0 unless the field is
    a measured difference that may be negative), or a ConfigError naming the record, the field
    and the value."""
    signed = key in _SIGNED_FIELDS
    value = record.get(key)
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < (-_MAX_RECORD_NUMBER if signed else 0)
        or value > _MAX_RECORD_NUMBER
    ):
        msg = f"record {record.get('id')!s:.200}: {key}: expected a finite number{'' if signed else ' >= 0'} (got {value!r:.200})"
        raise _core.ConfigError(msg)
    return value  # an int stays an int (token counts)


def _gpu_name(text: str) -> str | None:
    """The GPU a record's free-text `gpu` field names, by the core's one GPU lookup (database
    ids, aliases, nvidia-smi / rocm-smi / lspci names): records write the name first and then
    qualify it ("NVIDIA A100 80GB x2, one node (README ...)", "RTX 3090 class (...)"), so the
    longest leading run of words, before any parenthesis or comma, that the lookup knows."""
    words = re.split(r"[\s_-]+", re.split(r"[(,]", text, maxsplit=1)[0].strip())
    db = api.spec_database()
    for end in range(len(words), 0, -1):
        name = " ".join(words[:end])
        if name and db.has_gpu(name):
            return name
    return None


def _gpu(record: dict[str, Any]) -> tuple[_core.GpuSpec, str | None]:
    """The record's GPU and, for a name several memory sizes share with no total to choose
    by, a note saying which size was assumed."""
    text = str(record.get("gpu") or "")
    total_gib = record_number(record, "gpu_total_gib")
    if total_gib is not None and total_gib > _MAX_GPU_GIB:
        raise api.config_error(
            f"record {record.get('id')!s:.200}: gpu_total_gib",
            total_gib,
            f"a GPU's memory in GiB, at most {_MAX_GPU_GIB}",
            "out of range",
        )
    name = _gpu_name(text)
    db = api.spec_database()
    if name is not None:
        candidates = db.gpu_candidates(name)
        if total_gib:
            # The log's own total picks among the sizes a shared name covers, and is used.
            total = round(total_gib * GIB)
            nearest = min(candidates, key=lambda g: abs(int(g.total_memory_bytes) - total))
            return api.load_gpu(nearest.id, total_memory_bytes=total), None
        note = None
        if len(candidates) > 1:
            assumed = candidates[0]
            note = (
                f"GPU {text!r}: {name!r} names several memory sizes and the record has no "
                f"gpu_total_gib; assumed {assumed.id} ({assumed.total_memory_bytes} bytes), "
                f"not {', '.join(g.id for g in candidates[1:])}"
            )
        return db.gpu(name), note
    if total_gib:
        return _core.GpuSpec(text or "unnamed", round(total_gib * GIB)), None
    msg = f"GPU {text!r} not in the database and no gpu_total_gib"
    raise Unsupported(msg)


# Record fields that are engine knobs under the same name.
# Record fields that are numeric or boolean engine knobs under vLLM's own names: from the knob
# registry (the text knobs need translating and are read below).
_KNOB_KEYS = tuple(
    k["name"] for k in api.KNOBS if k["flag"] and k["type"] in ("int", "float", "bool")
)
_KNOB_BY_NAME = {k["name"]: k for k in api.KNOBS}


def _record_knob(record: dict[str, Any], key: str) -> Any:
    """A knob field of a record, of the knob's type and within its range (the registry's), or a
    ConfigError naming the record, the field and the value."""
    knob = _KNOB_BY_NAME[key]
    value = record[key]
    kind = knob["type"]
    if kind == "bool":
        ok = isinstance(value, bool)
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        ok = False
    elif kind == "int":
        ok = isinstance(value, int) and knob["minimum"] <= value <= knob["maximum"]
    else:
        ok = math.isfinite(value) and knob["minimum"] <= value <= knob["maximum"]
    if not ok:
        allowed = (
            "true or false"
            if kind == "bool"
            else (
                f"{'an integer' if kind == 'int' else 'a number'} in "
                f"[{knob['minimum']:g}, {knob['maximum']:g}]"
            )
        )
        raise api.config_error(
            f"record {record.get('id')!s:.200}: {key}", value, allowed, "wrong value"
        )
    return value


def _knobs(record: dict[str, Any], spec: _core.ModelSpec) -> dict[str, Any]:
    knobs: dict[str, Any] = {"engine_version": _version(record)}
    build = build_profile(record)
    if build is not None:
        knobs["profile"] = build  # a pre-release build's rules, not a vLLM knob
    for key in _KNOB_KEYS:
        if record.get(key) is not None:
            knobs[key] = _record_knob(record, key)
    dtype = str(record.get("dtype") or "auto").split()[0]
    knobs["dtype"] = dtype
    kv = record.get("kv_cache_dtype")
    if kv:
        knobs["kv_cache_dtype"] = str(kv).split()[0]
    quant = str(record.get("quantization") or "")
    stored = spec.to_dict()["quantization"]
    if quant.startswith("fp8") and stored == "none":
        knobs["quantization"] = "fp8"  # online --quantization fp8 of a 16-bit checkpoint
    elif quant and stored == "none":
        msg = f"record quantization {quant!r} but the database spec is unquantized"
        raise Unsupported(msg)
    flags = str(record.get("other_flags") or "")
    data_parallel = re.search(r"data_parallel_size\s*=\s*(\d+)", flags)
    if data_parallel:
        knobs["data_parallel_size"] = int(data_parallel.group(1))
    if re.search(r"enable_expert_parallel(?!\s*=\s*False)", flags):
        knobs["enable_expert_parallel"] = True
    # The flag as launched (--enable-chunked-prefill, enable_chunked_prefill=False) or the
    # engine banner's effective chunked_prefill_enabled=...: replayed as what ran.
    chunked = re.search(
        r"(?:enable[_-]chunked[_-]prefill|chunked_prefill_enabled)(?:\s*=\s*(True|False))?", flags
    )
    if chunked:
        knobs["enable_chunked_prefill"] = chunked.group(1) != "False"
    if record.get("speculative"):
        knobs.update(_speculative(str(record["speculative"])))
    # What the log says ran: "Using V2 Model Runner", "Using FlashInfer for top-p & top-k
    # sampling" (or the PyTorch-native fallback): replayed with it.
    from .launch import LOGGED_RUNTIME_KNOBS

    for logged, knob in LOGGED_RUNTIME_KNOBS.items():
        ran = record.get(logged)
        if ran is None:
            continue
        if not isinstance(ran, bool):
            raise api.config_error(
                f"record {record.get('id')!s:.200}: {logged}", ran, "true or false", "wrong value"
            )
        knobs[knob] = "1" if ran else "0"
    return knobs


def _speculative(text: str) -> dict[str, Any]:
    """A record's speculative field ("mtp, num_speculative_tokens=3", "method=eagle3,
    model=ORG/NAME, num_speculative_tokens=2") as the planner's knobs."""
    out: dict[str, Any] = {}
    for part in (p.strip() for p in text.split(",")):
        key, eq, value = (x.strip() for x in part.partition("="))
        if not eq and key:
            out["speculative_method"] = key
        elif key == "num_speculative_tokens" and value.isdigit():
            out["num_speculative_tokens"] = int(value)
        elif key == "method":
            out["speculative_method"] = value
        elif key == "model":
            out["speculative_model"] = value
    if "num_speculative_tokens" not in out:
        msg = f"speculative decoding without a token count ({text!r})"
        raise Unsupported(msg)
    return out


def _others_bytes(record: dict[str, Any], cuda_context_bytes: int) -> int:
    """GPU memory other processes held, from vLLM's startup line in the record's error text
    ("Free memory on device cuda:0 (54.34/79.18 GiB) on startup", or 0.10.2's form without the
    device, passed or failed; read by the C++ log parser): total - free, less this process's own
    CUDA context (which the free figure already excludes and the planner adds itself)."""
    figures = _core.parse_log("vllm", str(record.get("error_text") or ""))
    free, total = figures.get("free_at_startup_gib"), figures.get("gpu_total_gib")
    if free is None or total is None:
        return 0
    return max(0, round((total - free) * GIB) - cuda_context_bytes)


@functools.lru_cache(maxsize=256)
def _resolved(model: str, files: tuple[object, ...]) -> _core.ModelSpec:
    """A record's model, resolved as `plan` resolves it (database, path, Hugging Face cache,
    Hub; HF_HUB_OFFLINE honoured), once per model and state of its files (`files`, part of
    the key only)."""
    return resolve_model(model).spec


def record_model(model: str) -> _core.ModelSpec:
    """The spec of a record's model, or Unsupported naming why it cannot be resolved."""
    try:
        return _resolved(model, path_identity(model))
    except ValueError as err:
        msg = f"model {model!r}: {err}"
        raise Unsupported(msg) from None


def _measured(record: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for term in TERMS:
        concurrency = record.get(term) if term == "max_concurrency" else None
        if isinstance(concurrency, str):  # records write "58.11x @ 8,192 tokens"
            match = re.match(r"\s*([0-9]+(?:\.[0-9]+)?)\s*x", concurrency)
            out[term] = float(match.group(1)) if match else None
        else:
            out[term] = record_number(record, term)
    outcome = record.get("outcome")
    out["outcome"] = outcome if outcome is None else str(outcome)[:200]
    return out


_RELEASE = re.compile(r"\d+\.\d+(?:\.\d+)?")


def _given_release(engine_version: str | None) -> str | None:
    """The release a caller names for records that print none, checked: "0.21" or "0.21.0"."""
    if engine_version is None:
        return None
    if not isinstance(engine_version, str) or not _RELEASE.fullmatch(engine_version.strip()):
        raise api.config_error(
            "engine_version", engine_version, "a vLLM release such as 0.21.0", "wrong value"
        )
    return engine_version.strip()


def given_profile(profile: Profile | None) -> Profile | None:
    """A calibration profile as the replay takes it: a vramplan.Profile (Profile.load(PATH)),
    or a ConfigError naming the argument."""
    if profile is None:
        return None
    row = getattr(profile, "engine_profile", None)
    if not isinstance(row, _core.EngineProfile) or not isinstance(
        getattr(profile, "engine_version", None), str
    ):
        raise api.config_error(
            "profile", profile, "a vramplan.Profile (vramplan.Profile.load(PATH))", "wrong type"
        )
    return profile


def _apply_profile(knobs: dict[str, Any], profile: Profile) -> None:
    """Replays the record with the profile's engine row in place of its release's: refused
    (Unsupported) for a record of another release, whose rules the profile does not hold, and
    for a pre-release build, which replays with its own rules."""
    if "profile" in knobs:
        msg = "a pre-release build replays with its own rules, not a calibration profile"
        raise Unsupported(msg)
    ran = str(knobs["engine_version"])
    if ran.split(".")[:2] != profile.engine_version.split(".")[:2]:
        msg = f"the profile is for vLLM {profile.engine_version}, the record ran {ran}"
        raise Unsupported(msg)
    knobs["profile"] = profile


def replay_record(
    record: dict[str, Any],
    *,
    profile: Profile | None = None,
    engine_version: str | None = None,
) -> Replay:
    """Replays one measured record. `profile` (a vramplan.Profile) replaces
    the engine row of the record's release; `engine_version` is the release of a record that
    names none (a record that names its own keeps it)."""
    rid = str(record.get("id"))
    calibrated = given_profile(profile)
    release = _given_release(engine_version)
    if release is not None and not record.get("vllm_version"):
        record = {**record, "vllm_version": release}
    try:
        measured = _measured(record)
    except _core.ConfigError as why:
        return Replay(rid, None, {}, f"bad record: {why}")
    try:
        model = str(record.get("model") or "")
        spec = record_model(model)
        gpu, gpu_note = _gpu(record)
        knobs = _knobs(record, spec)
        if calibrated is not None:
            _apply_profile(knobs, calibrated)
        tp = int(knobs.get("tensor_parallel_size", 1))
        pp = int(knobs.get("pipeline_parallel_size", 1))
        dp = int(knobs.get("data_parallel_size", 1))
        result = api.breakdown(spec, gpu, num_gpus=tp * pp * dp, **knobs)
        others = _others_bytes(record, result.ranks[0].cuda_context_bytes)
        if others:
            result = api.breakdown(
                spec, gpu, num_gpus=tp * pp * dp, memory_used_by_others_bytes=others, **knobs
            )
    except Unsupported as why:
        return Replay(rid, None, measured, str(why))
    except ValueError as why:  # vramplan.Error: the launch itself is invalid for the planner
        return Replay(rid, None, measured, f"planner rejected the launch: {why}")
    first = result.ranks[0]
    predicted = {
        "weights_gib": first.weights_bytes / GIB,
        "activation_peak_gib": first.activation_peak_bytes / GIB,
        "non_torch_gib": first.non_torch_bytes / GIB,
        "cudagraph_gib": first.cudagraph_bytes / GIB,
        "kv_cache_gib": first.kv_cache_bytes / GIB,
        "kv_tokens": result.kv_tokens,
        "max_concurrency": result.max_concurrency,
        "outcome": _RECORD_OUTCOMES.get(result.outcome, result.outcome),
    }
    launch = {"model": spec.id, "gpu": gpu.id, **knobs}
    if calibrated is not None:  # the profile the user named, as its fit describes it
        launch["profile"] = (
            f"calibrated vLLM {calibrated.engine_version} on {calibrated.gpu} "
            f"from {len(calibrated.fitted_on)} launches"
        )
    elif "profile" in launch:  # a pre-release build: its rules, as text
        launch["profile"] = build_rules(record)
    if others:
        launch["memory_used_by_others_bytes"] = others
    # A release newer than the newest known is replayed with that release's rules: say so.
    notes = [note for note in (gpu_note, result.engine_version_warning) if note]
    return Replay(
        rid, predicted, measured, None, launch, "; ".join(notes) or None, result.error_band
    )


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """The records of a JSONL file, streamed: one JSON object a line."""
    records = []
    lines = _io.read_lines(
        path, what="records", max_bytes=_MAX_RECORDS_BYTES, max_line_bytes=_MAX_RECORD_BYTES
    )
    for number, line in lines:
        if not line.strip():
            continue
        record = _io.loads_json(line, f"{path}:{number}")
        if not isinstance(record, dict):
            msg = f"{path}:{number}: expected a JSON object, got {type(record).__name__}"
            raise _core.ParseError(msg)
        records.append(record)
    return records


def replay_file(
    path: str | Path,
    *,
    profile: Profile | None = None,
    engine_version: str | None = None,
) -> list[Replay]:
    """Replays every record of a JSONL file (`profile`, `engine_version`: as replay_record)."""
    calibrated = given_profile(profile)  # checked once, not once a record
    return [
        replay_record(r, profile=calibrated, engine_version=engine_version)
        for r in read_records(path)
    ]


# Launch fields of the C++ log parser that are record fields under the same name.
_LOG_LAUNCH_KEYS = (
    "model",
    "dtype",
    "quantization",
    "kv_cache_dtype",
    "gpu_total_gib",
    *_KNOB_KEYS,
)


def record_from_log(
    figures: dict[str, Any],
    *,
    log_id: str = "log",
    model: str | None = None,
    gpu: str | None = None,
) -> dict[str, Any]:
    """A measured record (shared/measured format) from vLLM log figures (`parse_log`).

    `model` / `gpu` override what the log names (logs often give a local path, and never the
    GPU's name, only its total memory).
    """
    record: dict[str, Any] = {key: figures.get(key) for key in _LOG_LAUNCH_KEYS}
    record["id"] = log_id
    record["vllm_version"] = figures.get("vllm_version")
    if figures.get("model_runner_v2"):
        record["model_runner_v2"] = True  # the log says so; its absence says nothing
    if figures.get("flashinfer_sampler") is not None:
        record["flashinfer_sampler"] = figures["flashinfer_sampler"]
    if figures.get("data_parallel_size") not in (None, 1):
        record["other_flags"] = f"data_parallel_size={figures['data_parallel_size']}"
    if model:
        record["model"] = model
    record["gpu"] = gpu or ""
    for term in TERMS:
        record[term] = figures.get(term)
    outcome = figures.get("outcome")
    record["outcome"] = None if outcome == "unknown" else outcome
    return record


def replay_log(
    text: str,
    *,
    log_id: str = "log",
    model: str | None = None,
    gpu: str | None = None,
    profile: Profile | None = None,
    engine_version: str | None = None,
) -> Replay:
    """Parse a vLLM startup log (C++ parser) and replay the launch it describes (`profile`,
    `engine_version`: as replay_record)."""
    figures = _core.parse_log("vllm", text)
    record = record_from_log(figures, log_id=log_id, model=model, gpu=gpu)
    return replay_record(record, profile=profile, engine_version=engine_version)


def replay_log_file(
    path: str | Path,
    *,
    log_id: str | None = None,
    model: str | None = None,
    gpu: str | None = None,
    profile: Profile | None = None,
    engine_version: str | None = None,
) -> Replay:
    """Like `replay_log`, for a log file, which is never read whole into memory: the C++
    parser streams it in 1 MiB chunks (lines over 64 KiB skipped, at most 1 GiB read).
    A file that cannot be read raises vramplan.ParseError naming it."""
    path = Path(path)
    figures = _core.parse_log("vllm", path)
    record = record_from_log(figures, log_id=log_id or path.name, model=model, gpu=gpu)
    replay = replay_record(record, profile=profile, engine_version=engine_version)
    if figures.get("launches", 1) > 1:
        launches = (
            f"{path} holds {figures['launches']} launches (vLLM restarted into the same file): "
            "the last one is replayed, its settings and figures only"
        )
        replay.note = f"{launches}; {replay.note}" if replay.note else launches
    return replay


def format_table(replays: list[Replay]) -> str:
    """Predicted vs measured per term, one line per record."""
    width = max([9, *(len(r.id) + 2 for r in replays)])
    lines = [f"{'id':<{width}}{'term':<21}{'predicted':>12}{'measured':>12}{'error':>10}"]
    for replay in replays:
        if replay.unsupported:
            lines.append(f"{replay.id:<{width}}unsupported: {replay.unsupported}")
            continue
        assert replay.predicted is not None
        for term in (*TERMS, "outcome"):
            predicted = replay.predicted.get(term)
            measured = replay.measured.get(term)
            if measured is None:
                continue
            if term == "outcome":
                flag = "ok" if predicted == measured else "MISMATCH"
                lines.append(
                    f"{replay.id:<{width}}{term:<21}{predicted!s:>12}{measured!s:>12}{flag:>10}"
                )
            else:
                error = float(predicted) - float(measured)
                lines.append(
                    f"{replay.id:<{width}}{term:<21}{predicted:>12.2f}{measured:>12.2f}"
                    f"{error:>+10.2f}"
                )
    return "\n".join(lines)


# --- an SGLang startup log against the breakdown of its launch --------------------------

# (term, the log's figure, the breakdown's bytes or count, unit).
_SGLANG_TERMS = (
    ("baseline_free", "load_begin_avail_gib", "baseline_free_bytes", "GiB"),
    ("weights", "weights_gib", "weights_bytes", "GiB"),
    ("free_after_weights", "avail_after_weights_gib", "free_after_weights_bytes", "GiB"),
    ("k_size", "k_size_gib", "k_size_bytes", "GiB"),
    ("max_total_num_tokens", "max_total_num_tokens", "max_total_num_tokens", "tokens"),
    ("free_after_pool", "avail_after_pool_gib", "free_after_pool_bytes", "GiB"),
    ("decode_cuda_graphs", "decode_graph_gib", "decode_graph_bytes", "GiB"),
    ("max_running_requests", "max_running_requests", "max_running_requests", "requests"),
)


def validate_sglang_log(
    log: str | Path, *, model: str | None, gpu: str, sglang_version: str | None
) -> dict[str, Any]:
    """The log's figures against the breakdown of the launch it printed, per term."""
    figures = dict(_core.parse_log("sglang", Path(log)))
    model_id = model or figures["model_path"]
    if not model_id:
        raise api.config_error(
            "--model", "''", "a model id", "the log prints no model_path: name the model"
        )
    # The launch the log states (the core's reading); the caller's release over the log's.
    knobs: dict[str, Any] = dict(_core.launch_from_figures("sglang", figures))
    if sglang_version:
        knobs["sglang_version"] = sglang_version
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
    for term, measured_key, predicted_key, unit in _SGLANG_TERMS:
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


def format_sglang_validation(result: dict[str, Any]) -> str:
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
