"""Ollama as llama.cpp's front end: a Modelfile (`FROM`, `PARAMETER num_ctx/num_gpu/num_batch`)
and the server's environment (`OLLAMA_NUM_PARALLEL`, `OLLAMA_CONTEXT_LENGTH`,
`OLLAMA_KV_CACHE_TYPE`, `OLLAMA_FLASH_ATTENTION`, `OLLAMA_GPU_OVERHEAD`,
`OLLAMA_MAX_LOADED_MODELS`) become the llama.cpp launch Ollama's scheduler makes, which the
llama.cpp core plans; the answer comes back as a Modelfile and an env block. How Ollama maps
its settings is data in model_specs/ollama.yaml, each value with the Ollama source it is from."""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from . import _database, api, llamacpp
from ._resources import model_specs_file

_MIB = 1 << 20
_SPECS = "model_specs/ollama.yaml"
# Modelfile PARAMETERs with a memory effect; the others (temperature, stop, ...) pass unread.
_MEMORY_PARAMETERS = ("num_ctx", "num_gpu", "num_batch")


@functools.lru_cache(maxsize=1)
def rules() -> dict[str, Any]:
    """model_specs/ollama.yaml: Ollama's defaults and reservations, with their sources."""
    with Path(model_specs_file("ollama.yaml")).open(encoding="utf-8") as f:
        loaded: dict[str, Any] = yaml.safe_load(f)
    return loaded


def _integer(where: str, field: str, text: str, minimum: int) -> int:
    problem = f"{where}: not a value Ollama takes"
    try:
        value = int(text)
    except ValueError:
        raise _database.config_error(field, text, f"an integer >= {minimum}", problem) from None
    if value < minimum:
        raise _database.config_error(field, text, f"an integer >= {minimum}", problem)
    return value


def read_modelfile(path: str) -> dict[str, Any]:
    """`FROM` and the memory PARAMETERs of the Modelfile at `path`. Triple-quoted blocks
    (TEMPLATE, SYSTEM) are skipped; a PARAMETER without a value or with a bad number is an
    error naming the file, line and value."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise _database.config_error("Modelfile", path, "a readable text file", str(err)) from None
    found: dict[str, Any] = {}
    in_block = False
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if in_block:
            in_block = line.count('"""') % 2 == 0
            continue
        if line.count('"""') % 2 == 1:
            in_block = True
            continue
        words = line.split(None, 2)
        if not words or words[0].startswith("#"):
            continue
        where = f"{path}:{number}"
        instruction = words[0].upper()
        if instruction == "FROM" and len(words) >= 2:
            found["from"] = line.split(None, 1)[1].strip()
        elif instruction == "PARAMETER":
            if len(words) < 3:
                raise _database.config_error("PARAMETER", line, "PARAMETER NAME VALUE", where)
            name, value = words[1], words[2].strip()
            if name in _MEMORY_PARAMETERS:
                found[name] = _integer(where, name, value, -1 if name == "num_gpu" else 1)
    if "from" not in found:
        raise _database.config_error("FROM", None, "FROM <model.gguf>", f"{path} has no FROM")
    return found


def _env_value(env: Mapping[str, str], name: str) -> str:
    value = env.get(name, "").strip().strip("\"'")
    return value if value else str(rules()["env_defaults"][name])


def _flash_attention(env: Mapping[str, str]) -> str:
    value = _env_value(env, "OLLAMA_FLASH_ATTENTION").lower()
    if value == "auto":
        return "auto"
    if value in ("1", "t", "true"):
        return "on"
    if value in ("0", "f", "false"):
        return "off"
    raise _database.config_error(
        "OLLAMA_FLASH_ATTENTION", value, "1, true, 0, false (unset: auto)", "not a boolean"
    )


