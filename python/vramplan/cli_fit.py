"""The `vramplan fit` and `vramplan colocate` subcommands (registered by _cli_args.build_parser, built
on _cli_args like the other commands)."""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _cli_args, _core, _io, api, engines
from ._units import GIB, gib_text

if TYPE_CHECKING:
    from .colocate import Instance

# Options a text answer shows unless --top says otherwise.
DEFAULT_TOP = 20
PROGRESS_AFTER_S = 1.0


class _Progress:
    """Launches done / in all on stderr, once the work has taken longer than a second and
    only on a terminal."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.start = time.perf_counter()
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        if not sys.stderr.isatty() or time.perf_counter() - self.start < PROGRESS_AFTER_S:
            return
        self.shown = True
        print(f"\rvramplan: {self.what}: {done}/{total}", end="", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.shown:
            print(file=sys.stderr)


def _ints(what: str) -> Any:
    def parse(text: str) -> list[int]:
        values = [_cli_args._positive_int(what)(part) for part in text.split(",") if part.strip()]
        if not values:
            msg = f"{what} must be a positive integer or a comma-separated list (got {text!r})"
            raise argparse.ArgumentTypeError(msg)
        return values

    return parse


def _cell(value: Any, fmt: str = "{}") -> str:
    """A table cell: "-" where a row has no value (a missing key, NaN)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return fmt.format(value)


def _refuse(flags: dict[str, bool], where: str) -> None:
    """Launch flags that mean nothing here are refused, never ignored."""
    given = [flag for flag, is_given in flags.items() if is_given]
    if given:
        msg = f"{where}: {', '.join(given)} cannot be used here"
        raise _core.ConfigError(msg)


def _cmd_fit(args: argparse.Namespace) -> int:
    from .fit import DEFAULT_REVERSE_CONTEXT, fit_model_rows, fit_rows

    knobs = _cli_args._knobs(args)
    progress = _Progress("fit")
    host_ram_bytes = int((args.host_ram_gib or 0) * GIB)
    if args.model is None and args.gpu is None:
        msg = "fit: give a MODEL (which GPUs serve it) or --gpu G (which models fit it)"
        raise _core.ConfigError(msg)
    if args.model is not None and args.gpu is not None:
        msg = (
            f"fit: MODEL and --gpu {args.gpu}: to search one GPU type for MODEL use --gpus "
            f"{args.gpu}; to list the models that fit {args.gpu} leave MODEL out"
        )
        raise _core.ConfigError(msg)
    try:
        if args.model is None:
            _refuse(
                {"--revision": args.revision is not None, "--offline": bool(args.offline)},
                "fit --gpu (the models come from the database and the local cache)",
            )
            others = args.used_by_others_bytes
            gpu = args.gpu
            interconnect = args.interconnect
            if gpu == "auto":
                from .probe import auto_gpu

                found = auto_gpu()
                gpu = found.gpu_id
                others = others or found.memory_used_by_others_bytes
                host_ram_bytes = host_ram_bytes or found.host_ram_bytes
                interconnect = interconnect or found.interconnect
            rows = fit_model_rows(
                api.load_gpu(
                    gpu, total_memory_bytes=args.gpu_total_bytes, interconnect=interconnect
                ),
                num_gpus=args.num_gpus or 1,
                context=args.context or DEFAULT_REVERSE_CONTEXT,
                concurrency=args.concurrency or 1,
                hf_cache=not args.no_hf_cache,
                engine=args.engine,
                memory_used_by_others_bytes=others,
                host_ram_bytes=host_ram_bytes,
                progress=progress,
                **knobs,
            )
        else:
            _refuse(
                {
                    "--gpu-total-bytes": args.gpu_total_bytes is not None,
                    "--interconnect": args.interconnect is not None,
                },
                "fit MODEL (every GPU type keeps its own total)",
            )
            for name in ("context", "concurrency"):
                if getattr(args, name) is None:
                    msg = f"fit MODEL: --{name} is required (the target to serve)"
                    raise _core.ConfigError(msg)
            rows = fit_rows(
                args.model,
                context=args.context,
                concurrency=args.concurrency,
                gpus=args.gpus,
                max_gpus=args.max_gpus,
                num_gpus=args.num_gpus,
                prices=args.prices,
                engine=args.engine,
                memory_used_by_others_bytes=args.used_by_others_bytes,
                host_ram_bytes=host_ram_bytes,
                revision=args.revision,
                offline=args.offline,
                progress=progress,
                **knobs,
            )
    finally:
        progress.close()
    _emit_fit(rows, args)
    fits = any(row["fits"] for row in rows)
    return _cli_args.EXIT_OK if fits else _cli_args.EXIT_DOES_NOT_FIT


