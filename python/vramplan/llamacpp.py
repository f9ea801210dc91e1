"""llama.cpp (`llama-server`) as vramplan's third engine: the buffers one launch allocates over a
GGUF file or a database GGUF entry (model, KV and compute per device, host RAM) and the solver
for the largest `-ngl` and the smallest `--n-cpu-moe` that fit a GPU. Every number comes from
the core (`_core.llamacpp_memory` / `_core.llamacpp_solve`); this module resolves the model and
the GPU budget and names the launch fields as llama.cpp's flags do (dashes as underscores)."""

from __future__ import annotations

from pathlib import Path
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
    "tensor_split": ("--tensor-split", "-ts"),
}
SWITCHES = frozenset({"kv_unified", "no_mmap", "mlock", "swa_full", "no_kv_offload"})

_NOT_YET = "llama.cpp plans one GGUF on one GPU so far (breakdown, plan, diagnose, validate)"


def _gguf_ids() -> list[str]:
    """The database entries stored as GGUF, by id."""
    db = _database.spec_database()
    return [i for i in db.model_ids() if db.model(i).to_dict()["quantization"] == "gguf"]


def _gguf_model(model: object) -> str | _core.ModelSpec:
    """What llama.cpp loads: a .gguf file (its path, read as the file is), else a database entry
    stored as GGUF (its ModelSpec: the core builds the tensor list from its shapes and per-role
    types, and the plan notes that approximation). A .gguf path that is a file wins over a
    database alias of the same spelling."""
    if isinstance(model, _core.ModelSpec):
        spec: _core.ModelSpec | None = model
    elif isinstance(model, str) and model.endswith(".gguf") and Path(model).is_file():
        return model
    elif isinstance(model, str) and _database.spec_database().has_model(model):
        spec = _database.spec_database().model(model)
    elif isinstance(model, str) and model.endswith(".gguf"):
        return model  # the core names the missing file
    else:
        spec = None
    if spec is None or spec.to_dict()["quantization"] != "gguf":
        allowed = "a path to a .gguf file, or a database GGUF entry: " + ", ".join(_gguf_ids())
        raise _database.config_error("model", model, allowed, "llama.cpp plans GGUF files")
    return spec


def _model_words(model: str | _core.ModelSpec) -> list[str]:
    """How llama-server is told the model: `-m FILE`, or `-hf OWNER/REPO:QUANT` (llama.cpp's own
    download-from-Hugging-Face spelling, which the database's GGUF ids follow)."""
    if isinstance(model, str):
        return ["-m", model]
    return ["-hf", model.id]


def gpu_budget_bytes(gpu: str | _core.GpuSpec | None, budget_bytes: int | None = None) -> int:
    """The bytes llama.cpp may use on the GPU: `budget_bytes` when given, else the card's total
    less llama.cpp's --fit-target margin (1024 MiB, which also has to hold the CUDA context)."""
    if budget_bytes is not None:
        return int(budget_bytes)
    if gpu is None:
        raise _database.config_error("gpu", None, "a GPU name or a budget", "no GPU given")
    card = gpu if isinstance(gpu, _core.GpuSpec) else api.load_gpu(gpu)
    return int(card.total_memory_bytes) - int(_core.LLAMACPP_DEFAULTS["fit_target_bytes"])


def breakdown(model: str | _core.ModelSpec, gpu: object = None, **launch: Any) -> dict[str, Any]:
    """llama.cpp's buffers for `launch` over `model` (a .gguf path, or a database GGUF id such as
    `bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:Q4_K_M`), as they are (no solving)."""
    result: dict[str, Any] = _core.llamacpp_memory(_gguf_model(model), launch)
    return result


def plan(
    model: str | _core.ModelSpec,
    gpu: str | _core.GpuSpec | None = None,
    *,
    gpu_budget: int | None = None,
    **launch: Any,
) -> dict[str, Any]:
    """The largest -ngl (and smallest --n-cpu-moe) whose GPU buffers fit `gpu` (or
    `gpu_budget` bytes), what stays on the CPU and the host RAM; -ngl or --n-cpu-moe given in
    `launch` are kept and checked. `model` is a .gguf path or a database GGUF id (its model
    buffers then approximate, said in `memory.notes`)."""
    budget = gpu_budget_bytes(gpu, gpu_budget)
    source = _gguf_model(model)
    result: dict[str, Any] = _core.llamacpp_solve(source, launch, budget)
    result["launch_line"] = launch_line(source, result["launch"])
    return result


