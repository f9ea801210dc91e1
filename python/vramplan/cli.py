"""The `vramplan` command: argument parsing and printing on top of the bindings."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from . import api

GIB = 1 << 30


def _gib(value: int) -> str:
    return f"{value / GIB:8.2f} GiB"


# Short aliases people type for the two parallelism flags.
_ALIASES = {"tensor_parallel_size": ["--tp"], "pipeline_parallel_size": ["--pp"]}


def _knob_flag(knob: dict[str, Any]) -> str:
    """The CLI flag of a knob: vLLM's own where it has one of its own, else the knob's name."""
    if knob["flag"] and knob["kwarg"] != "speculative_config":
        return str(knob["flag"])
    return "--" + str(knob["name"]).replace("_", "-")


def _knob_help(knob: dict[str, Any]) -> str:
    text = str(knob["help"])
    if knob["unit"] and knob["type"] != "bytes":
        text += f" [{knob['unit']}]"
    if knob["type"] == "bytes" and knob["flag_unit_bytes"] == GIB:
        text += f" [GiB, {knob['unit'].replace('bytes ', '')}]"
    return f"{text}; default: {knob['default']}"


def _add_launch_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "model",
        nargs="?",
        default=api.DEFAULT_MODEL,
        help=f"database id, HF alias or spec file (default {api.DEFAULT_MODEL})",
    )
    p.add_argument(
        "--gpu", default=api.DEFAULT_GPU, help=f"GPU id or alias (default {api.DEFAULT_GPU})"
    )
    p.add_argument("--gpu-total-bytes", type=int, help="override the GPU's total memory (bytes)")
    p.add_argument("--num-gpus", type=int, default=None, help="GPUs on the node")
    knobs = p.add_argument_group("engine knobs (vLLM's names; help from vramplan.KNOBS)")
    for knob in api.KNOBS:
        flags = [_knob_flag(knob), *_ALIASES.get(knob["name"], [])]
        kwargs: dict[str, Any] = {"dest": knob["name"], "default": None, "help": _knob_help(knob)}
        if knob["type"] == "bool":
            kwargs["action"] = "store_true"
        else:
            gib_flag = knob["type"] == "bytes" and knob["flag_unit_bytes"] == GIB
            kwargs["type"] = {"int": int, "float": float, "bytes": float if gib_flag else int}.get(
                knob["type"], str
            )
            if knob["choices"] and knob["type"] == "str":
                kwargs["choices"] = knob["choices"]
        knobs.add_argument(*flags, **kwargs)
    p.add_argument("--host-ram-gib", type=float, help="host RAM of the node (GiB)")
    p.add_argument(
        "--used-by-others-bytes",
        type=int,
        default=0,
        help="GPU memory already used by other processes, per GPU",
    )
    p.add_argument("--json", action="store_true", help="print JSON")


def _knobs(args: argparse.Namespace) -> dict[str, Any]:
    """The knobs given on the command line, in the units the core takes (bytes)."""
    out: dict[str, Any] = {}
    for knob in api.KNOBS:
        value = getattr(args, knob["name"], None)
        if value is None:
            continue
        if knob["type"] == "bytes" and knob["flag_unit_bytes"] != 1:
            value = round(value * knob["flag_unit_bytes"])
        out[knob["name"]] = value
    return out


def _launch_gpus(args: argparse.Namespace) -> int:
    tp = args.tensor_parallel_size or 1
    pp = args.pipeline_parallel_size or 1
    return int(args.num_gpus or tp * pp)


def _print_breakdown(data: dict[str, Any]) -> None:
    cfg = data["config"]
    print(
        f"{data['model']} on {data['gpu']}  (vLLM {data['engine_version']}, {data['engine_era']})"
    )
    print(
        f"  TP={cfg['tensor_parallel_size']} PP={cfg['pipeline_parallel_size']}  "
        f"gpu_memory_utilization={cfg['gpu_memory_utilization']:.2f}  "
        f"max_model_len={cfg['max_model_len']}  max_num_seqs={cfg['max_num_seqs']}  "
        f"max_num_batched_tokens={cfg['max_num_batched_tokens']}  dtype={cfg['dtype']}  "
        f"quantization={cfg['quantization']}"
    )
    for rank in data["ranks"]:
        print(
            f"\n  per GPU rank (pipeline stage {rank['pipeline_rank']}): "
            f"total {_gib(rank['total_memory_bytes']).strip()}, "
            f"budget {_gib(rank['requested_memory_bytes']).strip()}"
        )
        for term in rank["terms"]:
            print(f"    {term['name']:<16}{_gib(term['bytes'])}   {term['provenance']}")
        print(
            f"    {'kv per token':<16}{rank['kv_bytes_per_token']:>8} B     "
            f"block {rank['block_size']} tokens, {rank['num_blocks']} blocks"
        )
    print(f"\n  GPU KV cache size: {data['kv_tokens']:,} tokens")
    print(
        f"  Maximum concurrency for {cfg['max_model_len']:,} tokens per request: "
        f"{data['max_concurrency']:.2f}x"
    )
    host = data["host"]
    print(
        f"  host RAM required: {_gib(host['required_bytes']).strip()} "
        f"(+ {_gib(host['page_cache_bytes']).strip()} reclaimable page cache)"
    )
    print(f"  outcome: {data['outcome']}")
    for message in data["messages"]:
        print(f"    {message}")


def _cmd_breakdown(args: argparse.Namespace) -> int:
    gpu = api.load_gpu(args.gpu, total_memory_bytes=args.gpu_total_bytes)
    result = api.breakdown(
        args.model,
        gpu,
        num_gpus=_launch_gpus(args),
        memory_used_by_others_bytes=args.used_by_others_bytes,
        host_ram_bytes=int((args.host_ram_gib or 0) * GIB),
        **_knobs(args),
    )
    if args.json:
        print(result.to_json())
    else:
        _print_breakdown(result.to_dict())
    return 0


def _plan_from_args(args: argparse.Namespace) -> api.Plan:
    gpu = api.load_gpu(args.gpu, total_memory_bytes=args.gpu_total_bytes)
    margin = None if args.safety_margin_gib is None else int(args.safety_margin_gib * GIB)
    return api.plan(
        args.model,
        gpu,
        num_gpus=_launch_gpus(args),
        memory_used_by_others_bytes=args.used_by_others_bytes,
        host_ram_bytes=int((args.host_ram_gib or 0) * GIB),
        context=args.context or 0,
        concurrency=args.concurrency or 0,
        safety_margin_bytes=margin,
        **_knobs(args),
    )


def _cmd_plan(args: argparse.Namespace) -> int:
    result = _plan_from_args(args)
    if args.json:
        print(result.to_json())
        return 0 if result.fits else 1
    data = result.to_dict()
    _print_breakdown(data["breakdown"])
    print(f"\n  verdict: {data['verdict']}")
    print(f"  safety margin kept free per GPU: {data['safety_margin_bytes'] / GIB:.2f} GiB")
    for knob, why in data["binding"].items():
        print(f"  {knob:<24}{data[knob]!s:<10} <- {why}")
    print(f"\n  vllm serve {data['breakdown']['model']} {data['vllm_args']}")
    if data["remedies"]:
        print("\n  remedies (cheapest first):")
        for remedy in data["remedies"]:
            mark = "fits" if remedy["fits"] else "not enough alone"
            print(f"    {remedy['change']:<46} [{mark}] {remedy['detail']}")
            print(f"      vllm serve {data['breakdown']['model']} {remedy['flags']}")
    return 0 if result.fits else 1


def _cmd_flags(args: argparse.Namespace) -> int:
    result = _plan_from_args(args)
    if not result.fits:
        # Nothing on stdout: `vllm serve M $(vramplan flags ...)` must not start a launch
        # that cannot fit. The reason and the cheapest remedy that fits go to stderr.
        print(f"vramplan: {result.verdict}", file=sys.stderr)
        for remedy in result.remedies:
            if remedy.fits:
                print(f"vramplan: remedy: {remedy.change}: {remedy.flags}", file=sys.stderr)
                break
        return 1
    print(result.to_vllm_args())
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    from . import validate

    if args.records:
        replays = validate.replay_file(args.records)
        if args.json:
            for replay in replays:
                print(json.dumps(replay.to_json()))
        else:
            print(validate.format_table(replays))
        return 0
    if not args.logfile:
        msg = "give a vLLM startup LOGFILE or --records FILE.jsonl"
        raise api._core.ConfigError(msg)
    path = Path(args.logfile)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        msg = f"{path}: cannot read the log ({err.strerror})"
        raise api._core.ConfigError(msg) from err
    replay = validate.replay_log(text, log_id=path.name, model=args.model, gpu=args.gpu)
    if args.json:
        print(json.dumps(replay.to_json(), indent=2))
    else:
        print(validate.format_table([replay]))
    return 0 if replay.unsupported is None else 1


def _cmd_models(args: argparse.Namespace) -> int:
    ids = api.models()
    print(json.dumps(ids, indent=2) if args.json else "\n".join(ids))
    return 0


def _cmd_gpus(args: argparse.Namespace) -> int:
    db = api.spec_database()
    rows = [db.gpu(g).to_dict() for g in api.gpus()]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for row in rows:
            print(f"{row['id']:<14} {row['total_memory_bytes'] / GIB:7.2f} GiB  {row['name']}")
    return 0


def _cmd_inspect(args: argparse.Namespace) -> int:
    info = api.inspect_checkpoint(args.path)
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(f"{info['model']}  ({info['kind']}, {len(info['files'])} files read)")
    if info["checkpoint_bytes"]:
        diff = info["checkpoint_bytes"] - info["spec_checkpoint_bytes"]
        print(f"  checkpoint tensors: {info['checkpoint_bytes']:,} bytes (exact, from the headers)")
        print(
            f"  spec formula:       {info['spec_checkpoint_bytes']:,} bytes ({diff:+,} unexplained)"
        )
    return 0


def _cmd_schema(_: argparse.Namespace) -> int:
    print(api.schema_markdown(), end="")
    return 0


# --- diagnose and probe -----------------------------------------------------------------


def _cmd_diagnose(args: argparse.Namespace) -> int:
    from .diagnose import diagnose, format_text, read_text

    if args.logfile == "-" and args.dmesg == "-":
        msg = "only one of LOG and --dmesg can be read from standard input ('-')"
        raise api._core.ConfigError(msg)
    result = diagnose(
        read_text(args.logfile, what="log"),
        dmesg=None if args.dmesg is None else read_text(args.dmesg, what="kernel log"),
        model=args.model,
        gpu=args.gpu,
        host_ram_bytes=int((args.host_ram_gib or 0) * GIB),
    )
    if args.json:
        print(json.dumps(result.data, indent=2))
    else:
        print(format_text(result), end="")
    return 0


def _cmd_probe(args: argparse.Namespace) -> int:
    from .probe import probe

    found = probe(nvidia_smi_csv=args.nvidia_smi_csv)
    if args.json:
        print(json.dumps(found.to_json(), indent=2))
        return 0
    print(f"source: {found.source}")
    for gpu in found.gpus:
        mapped = gpu.database_id or "not in the database"
        print(
            f"  GPU {gpu.index}: {gpu.name} ({mapped})  total {_gib(gpu.total_bytes).strip()}, "
            f"used {_gib(gpu.used_bytes).strip()}, free {_gib(gpu.free_bytes).strip()}"
        )
        for process in gpu.processes or []:
            used = "?" if process.used_bytes is None else _gib(process.used_bytes).strip()
            print(f"    pid {process.pid}: {used}")
    host = found.host
    if host.mem_available_bytes is not None:
        print(f"  host MemAvailable: {_gib(host.mem_available_bytes).strip()}")
    if host.cgroup_limit_bytes is not None:
        print(
            f"  memory cgroup limit: {_gib(host.cgroup_limit_bytes).strip()} "
            f"({host.cgroup_file}), in use {_gib(host.cgroup_usage_bytes or 0).strip()}"
        )
    if host.usable_bytes is not None:
        print(f"  host RAM usable by a launch: {_gib(host.usable_bytes).strip()}")
    return 0


def _add_diagnose_and_probe(sub: Any) -> None:
    p = sub.add_parser("diagnose", help="name the cause of a failed launch and the fixing flags")
    p.add_argument("logfile", help="the vLLM log (or a traceback / OOM excerpt); '-' for stdin")
    p.add_argument("--dmesg", help="a dmesg / journalctl -k excerpt; '-' for stdin")
    p.add_argument("--model", help="model id or path when the log names a local path")
    p.add_argument("--gpu", help="GPU id (default: from the total memory the log prints)")
    p.add_argument("--host-ram-gib", type=float, help="host RAM of the node (GiB)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_diagnose)
    p = sub.add_parser("probe", help="this machine's GPUs (NVML / nvidia-smi) and host RAM")
    p.add_argument("--nvidia-smi-csv", help="saved nvidia-smi --query-gpu CSV output (MiB)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_probe)


def _add_calibrate(sub: Any) -> None:
    """`vramplan calibrate LOG... | --records FILE`: fit an engine row's constants to measured
    startups of one GPU and vLLM version, print each figure's error before and after, and write
    the profile YAML (`--out`)."""
    from .calibrate import Profile, calibrate

    def run(args: argparse.Namespace) -> int:
        start = Profile.load(args.profile) if args.profile else None
        fitted = calibrate(
            *args.logs,
            records=args.records,
            ids=args.ids.split(",") if args.ids else None,
            model=args.model,
            gpu=args.gpu,
            terms=args.terms.split(",") if args.terms else None,
            held_out=args.held_out,
            profile=start,
        )
        if args.json:
            report = {
                "engine_version": fitted.engine_version,
                "gpu": fitted.gpu,
                "fitted_on": fitted.fitted_on,
                "condition_number": fitted.condition_number,
                "constants": fitted.constants,
                "errors": fitted.errors,
            }
            print(json.dumps(report, indent=2))
        else:
            print(fitted.format_report())
        if args.out:
            fitted.save(args.out)
            if not args.json:
                print(f"\nwrote {args.out}")
        return 0

    p = sub.add_parser("calibrate", help="fit the engine's constants to your own startup logs")
    p.add_argument("logs", nargs="*", help="vLLM startup logs of one GPU and vLLM version")
    p.add_argument("--records", help="measured records (shared/measured format, JSONL)")
    p.add_argument("--ids", help="comma-separated record ids to fit on")
    p.add_argument(
        "--model", help="model id when a log names a local path; with --records, a filter"
    )
    p.add_argument("--gpu", help="GPU id the logs ran on; with --records, a filter")
    p.add_argument(
        "--terms",
        help="comma-separated: context, non_torch, activation, cudagraph or constant names "
        "(default: every constant the launches identify)",
    )
    p.add_argument(
        "--held-out",
        action="append",
        default=[],
        metavar="LOG_OR_ID",
        help="a log or record id to predict before and after, not fitted on (repeatable)",
    )
    p.add_argument("--profile", metavar="PROFILE.yaml", help="start from this profile")
    p.add_argument("--out", metavar="PROFILE.yaml", help="write the fitted profile here")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vramplan", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("breakdown", help="per-rank memory breakdown for one launch")
    _add_launch_args(p)
    p.set_defaults(func=_cmd_breakdown)
    for name, func, text in (
        ("plan", _cmd_plan, "solve for the largest safe flags"),
        ("flags", _cmd_flags, "print only the `vllm serve` flag line"),
    ):
        p = sub.add_parser(name, help=text)
        _add_launch_args(p)
        p.add_argument("--context", type=int, help="context length to serve (tokens)")
        p.add_argument("--concurrency", type=int, help="sequences of that context to hold at once")
        p.add_argument("--safety-margin-gib", type=float, help="GPU memory kept free (default 0.5)")
        p.set_defaults(func=func)
    p = sub.add_parser("validate", help="replay measured startups and compare per term")
    p.add_argument("logfile", nargs="?", help="a vLLM startup log: predict the same launch")
    p.add_argument("--records", help="records in shared/measured/README.md format (JSONL)")
    p.add_argument("--model", help="model id to plan when the log names a local path")
    p.add_argument("--gpu", help="GPU id (default: from the total memory the log prints)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_validate)
    p = sub.add_parser("models", help="list model ids")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_models)
    p = sub.add_parser("gpus", help="list GPUs with their CUDA-reported totals")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_gpus)
    p = sub.add_parser("inspect", help="what a model path holds: files, exact checkpoint bytes")
    p.add_argument("path", help="config.json, checkpoint folder or HF cache entry")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_inspect)
    p = sub.add_parser("schema", help="print the model/GPU YAML schema as Markdown")
    p.set_defaults(func=_cmd_schema)
    _add_diagnose_and_probe(sub)
    _add_calibrate(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except ValueError as err:  # vramplan.Error subclasses ValueError: bad input, not a crash
        print(f"vramplan: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
