"""What every `vramplan` command shares: the launch arguments (vLLM's flags, from the knob
registry), the knobs they give, and the output helpers (stdout for scripts, stderr notes for
people, --quiet / --verbose). cli.py and cli_fit.py build their commands on this module."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import _core, _io, api
from ._quoting import visible
from ._units import GIB

EXIT_OK = 0


EXIT_DOES_NOT_FIT = 1


EXIT_BAD_INPUT = 2


EXIT_INTERRUPTED = 130


EXIT_INTERNAL = 70  # EX_SOFTWARE: an exception that is a bug in vramplan, not bad input


EXIT_OUTPUT = 74  # EX_IOERR: standard output refuses what is written (a full disk)


EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a writer whose pipe closed


# Short aliases people type for the two parallelism flags.
_ALIASES = {"tensor_parallel_size": ["--tp"], "pipeline_parallel_size": ["--pp"]}


# The knobs `sweep` takes as comma-separated lists: the knob table's sweep axes.
_GRID_KNOBS = tuple(str(k["name"]) for k in _core.KNOBS if k["sweep_axis"])


def _knob_flag(knob: dict[str, Any]) -> str:
    """The CLI flag of a knob: vLLM's own where it has one of its own, else the knob's name,
    whose `_bytes` becomes `_gb` where the flag takes GiB (as vLLM's --cpu-offload-gb)."""
    if knob["flag"] and knob["kwarg"] != "speculative_config":
        return str(knob["flag"])
    name = str(knob["name"])
    if knob["type"] == "bytes" and knob["flag_unit_bytes"] == GIB:
        name = name.removesuffix("_bytes") + "_gb"
    return "--" + name.replace("_", "-")


def _knob_help(knob: dict[str, Any]) -> str:
    text = str(knob["help"])
    if knob["unit"] and knob["type"] != "bytes":
        text += f" [{knob['unit']}]"
    if knob["type"] == "bytes" and knob["flag_unit_bytes"] == GIB:
        text += f" [GiB, {knob['unit'].replace('bytes ', '')}]"
    return f"{text}; default: {knob['default']}".replace("%", "%%")


def _positive_int(what: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            msg = f"{what} must be a positive integer (got {text!r})"
            raise argparse.ArgumentTypeError(msg) from None
        if value < 1:
            msg = f"{what} must be a positive integer (got {value})"
            raise argparse.ArgumentTypeError(msg)
        return value

    parse.__name__ = what
    return parse


def _finite_float(flag: str) -> Callable[[str], float]:
    """A float flag: inf, nan and numbers past 2^53 are refused naming the flag."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            msg = f"{flag} must be a number (got {text[:80]!r})"
            raise argparse.ArgumentTypeError(msg) from None
        if not math.isfinite(value) or abs(value) > 2.0**53:
            msg = f"{flag} must be a finite number of at most 2^53 (got {text[:80]!r})"
            raise argparse.ArgumentTypeError(msg)
        return value

    parse.__name__ = flag
    return parse


def _int64(flag: str) -> Callable[[str], int]:
    """An integer flag: values a 64-bit integer cannot hold are refused naming the flag."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            msg = f"{flag} must be an integer (got {text[:80]!r})"
            raise argparse.ArgumentTypeError(msg) from None
        if not -(2**63) <= value < 2**63:
            msg = f"{flag} must fit a 64-bit integer (got {text[:80]!r})"
            raise argparse.ArgumentTypeError(msg)
        return value

    parse.__name__ = flag
    return parse


def _context(text: str) -> int | str:
    if text == "auto":
        return text
    try:
        return _positive_int("context")(text)
    except argparse.ArgumentTypeError:
        msg = f"context must be a positive integer or 'auto' (got {text!r})"
        raise argparse.ArgumentTypeError(msg) from None


def _list_of(kind: Callable[[str], Any], what: str) -> Callable[[str], list[Any]]:
    def parse(text: str) -> list[Any]:
        try:
            return [kind(part) for part in text.split(",") if part.strip()]
        except ValueError:
            msg = f"{what} must be a comma-separated list of numbers (got {text!r})"
            raise argparse.ArgumentTypeError(msg) from None

    return parse


def _add_launch_args(
    p: argparse.ArgumentParser, *, grid: bool = False, model: bool = True, knobs: bool = True
) -> None:
    """The launch's arguments: model, GPU, node and, with `knobs`, a flag per engine knob
    (`knobs=False` for the subcommands a run does not parse: building every subcommand's
    60 knob flags was a quarter of a CLI start)."""
    if model:
        p.add_argument(
            "model",
            nargs="?",
            default=api.DEFAULT_MODEL,
            help=f"database id, HF alias, spec file, config.json, checkpoint folder or HF cache "
            f"entry (default {api.DEFAULT_MODEL})",
        )
    p.add_argument(
        "--gpu",
        default=api.DEFAULT_GPU,
        help=f"GPU id or alias, or 'auto' to probe this machine (default {api.DEFAULT_GPU})",
    )
    p.add_argument(
        "--gpu-total-bytes",
        type=_int64("--gpu-total-bytes"),
        help="override the GPU's total memory (bytes)",
    )
    p.add_argument(
        "--interconnect",
        choices=api.INTERCONNECTS,
        default=None,
        help="how the GPUs of a TP >= 2 launch talk (default: the database's; a card that may "
        "have NVLink, or one not in the database, is charged NVLink's NCCL buffers)",
    )
    p.add_argument(
        "--num-gpus",
        type=_positive_int("num_gpus"),
        default=None,
        help="GPUs on the node; without --tp/--pp the planner picks the smallest split that fits",
    )
    p.add_argument("--revision", help="branch, tag or commit of a Hugging Face model")
    p.add_argument(
        "--offline", action="store_true", default=None, help="never ask the Hugging Face Hub"
    )
    group = p.add_argument_group("engine knobs (vLLM's names; help from vramplan.KNOBS)")
    for knob in api.KNOBS if knobs else []:
        flags = [_knob_flag(knob), *_ALIASES.get(knob["name"], [])]
        kwargs: dict[str, Any] = {"dest": knob["name"], "default": None, "help": _knob_help(knob)}
        if knob["type"] == "bool":
            # --name / --no-name, unset by default (vLLM's own BooleanOptionalAction): a knob
            # such as enable_chunked_prefill has a release default in both directions.
            kwargs["action"] = argparse.BooleanOptionalAction
        else:
            gib_flag = knob["type"] == "bytes" and knob["flag_unit_bytes"] == GIB
            flag = flags[0]
            kind = {
                "int": _int64(flag),
                "float": _finite_float(flag),
                "bytes": _finite_float(flag) if gib_flag else _int64(flag),
            }.get(knob["type"], str)
            if grid and knob["name"] in _GRID_KNOBS:
                kwargs["type"] = _list_of(kind, knob["name"])
                kwargs["help"] = "comma-separated values to sweep: " + kwargs["help"]
                kwargs["metavar"] = "V[,V...]"
            else:
                kwargs["type"] = kind
            if knob["choices"] and knob["type"] == "str":
                kwargs["choices"] = knob["choices"]
        group.add_argument(*flags, **kwargs)
    p.add_argument(
        "--profile",
        help="a calibration profile (vramplan calibrate --out PROFILE.yaml) over the version's row",
    )
    p.add_argument(
        "--host-ram-gib", type=_finite_float("--host-ram-gib"), help="host RAM of the node (GiB)"
    )
    p.add_argument(
        "--used-by-others-bytes",
        type=_int64("--used-by-others-bytes"),
        default=0,
        help="GPU memory already used by other processes, per GPU",
    )
    p.add_argument("--json", action="store_true", help="print JSON")


def _engine_version(args: argparse.Namespace) -> str | None:
    return getattr(args, "engine_version", None)


def _vllm_flags(args: argparse.Namespace) -> dict[str, Any]:
    """Knobs from the vLLM flags vramplan has no option of its own for (any EngineArgs name of
    the release planned for); the ones without a memory effect are named once on stderr."""
    from .launch import environment_for, parse_flags, passthrough_words, to_knobs

    extra = list(getattr(args, "vllm_flags", None) or [])
    version = _engine_version(args)
    # Planning for a node described by the flags: this shell's CUDA_VISIBLE_DEVICES is not it.
    env = environment_for({}, devices=False)
    given = parse_flags(extra, version=version)
    read = to_knobs(given, env=env, version=version)
    _note_ignored(read)
    args.passthrough = passthrough_words(given, [*read.no_memory_effect, *read.unmodelled])
    if read.num_gpus and getattr(args, "num_gpus", None) is None:
        args.num_gpus = read.num_gpus
    return read.knobs


def _note_ignored(read: Any) -> None:
    from .launch import flag_of

    if read.no_memory_effect:
        _info("no memory effect: " + " ".join(flag_of(n) for n in read.no_memory_effect))
    if read.unmodelled:
        names = " ".join(flag_of(n) if "." not in n else n for n in read.unmodelled)
        _note(f"memory effect not modelled (planned as if unset): {names}")
    for key, value in read.env_used.items():
        _info(f"from the environment: {key}={value}")
    if read.env_ignored:
        _info("environment with no modelled memory effect: " + " ".join(read.env_ignored))


def _knobs(args: argparse.Namespace) -> dict[str, Any]:
    """The knobs given on the command line, in the units the core takes (bytes)."""
    out: dict[str, Any] = _vllm_flags(args)
    for knob in api.KNOBS:
        value = getattr(args, knob["name"], None)
        if value is None:
            continue
        if knob["type"] == "bytes" and knob["flag_unit_bytes"] != 1:
            value = round(value * knob["flag_unit_bytes"])
        out[knob["name"]] = value
    if getattr(args, "profile", None):
        from .calibrate import Profile

        out["profile"] = Profile.load(args.profile)
    return out


def _user_settings(args: argparse.Namespace) -> set[tuple[str, str]]:
    """The user's own knobs as (vLLM keyword, value as its flag writes it): ("kv_cache_dtype",
    "fp8"), the form of the solver's KnobChange."""
    given = set()
    for knob in api.KNOBS:
        value = getattr(args, knob["name"], None)
        if value is None or not knob["kwarg"]:
            continue
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, float):
            text = f"{value:g}"
        else:
            text = str(value)
        given.add((str(knob["kwarg"]), text))
    return given


def _write_frame(frame: Any, path: Path) -> None:
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        try:
            import pyarrow  # noqa: F401 - pandas writes Parquet through it
        except ImportError:
            msg = f"--out {path}: writing Parquet needs pyarrow (pip install pyarrow), or use .csv"
            raise _core.ConfigError(msg) from None
    elif suffix != ".csv":
        msg = f"--out {path}: unknown format {suffix or '(no suffix)'!r} (allowed: .csv, .parquet)"
        raise _core.ConfigError(msg)
    # Written beside the target and renamed onto it: Ctrl-C or an error leaves no partial file.
    with _io.atomic_output(path, what="--out file") as temporary:
        try:
            if suffix == ".csv":
                frame.to_csv(temporary, index=False)
            else:
                frame.to_parquet(temporary, index=False)
        except OSError as err:
            msg = f"--out {path}: cannot write ({err.strerror})"
            raise _core.ConfigError(msg) from err


def _emit_sweep(frame: Any, out: str | None, as_json: bool) -> bool:
    """A sweep's rows written to `out` (--out) or printed as JSON (--json); False when neither
    was asked, so the caller draws its own table."""
    if out:
        _write_frame(frame, Path(out))
        _note(f"wrote {len(frame)} rows to {out}")
    elif as_json:
        records = frame.astype({"outcome": str}).to_dict(orient="records")
        _print(json.dumps(records, indent=2))
    return bool(out or as_json)


def _print(text: str) -> None:
    """Output for scripts on stdout; control characters (from a model path, a log, a GPU name)
    printed as escapes, never sent raw to a terminal."""
    print(visible(text, keep_newlines=True), flush=True)


def _note(text: str) -> None:
    """A line for the person, not the script: stderr, prefixed; none with --quiet."""
    if not _QUIET:
        print(f"vramplan: {visible(text, keep_newlines=True)}", file=sys.stderr)


def _info(text: str) -> None:
    """Detail only --verbose asks for (where the spec came from, what was ignored)."""
    if _VERBOSE and not _QUIET:
        print(f"vramplan: {visible(text, keep_newlines=True)}", file=sys.stderr)


def _add_json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON")


_QUIET = False


_VERBOSE = False


def _split_verbosity(argv: list[str]) -> list[str]:
    """--quiet / --verbose anywhere before a `--` (after it, the words are the launch's)."""
    global _QUIET, _VERBOSE
    end = argv.index("--") if "--" in argv else len(argv)
    head = argv[:end]
    _QUIET = "--quiet" in head
    _VERBOSE = "--verbose" in head
    return [a for a in head if a not in ("--quiet", "--verbose")] + argv[end:]