def launch_line(model: str | _core.ModelSpec, launch: dict[str, Any]) -> str:
    """`llama-server -m MODEL.gguf` (or `-hf ID` for a database entry) with the launch's memory
    flags in llama.cpp's long spelling."""
    words = ["llama-server", *_model_words(model)]
    for field, value in launch.items():
        flag = FLAGS[field][0]
        if field in SWITCHES:
            words += [flag] if value else []
        elif field == "tensor_split":
            words += [flag, ",".join(f"{share:g}" for share in value)] if value else []
        else:
            words += [flag, str(value)]
    return " ".join(words)


def not_yet(*args: Any, **kwargs: Any) -> Any:
    """sweep and fit for llama.cpp: not built yet, an error that says so."""
    raise _database.config_error("engine", "llamacpp", "breakdown, plan", _NOT_YET)


# Buffer names of a GPU in llama.cpp's logs (CUDA0, ROCm0, MTL0 and MTL0_Mapped, Vulkan0);
# CUDA_Host is pinned host memory.
_GPU_BUFFERS = ("CUDA", "ROCm", "MTL", "Metal", "Vulkan")
# The plan's GPU figure for each buffer a llama.cpp log prints per device.
_PLANNED = {"model": "gpu_model_bytes", "kv": "gpu_kv_bytes", "compute": "gpu_compute_bytes"}


def diagnose(log_path: str) -> dict[str, Any]:
    """What a llama.cpp startup log allocated per device and, for an out-of-memory start, the
    buffer that did not fit (model, kv, compute) and the remedies in llama.cpp's flags."""
    result: dict[str, Any] = _core.llamacpp_read_log(log_path)
    return result


def validate(log_path: str, model: str | _core.ModelSpec | None = None) -> dict[str, Any]:
    """The buffers a llama.cpp log prints on its (single) GPU against vramplan's plan for the
    launch the log resolved: over the GGUF `model` when given (model bytes included), else over
    the log's own hyper-parameters (KV and compute only). Each row: the log's bytes, the plan's,
    and the plan's error in percent of the log's."""
    read = diagnose(log_path)
    figures = read["figures"]
    planned = _core.llamacpp_log_memory(log_path, _gguf_model(model) if model else "")
    rows = []
    for buffer, field in _PLANNED.items():
        printed = figures[f"{buffer}_buffers"]
        gpus = [d for d in printed if d.startswith(_GPU_BUFFERS) and not d.endswith("_Host")]
        if len(gpus) != 1 or (buffer == "model" and not model):
            continue
        logged = int(printed[gpus[0]])
        plan_bytes = int(planned["memory"][field])
        error = None if logged == 0 else 100.0 * (plan_bytes - logged) / logged
        rows.append(
            {
                "buffer": buffer,
                "device": gpus[0],
                "log_bytes": logged,
                "plan_bytes": plan_bytes,
                "error_pct": error,
                "exact": field in planned["memory"]["exact"],
            }
        )
    return {"figures": figures, "launch": planned["launch"], "rows": rows}


def fit_gpus(
    model: str | _core.ModelSpec,
    gpu: str,
    max_gpus: int = 8,
    gpu_budget: int | None = None,
    **launch: Any,
) -> dict[str, Any]:
    """The fewest `gpu` cards (-sm layer, an even -ts) that hold every layer of `model` under
    `launch`, and for each count tried the -ngl that fits: llama.cpp's answer to "how many
    GPUs", with the per-GPU budget as `plan` takes it."""
    if max_gpus < 1:
        raise _database.config_error("max_gpus", max_gpus, "1 or more", "no GPU to plan")
    rows = []
    for count in range(1, max_gpus + 1):
        split = {"tensor_split": [1] * count} if count > 1 else {}
        result = plan(model, gpu, gpu_budget=gpu_budget, **launch, **split)
        every_layer = result["launch"]["n_gpu_layers"] == result["model"]["n_layer"] + 1
        rows.append(
            {
                "num_gpus": count,
                "n_gpu_layers": result["launch"]["n_gpu_layers"],
                "fits": result["fits"],
                "all_layers_on_gpu": every_layer and result["fits"],
                "max_gpu_total_bytes": result["memory"]["max_gpu_total_bytes"],
                "launch_line": result["launch_line"],
            }
        )
        if every_layer and result["fits"]:
            break
    best = next((r for r in rows if r["all_layers_on_gpu"]), None)
    return {"gpu": gpu, "rows": rows, "num_gpus": best["num_gpus"] if best else None}
