"""The `vramplan` command: argument parsing and printing on top of the bindings.

Exit status, for scripts: 0 the command succeeded (and the launch fits / starts); 1 the launch
does not fit (plan, flags, breakdown), or validate found an outcome MISMATCH or a launch it
cannot express; 2 bad input (usage errors and vramplan.Error, named on stderr); 141 the
reader of stdout went away (a closed pipe, as `| head` does), quietly; 130 interrupted; 70 an
internal error (a bug: reported in one line, please file it).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from . import _core, _io, _render, api

GIB = 1 << 30

EXIT_OK = 0
EXIT_DOES_NOT_FIT = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
EXIT_INTERNAL = 70  # EX_SOFTWARE: an exception that is a bug in vramplan, not bad input
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a writer whose pipe closed

# Short aliases people type for the two parallelism flags.
_ALIASES = {"tensor_parallel_size": ["--tp"], "pipeline_parallel_size": ["--pp"]}
# The knobs `sweep` takes as comma-separated lists (the compiled launch evaluates them).
_GRID_KNOBS = ("gpu_memory_utilization", "max_model_len", "max_num_seqs", "max_num_batched_tokens")


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


def _add_launch_args(p: argparse.ArgumentParser, *, grid: bool = False) -> None:
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
        "--num-gpus",
        type=_positive_int("num_gpus"),
        default=None,
        help="GPUs on the node; without --tp/--pp the planner picks the smallest split that fits",
    )
    p.add_argument("--revision", help="branch, tag or commit of a Hugging Face model")
    p.add_argument(
        "--offline", action="store_true", default=None, help="never ask the Hugging Face Hub"
    )
    knobs = p.add_argument_group("engine knobs (vLLM's names; help from vramplan.KNOBS)")
    for knob in api.KNOBS:
        flags = [_knob_flag(knob), *_ALIASES.get(knob["name"], [])]
        kwargs: dict[str, Any] = {"dest": knob["name"], "default": None, "help": _knob_help(knob)}
        if knob["type"] == "bool":
            kwargs["action"] = "store_true"
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
        knobs.add_argument(*flags, **kwargs)
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


def _knobs(args: argparse.Namespace) -> dict[str, Any]:
    """The knobs given on the command line, in the units the core takes (bytes)."""
    out: dict[str, Any] = {}
    for knob in api.KNOBS:
        value = getattr(args, knob["name"], None)
        if value is None or (knob["type"] == "bool" and value is False):
            continue
        if knob["type"] == "bytes" and knob["flag_unit_bytes"] != 1:
            value = round(value * knob["flag_unit_bytes"])
        out[knob["name"]] = value
    if getattr(args, "profile", None):
        from .calibrate import Profile

        out["profile"] = Profile.load(args.profile)
    return out


def _user_flags(args: argparse.Namespace) -> set[str]:
    """The user's own knobs as `vllm serve` flag text ("--kv-cache-dtype fp8")."""
    given = set()
    for knob in api.KNOBS:
        value = getattr(args, knob["name"], None)
        if value is not None and knob["flag"]:
            given.add(f"{knob['flag']} {value}".strip())
    return given


class _Launch:
    """What the launch arguments resolve to: the model (and which source answered), the GPU,
    other tenants' memory and host RAM (`--gpu auto` probes them)."""

    def __init__(self, args: argparse.Namespace) -> None:
        from .resolve import resolve_model

        resolved = resolve_model(args.model, revision=args.revision, offline=args.offline)
        self.spec = resolved.spec
        self.source = {
            "source": resolved.source,
            "location": resolved.location,
            "revision": resolved.revision,
        }
        others = args.used_by_others_bytes
        host = int((args.host_ram_gib or 0) * GIB)
        gpu_name = args.gpu
        if gpu_name == "auto":
            from .probe import auto_gpu

            found = auto_gpu()
            gpu_name = found.gpu_id
            others = others or found.memory_used_by_others_bytes
            host = host or found.host_ram_bytes
            self.source["gpu"] = f"auto: {found.gpu_id}"
        self.gpu = api.load_gpu(gpu_name, total_memory_bytes=args.gpu_total_bytes)
        self.memory_used_by_others_bytes = others
        self.host_ram_bytes = host


def _gpus_needed(args: argparse.Namespace) -> int:
    tp = args.tensor_parallel_size or 1
    pp = args.pipeline_parallel_size or 1
    return int(args.num_gpus or tp * pp)