def _emit_fit(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    """fit's rows to --out (a DataFrame, pandas loaded for it), as JSON, or as a table."""
    from .fit import (
        FIT_COLUMNS,
        INTEGER_COLUMNS,
        MODEL_COLUMNS,
        MODEL_INTEGER_COLUMNS,
        frame_of,
        records_json,
    )

    # The rows hold vLLM's names; fit(engine=...)'s DataFrame and JSON the engine's.
    names = engines.get(args.engine).fit_columns if args.model is not None else {}
    columns = MODEL_COLUMNS if args.model is None else FIT_COLUMNS
    if args.out:
        integers = MODEL_INTEGER_COLUMNS if args.model is None else INTEGER_COLUMNS
        frame = frame_of(rows, columns, integers).rename(columns=dict(names))
        _cli_args._write_frame(frame, Path(args.out))
        _cli_args._note(f"wrote {len(frame)} rows to {args.out}")
    elif args.json:
        _cli_args._print(records_json(rows, columns, names))
    elif args.model is None:
        _print_models(rows, args)
    else:
        _print_options(rows, args)


def _shown(rows: list[dict[str, Any]], top: int) -> tuple[list[dict[str, Any]], int]:
    fitting = [row for row in rows if row["fits"]]
    shown = fitting if top == 0 else fitting[:top]
    return shown, len(fitting)


def _print_options(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    from . import _render  # rich, loaded only for terminal output

    out = _render.console()
    shown, fitting = _shown(rows, args.top)
    columns = ["#", "gpu", "gpus", "TP", "PP", "DP", "$/hour", "max conc", "max ctx", "headroom"]
    cells = [
        [
            str(rank),
            str(r["gpu"]),
            str(r["num_gpus"]),
            str(r["tensor_parallel_size"]),
            str(r["pipeline_parallel_size"]),
            str(r["data_parallel_size"]),
            _cell(r.get("usd_per_hour"), "{:.2f}"),
            _cell(r.get("max_concurrency")),
            _cell(r.get("max_context")),
            _cell(r.get("kv_headroom"), "{:.2f}x"),
        ]
        for rank, r in enumerate(shown, start=1)
    ]
    title = (
        f"{args.model}: {args.concurrency} x {args.context} tokens "
        f"(max conc: sequences of {args.context} tokens at once; max ctx: longest context "
        f"for {args.concurrency})"
    )
    out.print(
        _render.table(out, columns, cells, title=title, right=[c for c in columns if c != "gpu"])
    )
    for rank, r in enumerate(shown, start=1):
        out.print(f"{rank}: {r['launch']}", soft_wrap=True)
    invalid = sum(str(r["verdict"]).startswith("invalid split") for r in rows)
    _cli_args._note(
        f"{fitting} of {len(rows)} options fit ({invalid} splits the model cannot take); "
        f"showing {len(shown)} (--top 0 for all, --json or --out for every row)"
    )


def _print_models(models: list[dict[str, Any]], args: argparse.Namespace) -> None:
    from . import _render  # rich, loaded only for terminal output
    from .fit import DEFAULT_REVERSE_CONTEXT

    out = _render.console()
    shown, fitting = _shown(models, args.top)
    context = args.context or DEFAULT_REVERSE_CONTEXT
    columns = ["model", "TP", "PP", "max ctx", f"max conc @ {context}", "util", "source"]
    rows = [
        [
            str(r["model"]),
            _cell(r.get("tensor_parallel_size")),
            _cell(r.get("pipeline_parallel_size")),
            _cell(r.get("max_context")),
            _cell(r.get("max_concurrency")),
            _cell(r.get("gpu_memory_utilization"), "{:.2f}"),
            str(r["source"]).split(":")[0],
        ]
        for r in shown
    ]
    gpus = args.num_gpus or 1
    title = f"models that fit {gpus} x {args.gpu} ({args.concurrency or 1} x {context} tokens)"
    right = ["TP", "PP", "max ctx", f"max conc @ {context}", "util"]
    out.print(_render.table(out, columns, rows, title=title, right=right))
    _cli_args._note(
        f"{fitting} of {len(models)} models fit; showing {len(shown)} (--top 0 for all)"
    )


def _instance_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="vramplan colocate INSTANCE", add_help=False)
    _cli_args._add_launch_args(p)
    p.set_defaults(gpu=None, used_by_others_bytes=None)
    return p


def _instance(text: str) -> Instance:
    """'MODEL' or 'MODEL --vllm-flag value ...' (one quoted argument per instance)."""
    from .colocate import Instance

    try:
        words = shlex.split(text)
    except ValueError as err:
        msg = f"colocate: instance {text!r}: {err}"
        raise _core.ConfigError(msg) from None
    parser = _instance_parser()
    try:
        parsed, rest = parser.parse_known_args(words)
    except SystemExit:
        msg = f"colocate: instance {text!r}: bad flags (vLLM's own names, see vramplan plan -h)"
        raise _core.ConfigError(msg) from None
    if not words or words[0].startswith("-"):
        msg = f"colocate: instance {text!r}: expected MODEL [--flag value ...]"
        raise _core.ConfigError(msg)
    if rest:
        msg = (
            f"colocate: instance {text!r}: unknown flags {' '.join(rest)} (vLLM's own names, "
            "see vramplan plan -h)"
        )
        raise _core.ConfigError(msg)
    _refuse(
        {
            "--gpu": parsed.gpu is not None,
            "--num-gpus": parsed.num_gpus is not None,
            "--gpu-total-bytes": parsed.gpu_total_bytes is not None,
            "--interconnect": parsed.interconnect is not None,
            "--used-by-others-bytes": parsed.used_by_others_bytes is not None,
            "--host-ram-gib": parsed.host_ram_gib is not None,
            "--revision": parsed.revision is not None,
            "--offline": bool(parsed.offline),
            "--json": parsed.json,
        },
        f"colocate: instance {text!r} (GPUs, memory and output belong to the whole colocation)",
    )
    return Instance(parsed.model, _cli_args._knobs(parsed))


def _cmd_colocate(args: argparse.Namespace) -> int:
    from .colocate import colocate

    instances = [_instance(text) for text in args.instances]
    margin = None if args.safety_margin_gib is None else int(args.safety_margin_gib * GIB)
    result = colocate(
        instances,
        args.gpu,
        num_gpus=args.num_gpus,
        context=args.context,
        concurrency=args.concurrency,
        memory_used_by_others_bytes=args.used_by_others_bytes,
        engine=args.engine,
        **({} if margin is None else {"safety_margin_bytes": margin}),
    )
    if args.compose and result.fits:
        _io.write_text_atomic(args.compose, result.compose(), what="--compose file")
    if args.json:
        data = result.to_dict()
        if result.fits:
            data["compose"] = result.compose()
        _cli_args._print(json.dumps(data, indent=2))
        return _cli_args.EXIT_OK if result.fits else _cli_args.EXIT_DOES_NOT_FIT
    from . import _render  # rich, loaded only for terminal output

    out = _render.console()
    gib = gib_text
    title = (
        f"{len(instances)} instances on {args.num_gpus} x {result.gpu.id} "
        f"({gib(result.gpu.total_memory_bytes)} each): "
        + ("fits" if result.fits else "does not fit")
    )
    columns = [
        "start",
        "model",
        "util",
        "max_model_len",
        "max_num_seqs",
        "KV",
        "KV tokens",
        "holds",
    ]
    rows = [
        [
            _cell(r["start"]),
            r["model"],
            f"{r['gpu_memory_utilization']:.2f}",
            str(r["max_model_len"]),
            str(r["max_num_seqs"]),
            gib(r["kv_cache_bytes"]),
            str(r["kv_tokens"]),
            gib(r["resident_bytes"]),
        ]
        for r in result.rows()
    ]
    out.print(
        _render.table(out, columns, rows, title=title, right=[c for c in columns if c != "model"])
    )
    if not result.fits:
        out.print(f"why: {result.reason}", soft_wrap=True)
        return _cli_args.EXIT_DOES_NOT_FIT
    out.print("start in this order, each after the one before answers /health:")
    for r in result.rows():
        out.print(f"{r['start']}: {r['launch']}", soft_wrap=True)
    for order, verdict in result.checked_orders.items():
        names = " -> ".join(result.instances[i].instance.model for i in order)
        out.print(f"order {names}: {verdict}", soft_wrap=True)
    if args.compose:
        _cli_args._note(f"wrote the docker compose file to {args.compose}")
    return _cli_args.EXIT_OK


_FIT_HELP = "which GPUs, how many and which split serve MODEL; or, with --gpu, which models fit"
_COLOCATE_HELP = "several instances on the same GPUs: utilizations, start order, compose file"


def add_fit(sub: Any, knobs: bool = True) -> None:
    """Register `fit` on the CLI's subparsers (its knob flags when `knobs`; see cli.build_parser)."""
    from .fit import DEFAULT_MAX_GPUS

    p = sub.add_parser("fit", help=_FIT_HELP)
    _cli_args._add_launch_args(p, knobs=knobs)
    p.set_defaults(model=None, gpu=None, func=_cmd_fit)
    for action in p._actions:  # no default model or GPU here: which is given picks the question
        if action.dest == "model":
            action.help = "the model to place (database id, alias, path or HF id)"
        elif action.dest == "gpu":
            action.help = "without MODEL: list the models that fit this GPU ('auto': this machine)"
    p.add_argument("--context", type=_cli_args._positive_int("context"), help="tokens per sequence")
    p.add_argument(
        "--concurrency", type=_cli_args._positive_int("concurrency"), help="sequences held at once"
    )
    p.add_argument("--gpus", default="all", help="'all' or comma-separated GPU ids to search")
    p.add_argument(
        "--max-gpus",
        type=_cli_args._positive_int("max_gpus"),
        default=DEFAULT_MAX_GPUS,
        help=f"most GPUs per option (default {DEFAULT_MAX_GPUS})",
    )
    p.add_argument("--prices", help="CSV with header gpu,usd_per_hour (dollars per GPU-hour)")
    p.add_argument(
        "--engine", default="vllm", help="serving engine: vllm, or sglang (fit MODEL only)"
    )
    p.add_argument("--out", help="write every option to FILE.csv or FILE.parquet")
    p.add_argument(
        "--top", type=int, default=DEFAULT_TOP, help=f"options shown (default {DEFAULT_TOP}, 0 all)"
    )
    p.add_argument(
        "--no-hf-cache", action="store_true", help="with --gpu: the database only, not the HF cache"
    )


def add_colocate(sub: Any) -> None:
    """Register `colocate` on the CLI's subparsers."""
    p = sub.add_parser("colocate", help=_COLOCATE_HELP)
    p.add_argument(
        "instances",
        nargs="+",
        metavar="INSTANCE",
        help="MODEL, or 'MODEL --vllm-flag value ...' quoted as one argument",
    )
    p.add_argument("--gpu", default=api.DEFAULT_GPU, help=f"GPU id (default {api.DEFAULT_GPU})")
    p.add_argument(
        "--num-gpus",
        type=_cli_args._positive_int("num_gpus"),
        default=1,
        help="GPUs the instances share; each spans all of them (TP = N unless pinned)",
    )
    p.add_argument(
        "--context",
        type=_ints("context"),
        help="context per instance (one value or one per instance; default the model's maximum)",
    )
    p.add_argument(
        "--concurrency",
        type=_ints("concurrency"),
        help="sequences per instance (one value or one per instance; default 1)",
    )
    p.add_argument(
        "--used-by-others-bytes",
        type=int,
        default=0,
        help="GPU memory used by processes outside these instances, per GPU",
    )
    p.add_argument(
        "--safety-margin-gib",
        type=float,
        help=f"GPU memory kept free (default {_core.DEFAULT_SAFETY_MARGIN_BYTES / GIB:g})",
    )
    p.add_argument("--engine", default="vllm", help="serving engine: vllm (SGLang is refused)")
    p.add_argument("--compose", metavar="FILE", help="write a docker compose file here")
    p.add_argument("--json", action="store_true", help="print JSON (with the compose file)")
    p.set_defaults(func=_cmd_colocate)
