"""llama.cpp (`llama-server`) as vramplan's third engine: the buffers one launch allocates over a
GGUF file (model, KV and compute per device, host RAM) and the solver for the largest `-ngl` and
the smallest `--n-cpu-moe` that fit a GPU. Every number comes from the core
(`_core.llamacpp_memory` / `_core.llamacpp_solve`); this module resolves the GPU budget and
names the launch fields as llama.cpp's flags do (dashes as underscores)."""

from __future__ import annotations

from typing import Any

from . import _core, _database, api

# llama.cpp's flags with a memory effect, by the launch field each sets: long spelling first,
# then the short ones (common/arg.cpp).
FLAGS: dict[str, tuple[str, ...]] = {
    "ctx_size": ("--ctx-size", "-c"),
    "cache_type_k": ("--cache-type-k", "-ctk"),
    "cache_type_v": ("--cache-type-v", "-ctv"),
    "flash_attn": ("--flash-attn", "-fa"),
    "n_gpu_layers": ("--n-gpu-layers", "--gpu-layers", "-ngl"),
    "parallel": ("--parallel", "-np"),
    "n_cpu_moe": ("--n-cpu-moe", "-ncmoe"),
    "batch_size": ("--batch-size", "-b"),
    "ubatch_size": ("--ubatch-size", "-ub"),
    "kv_unified": ("--kv-unified", "-kvu"),
    "no_mmap": ("--no-mmap",),
    "mlock": ("--mlock",),
    "swa_full": ("--swa-full",),
    "no_kv_offload": ("--no-kv-offload", "-nkvo"),
}
SWITCHES = frozenset({"kv_unified", "no_mmap", "mlock", "swa_full", "no_kv_offload"})

_NOT_YET = "llama.cpp plans one GGUF on one GPU so far (breakdown and plan)"


def _gguf_path(model: object) -> str:
    if not isinstance(model, str) or not model.endswith(".gguf"):
        raise _database.config_error(
            "model", model, "a path to a .gguf file", "llama.cpp plans GGUF files"
        )
    return model


def gpu_budget_bytes(gpu: str | _core.GpuSpec | None, budget_bytes: int | None = None) -> int:
    """The bytes llama.cpp may use on the GPU: `budget_bytes` when given, else the card's total
    less llama.cpp's --fit-target margin (1024 MiB, which also has to hold the CUDA context)."""
    if budget_bytes is not None:
        return int(budget_bytes)
    if gpu is None:
        raise _database.config_error("gpu", None, "a GPU name or a budget", "no GPU given")
    card = gpu if isinstance(gpu, _core.GpuSpec) else api.load_gpu(gpu)
    return int(card.total_memory_bytes) - int(_core.LLAMACPP_DEFAULTS["fit_target_bytes"])


def breakdown(model: str, gpu: object = None, **launch: Any) -> dict[str, Any]:
    """llama.cpp's buffers for `launch` over the GGUF `model`, as they are (no solving)."""
    result: dict[str, Any] = _core.llamacpp_memory(_gguf_path(model), launch)
    return result


def plan(
    model: str,
    gpu: str | _core.GpuSpec | None = None,
    *,
    gpu_budget: int | None = None,
    **launch: Any,
) -> dict[str, Any]:
    """The largest -ngl (and smallest --n-cpu-moe) whose GPU buffers fit `gpu` (or
    `gpu_budget` bytes), what stays on the CPU and the host RAM; -ngl or --n-cpu-moe given in
    `launch` are kept and checked."""
    budget = gpu_budget_bytes(gpu, gpu_budget)
    result: dict[str, Any] = _core.llamacpp_solve(_gguf_path(model), launch, budget)
    result["launch_line"] = launch_line(model, result["launch"])
    return result


def launch_line(model: str, launch: dict[str, Any]) -> str:
    """`llama-server -m MODEL` with the launch's memory flags in llama.cpp's long spelling."""
    words = ["llama-server", "-m", model]
    for field, value in launch.items():
        flag = FLAGS[field][0]
        if field in SWITCHES:
            words += [flag] if value else []
        else:
            words += [flag, str(value)]
    return " ".join(words)


def not_yet(*args: Any, **kwargs: Any) -> Any:
    """sweep and fit for llama.cpp: not built yet, an error that says so."""
    raise _database.config_error("engine", "llamacpp", "breakdown, plan", _NOT_YET)
