"""Typed, keyword-only wrappers over the C++ core. Python reshapes; it never computes."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import _core
from ._resources import model_specs_dir
from .resolve import resolve_model

DEFAULT_MODEL = "meta-llama/Llama-3.1-8B-Instruct"
DEFAULT_GPU = "H100-80GB"

GIB = 1 << 30


@functools.lru_cache(maxsize=1)
def spec_database() -> _core.SpecDatabase:
    """The packaged database, loaded once per process."""
    return _core.SpecDatabase.load_directory(str(model_specs_dir()))


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


def load_gpu(gpu: str, *, total_memory_bytes: int | None = None) -> _core.GpuSpec:
    """A GPU by database id or alias; `total_memory_bytes` overrides the database total."""
    db = spec_database()
    if db.has_gpu(gpu):
        spec = db.gpu(gpu)
        if total_memory_bytes is None:
            return spec
        return _core.GpuSpec(spec.id, total_memory_bytes, spec.name)
    if total_memory_bytes is not None:
        return _core.GpuSpec(gpu, total_memory_bytes)
    return db.gpu(gpu)  # raises ConfigError with near names


def _gpus_for(num_gpus: int | None, knobs: dict[str, Any]) -> int:
    """GPUs on the node: as given, else exactly what the launch's TP x PP needs."""
    if num_gpus is not None:
        return num_gpus
    return int(knobs.get("tensor_parallel_size") or 1) * int(
        knobs.get("pipeline_parallel_size") or 1
    )


def _resolve_draft(knobs: dict[str, Any]) -> dict[str, Any]:
    """`speculative_model` may be an id or a path: the core takes the drafter's ModelSpec."""
    draft = knobs.get("speculative_model")
    if draft is None or isinstance(draft, _core.ModelSpec):
        return knobs
    return {**knobs, "speculative_model": load_model(draft)}


def schema_markdown() -> str:
    """The model/GPU YAML schema as Markdown tables (generated from the C++ key table)."""
    return str(_core.schema_markdown())


@dataclass(frozen=True)
class Breakdown:
    """Per-rank memory breakdown; every term in bytes (`data` is the C++ JSON)."""

    data: dict[str, Any]

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    @property
    def weights_bytes(self) -> int:
        return int(self.data["weights_bytes"])

    @property
    def kv_bytes_per_token(self) -> int:
        return int(self.data["kv_bytes_per_token"])

    @property
    def kv_cache_bytes(self) -> int:
        return int(self.data["kv_cache_bytes"])

    @property
    def kv_tokens(self) -> int:
        return int(self.data["kv_tokens"])

    @property
    def outcome(self) -> str:
        return str(self.data["outcome"])


def breakdown(
    model: str | _core.ModelSpec = DEFAULT_MODEL,
    gpu: str | _core.GpuSpec = DEFAULT_GPU,
    *,
    num_gpus: int | None = None,
    memory_used_by_others_bytes: int = 0,
    host_ram_bytes: int = 0,
    **knobs: Any,
) -> Breakdown:
    """What vLLM's startup profiling will find for `model` on `gpu` with these engine knobs.

    Knobs use vLLM's names: tensor_parallel_size, pipeline_parallel_size, max_model_len,
    max_num_seqs, max_num_batched_tokens, gpu_memory_utilization, kv_cache_dtype, dtype,
    quantization, block_size, enforce_eager, engine_version, ...
    """
    spec = model if isinstance(model, _core.ModelSpec) else load_model(model)
    gpu_spec = gpu if isinstance(gpu, _core.GpuSpec) else load_gpu(gpu)
    knobs = _resolve_draft(knobs)
    data = _core.compute_breakdown(
        spec,
        gpu_spec,
        knobs,
        num_gpus=_gpus_for(num_gpus, knobs),
        memory_used_by_others_bytes=memory_used_by_others_bytes,
        host_ram_bytes=host_ram_bytes,
    )
    return Breakdown(data)


@dataclass(frozen=True)
class Plan:
    """The solver's answer: the largest safe knobs, why each binds, remedies, breakdown."""

    data: dict[str, Any]

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    @property
    def fits(self) -> bool:
        return bool(self.data["fits"])

    def to_vllm_args(self) -> str:
        """The `vllm serve` flag line (without the model)."""
        return str(self.data["vllm_args"])

    def to_llm_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for `vllm.LLM(model, **kwargs)`."""
        return dict(self.data["llm_kwargs"])

    def to_json(self) -> str:
        return json.dumps(self.data, indent=2)

    @property
    def breakdown(self) -> Breakdown:
        return Breakdown(self.data["breakdown"])


def plan(
    model: str | _core.ModelSpec = DEFAULT_MODEL,
    gpu: str | _core.GpuSpec = DEFAULT_GPU,
    *,
    num_gpus: int | None = None,
    memory_used_by_others_bytes: int = 0,
    host_ram_bytes: int = 0,
    context: int = 0,
    concurrency: int = 0,
    safety_margin_bytes: int | None = None,
    **pinned: Any,
) -> Plan:
    """Largest safe gpu_memory_utilization / max_model_len / max_num_seqs /
    max_num_batched_tokens for `model` on `gpu`; `pinned` knobs (vLLM names) are kept as given.
    """
    spec = model if isinstance(model, _core.ModelSpec) else load_model(model)
    gpu_spec = gpu if isinstance(gpu, _core.GpuSpec) else load_gpu(gpu)
    pinned = _resolve_draft(pinned)
    data = _core.solve(
        spec,
        gpu_spec,
        pinned,
        num_gpus=_gpus_for(num_gpus, pinned),
        memory_used_by_others_bytes=memory_used_by_others_bytes,
        host_ram_bytes=host_ram_bytes,
        target_context_tokens=context,
        target_concurrency=concurrency,
        safety_margin_bytes=-1 if safety_margin_bytes is None else safety_margin_bytes,
    )
    return Plan(data)


def sweep(
    model: str | _core.ModelSpec = DEFAULT_MODEL,
    gpu: str | _core.GpuSpec = DEFAULT_GPU,
    *,
    gpu_memory_utilization: list[float] | None = None,
    max_model_len: list[int] | None = None,
    max_num_seqs: list[int] | None = None,
    num_gpus: int | None = None,
    memory_used_by_others_bytes: int = 0,
    **knobs: Any,
) -> dict[str, list[Any]]:
    """Every combination of the listed utilizations, context lengths and sequence limits,
    evaluated in C++ in one call. Returns columns (lists of equal length): the grid values,
    kv_cache_bytes (worst rank), kv_tokens, max_concurrency and outcome ("rejected" when the
    engine would refuse the knobs outright)."""
    spec = model if isinstance(model, _core.ModelSpec) else load_model(model)
    gpu_spec = gpu if isinstance(gpu, _core.GpuSpec) else load_gpu(gpu)
    return dict(
        _core.sweep(
            spec,
            gpu_spec,
            _resolve_draft(knobs),
            list(gpu_memory_utilization or []),
            list(max_model_len or []),
            list(max_num_seqs or []),
            num_gpus=_gpus_for(num_gpus, knobs),
            memory_used_by_others_bytes=memory_used_by_others_bytes,
        )
    )