def llamacpp_launch(
    modelfile: Mapping[str, Any], env: Mapping[str, str] | None = None
) -> tuple[dict[str, Any], list[str]]:
    """The llama.cpp launch Ollama's runner makes for `modelfile` (read_modelfile's fields)
    under `env` (os.environ when None), and notes on what Ollama changed: llm/server.go
    NewLlamaServer's KvSize = num_ctx x OLLAMA_NUM_PARALLEL with num_batch <= num_ctx, and
    llama/llama.go NewContextParams' n_batch = num_batch x parallel, n_ubatch = num_batch."""
    env = os.environ if env is None else env
    defaults = rules()["parameter_defaults"]
    notes: list[str] = []
    parallel = _integer(
        "OLLAMA_NUM_PARALLEL", "OLLAMA_NUM_PARALLEL", _env_value(env, "OLLAMA_NUM_PARALLEL"), 1
    )
    num_ctx = int(
        modelfile.get("num_ctx")
        or _integer(
            "OLLAMA_CONTEXT_LENGTH",
            "OLLAMA_CONTEXT_LENGTH",
            _env_value(env, "OLLAMA_CONTEXT_LENGTH"),
            1,
        )
    )
    num_batch = min(int(modelfile.get("num_batch") or defaults["num_batch"]), num_ctx)
    flash = _flash_attention(env)
    cache = _env_value(env, "OLLAMA_KV_CACHE_TYPE").lower()
    if cache not in rules()["kv_cache_types"]:
        raise _database.config_error(
            "OLLAMA_KV_CACHE_TYPE", cache, ", ".join(rules()["kv_cache_types"]), "not a type"
        )
    if cache != "f16" and flash == "off":
        notes.append(f"OLLAMA_KV_CACHE_TYPE={cache} needs flash attention: Ollama uses f16")
        cache = "f16"
    launch: dict[str, Any] = {
        "ctx_size": num_ctx * parallel,
        "parallel": parallel,
        "batch_size": num_batch * parallel,
        "ubatch_size": num_batch,
        "flash_attn": flash,
        "cache_type_k": cache,
        "cache_type_v": cache,
    }
    num_gpu = int(modelfile.get("num_gpu", defaults["num_gpu"]))
    if num_gpu >= 0:
        launch["n_gpu_layers"] = num_gpu
    return launch, notes


def gpu_budget_bytes(gpu: str, env: Mapping[str, str] | None = None) -> int:
    """What Ollama lets the runner use on `gpu`: its total less the 457 MiB minimum the
    scheduler keeps free on CUDA/ROCm (discover/gpu.go) and OLLAMA_GPU_OVERHEAD."""
    env = os.environ if env is None else env
    overhead = _integer(
        "OLLAMA_GPU_OVERHEAD", "OLLAMA_GPU_OVERHEAD", _env_value(env, "OLLAMA_GPU_OVERHEAD"), 0
    )
    total = int(api.load_gpu(gpu).total_memory_bytes)
    return total - int(rules()["gpu_minimum_memory_mib"]) * _MIB - overhead


def plan(
    modelfile_path: str, gpu: str, env: Mapping[str, str] | None = None, model: str | None = None
) -> dict[str, Any]:
    """Plan an Ollama Modelfile + env on `gpu` through the llama.cpp core: the layers that fit
    (num_gpu), the largest num_ctx at that num_gpu, and the answer as a Modelfile and env block.
    `model` overrides the Modelfile's FROM (a path to the .gguf blob)."""
    env = os.environ if env is None else env
    modelfile = read_modelfile(modelfile_path)
    gguf = model or str(modelfile["from"])
    n_ctx_train = int(llamacpp.breakdown(gguf, ctx_size=256)["model"]["n_ctx_train"])
    if int(modelfile.get("num_ctx") or 0) > n_ctx_train:
        modelfile = {**modelfile, "num_ctx": n_ctx_train}  # NewLlamaServer's clamp
    launch, notes = llamacpp_launch(modelfile, env)
    budget = gpu_budget_bytes(gpu, env)
    result = llamacpp.plan(gguf, gpu_budget=budget, **launch)
    parallel = int(launch["parallel"])
    num_gpu = int(result["launch"]["n_gpu_layers"])
    max_num_ctx = int(result["max_ctx_size"]) // parallel
    result["ollama"] = {
        "num_ctx": int(launch["ctx_size"]) // parallel,
        "num_gpu": num_gpu,
        "num_batch": int(launch["ubatch_size"]),
        "max_num_ctx": max_num_ctx,
        "notes": notes + _loaded_models_note(env),
        "modelfile": modelfile_text(
            gguf, int(launch["ctx_size"]) // parallel, num_gpu, int(launch["ubatch_size"])
        ),
        "env": env_text(launch, env),
    }
    return result


