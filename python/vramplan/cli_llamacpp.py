"""`vramplan plan|breakdown MODEL.gguf --engine llamacpp` (alias `llama.cpp`): llama.cpp's own flag
spellings, long and short (`--ctx-size/-c`, `--cache-type-k/-ctk`, `--n-gpu-layers/-ngl`, ...),
and the answer in llama.cpp's words: buffers per device, the -ngl that fits, the launch line."""

from __future__ import annotations

import argparse
import json
from typing import Any

from . import _database, engines, llamacpp
from ._cli_args import EXIT_DOES_NOT_FIT, EXIT_OK, _print

COMMANDS = ("plan", "breakdown")
_MIB = 1 << 20


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="vramplan --engine llamacpp", allow_abbrev=False)
    p.add_argument("command", choices=COMMANDS)
    p.add_argument("model", help="a GGUF file")
    p.add_argument("--gpu", help="GPU name (its memory less llama.cpp's 1024 MiB fit target)")
    p.add_argument("--gpu-budget-mib", type=int, help="GPU bytes llama.cpp may use, in MiB")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    for field, flags in llamacpp.FLAGS.items():
        if field in llamacpp.SWITCHES:
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


def main(words: list[str]) -> int:
    args = _parser().parse_args(engines.without_engine(words))
    launch = _launch(args)
    budget = None if args.gpu_budget_mib is None else args.gpu_budget_mib * _MIB
    if args.command == "breakdown":
        result = llamacpp.breakdown(args.model, args.gpu, **launch)
    else:
        result = llamacpp.plan(args.model, args.gpu, gpu_budget=budget, **launch)
    _print(json.dumps(result, indent=2) if args.json else _text(result))
    return EXIT_OK if result.get("fits", True) else EXIT_DOES_NOT_FIT