def _cmd_breakdown(args: argparse.Namespace) -> int:
    launch = _Launch(args)
    result = api.breakdown(
        launch.spec,
        launch.gpu,
        num_gpus=_gpus_needed(args),
        memory_used_by_others_bytes=launch.memory_used_by_others_bytes,
        host_ram_bytes=launch.host_ram_bytes,
        **_knobs(args),
    )
    data = result.to_dict()
    if args.json:
        data["model_source"] = launch.source
        _print(json.dumps(data, indent=2))
    else:
        out = _render.console()
        _render.breakdown(out, data)
        _note(_source_note(launch.source))
    return EXIT_OK if data["outcome"] == "started" else EXIT_DOES_NOT_FIT


def _plan_from_args(args: argparse.Namespace) -> tuple[api.Plan, dict[str, Any]]:
    """The plan for the arguments, and what the JSON adds: where the model came from and, when
    the planner chose the split, every split it tried."""
    launch = _Launch(args)
    knobs = _knobs(args)
    margin = None if args.safety_margin_gib is None else int(args.safety_margin_gib * GIB)

    def one(context: int, split: dict[str, Any]) -> api.Plan:
        # `split` pins knobs on top of the user's (a TP x PP split, a batch size); the GPUs on
        # the node stay what the user said, else what the launch needs.
        pinned = {**knobs, **split}
        tp = pinned.get("tensor_parallel_size", 1)
        pp = pinned.get("pipeline_parallel_size", 1)
        return api.plan(
            launch.spec,
            launch.gpu,
            num_gpus=args.num_gpus or tp * pp,
            memory_used_by_others_bytes=launch.memory_used_by_others_bytes,
            host_ram_bytes=launch.host_ram_bytes,
            context=context,
            concurrency=args.concurrency or 0,
            safety_margin_bytes=margin,
            **pinned,
        )

    def at_split(split: dict[str, Any]) -> api.Plan:
        if args.context == "auto":
            from .search import plan_longest_context

            if args.max_num_batched_tokens is not None:  # the user's own: never moved
                return plan_longest_context(lambda context, _: one(context, split))
            return plan_longest_context(lambda context, batch: one(context, {**split, **batch}))
        return one(args.context or 0, split)

    extra: dict[str, Any] = {"model_source": launch.source}
    chooses_split = (
        args.num_gpus is not None
        and args.num_gpus > 1
        and args.tensor_parallel_size is None
        and args.pipeline_parallel_size is None
    )
    if chooses_split:
        from .search import plan_on_gpus

        result, attempts = plan_on_gpus(
            lambda tp, pp: at_split({"tensor_parallel_size": tp, "pipeline_parallel_size": pp}),
            args.num_gpus,
        )
        extra["split_search"] = [a.to_json() for a in attempts]
    else:
        result = at_split({})
    return result, extra


