"""`vramplan --engine sglang` commands: plan, breakdown, flags, sweep, check, diagnose and validate for
SGLang launches, under SGLang's flags (`--mem-fraction-static`, `--tp-size`, ...). cli.main
hands a command here when it names `--engine sglang`, or when `check` is given an SGLang launch
line (`python -m sglang.launch_server ...`)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from . import _core, api, engines, sglang
from ._cli_args import (
    EXIT_DOES_NOT_FIT,
    EXIT_OK,
    _emit_sweep,
    _finite_float,
    _int64,
    _list_of,
    _note,
    _print,
)
from ._quoting import shell_join
from ._units import GIB

COMMANDS = ("plan", "breakdown", "flags", "sweep", "check", "diagnose", "validate")
_ALIASES = {"tp_size": ["--tp"], "pp_size": ["--pp"], "dp_size": ["--dp"]}


def is_sglang_line(words: list[str]) -> bool:
    """Whether a launch line starts SGLang: `python -m sglang.launch_server` or `sglang serve`,
    after any `VAR=value` / `env` prefix or `docker run ... IMAGE` (the whole line as one quoted
    word too)."""
    if len(words) == 1:
        words = words[0].split()
    for i, word in enumerate(words):
        if word in ("sglang.launch_server", "sglang.launch_server.py"):
            return True
        if word.rpartition("/")[2] == "sglang" and words[i + 1 : i + 2] == ["serve"]:
            return True
    return False


def _sglang_flag_for(flag: str) -> str:
    """SGLang's flag for a vLLM flag (`--gpu-memory-utilization` -> `--mem-fraction-static`),
    or the list of SGLang's flags."""
    name = flag.lstrip("-").partition("=")[0].replace("-", "_")
    equivalent = _core.sglang_equivalent_knob(name)
    by_name = {k["name"]: k["flag"] for k in sglang.knobs()}
    if equivalent:
        return f"SGLang's {by_name.get(equivalent) or equivalent}"
    return ", ".join(f for f in by_name.values() if f)


def _add_knobs(p: argparse.ArgumentParser, *, grid: bool = False) -> None:
    """SGLang's knob flags; `grid`: the sweep's knobs take comma-separated lists."""
    listed = {name for name, _ in sglang.SWEEP_KNOBS} if grid else set()
    group = p.add_argument_group("SGLang knobs (ServerArgs names; defaults from sglang.yaml)")
    for knob in sglang.knobs():
        name = knob["name"]
        flag = knob["flag"] or "--" + name.replace("_", "-")
        kwargs: dict[str, Any] = {"dest": name, "default": None}
        if knob["type"] == "bytes":
            # Planner-only byte counts take GiB on the command line, as vLLM's do.
            flag = "--" + name.removesuffix("_bytes").replace("_", "-") + "-gb"
            knob = knob | {"type": "float", "unit": "GiB"}
        kwargs["help"] = (
            f"{knob['help']} [{knob['unit'] or knob['type']}; default: {knob['default']}]"
        )
        kwargs["help"] = kwargs["help"].replace("%", "%%")
        if knob["type"] == "bool":
            kwargs["action"] = "store_true"
        else:
            kwargs["type"] = {"int": _int64(flag), "float": _finite_float(flag)}.get(
                knob["type"], str
            )
            if name in listed:
                kwargs["type"] = _list_of(kwargs["type"], name)
                kwargs["help"] = "comma-separated values to sweep: " + kwargs["help"]
                kwargs["metavar"] = "V[,V...]"
            if knob["choices"]:
                kwargs["choices"] = knob["choices"]
        group.add_argument(flag, *_ALIASES.get(name, []), **kwargs)