def _loaded_models_note(env: Mapping[str, str]) -> list[str]:
    limit = _env_value(env, "OLLAMA_MAX_LOADED_MODELS")
    if limit in ("0", "1"):
        return []
    return [
        f"OLLAMA_MAX_LOADED_MODELS={limit}: other models loaded beside this one share the GPU; "
        + "this plan assumes it alone"
    ]


def modelfile_text(gguf: str, num_ctx: int, num_gpu: int, num_batch: int) -> str:
    """The answer as Modelfile lines."""
    return "\n".join(
        [
            f"FROM {gguf}",
            f"PARAMETER num_ctx {num_ctx}",
            f"PARAMETER num_gpu {num_gpu}",
            f"PARAMETER num_batch {num_batch}",
        ]
    )


def env_text(launch: Mapping[str, Any], env: Mapping[str, str]) -> str:
    """The answer as the server's environment."""
    flash = {"on": "1", "off": "0"}.get(str(launch["flash_attn"]))
    lines = [
        f"OLLAMA_NUM_PARALLEL={launch['parallel']}",
        f"OLLAMA_KV_CACHE_TYPE={launch['cache_type_k']}",
        f"OLLAMA_GPU_OVERHEAD={_env_value(env, 'OLLAMA_GPU_OVERHEAD')}",
    ]
    if flash is not None:
        lines.append(f"OLLAMA_FLASH_ATTENTION={flash}")
    return "\n".join(lines)


def main(words: list[str]) -> int:
    """`vramplan plan MODELFILE --engine ollama --gpu GPU [--env KEY=VALUE ...] [--model GGUF]`:
    the Ollama answer; the environment is this process's, with --env entries over it."""
    import argparse
    import json

    from . import engines
    from ._cli_args import EXIT_DOES_NOT_FIT, EXIT_OK, _print

    p = argparse.ArgumentParser(prog="vramplan --engine ollama", allow_abbrev=False)
    p.add_argument("command", choices=("plan",))
    p.add_argument("modelfile", help="an Ollama Modelfile (FROM a .gguf)")
    p.add_argument("--gpu", required=True, help="GPU name")
    p.add_argument("--model", help="the .gguf the Modelfile's FROM names, when it is a tag")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    args = p.parse_args(engines.without_engine(words))
    env = dict(os.environ)
    for entry in args.env:
        key, sep, value = entry.partition("=")
        if not sep or not key.startswith("OLLAMA_"):
            raise _database.config_error("--env", entry, "OLLAMA_NAME=VALUE", "not an assignment")
        env[key] = value
    result = plan(args.modelfile, args.gpu, env, args.model)
    o = result["ollama"]
    text = "\n".join(
        [result["verdict"], f"largest num_ctx at num_gpu {o['num_gpu']}: {o['max_num_ctx']}"]
        + [f"note: {n}" for n in o["notes"]]
        + ["", "# Modelfile", o["modelfile"], "", "# environment", o["env"]]
    )
    _print(json.dumps(result, indent=2) if args.json else text)
    return EXIT_OK if result["fits"] else EXIT_DOES_NOT_FIT
