"""`vramplan plan|breakdown MODEL --engine llamacpp` (alias `llama.cpp`; MODEL a .gguf file or a
database GGUF id such as `bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:Q4_K_M`): llama.cpp's own flag
spellings, long and short (`--ctx-size/-c`, `--cache-type-k/-ctk`, `--n-gpu-layers/-ngl`, ...),
and the answer in llama.cpp's words: buffers per device, the -ngl that fits, the launch line."""

from __future__ import annotations

import argparse
import json
from typing import Any

from . import _database, engines, llamacpp
from ._cli_args import EXIT_DOES_NOT_FIT, EXIT_OK, _print

COMMANDS = ("plan", "breakdown", "fit")
LOG_COMMANDS = ("diagnose", "validate")
_MIB = 1 << 20


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="vramplan --engine llamacpp", allow_abbrev=False)
    p.add_argument("command", choices=COMMANDS)
    p.add_argument("model", help="a GGUF file, or a database GGUF id (OWNER/REPO:QUANT)")
    p.add_argument("--gpu", help="GPU name (its memory less llama.cpp's 1024 MiB fit target)")
    p.add_argument("--gpu-budget-mib", type=int, help="GPU bytes llama.cpp may use, in MiB")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--max-gpus", type=int, default=8, help="fit: the most GPUs to try")
    p.add_argument("--split-mode", "-sm", choices=("layer", "none", "row"), default="layer")
    for field, flags in llamacpp.FLAGS.items():
        if field == "tensor_split":
            p.add_argument(*flags, dest=field)
        elif field in llamacpp.SWITCHES:
            p.add_argument(*flags, dest=field, action="store_true", default=None)
        elif field in ("cache_type_k", "cache_type_v", "n_gpu_layers"):
            p.add_argument(*flags, dest=field)
        elif field == "flash_attn":
            p.add_argument(*flags, dest=field, choices=("on", "off", "auto"))
        else:
            p.add_argument(*flags, dest=field, type=int)
    return p


def _launch(args: argparse.Namespace) -> dict[str, Any]:
    launch = {f: getattr(args, f) for f in llamacpp.FLAGS if getattr(args, f) is not None}
    if args.split_mode == "row":
        raise _database.config_error("--split-mode", "row", "layer, none", "not modelled yet")
    split = launch.pop("tensor_split", None)
    if split is not None and args.split_mode == "layer":
        try:
            launch["tensor_split"] = [float(share) for share in split.replace("/", ",").split(",")]
        except ValueError:
            raise _database.config_error(
                "--tensor-split", split, "shares like 3,1", "not a list of numbers"
            ) from None
    layers = launch.get("n_gpu_layers")
    if layers is not None and layers not in ("all", "auto"):
        try:
            launch["n_gpu_layers"] = int(layers)
        except ValueError:
            raise _database.config_error(
                "--n-gpu-layers", layers, "a count, all, auto", "not an -ngl value"
            ) from None
    return launch


def _mib(value: int) -> str:
    return f"{value / _MIB:.2f} MiB"


def _text(result: dict[str, Any]) -> str:
    m = result["memory"]
    lines = []
    if "verdict" in result:
        lines.append(result["verdict"])
    lines += [
        (
            f"n_ctx = {m['n_ctx']} (n_ctx_seq {m['n_ctx_seq']} x {m['n_stream']} streams), "
            f"flash_attn = {'on' if m['flash_attn'] else 'off'}, -ngl {m['n_gpu_layers']}: "
            f"{m['layers_on_gpu']} layers{' + output' if m['output_on_gpu'] else ''} on the GPU"
        ),
        f"CUDA0 model buffer size   = {_mib(m['gpu_model_bytes'])}",
        f"CUDA0 KV buffer size      = {_mib(m['gpu_kv_bytes'])}",
        f"CUDA0 compute buffer size ~ {_mib(m['gpu_compute_bytes'])} (approximation)",
        f"GPU total                 = {_mib(m['gpu_total_bytes'])}",
        (
            f"host model buffer size    = {_mib(m['host_model_bytes'])}"
            f" ({_mib(m['host_weight_bytes'])} of CPU-resident tensors)"
        ),
        f"CPU KV buffer size        = {_mib(m['host_kv_bytes'])}",
        f"host RAM held             ~ {_mib(m['host_ram_bytes'])}",
    ]
    lines += [f"note: {n}" for n in m["notes"]]
    if "launch_line" in result:
        lines.append(result["launch_line"])
    return "\n".join(lines)