def _knobs(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for knob in sglang.knobs():
        value = getattr(args, knob["name"], None)
        if value is None or value is False:
            continue
        out[knob["name"]] = round(value * GIB) if knob["type"] == "bytes" else value
    return out


def _add_common(p: argparse.ArgumentParser, *, model: bool = True) -> None:
    if model:
        p.add_argument("model", nargs="?", default=api.DEFAULT_MODEL, help="model id or path")
    p.add_argument("--gpu", default=api.DEFAULT_GPU, help="GPU id or alias")
    p.add_argument("--json", action="store_true", help="print JSON")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vramplan --engine sglang",
        description=f"SGLang launches (rules read up to SGLang {sglang.newest_known_version()})",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (
        ("plan", "the largest safe SGLang knobs and the launch line"),
        ("breakdown", "per-rank memory in SGLang's terms"),
        ("flags", "only the planned launch_server flags"),
    ):
        p = sub.add_parser(name, help=text)
        _add_common(p)
        _add_knobs(p)
        if name == "flags":
            p.add_argument(
                "--format",
                choices=("args", "shell", "json"),
                default="args",
                help="args: the flags after the model; shell: the whole command; json: "
                "sglang.Engine keyword arguments",
            )
    p = sub.add_parser("sweep", help="a grid of SGLang launches as a table, CSV or Parquet")
    _add_common(p)
    _add_knobs(p, grid=True)
    p.add_argument("--out", help="write the rows to FILE.csv or FILE.parquet")
    p = sub.add_parser("check", help="judge: check -- python -m sglang.launch_server ...")
    _add_common(p, model=False)
    p.add_argument("command_line", nargs=argparse.REMAINDER)
    p = sub.add_parser("diagnose", help="name the cause of a failed SGLang launch")
    p.add_argument("logfile", help="the SGLang log; '-' for stdin")
    p.add_argument("--json", action="store_true", help="print JSON")
    p = sub.add_parser("validate", help="an SGLang log against the plan, per term")
    p.add_argument("logfile", help="the SGLang startup log")
    p.add_argument("--model", help="model id (default: the log's model_path)")
    p.add_argument("--gpu", required=True, help="GPU id (SGLang's log prints no CUDA total)")
    p.add_argument("--sglang-version", help="the release that ran (default: the newest read)")
    p.add_argument("--json", action="store_true", help="print JSON")
    return parser


def _resolve(model: str, gpu: str) -> tuple[Any, Any]:
    return api.load_model(model), api.load_gpu(gpu)


def _show(as_json: bool, data: dict[str, Any], renderer: str, *, reading: bool = False) -> None:
    """`data` as JSON, or drawn by the `_render` function named `renderer` (the one that draws
    vLLM's breakdown table; rich is loaded only for a terminal)."""
    if as_json:
        _print(json.dumps(data, indent=2))
        return
    from . import _render

    getattr(_render, renderer)(_render.console(reading=reading), data)


def _cmd_breakdown(args: argparse.Namespace) -> int:
    spec, card = _resolve(args.model, args.gpu)
    result = sglang.breakdown(spec, card, model_path=args.model, **_knobs(args))
    _show(args.json, result.data, "sglang_breakdown")
    return EXIT_OK if result.started else EXIT_DOES_NOT_FIT


def _cmd_plan(args: argparse.Namespace) -> int:
    spec, card = _resolve(args.model, args.gpu)
    result = sglang.plan(spec, card, model_path=args.model, **_knobs(args))
    _show(args.json, result.data, "sglang_plan")
    return EXIT_OK if result.fits else EXIT_DOES_NOT_FIT


def _cmd_flags(args: argparse.Namespace) -> int:
    spec, card = _resolve(args.model, args.gpu)
    result = sglang.plan(spec, card, model_path=args.model, **_knobs(args))
    if not result.fits:
        _note("no mem_fraction_static starts this launch: nothing to print")
        return EXIT_DOES_NOT_FIT
    if args.format == "shell":
        _print(result.launch_line)
    elif args.format == "json":
        _print(json.dumps(result.to_engine_kwargs(), indent=2))
    else:
        _print(shell_join(result.to_argv()))
    return EXIT_OK


def _cmd_sweep(args: argparse.Namespace) -> int:

    knobs = _knobs(args)
    frame = api.sweep(args.model, args.gpu, engine="sglang", **knobs)
    if not _emit_sweep(frame, args.out, args.json):
        _print(frame.to_string(index=False))
    return EXIT_OK


def _cmd_check(args: argparse.Namespace) -> int:
    words = list(args.command_line)
    if words and words[0] == "--":
        words = words[1:]
    if len(words) == 1:  # the whole line as one quoted word
        words = words[0].split()
    launch = sglang.parse_command(words)
    if launch.unmodelled:
        _note("not modelled (judged as if unset): " + " ".join(launch.unmodelled))
    spec, card = _resolve(launch.model_path, args.gpu)
    result = sglang.breakdown(spec, card, model_path=launch.model_path, **launch.knobs)
    data = result.to_dict() | {"unmodelled_flags": launch.unmodelled}
    _show(args.json, data, "sglang_breakdown", reading=True)
    return EXIT_OK if result.started else EXIT_DOES_NOT_FIT


def _cmd_diagnose(args: argparse.Namespace) -> int:
    from .diagnose import diagnose, format_text, read_text

    result = diagnose(read_text(args.logfile, what="log"), engine="sglang")
    _print(json.dumps(result.data, indent=2) if args.json else format_text(result).rstrip("\n"))
    return EXIT_OK


def _cmd_validate(args: argparse.Namespace) -> int:
    from .validate import format_sglang_validation, validate_sglang_log

    result = validate_sglang_log(
        args.logfile, model=args.model, gpu=args.gpu, sglang_version=args.sglang_version
    )
    _print(json.dumps(result, indent=2) if args.json else format_sglang_validation(result))
    return EXIT_OK


def main(words: list[str]) -> int:
    """Runs an SGLang command (`words` as cli.main got them, `--engine sglang` included)."""
    parser = build_parser()
    words = engines.without_engine(words)
    if words and words[0] == "check":
        args = parser.parse_args(words)
    else:
        args, unknown = parser.parse_known_args(words)
        if unknown:
            raise api.config_error(
                unknown[0], " ".join(unknown), _sglang_flag_for(unknown[0]), "not an SGLang flag"
            )
    handlers = {
        "plan": _cmd_plan,
        "breakdown": _cmd_breakdown,
        "flags": _cmd_flags,
        "sweep": _cmd_sweep,
        "check": _cmd_check,
        "diagnose": _cmd_diagnose,
        "validate": _cmd_validate,
    }
    return handlers[str(args.command)](args)
