"""Typed, keyword-only wrappers over the C++ core. Python reshapes; it never computes."""

from __future__ import annotations

import functools
import json
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from . import _core, _database, engines
from ._identity import path_identity, plain_scalar
from ._resources import model_specs_file, model_specs_override
from ._units import GIB
from .deployment import check_mig_parallel
from .resolve import resolve_model

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from .sglang import SglangBreakdown, SglangPlan

DEFAULT_MODEL = "meta-llama/Llama-3.1-8B-Instruct"
DEFAULT_GPU = "H100-80GB"

INT64_MAX = (1 << 63) - 1
BANDS_FILE = "error_bands.json"
MAX_SWEEP_POINTS: int = _core.MAX_SWEEP_POINTS
SWEEP_CHUNK_POINTS = 1 << 18  # ~50 ms of evaluation (1M points: 0.2 s): progress, Ctrl-C between

# Public here; defined below resolution, which uses them too.
# `plan`'s keywords that describe the traffic a vLLM plan serves (the workload's).
TRAFFIC_KEYWORDS = (
    "workload",
    "prompt_tokens",
    "output_tokens",
    "prefix_tokens",
    "preemption_target",
    "request_seconds",
)

spec_database = _database.spec_database
config_error = _database.config_error


@functools.lru_cache(maxsize=4)
def _band_table(file: str) -> _core.ErrorBandTable:
    """model_specs/error_bands.json, read once per file (plan() consults it on every call)."""
    return _core.ErrorBandTable.load_file(file)


@functools.lru_cache(maxsize=256)
def _band_in(file: str, launch: _core.Launch) -> _core.ErrorBand:
    return _band_table(file).lookup(launch)


def _error_band(launch: _core.Launch) -> _core.ErrorBand:
    """The launch's (GPU family x era) row of the error-band table (docs/accuracy.md), once
    per compiled launch."""
    return _band_in(model_specs_file(BANDS_FILE), launch)


def models() -> list[str]:
    """Ids of every model in the database."""
    return list(spec_database().model_ids())


def gpus() -> list[str]:
    """Ids of every GPU in the database."""
    return list(spec_database().gpu_ids())


def load_model(
    model: str | Path, *, revision: str | None = None, offline: bool | None = None
) -> _core.ModelSpec:
    """A model by database id or HF alias; a path (spec YAML, config.json, checkpoint folder,
    `.gguf`, Hugging Face cache entry); else ORG/NAME from the local Hugging Face cache or the Hub
    (see `vramplan.resolve.resolve_model`, which also says which source answered)."""
    if not isinstance(model, (str, Path)):
        raise config_error("model", model, "a model id, alias or path (str)", "wrong type")
    return resolve_model(model, revision=revision, offline=offline).spec


def from_hf_config(path: str | Path) -> _core.ModelSpec:
    """A ModelSpec from a config.json file (or a folder holding one), read offline."""
    return _core.load_hf_config(str(path))


def inspect_checkpoint(path: str | Path) -> dict[str, Any]:
    """What a model path holds: kind, files read, exact checkpoint bytes from the headers and
    the spec formula's bytes for the same checkpoint."""
    data = dict(_core.load_model_path(str(path)))
    spec = data.pop("spec")
    data["model"] = spec.id
    return data


INTERCONNECTS = ("nvlink", "pcie")
"""How the GPUs of a TP >= 2 launch talk: NCCL's buffers differ by an order of magnitude."""


def load_gpu(
    gpu: str, *, total_memory_bytes: int | None = None, interconnect: str | None = None
) -> _core.GpuSpec:
    """A GPU by database id, alias, nvidia-smi / rocm-smi name or lspci line (the core's lookup);
    `total_memory_bytes` overrides the database total. A name several memory sizes share
    ("NVIDIA A100") gives the GPU the database assumes, with a UserWarning saying which.
    `interconnect` ('nvlink' or 'pcie') overrides the database's: a card that may have NVLink
    (and any GPU not in the database) is charged NVLink's NCCL buffers at TP >= 2, so 'pcie'
    gives boards without NVLink the smaller charge (also the closer figure for TP across nodes,
    where NCCL goes over the network)."""
    if not isinstance(gpu, str):
        raise config_error("gpu", gpu, "a GPU id or alias (str)", "wrong type")
    if total_memory_bytes is not None:
        _integer("total_memory_bytes", total_memory_bytes, 1, 1 << 50)
    if interconnect is not None and interconnect not in INTERCONNECTS:
        raise config_error("interconnect", interconnect, "'nvlink' or 'pcie'", "unknown")
    db = spec_database()
    note = db.gpu_name_note(gpu)
    if note and total_memory_bytes is None:
        warnings.warn(note, UserWarning, stacklevel=2)
    if db.has_gpu(gpu):
        spec = db.gpu(gpu)
        if total_memory_bytes is not None:
            spec = spec.with_total_memory(total_memory_bytes)
    elif total_memory_bytes is not None:
        spec = _core.GpuSpec(gpu, total_memory_bytes)
    else:
        return db.gpu(gpu)  # raises ConfigError with near names
    if interconnect is None:
        return spec
    return spec.with_pcie_only(interconnect == "pcie")