def _remedies(result: api.Plan, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The solver's remedies that meet the user's target: none repeats a flag the user already
    gave, and none shortens a context the user asked for."""
    repeated = _user_flags(args)
    target_context = isinstance(args.context, int) or args.max_model_len is not None
    kept = []
    for remedy in result.to_dict()["remedies"]:
        if remedy["change"].split(" (")[0].strip() in repeated:
            continue
        if target_context and remedy["kind"] == "shorter_context":
            continue
        kept.append(remedy)
    return kept


def _cmd_plan(args: argparse.Namespace) -> int:
    result, extra = _plan_from_args(args)
    data = {**result.to_dict(), "remedies": _remedies(result, args), **extra}
    if args.json:
        _print(json.dumps(data, indent=2))
    else:
        _render.plan(_render.console(), data)
        _note(_source_note(extra["model_source"]))
        if "split_search" in extra:
            tried = ", ".join(
                f"TP={a['tensor_parallel_size']} PP={a['pipeline_parallel_size']}: "
                f"{a['result'].split(' - ')[0]}"
                for a in extra["split_search"]
            )
            _note(f"splits tried: {tried}")
    return EXIT_OK if result.fits else EXIT_DOES_NOT_FIT


def _source_note(source: dict[str, Any]) -> str:
    """Which source answered the model (database, path, HF cache, Hub)."""
    revision = f" @ {source['revision']}" if source["revision"] else ""
    return f"model from {source['source']}: {source['location']}{revision}"


def _cmd_flags(args: argparse.Namespace) -> int:
    result, extra = _plan_from_args(args)
    remedies = _remedies(result, args)
    if args.json:
        data = {
            "fits": result.fits,
            "verdict": result.verdict,
            "vllm_args": result.to_vllm_args() if result.fits else None,
            "vllm_env": result.to_vllm_env(),
            "remedies": remedies,
            **extra,
        }
        _print(json.dumps(data, indent=2))
        return EXIT_OK if result.fits else EXIT_DOES_NOT_FIT
    if not result.fits:
        # Nothing on stdout: `vllm serve M $(vramplan flags ...)` must not start a launch
        # that cannot fit. The reason and the cheapest remedy that fits go to stderr.
        _note(str(result.verdict))
        for remedy in remedies:
            if remedy["fits"]:
                _note(f"remedy: {remedy['change']}: {remedy['flags']}")
                break
        return EXIT_DOES_NOT_FIT
    for name, value in result.to_vllm_env().items():
        # A knob this vLLM version reads only from the environment: not a flag.
        _note(f"also set {name}={value} in vllm's environment")
    _print(result.to_vllm_args())
    return EXIT_OK


def _cmd_sweep(args: argparse.Namespace) -> int:
    launch = _Launch(args)
    knobs = _knobs(args)
    grid = {name: knobs.pop(name, None) for name in _GRID_KNOBS}
    with _late_progress("sweeping") as progress:
        frame = api.sweep(
            launch.spec,
            launch.gpu,
            num_gpus=_gpus_needed(args),
            memory_used_by_others_bytes=launch.memory_used_by_others_bytes,
            progress=progress.update,
            **grid,
            **knobs,
        )
    if args.out:
        _write_frame(frame, Path(args.out))
        _note(f"wrote {len(frame)} rows to {args.out}")
    elif args.json:
        records = frame.astype({"outcome": str}).to_dict(orient="records")
        _print(json.dumps(records, indent=2))
    else:
        out = _render.console()
        out.print(
            _render.table(
                out,
                [str(c) for c in frame.columns],
                frame.astype(str).itertuples(index=False),
                right=[str(c) for c in frame.columns if c != "outcome"],
            )
        )
    return EXIT_OK


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


def _cmd_validate(args: argparse.Namespace) -> int:
    from . import validate

    if args.records:
        records = validate.read_records(args.records)
        replays = [validate.replay_record(r) for r in _progress(records, "replaying records")]
    elif args.logfile:
        # Streamed by the C++ parser: never the whole log in memory.
        replays = [validate.replay_log_file(args.logfile, model=args.model, gpu=args.gpu)]
        if replays[0].note:
            _note(replays[0].note)
    else:
        msg = "give a vLLM startup LOGFILE or --records FILE.jsonl"
        raise _core.ConfigError(msg)
    problems = _render.replay_rows(replays, validate.TERMS)[1]
    if args.json:
        if args.records:
            _print("\n".join(json.dumps(replay.to_json()) for replay in replays))
        else:
            _print(json.dumps(replays[0].to_json(), indent=2))
    else:
        _render.replays(_render.console(), replays, validate.TERMS)
    return EXIT_OK if problems == 0 else EXIT_DOES_NOT_FIT


class _LateProgress:
    """A progress bar on stderr (a terminal) for work that runs past a second; quiet before."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.start = time.monotonic()
        self.bar: Any = None
        self.task: Any = None

    def update(self, done: int, total: int) -> None:
        if self.bar is None:
            if time.monotonic() - self.start < 1.0 or not sys.stderr.isatty() or done >= total:
                return
            from rich.console import Console
            from rich.progress import Progress

            self.bar = Progress(console=Console(stderr=True), transient=True)
            self.bar.start()
            self.task = self.bar.add_task(self.what, total=total)
        self.bar.update(self.task, completed=done)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()


@contextlib.contextmanager
def _late_progress(what: str) -> Iterator[_LateProgress]:
    progress = _LateProgress(what)
    try:
        yield progress
    finally:
        progress.stop()


def _progress(items: Sequence[Any], what: str) -> Any:
    """`items`, with a progress bar on stderr when it is a terminal and the list is long."""
    from rich.console import Console
    from rich.progress import track

    if len(items) < 20 or not sys.stderr.isatty():
        return items
    return track(items, description=what, console=Console(stderr=True), transient=True)


def _cmd_explain(args: argparse.Namespace) -> int:
    from .explain import EXPLANATIONS, explain

    chosen = [explain(args.term)] if args.term else list(EXPLANATIONS.values())
    if args.json:
        rows = [e._asdict() for e in chosen]
        _print(json.dumps(rows[0] if args.term else rows, indent=2))
        return EXIT_OK
    out = _render.console()
    if not args.term:
        out.print(
            _render.table(out, ["term", "kind", "what"], [[e.term, e.kind, e.what] for e in chosen])
        )
        out.print("vramplan explain TERM: why it is there and which flag moves it")
        return EXIT_OK
    e = chosen[0]
    out.print(f"[bold]{e.term}[/bold] ({e.kind})")
    for label, text in (("what", e.what), ("why", e.why), ("moved by", e.flags)):
        out.print(f"[bold]{label}:[/bold] {text}")
    return EXIT_OK


def _cmd_models(args: argparse.Namespace) -> int:
    ids = api.models()
    _print(json.dumps(ids, indent=2) if args.json else "\n".join(ids))
    return EXIT_OK


def _cmd_gpus(args: argparse.Namespace) -> int:
    db = api.spec_database()
    rows = [db.gpu(g).to_dict() for g in api.gpus()]
    if args.json:
        _print(json.dumps(rows, indent=2))
        return EXIT_OK
    out = _render.console()
    out.print(
        _render.table(
            out,
            ["id", "total", "name"],
            [[r["id"], _render.gib(r["total_memory_bytes"]), r["name"]] for r in rows],
            right=["total"],
        )
    )
    return EXIT_OK


def _cmd_inspect(args: argparse.Namespace) -> int:
    info = api.inspect_checkpoint(args.path)
    if args.json:
        _print(json.dumps(info, indent=2))
        return EXIT_OK
    lines = [f"{info['model']}  ({info['kind']}, {len(info['files'])} files read)"]
    if info["checkpoint_bytes"]:
        diff = info["checkpoint_bytes"] - info["spec_checkpoint_bytes"]
        lines.append(
            f"  checkpoint tensors: {info['checkpoint_bytes']:,} bytes (exact, from the headers)"
        )
        lines.append(
            f"  spec formula:       {info['spec_checkpoint_bytes']:,} bytes ({diff:+,} unexplained)"
        )
    _print("\n".join(lines))
    return EXIT_OK


def _cmd_schema(args: argparse.Namespace) -> int:
    text = api.schema_markdown()
    _print(json.dumps({"schema_markdown": text}) if args.json else text.rstrip("\n"))
    return EXIT_OK


def _cmd_diagnose(args: argparse.Namespace) -> int:
    from .diagnose import diagnose, format_text, read_text

    if args.logfile == "-" and args.dmesg == "-":
        msg = "only one of LOG and --dmesg can be read from standard input ('-')"
        raise _core.ConfigError(msg)
    result = diagnose(
        read_text(args.logfile, what="log"),
        dmesg=None if args.dmesg is None else read_text(args.dmesg, what="kernel log"),
        model=args.model,
        gpu=args.gpu,
        host_ram_bytes=int((args.host_ram_gib or 0) * GIB),
    )
    _print(json.dumps(result.data, indent=2) if args.json else format_text(result).rstrip("\n"))
    return EXIT_OK


def _cmd_probe(args: argparse.Namespace) -> int:
    from .probe import probe

    found = probe(nvidia_smi_csv=args.nvidia_smi_csv)
    if args.json:
        _print(json.dumps(found.to_json(), indent=2))
        return EXIT_OK
    gib = _render.gib
    lines = [f"source: {found.source}"]
    for gpu in found.gpus:
        mapped = gpu.database_id or "not in the database"
        lines.append(
            f"  GPU {gpu.index}: {gpu.name} ({mapped})  total {gib(gpu.total_bytes)}, "
            f"used {gib(gpu.used_bytes)}, free {gib(gpu.free_bytes)}"
        )
        for process in gpu.processes or []:
            used = "?" if process.used_bytes is None else gib(process.used_bytes)
            lines.append(f"    pid {process.pid}: {used}")
    host = found.host
    if host.mem_available_bytes is not None:
        lines.append(f"  host MemAvailable: {gib(host.mem_available_bytes)}")
    if host.cgroup_limit_bytes is not None:
        lines.append(
            f"  memory cgroup limit: {gib(host.cgroup_limit_bytes)} "
            f"({host.cgroup_file}), in use {gib(host.cgroup_usage_bytes or 0)}"
        )
    if host.usable_bytes is not None:
        lines.append(f"  host RAM usable by a launch: {gib(host.usable_bytes)}")
    _print("\n".join(lines))
    return EXIT_OK


def _print(text: str) -> None:
    print(text, flush=True)


def _note(text: str) -> None:
    """A line for the person, not the script: stderr, prefixed."""
    print(f"vramplan: {text}", file=sys.stderr)


def _add_json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON")


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
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="vramplan",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"vramplan {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("breakdown", help="per-rank memory breakdown for one launch")
    _add_launch_args(p)
    p.set_defaults(func=_cmd_breakdown)
    for name, func, text in (
        ("plan", _cmd_plan, "solve for the largest safe flags"),
        ("flags", _cmd_flags, "print only the `vllm serve` flag line (nothing if it cannot fit)"),
    ):
        p = sub.add_parser(name, help=text)
        _add_launch_args(p)
        p.add_argument(
            "--context",
            type=_context,
            help="context length to serve (tokens), or 'auto' for the longest that fits",
        )
        p.add_argument(
            "--concurrency",
            type=_positive_int("concurrency"),
            help="sequences of that context to hold at once",
        )
        p.add_argument(
            "--safety-margin-gib",
            type=_finite_float("--safety-margin-gib"),
            help="GPU memory kept free (default 0.5)",
        )
        p.set_defaults(func=func)
    p = sub.add_parser("sweep", help="a grid of launches as a table, CSV or Parquet")
    _add_launch_args(p, grid=True)
    p.add_argument("--out", help="write the grid to FILE.csv or FILE.parquet (needs pyarrow)")
    p.set_defaults(func=_cmd_sweep)
    p = sub.add_parser("explain", help="what a breakdown term or outcome means, and its flags")
    p.add_argument("term", nargs="?", help="weights, activation_peak, non_torch, kv_cache, ...")
    _add_json(p)
    p.set_defaults(func=_cmd_explain)
    p = sub.add_parser("validate", help="replay measured startups and compare per term")
    p.add_argument("logfile", nargs="?", help="a vLLM startup log: predict the same launch")
    p.add_argument("--records", help="startup records, one JSON object a line (JSONL)")
    p.add_argument("--model", help="model id to plan when the log names a local path")
    p.add_argument("--gpu", help="GPU id (default: from the total memory the log prints)")
    _add_json(p)
    p.set_defaults(func=_cmd_validate)
    p = sub.add_parser("models", help="list model ids")
    _add_json(p)
    p.set_defaults(func=_cmd_models)
    p = sub.add_parser("gpus", help="list GPUs with their CUDA-reported totals")
    _add_json(p)
    p.set_defaults(func=_cmd_gpus)
    p = sub.add_parser("inspect", help="what a model path holds: files, exact checkpoint bytes")
    p.add_argument("path", help="config.json, checkpoint folder or HF cache entry")
    _add_json(p)
    p.set_defaults(func=_cmd_inspect)
    p = sub.add_parser("schema", help="print the model/GPU YAML schema as Markdown")
    _add_json(p)
    p.set_defaults(func=_cmd_schema)
    p = sub.add_parser("diagnose", help="name the cause of a failed launch and the fixing flags")
    p.add_argument("logfile", help="the vLLM log (or a traceback / OOM excerpt); '-' for stdin")
    p.add_argument("--dmesg", help="a dmesg / journalctl -k excerpt; '-' for stdin")
    p.add_argument("--model", help="model id or path when the log names a local path")
    p.add_argument("--gpu", help="GPU id (default: from the total memory the log prints)")
    p.add_argument(
        "--host-ram-gib", type=_finite_float("--host-ram-gib"), help="host RAM of the node (GiB)"
    )
    _add_json(p)
    p.set_defaults(func=_cmd_diagnose)
    p = sub.add_parser("probe", help="this machine's GPUs (NVML / nvidia-smi) and host RAM")
    p.add_argument("--nvidia-smi-csv", help="saved nvidia-smi --query-gpu CSV output (MiB)")
    _add_json(p)
    p.set_defaults(func=_cmd_probe)
    _add_calibrate(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return int(args.func(args))
    except ValueError as err:  # vramplan.Error subclasses ValueError: bad input, not a crash
        print(f"vramplan: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly. Point stdout at /dev/null so the
        # interpreter's final flush does not raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as err:  # noqa: BLE001 - last resort: a bug, told in one line, no traceback
        print(f"vramplan: internal error: {type(err).__name__}: {err}", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