def _fit_text(fitted: dict[str, Any]) -> str:
    lines = []
    for row in fitted["rows"]:
        state = "every layer" if row["all_layers_on_gpu"] else f"-ngl {row['n_gpu_layers']}"
        lines.append(
            f"{row['num_gpus']} x {fitted['gpu']}: {state}, fullest GPU "
            f"{_mib(row['max_gpu_total_bytes'])}"
        )
    best = next((r for r in fitted["rows"] if r["all_layers_on_gpu"]), None)
    lines.append(best["launch_line"] if best else "no count tried holds every layer")
    return "\n".join(lines)


def _log_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="vramplan --engine llamacpp", allow_abbrev=False)
    p.add_argument("command", choices=LOG_COMMANDS)
    p.add_argument("log", help="a llama.cpp (llama-server, llama-cli, Ollama runner) log")
    p.add_argument(
        "--model", help="validate: the GGUF (file or database id) the log loaded (model buffer)"
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    return p


def _diagnosis_text(result: dict[str, Any]) -> str:
    f, d = result["figures"], result["diagnosis"]
    lines = [f"llama.cpp {f['build'] or '(build not printed)'}: {f['outcome']}", d["summary"]]
    for kind in ("model", "kv", "compute"):
        for device, size in f[f"{kind}_buffers"].items():
            lines.append(f"  {device} {kind} buffer = {_mib(size)}")
    lines += [f"  fix: {r}" for r in d["remedies"]]
    return "\n".join(lines)


def _validation_text(result: dict[str, Any]) -> str:
    lines = []
    for row in result["rows"]:
        error = "n/a" if row["error_pct"] is None else f"{row['error_pct']:+.1f}%"
        kind = "exact rule" if row["exact"] else "approximation"
        lines.append(
            f"{row['device']} {row['buffer']:8s} log {_mib(row['log_bytes'])}, "
            f"plan {_mib(row['plan_bytes'])} ({error}, {kind})"
        )
    return "\n".join(lines) or "the log prints no single-GPU buffer to compare"


def _log_main(words: list[str]) -> int:
    args = _log_parser().parse_args(words)
    if args.command == "diagnose":
        result = llamacpp.diagnose(args.log)
        _print(json.dumps(result, indent=2) if args.json else _diagnosis_text(result))
        return EXIT_DOES_NOT_FIT if result["diagnosis"]["buffer"] else EXIT_OK
    result = llamacpp.validate(args.log, args.model)
    _print(json.dumps(result, indent=2) if args.json else _validation_text(result))
    return EXIT_OK


def main(words: list[str]) -> int:
    words = engines.without_engine(words)
    if words and words[0] in LOG_COMMANDS:
        return _log_main(words)
    args = _parser().parse_args(words)
    launch = _launch(args)
    budget = None if args.gpu_budget_mib is None else args.gpu_budget_mib * _MIB
    if args.command == "fit":
        fitted = llamacpp.fit_gpus(args.model, args.gpu, args.max_gpus, budget, **launch)
        _print(json.dumps(fitted, indent=2) if args.json else _fit_text(fitted))
        return EXIT_OK if fitted["num_gpus"] else EXIT_DOES_NOT_FIT
    if args.command == "breakdown":
        result = llamacpp.breakdown(args.model, args.gpu, **launch)
    else:
        result = llamacpp.plan(args.model, args.gpu, gpu_budget=budget, **launch)
    _print(json.dumps(result, indent=2) if args.json else _text(result))
    return EXIT_OK if result.get("fits", True) else EXIT_DOES_NOT_FIT