KNOBS: list[dict[str, Any]] = list(_core.KNOBS)
"""The engine knobs, one dict each (name as vLLM names it, type, unit, range, choices, default,
help, `vllm serve` flag, `LLM()` keyword), from the C++ knob registry."""

_EVALUATED = frozenset(k["name"] for k in KNOBS if k["evaluated"])
_OUTCOMES = ["rejected", *_core.outcome_names()]


def _integer(field: str, value: object, low: int, high: int) -> int:
    """An integer argument in [low, high] (a numpy integer too), or a ConfigError naming it."""
    if type(value) is int and low <= value <= high:  # the common case, on every plan
        return value
    value = plain_scalar(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise config_error(field, value, f"an integer in [{low}, {high}]", "wrong type")
    if not low <= value <= high:
        raise config_error(field, value, f"an integer in [{low}, {high}]", "out of range")
    return value


def _values(field: str, values: object, kind: type) -> list[Any]:
    """A sweep's list of values for `field`: a sequence of numbers of `kind`, or a
    ConfigError naming it."""
    allowed = f"a list of {'integers' if kind is int else 'numbers'}"
    if values is None:
        return []
    if hasattr(values, "tolist") and getattr(values, "ndim", None) == 1:
        values = values.tolist()  # a numpy array: its items as Python numbers
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise config_error(field, values, allowed, "wrong type")
    values = [plain_scalar(value) for value in values]
    if not values:
        raise config_error(
            field,
            values,
            allowed,
            "an empty list (give at least one value, or None for the default)",
        )
    for value in values:
        number = isinstance(value, (int, float)) if kind is float else isinstance(value, int)
        if isinstance(value, bool) or not number:
            raise config_error(field, value, allowed, "wrong type in the list")
        if isinstance(value, int) and not -(2**63) <= value < 2**63:
            raise config_error(field, value, allowed, "does not fit a 64-bit integer")
        if isinstance(value, float) and not math.isfinite(value):
            raise config_error(field, value, allowed, "not a finite number")
    return list(values)


def _gpus_for(num_gpus: int | None, knobs: dict[str, Any]) -> int:
    """GPUs on the node: as given, else exactly what the launch's TP x PP needs."""
    if num_gpus is not None:
        return _integer("num_gpus", num_gpus, 1, 1 << 16)
    if not knobs:
        return 1
    tp = knobs.get("tensor_parallel_size") or 1
    pp = knobs.get("pipeline_parallel_size") or 1
    dp = knobs.get("data_parallel_size") or 1
    ints = isinstance(tp, int) and isinstance(pp, int) and isinstance(dp, int)
    if ints and 1 <= tp * pp * dp <= 1 << 16:
        return int(tp * pp * dp)
    return 1  # a wrong value is refused, with its name, when the launch compiles


def _resolve_draft(knobs: dict[str, Any]) -> dict[str, Any]:
    """`speculative_model` may be an id or a path: the core takes the drafter's ModelSpec."""
    draft = knobs.get("speculative_model")
    if draft is None or isinstance(draft, _core.ModelSpec):
        return knobs
    return {**knobs, "speculative_model": load_model(draft)}


@functools.lru_cache(maxsize=256)
def _compiled(
    model: str | _core.ModelSpec,
    gpu: str | _core.GpuSpec,
    num_gpus: int,
    memory_used_by_others_bytes: int,
    host_ram_bytes: int,
    static_knobs: tuple[tuple[str, Any], ...],
    profile: _core.EngineProfile | None,
    files: tuple[object, ...],  # path_identity of the model and drafter: part of the key only
) -> _core.Launch:
    return _compile(
        model,
        gpu,
        num_gpus,
        memory_used_by_others_bytes,
        host_ram_bytes,
        dict(static_knobs),
        profile,
    )


def _compile(
    model: str | _core.ModelSpec,
    gpu: str | _core.GpuSpec,
    num_gpus: int,
    memory_used_by_others_bytes: int,
    host_ram_bytes: int,
    knobs: dict[str, Any],
    profile: _core.EngineProfile | None = None,
) -> _core.Launch:
    spec = model if isinstance(model, _core.ModelSpec) else load_model(model)
    gpu_spec = gpu if isinstance(gpu, _core.GpuSpec) else load_gpu(gpu)
    check_mig_parallel(gpu_spec, knobs)
    return _core.Launch(
        spec,
        gpu_spec,
        _resolve_draft(knobs),
        num_gpus=num_gpus,
        memory_used_by_others_bytes=memory_used_by_others_bytes,
        host_ram_bytes=host_ram_bytes,
        profile=profile,
    )


def _model_at(
    model: str | _core.ModelSpec, offline: bool | None, revision: str | None
) -> str | _core.ModelSpec:
    """The model resolved now when `offline` or `revision` is given (they change how an id
    resolves); else as given, resolved (and cached) with the launch."""
    if isinstance(model, str) and (offline is not None or revision is not None):
        return load_model(model, revision=revision, offline=offline)
    return model


def _vllm_names_to_knobs(knobs: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments under vLLM's EngineArgs names (cpu_offload_gb=4,
    speculative_config={...}, enable_prefix_caching=True) as the planner's knobs; vramplan's
    own spellings (cpu_offload_bytes, ...) stay as documented aliases. Arguments with no
    memory effect are accepted and dropped; unknown names raise ConfigError (did you mean)."""
    if not knobs:
        return {}  # nothing to rename (a plain plan): the argument list is not consulted
    key = _typed_key(knobs)
    if key is None:  # an unhashable value (a speculative_config dict): translated each time
        return _translated(knobs)
    return dict(_translated_once(key))


def _typed_key(knobs: dict[str, Any]) -> tuple[tuple[str, type, Any], ...] | None:
    """`knobs` as a cache key, each value with its type (True == 1 == 1.0 are different
    arguments here), in name order; None where a value is unhashable."""
    # On every plan with knobs: one knob (the common case) without a sort or a comprehension's
    # frame, several as a list (built faster than a generator's tuple).
    if len(knobs) == 1:
        ((name, value),) = knobs.items()
        key: tuple[tuple[str, type, Any], ...] = ((name, type(value), value),)
    else:
        key = tuple([(name, type(value), value) for name, value in sorted(knobs.items())])
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _translated(knobs: dict[str, Any]) -> dict[str, Any]:
    from .launch import to_knobs

    version = knobs.get("engine_version")
    return to_knobs(knobs, version=version if isinstance(version, str) else None, typed=False).knobs


@functools.lru_cache(maxsize=1024)
def _translated_once(key: tuple[tuple[str, type, Any], ...]) -> dict[str, Any]:
    """The translation of knobs a process passes again and again (fit's splits): once each."""
    return _translated({name: value for name, _, value in key})


def _launch(
    model: str | _core.ModelSpec,
    gpu: str | _core.GpuSpec,
    num_gpus: int | None,
    memory_used_by_others_bytes: int,
    host_ram_bytes: int,
    knobs: dict[str, Any],
) -> tuple[_core.Launch, dict[str, Any]]:
    """The compiled launch (cached by its key: model and GPU by name, or a ModelSpec / GpuSpec
    object by identity, as the CLI passes them; the bound specs are read-only) and the
    evaluated knobs, which vary without recompiling."""
    profile = None
    static: dict[str, Any] = {}
    evaluated: dict[str, Any] = {}
    if knobs:  # a plain plan passes none: nothing to translate or split
        profile = _engine_profile(knobs.pop("profile", None))  # not a vLLM knob
        knobs = _vllm_names_to_knobs(knobs)
        for name, value in knobs.items():
            (evaluated if name in _EVALUATED else static)[name] = value
    gpus_on_node = _gpus_for(num_gpus, static)
    _integer("memory_used_by_others_bytes", memory_used_by_others_bytes, 0, 1 << 50)
    _integer("host_ram_bytes", host_ram_bytes, 0, 1 << 60)
    try:
        key = tuple(sorted(static.items()))
        hash(key)
    except TypeError:  # an unhashable knob value: compile without the cache
        launch = _compile(
            model, gpu, gpus_on_node, memory_used_by_others_bytes, host_ram_bytes, static, profile
        )
    else:
        draft = static.get("speculative_model")
        files = (path_identity(model), () if draft is None else path_identity(draft))
        launch = _compiled(
            model,
            gpu,
            gpus_on_node,
            memory_used_by_others_bytes,
            host_ram_bytes,
            key,
            profile,
            files,
        )
    return launch, evaluated


def _engine_profile(profile: object) -> _core.EngineProfile | None:
    """The `profile` knob (a vramplan.Profile or its EngineProfile) as the core takes it."""
    if profile is not None and not isinstance(profile, _core.EngineProfile):
        profile = getattr(profile, "engine_profile", profile)  # a vramplan.Profile
        if not isinstance(profile, _core.EngineProfile):
            raise config_error("profile", profile, "a vramplan.Profile", "wrong type")
    return profile


def parse_log(
    source: str | bytes | Path, *, engine: str = engines.DEFAULT_ENGINE
) -> dict[str, Any]:
    """The figures `engine`'s startup log prints (launch settings, memory figures, how the launch
    ended), every field present (None where the log prints none). `source`: the log as str or
    bytes, or a path, streamed in 1 MiB chunks (lines over 64 KiB skipped, at most 1 GiB read).
    Never raises for malformed text; a file that cannot be read is a ParseError naming it."""
    return dict(_core.parse_log(engine, source))


def parse_vllm_log(source: str | bytes | Path) -> dict[str, Any]:
    """parse_log(source, engine="vllm")."""
    return dict(_core.parse_log("vllm", source))


def schema_markdown() -> str:
    """The model/GPU YAML schema as Markdown tables (generated from the C++ key table)."""
    return str(_core.schema_markdown())


class Breakdown:
    """Per-rank memory breakdown; every term in bytes. Attributes are the C++ result's
    (`ranks`, `host`, `kv_tokens`, `outcome`, ...); `to_dict()` / `to_json()` give the JSON."""

    __slots__ = ("_band", "_core", "_launch")

    def __init__(
        self,
        core: _core.Breakdown,
        band: _core.ErrorBand | None = None,
        launch: _core.Launch | None = None,
    ) -> None:
        self._core = core
        self._band = band  # None: looked up from `launch` when first asked for
        self._launch = launch

    def __getattr__(self, name: str) -> Any:
        return getattr(self._core, name)

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    @property
    def error_band(self) -> dict[str, Any]:
        """The expected available-KV error for this launch's (GPU family, era), from the
        leave-one-source-out table (model_specs/error_bands.json)."""
        if self._band is None:
            assert self._launch is not None, "a Breakdown has its band or its launch"
            self._band = _error_band(self._launch)
        return dict(self._band.to_dict())

    def to_dict(self) -> dict[str, Any]:
        return {**json.loads(self._core.to_json()), "error_band": self.error_band}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def __repr__(self) -> str:
        c = self._core
        return (
            f"Breakdown({c.model_id} on {c.gpu_id}: {c.outcome}, "
            f"weights {c.weights_bytes / GIB:.2f} GiB, KV {c.kv_cache_bytes / GIB:.2f} GiB, "
            f"{c.kv_tokens} tokens)"
        )

    def _repr_html_(self) -> str:
        """Notebook view: a table of the terms per rank and a stacked bar per rank."""
        from ._html import breakdown_html

        return breakdown_html(self.to_dict())

    def plot(self) -> Figure:
        """A matplotlib Figure: one stacked bar per pipeline rank (needs `vramplan[plot]`)."""
        from ._figures import breakdown_figure

        return breakdown_figure(self._core)


def _sglang_args(
    model: str | _core.ModelSpec,
    gpu: str | _core.GpuSpec,
    offline: bool | None,
    revision: str | None,
    vllm_only: Mapping[str, object],
) -> tuple[_core.ModelSpec, _core.GpuSpec, str]:
    """The model, GPU and model path (as written) of an SGLang launch; the arguments only the
    vLLM planner takes are refused by name, never ignored."""
    for name, value in vllm_only.items():
        if value not in (None, 0):
            raise config_error(name, str(value), "unset with engine='sglang'", "vLLM only")
    spec = (
        model
        if isinstance(model, _core.ModelSpec)
        else load_model(model, revision=revision, offline=offline)
    )
    card = gpu if isinstance(gpu, _core.GpuSpec) else load_gpu(gpu)
    return spec, card, model if isinstance(model, str) else str(spec.id)


@overload
def breakdown(
    model: str | _core.ModelSpec = ...,
    gpu: str | _core.GpuSpec = ...,
    *,
    engine: Literal["vllm"] = ...,
    num_gpus: int | None = ...,
    memory_used_by_others_bytes: int = ...,
    host_ram_bytes: int = ...,
    offline: bool | None = ...,
    revision: str | None = ...,
    **knobs: Any,
) -> Breakdown: ...
@overload
def breakdown(
    model: str | _core.ModelSpec = ...,
    gpu: str | _core.GpuSpec = ...,
    *,
    engine: Literal["sglang"],
    num_gpus: None = ...,
    memory_used_by_others_bytes: Literal[0] = ...,
    host_ram_bytes: Literal[0] = ...,
    offline: bool | None = ...,
    revision: str | None = ...,
    **knobs: Any,
) -> SglangBreakdown: ...
def breakdown(
    model: str | _core.ModelSpec = DEFAULT_MODEL,
    gpu: str | _core.GpuSpec = DEFAULT_GPU,
    *,
    engine: str = "vllm",
    num_gpus: int | None = None,
    memory_used_by_others_bytes: int = 0,
    host_ram_bytes: int = 0,
    offline: bool | None = None,
    revision: str | None = None,
    **knobs: Any,
) -> Breakdown | SglangBreakdown:
    """What vLLM's startup profiling will find for `model` on `gpu` with these engine knobs
    (vLLM's EngineArgs names, e.g. cpu_offload_gb=4; see `vramplan.KNOBS`). `offline` (never
    ask the Hub; default HF_HUB_OFFLINE) and `revision` apply to a model named by Hub id.
    engine="sglang": SGLang's startup per rank, knobs under SGLang's ServerArgs names
    (mem_fraction_static, tp_size, ...; engine_row("sglang") lists them)."""
    result: Breakdown | SglangBreakdown = engines.get(engine).breakdown(
        model,
        gpu,
        num_gpus=num_gpus,
        memory_used_by_others_bytes=memory_used_by_others_bytes,
        host_ram_bytes=host_ram_bytes,
        offline=offline,
        revision=revision,
        **knobs,
    )
    return result


def _vllm_breakdown(
    model: str | _core.ModelSpec,
    gpu: str | _core.GpuSpec,
    *,
    num_gpus: int | None,
    memory_used_by_others_bytes: int,
    host_ram_bytes: int,
    offline: bool | None,
    revision: str | None,
    **knobs: Any,
) -> Breakdown:
    model = _model_at(model, offline, revision)
    launch, evaluated = _launch(
        model, gpu, num_gpus, memory_used_by_others_bytes, host_ram_bytes, knobs
    )
    return Breakdown(launch.breakdown(evaluated), launch=launch)


def _sglang_breakdown(
    model: str | _core.ModelSpec,
    gpu: str | _core.GpuSpec,
    *,
    offline: bool | None,
    revision: str | None,
    **knobs: Any,
) -> SglangBreakdown:
    from . import sglang

    vllm_only = {
        name: knobs.pop(name)
        for name in ("num_gpus", "memory_used_by_others_bytes", "host_ram_bytes")
    }
    spec, card, path = _sglang_args(model, gpu, offline, revision, vllm_only)
    return sglang.breakdown(spec, card, model_path=path, **knobs)


class Plan:
    """The solver's answer: the largest safe knobs, why each binds, remedies, breakdown.
    Attributes are the C++ result's (`fits`, `verdict`, `max_model_len`, `binding`, ...)."""

    __slots__ = (
        "_band",
        "_core",
        "_evaluated",
        "_launch",
        "_mig_slice",
        "_workload",
        "split_search",
    )

    def __init__(
        self,
        core: _core.Plan,
        band: _core.ErrorBand,
        launch: _core.Launch | None = None,
        evaluated: dict[str, Any] | None = None,
        workload: _core.Workload | None = None,
        mig_slice: bool = False,
    ) -> None:
        self._core = core
        self._band = band
        self._launch = launch
        self._evaluated = evaluated or {}
        self._workload = workload
        # Every TP x PP split tried when the plan chose the split (num_gpus > 1), else None.
        self.split_search: list[dict[str, Any]] | None = None
        self._mig_slice = mig_slice

    def _remedies_kept(self) -> list[bool]:
        """Which remedies launch on this GPU: a MIG slice takes no wider TP or PP group."""
        return [
            not (self._mig_slice and _widens_parallelism(remedy.changes))
            for remedy in self._core.remedies
        ]

    @property
    def remedies(self) -> list[_core.Remedy]:
        return [r for r, kept in zip(self._core.remedies, self._remedies_kept()) if kept]

    def preemption_curve(self, max_num_seqs: Sequence[int]) -> list[float]:
        """The probability that each `max_num_seqs` busy slots of the plan's workload overflow
        the KV cache (the KV recomputed at each value: fewer sequences leave it more room)."""
        if self._launch is None or self._workload is None:
            raise config_error("workload", None, "a plan made with a workload", "no workload")
        knobs = {**self._evaluated, **_chosen_knobs(self._core)}
        return [
            float(self._launch.preemption_probability(knobs, self._workload, int(seqs)))
            for seqs in max_num_seqs
        ]

    def plot_preemption(self) -> Figure:
        """Preemption probability against max_num_seqs, the chosen value marked (needs
        `vramplan[plot]`)."""
        from ._figures import preemption_figure

        return preemption_figure(self)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._core, name)

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    @property
    def breakdown(self) -> Breakdown:
        return Breakdown(self._core.breakdown, self._band)

    def to_vllm_args(self) -> str:
        """The `vllm serve` flag line (without the model)."""
        return str(self._core.vllm_args())

    def to_vllm_argv(self) -> list[str]:
        """The same flags as argv words: JSON values compact, one word each (no quoting
        needed inside `$(...)`)."""
        return [str(word) for word in self._core.vllm_argv()]

    def to_llm_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for `vllm.LLM(model, **kwargs)`."""
        return dict(self._core.llm_kwargs())

    def to_vllm_env(self) -> dict[str, str]:
        """Environment variables the launch needs: knobs an older vLLM takes only from the
        environment (VLLM_ALL2ALL_BACKEND before 0.12)."""
        return {str(k): str(v) for k, v in dict(self._core.vllm_env()).items()}

    @property
    def error_band(self) -> dict[str, Any]:
        """The breakdown's error band (see Breakdown.error_band)."""
        return dict(self._band.to_dict())

    def to_dict(self) -> dict[str, Any]:
        data = dict(json.loads(self._core.to_json()))
        band = self.error_band
        data["breakdown"]["error_band"] = band
        data["remedies"] = [r for r, kept in zip(data["remedies"], self._remedies_kept()) if kept]
        if self.split_search is not None:
            data["split_search"] = self.split_search
        return {**data, "error_band": band}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def __repr__(self) -> str:
        return f"Plan({self._core.verdict}; {self.to_vllm_args()})"

    def _repr_html_(self) -> str:
        """Notebook view: verdict, knobs and why each binds, the flag line, the breakdown."""
        from ._html import plan_html

        return plan_html(self.to_dict())

    def plot(self) -> Figure:
        """The plan's breakdown as a matplotlib Figure (needs `vramplan[plot]`)."""
        return self.breakdown.plot()


@overload
def plan(
    model: str | _core.ModelSpec = ...,
    gpu: str | _core.GpuSpec = ...,
    *,
    engine: Literal["vllm"] = ...,
    num_gpus: int | None = ...,
    memory_used_by_others_bytes: int = ...,
    host_ram_bytes: int = ...,
    context: int = ...,
    concurrency: int = ...,
    safety_margin_bytes: int | None = ...,
    runtime_headroom_bytes: int | None = ...,
    workload: Any = ...,
    prompt_tokens: Any = ...,
    output_tokens: Any = ...,
    prefix_tokens: int = ...,
    preemption_target: float | None = ...,
    request_seconds: float | None = ...,
    offline: bool | None = ...,
    revision: str | None = ...,
    **pinned: Any,
) -> Plan: ...
@overload
def plan(
    model: str | _core.ModelSpec = ...,
    gpu: str | _core.GpuSpec = ...,
    *,
    engine: Literal["sglang"],
    num_gpus: None = ...,
    memory_used_by_others_bytes: Literal[0] = ...,
    host_ram_bytes: Literal[0] = ...,
    context: int = ...,
    concurrency: int = ...,
    safety_margin_bytes: int | None = ...,
    runtime_headroom_bytes: None = ...,
    workload: None = ...,
    prompt_tokens: None = ...,
    output_tokens: None = ...,
    prefix_tokens: Literal[0] = ...,
    preemption_target: None = ...,
    request_seconds: None = ...,
    offline: bool | None = ...,
    revision: str | None = ...,
    **pinned: Any,
) -> SglangPlan: ...
def plan(
    model: str | _core.ModelSpec = DEFAULT_MODEL,
    gpu: str | _core.GpuSpec = DEFAULT_GPU,
    *,
    engine: str = "vllm",
    **options: Any,
) -> Plan | SglangPlan:
    """Largest safe gpu_memory_utilization / max_model_len / max_num_seqs /
    max_num_batched_tokens for `model` on `gpu`; `pinned` knobs (vLLM's EngineArgs names, e.g.
    cpu_offload_gb=4, speculative_config={...}) are kept as given, and the plan first judges
    the launch exactly as given (`as_written_verdict`). `offline` (never ask the Hub; default
    HF_HUB_OFFLINE) and `revision` apply to a model named by Hub id. Without
    `safety_margin_bytes`, the margin is the largest cross-validated over-prediction of the
    launch's (GPU family, era) where that exceeds the solver's default (docs/accuracy.md).
    engine="sglang": SGLang's solver, knobs under SGLang's names: mem_fraction_static the
    largest that leaves the margin in the slack unless given, `context` and `concurrency` as
    above; the largest max_running_requests, context_length, chunked_prefill_size and
    cuda_graph_max_bs that start; remedies when it does not fit.

    max_num_seqs is a scheduler cap, not a memory wall: it stays at the release default (or
    `max_num_seqs=`) unless the launch would not start. `concurrency=C` keeps C requests of
    `context` tokens resident; a workload (`workload=` a CSV/JSONL path or a list of
    (prompt_tokens, output_tokens[, count]), or `prompt_tokens=(p50, p99)` with
    `output_tokens=(p50, p99)`; `prefix_tokens` shared under prefix caching) sizes it so that
    busy slots overflow the KV cache with probability under `preemption_target`
    (`request_seconds` adds Little's-law throughput bound). `runtime_headroom_bytes` keeps that
    much free for the running server (default: what vLLM allocates beyond its profile, e.g. a
    runtime_oom diagnosis's figure). `num_gpus` > 1 without a tensor or pipeline size searches
    the splits (`Plan.split_search` lists them), as the CLI does.
    """
    # Only the keywords given travel on (the engine's own signature holds the defaults):
    # forwarding all eighteen by name cost a sixth of a plan's instructions.
    planned: Plan | SglangPlan = engines.get(engine).plan(model, gpu, **options)
    return planned


def _sglang_plan(
    model: str | _core.ModelSpec = DEFAULT_MODEL,
    gpu: str | _core.GpuSpec = DEFAULT_GPU,
    *,
    context: int = 0,
    concurrency: int = 0,
    safety_margin_bytes: int | None = None,
    offline: bool | None = None,
    revision: str | None = None,
    **pinned: Any,
) -> SglangPlan:
    from . import sglang

    vllm_only = {
        name: pinned.pop(name, None)
        for name in (
            "num_gpus",
            "memory_used_by_others_bytes",
            "host_ram_bytes",
            "runtime_headroom_bytes",
            *TRAFFIC_KEYWORDS,
        )
    }
    spec, card, path = _sglang_args(model, gpu, offline, revision, vllm_only)
    _integer("context", context, 0, INT64_MAX)
    _integer("concurrency", concurrency, 0, 1 << 30)
    if safety_margin_bytes is not None:
        _integer("safety_margin_bytes", safety_margin_bytes, 0, INT64_MAX)
    return sglang.plan(
        spec,
        card,
        model_path=path,
        context=context,
        concurrency=concurrency,
        safety_margin_bytes=safety_margin_bytes,
        **pinned,
    )


def _vllm_plan(
    model: str | _core.ModelSpec = DEFAULT_MODEL,
    gpu: str | _core.GpuSpec = DEFAULT_GPU,
    *,
    num_gpus: int | None = None,
    memory_used_by_others_bytes: int = 0,
    host_ram_bytes: int = 0,
    context: int = 0,
    concurrency: int = 0,
    safety_margin_bytes: int | None = None,
    runtime_headroom_bytes: int | None = None,
    workload: Any = None,
    prompt_tokens: Any = None,
    output_tokens: Any = None,
    prefix_tokens: int = 0,
    preemption_target: float | None = None,
    request_seconds: float | None = None,
    offline: bool | None = None,
    revision: str | None = None,
    **pinned: Any,
) -> Plan:
    traffic = None
    if not (
        workload is None
        and prompt_tokens is None
        and output_tokens is None
        and prefix_tokens == 0
        and preemption_target is None
        and request_seconds is None
    ):  # a plain plan neither loads the workload module nor builds one
        from .workload import make_workload

        traffic = make_workload(
            workload,
            prompt_tokens=prompt_tokens,
            output_tokens=output_tokens,
            prefix_tokens=prefix_tokens,
            preemption_target=preemption_target,
            request_seconds=request_seconds,
        )
    # The ranges are the solver's (context: up to the model's maximum); here only what a
    # 64-bit integer holds.
    _integer("context", context, 0, INT64_MAX)
    _integer("concurrency", concurrency, 0, 1 << 30)
    if safety_margin_bytes is not None:
        _integer("safety_margin_bytes", safety_margin_bytes, 0, 1 << 50)
    if runtime_headroom_bytes is not None:
        _integer("runtime_headroom_bytes", runtime_headroom_bytes, 0, 1 << 50)
    if (
        traffic is None
        and offline is None
        and revision is None
        and type(memory_used_by_others_bytes) is int
        and type(host_ram_bytes) is int
        and (num_gpus is None or (type(num_gpus) is int and not _searches_splits(num_gpus, pinned)))
    ):  # no traffic, no split search: the launch, band and MIG flag looked up once per knobs
        knobs_key = _pinned_key(pinned)
        if knobs_key is not None:
            launch, evaluated, band, mig_slice = _known_launch(
                model,
                gpu,
                num_gpus,
                memory_used_by_others_bytes,
                host_ram_bytes,
                path_identity(model),
                model_specs_override(),
                knobs_key,
            )
            solved = launch.solve(
                evaluated,
                context,
                concurrency,
                band.safety_margin_bytes if safety_margin_bytes is None else safety_margin_bytes,
                -1 if runtime_headroom_bytes is None else runtime_headroom_bytes,
            )
            return Plan(solved, band, launch, evaluated, None, mig_slice)
    model = _model_at(model, offline, revision)

    def at_split(split: dict[str, Any]) -> Plan:
        launch, evaluated = _launch(
            model, gpu, num_gpus, memory_used_by_others_bytes, host_ram_bytes, {**pinned, **split}
        )
        band = _error_band(launch)
        solved = launch.solve(
            evaluated,
            context=context,
            concurrency=concurrency,
            safety_margin_bytes=band.safety_margin_bytes
            if safety_margin_bytes is None
            else safety_margin_bytes,
            runtime_headroom_bytes=-1 if runtime_headroom_bytes is None else runtime_headroom_bytes,
            workload=traffic,
        )
        return Plan(solved, band, launch, evaluated, traffic, mig_slice=_is_mig_slice(gpu))

    if _searches_splits(num_gpus, pinned):
        from .search import plan_on_gpus

        assert num_gpus is not None
        result, attempts = plan_on_gpus(
            lambda tp, pp: at_split({"tensor_parallel_size": tp, "pipeline_parallel_size": pp}),
            num_gpus,
        )
        result.split_search = [attempt.to_json() for attempt in attempts]
        return result
    return at_split({})


def _pinned_key(pinned: dict[str, Any]) -> tuple[tuple[str, type, Any], ...] | None:
    """The pinned knobs as `_known_launch`'s key (`_typed_key`); None also where they name a
    drafter, whose files the key would have to follow too."""
    return None if "speculative_model" in pinned else _typed_key(pinned)


@functools.lru_cache(maxsize=256)
def _known_launch(
    model: str | _core.ModelSpec,
    gpu: str | _core.GpuSpec,
    num_gpus: int | None,
    memory_used_by_others_bytes: int,
    host_ram_bytes: int,
    files: tuple[object, ...],  # path_identity of the model: part of the key only
    specs_override: str,  # where the error-band table is read (model_specs_override): key only
    knobs_key: tuple[tuple[str, type, Any], ...],
) -> tuple[_core.Launch, dict[str, Any], _core.ErrorBand, bool]:
    """A plan without traffic or split search: its compiled launch, evaluated knobs, error band
    and whether the GPU is a MIG slice, as `at_split` finds them (the arguments checked there,
    an error not kept)."""
    knobs = {name: value for name, _, value in knobs_key}
    launch, evaluated = _launch(
        model, gpu, num_gpus, memory_used_by_others_bytes, host_ram_bytes, knobs
    )
    return launch, evaluated, _error_band(launch), _is_mig_slice(gpu)


def _is_mig_slice(gpu: str | _core.GpuSpec) -> bool:
    """Whether the GPU is a MIG slice (its remedies take no wider TP or PP group)."""
    if isinstance(gpu, _core.GpuSpec):
        return bool(gpu.mig_profile)
    return _named_gpu_is_mig_slice(gpu)


@functools.lru_cache(maxsize=256)
def _named_gpu_is_mig_slice(gpu: str) -> bool:
    # Once per name, as the compiled launch is (a GPU lookup is a few µs of every plan).
    return bool(load_gpu(gpu).mig_profile)


def _searches_splits(num_gpus: int | None, pinned: Mapping[str, Any]) -> bool:
    """`num_gpus` > 1 without a tensor or pipeline size: the split is the planner's to choose."""
    return (
        isinstance(num_gpus, int)
        and not isinstance(num_gpus, bool)
        and num_gpus > 1
        and pinned.get("tensor_parallel_size") is None
        and pinned.get("pipeline_parallel_size") is None
    )


def _widens_parallelism(changes: Sequence[_core.KnobChange]) -> bool:
    """Whether a remedy raises the tensor- or pipeline-parallel size above 1."""
    return any(
        c.knob in ("tensor_parallel_size", "pipeline_parallel_size") and c.value not in ("", "1")
        for c in changes
    )


def _chosen_knobs(core: _core.Plan) -> dict[str, Any]:
    """The four knobs the solver chose, by vLLM's names."""
    return {
        "gpu_memory_utilization": core.gpu_memory_utilization,
        "max_model_len": core.max_model_len,
        "max_num_batched_tokens": core.max_num_batched_tokens,
    }


def sweep(
    model: str | _core.ModelSpec = DEFAULT_MODEL,
    gpu: str | _core.GpuSpec = DEFAULT_GPU,
    *,
    gpu_memory_utilization: Sequence[float] | None = None,
    max_model_len: Sequence[int] | None = None,
    max_num_seqs: Sequence[int] | None = None,
    max_num_batched_tokens: Sequence[int] | None = None,
    num_gpus: int | None = None,
    memory_used_by_others_bytes: int = 0,
    progress: Callable[[int, int], None] | None = None,
    engine: str = "vllm",
    **knobs: Any,
) -> pd.DataFrame:
    """Every combination of the listed utilizations, context lengths, sequence limits and
    batched-token limits, evaluated in C++ (at most `MAX_SWEEP_POINTS` rows), in chunks of
    about SWEEP_CHUNK_POINTS rows: `progress(rows_done, rows)` is called after each, and
    Ctrl-C stops between them. Returns a DataFrame: the grid values as resolved,
    kv_cache_bytes (worst rank), kv_tokens, max_concurrency and outcome ("rejected" when the
    engine refuses the knobs outright).
    engine="sglang": lists of SGLang's mem_fraction_static, context_length,
    max_running_requests and chunked_prefill_size (any other knob under SGLang's names, one
    value); each row is what breakdown(engine="sglang") reports at that point (the knobs as
    resolved, kv_pool_bytes, max_total_num_tokens, outcome: SGLang's verdict)."""
    frame: pd.DataFrame = engines.get(engine).sweep(
        model,
        gpu,
        gpu_memory_utilization=gpu_memory_utilization,
        max_model_len=max_model_len,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens,
        num_gpus=num_gpus,
        memory_used_by_others_bytes=memory_used_by_others_bytes,
        progress=progress,
        **knobs,
    )
    return frame


def _sglang_sweep(
    model: str | _core.ModelSpec,
    gpu: str | _core.GpuSpec,
    *,
    progress: Callable[[int, int], None] | None,
    **knobs: Any,
) -> pd.DataFrame:
    from . import sglang

    vllm_only = {
        name: knobs.pop(name)
        for name in (
            "num_gpus",
            "memory_used_by_others_bytes",
            "gpu_memory_utilization",
            "max_model_len",
            "max_num_seqs",
            "max_num_batched_tokens",
        )
    }
    spec, card, _ = _sglang_args(model, gpu, None, None, vllm_only)
    listed = {
        name: _values(name, knobs.pop(name), kind)
        for name, kind in sglang.SWEEP_KNOBS
        if isinstance(knobs.get(name), Sequence) and not isinstance(knobs.get(name), str)
    }
    return sglang.sweep(spec, card, grid=listed, progress=progress, **knobs)


def _vllm_sweep(
    model: str | _core.ModelSpec,
    gpu: str | _core.GpuSpec,
    *,
    gpu_memory_utilization: Sequence[float] | None,
    max_model_len: Sequence[int] | None,
    max_num_seqs: Sequence[int] | None,
    max_num_batched_tokens: Sequence[int] | None,
    num_gpus: int | None,
    memory_used_by_others_bytes: int,
    progress: Callable[[int, int], None] | None,
    **knobs: Any,
) -> pd.DataFrame:
    import numpy as np
    import pandas as pd

    launch, evaluated = _launch(model, gpu, num_gpus, memory_used_by_others_bytes, 0, knobs)
    grid = [
        _values("gpu_memory_utilization", gpu_memory_utilization, float),
        _values("max_model_len", max_model_len, int),
        _values("max_num_seqs", max_num_seqs, int),
        _values("max_num_batched_tokens", max_num_batched_tokens, int),
    ]
    rows = _database.sweep_rows(grid)
    # Each column is allocated once (C++, huge pages where Linux gives them) and the frame
    # takes the arrays without a copy (pandas copies only the outcome codes, one byte a row,
    # into its Categorical). Chunks are ranges of the (length, sequences, tokens) points, each
    # finished under every utilization: a point is prepared once however the grid is shaped.
    columns = _core.Launch.sweep_columns(rows)
    utilizations = max(1, len(grid[0]))
    points = rows // utilizations
    step = max(1, SWEEP_CHUNK_POINTS // utilizations)
    utilization, lengths, sequences, tokens = grid
    for begin in range(0, max(1, points), step):
        end = min(points, begin + step)
        launch.sweep(
            evaluated, utilization, lengths, sequences, tokens, out=columns, points=(begin, end)
        )
        if progress is not None:
            progress(end * utilizations, rows)
    codes = columns.pop("outcome")
    np.add(codes, 1, out=codes)  # -1 (refused) becomes category 0, "rejected"
    frame: pd.DataFrame = pd.DataFrame(columns, copy=False)
    frame["outcome"] = pd.Categorical.from_codes(codes, categories=pd.Index(_OUTCOMES))
    return frame
