"""vramplan: what a vLLM or SGLang launch needs in GPU memory per rank and host RAM, before you
start it, and the largest safe flags (`plan`, `flags`, `check`), with `diagnose` for a launch
that failed.

Exit status, for scripts: 0 the command succeeded (and the launch fits / starts); 1 the launch
does not fit (plan, flags, breakdown), or validate found an outcome MISMATCH or a launch it
cannot express; 2 bad input (usage errors and vramplan.Error, named on stderr); 141 the
reader of stdout went away (a closed pipe, as `| head` does), quietly; 74 stdout cannot be
written (a full disk), named on stderr; 130 interrupted; 70 an internal error (a bug: reported
in one line, please file it).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from . import _cli_args, _core, api
from ._cli_args import (
    _GRID_KNOBS,
    EXIT_BAD_INPUT,
    EXIT_BROKEN_PIPE,
    EXIT_DOES_NOT_FIT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_OUTPUT,
    _add_json,
    _add_launch_args,
    _context,
    _emit_sweep,
    _finite_float,
    _info,
    _knobs,
    _note,
    _note_ignored,
    _positive_int,
    _print,
    _split_verbosity,
    _user_settings,
)
from ._quoting import shell_join, shell_word, visible
from ._units import GIB, gib_text
from .deployment import Deployment, deployment


class _Launch:
    """What the launch arguments resolve to: the model (and which source answered), the GPU,
    other tenants' memory and host RAM (`--gpu auto` probes them)."""

    def __init__(self, args: argparse.Namespace) -> None:
        from .resolve import resolve_model

        resolved = resolve_model(args.model, revision=args.revision, offline=args.offline)
        self.spec = resolved.spec
        self.source: dict[str, Any] = {
            "source": resolved.source,
            "location": resolved.location,
            "revision": resolved.revision,
        }
        others = args.used_by_others_bytes
        host = int((args.host_ram_gib or 0) * GIB)
        gpu_name = args.gpu
        interconnect = args.interconnect
        total_bytes = args.gpu_total_bytes
        if gpu_name == "auto":
            from .probe import auto_gpu

            found = auto_gpu(count=_gpus_needed(args))
            gpu_name = found.gpu_id
            _note(f"--gpu auto: {found.gpu_id} from {found.chosen}")
            others = others or found.memory_used_by_others_bytes
            host = host or found.host_ram_bytes
            _unified_meminfo(args, found)
            self.source["gpu"] = f"auto: {found.gpu_id}"
            if found.memory_limit is not None:  # HAMi / MPS: the limit is the GPU's total
                total_bytes = total_bytes or found.memory_limit.limit_bytes
                self.source["gpu_memory_limit"] = found.memory_limit.to_json()
                _note(found.memory_limit.note())
            if interconnect is None and found.interconnect is not None:
                interconnect = found.interconnect
                _note(
                    f"interconnect: {found.interconnect} (NVML's NVLink state on the probed "
                    "GPUs; --interconnect overrides)"
                )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            self.gpu = api.load_gpu(
                gpu_name, total_memory_bytes=total_bytes, interconnect=interconnect
            )
        for warning in caught:  # a shared GPU name: say which GPU was assumed
            _note(str(warning.message))
        if self.gpu.to_dict()["vendor"] == "amd":
            _note(f"{self.gpu.id}: {_ROCM_NOTE}")
        self.memory_used_by_others_bytes = others
        self.host_ram_bytes = host


# vLLM 0.33 on ROCm (vllm/platforms/rocm.py) chooses its own attention backends (ROCM_ATTN,
# AITER FA / unified attention, AITER MLA, Triton) and CUDA-graph overrides; the engine model
# applies the CUDA rules to every GPU, so an AMD plan says so.
_ROCM_NOTE = (
    "AMD GPU: the plan applies vLLM's CUDA rules; vLLM's ROCm attention backends (ROCM_ATTN, "
    "AITER) and CUDA-graph overrides are not modelled (unverified on ROCm)"
)


def _unified_meminfo(args: argparse.Namespace, found: Any) -> None:
    """A unified-memory GPU's free memory is the host's: the probed MemFree and MemAvailable
    become the knobs host_mem_free_bytes / host_mem_available_bytes (flag units, GiB) unless
    given."""
    probed = {
        "host_mem_free_bytes": found.host_mem_free_bytes,
        "host_mem_available_bytes": found.host_mem_available_bytes,
    }
    for name, value in probed.items():
        if value is not None and getattr(args, name, None) is None:
            setattr(args, name, value / GIB)
    if found.host_mem_free_bytes is not None and found.host_mem_available_bytes is not None:
        cache = max(0, found.host_mem_available_bytes - found.host_mem_free_bytes)
        _note(
            f"unified memory: host MemFree {gib_text(found.host_mem_free_bytes)}, MemAvailable "
            f"{gib_text(found.host_mem_available_bytes)} ({gib_text(cache)} reclaimable, mostly "
            "page cache): vLLM's startup check counts one of them by release"
        )


def _gpus_needed(args: argparse.Namespace) -> int:
    tp = args.tensor_parallel_size or 1
    pp = args.pipeline_parallel_size or 1
    dp = getattr(args, "data_parallel_size", None) or 1
    return int(args.num_gpus or tp * pp * dp)


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
    _warn_version(data["engine_version_warning"])
    if args.json:
        data["model_source"] = launch.source
        _print(json.dumps(data, indent=2))
    else:
        from . import _render  # rich, loaded only for terminal output

        out = _render.console()
        _render.breakdown(out, data)
        _source_notes(launch.source, str(args.model), launch.spec.id)
    return EXIT_OK if data["outcome"] == "started" else EXIT_DOES_NOT_FIT


def _warn_version(warning: str | None) -> None:
    """A vLLM newer than the newest known release is planned with that release's rules: say so
    on stderr (the JSON and the Python result carry the same text)."""
    if warning:
        print(f"vramplan: warning: {visible(warning, keep_newlines=True)}", file=sys.stderr)


def _plan_from_args(args: argparse.Namespace) -> tuple[api.Plan, dict[str, Any]]:
    """The plan for the arguments, and what the JSON adds: where the model came from and, when
    the planner chose the split, every split it tried."""
    launch = _Launch(args)
    knobs = _knobs(args)
    margin = None if args.safety_margin_gib is None else int(args.safety_margin_gib * GIB)
    headroom = getattr(args, "runtime_headroom_gib", None)
    # `auto`: context 0 with the concurrency target, and the solver's own search finds the
    # longest context that holds it (solver.cpp). num_gpus > 1 without a split: api.plan
    # searches the splits, as it does for Python callers.
    result = api.plan(
        launch.spec,
        launch.gpu,
        num_gpus=args.num_gpus or _gpus_needed(args),
        memory_used_by_others_bytes=launch.memory_used_by_others_bytes,
        host_ram_bytes=launch.host_ram_bytes,
        context=0 if args.context == "auto" else args.context or 0,
        concurrency=args.concurrency or 0,
        safety_margin_bytes=margin,
        runtime_headroom_bytes=None if headroom is None else int(headroom * GIB),
        workload=getattr(args, "workload", None),
        prompt_tokens=getattr(args, "prompt_tokens", None),
        output_tokens=getattr(args, "output_tokens", None),
        prefix_tokens=getattr(args, "prefix_tokens", 0),
        preemption_target=getattr(args, "preemption_target", None),
        request_seconds=getattr(args, "request_seconds", None),
        **knobs,
    )
    extra: dict[str, Any] = {
        "model_source": launch.source,
        "served_model": str(args.model),
        "deployment": _deployment(launch.gpu, result, knobs, args).to_dict(),
    }
    if result.split_search is not None:
        extra["split_search"] = result.split_search
    return result, extra


def _deployment(
    gpu: str | _core.GpuSpec, result: api.Plan, knobs: dict[str, Any], args: argparse.Namespace
) -> Deployment:
    """The pod's GPU resource, memory and /dev/shm for the planned launch (deployment.py)."""
    spec = gpu if isinstance(gpu, _core.GpuSpec) else api.load_gpu(gpu)
    breakdown = result.to_dict()["breakdown"]
    config = breakdown["config"]
    return deployment(
        gpu_name=spec.name,
        vendor=str(spec.to_dict()["vendor"]),
        engine_version=str(breakdown["engine_version"]),
        tp=int(config["tensor_parallel_size"]),
        pp=int(config["pipeline_parallel_size"]),
        dp=int(getattr(args, "data_parallel_size", None) or 1),
        host_required_bytes=int(breakdown["host"]["required_bytes"]),
        kv_offloading_bytes=int(knobs.get("kv_offloading_bytes") or 0),
        num_gpus=args.num_gpus,
    )


def _remedies(result: api.Plan, args: argparse.Namespace) -> list[int]:
    """The positions of the solver's remedies that meet the user's target: none repeats knobs
    the user already gave with the same values, none changes an argument the release planned
    for lacks, and none shortens a context the user asked for."""
    from .launch import remedy_available

    given = _user_settings(args)
    target_context = isinstance(args.context, int) or args.max_model_len is not None
    version = str(result.breakdown.engine_version)
    kept = []
    for index, remedy in enumerate(result.remedies):
        changes = [(change.knob, change.value) for change in remedy.changes]
        if changes and all(change in given for change in changes):
            continue
        if not remedy_available([knob for knob, _ in changes], version):
            continue
        if target_context and "max_model_len" in remedy.drops:
            continue
        kept.append(index)
    return kept


def _with_passthrough(data: dict[str, Any], words: list[str]) -> dict[str, Any]:
    """The plan's flags (and each remedy's) with the user's unmodelled flags appended."""
    if not words:
        return data
    tail = " " + shell_join(words)
    data["vllm_argv"] = [*data["vllm_argv"], *words]
    data["vllm_args"] += tail
    for remedy in data["remedies"]:
        remedy["flags"] += tail
    return data


def _cmd_plan(args: argparse.Namespace) -> int:
    result, extra = _plan_from_args(args)
    data = result.to_dict()
    data["remedies"] = [data["remedies"][i] for i in _remedies(result, args)]
    data.update(extra)
    _warn_version(result.engine_version_warning)
    data = _with_passthrough(data, getattr(args, "passthrough", []))
    if args.json:
        _print(json.dumps(data, indent=2))
    elif _cli_args._QUIET:  # the verdict and the launch line, nothing else
        model = shell_word(str(data["served_model"]))
        _print(f"verdict: {visible(data['verdict'])}\nvllm serve {model} {data['vllm_args']}")
    else:
        from . import _render  # rich, loaded only for terminal output

        _render.plan(_render.console(), data)
        _source_notes(extra["model_source"], str(args.model), result.breakdown.model_id)
        if "split_search" in extra:
            tried = ", ".join(
                f"TP={a['tensor_parallel_size']} PP={a['pipeline_parallel_size']}: "
                f"{a['result'].split(' - ')[0]}"
                for a in extra["split_search"]
            )
            _note(f"splits tried: {tried}")
    return EXIT_OK if result.fits else EXIT_DOES_NOT_FIT


def _source_notes(source: dict[str, Any], given: str, spec_id: str) -> None:
    """Which source answered the model (database, path, HF cache, Hub): the location only with
    --verbose; always when the spec used is another checkpoint's than the one named."""
    revision = f" @ {source['revision']}" if source["revision"] else ""
    _info(f"model from {source['source']}: {source['location']}{revision}")
    if source["source"] == "database" and given.lower() != spec_id.lower():
        _note(
            f"{given} is planned with the spec of {spec_id} (an alias in model_specs/: the same "
            f"architecture and sizes); the flags serve {given} as you named it"
        )


FORMATS = ("args", "shell", "json", "env", "docker", "compose", "k8s")


def _cmd_flags(args: argparse.Namespace) -> int:
    result, extra = _plan_from_args(args)
    remedies = _remedies(result, args)
    _warn_version(result.engine_version_warning)
    fmt = "json" if args.json else args.format
    env = result.to_vllm_env()
    passthrough: list[str] = getattr(args, "passthrough", [])
    if fmt == "json":
        plan = result.to_dict()
        data = {
            "fits": result.fits,
            "as_written": plan["as_written"],
            "verdict": result.verdict,
            "engine_version_warning": result.engine_version_warning,
            "model": str(args.model),
            "vllm_argv": [*result.to_vllm_argv(), *passthrough] if result.fits else None,
            "vllm_args": shell_join([*result.to_vllm_argv(), *passthrough])
            if result.fits
            else None,
            "vllm_env": env,
            "remedies": [plan["remedies"][i] for i in remedies],
            **extra,
        }
        _print(json.dumps(data, indent=2))
        return EXIT_OK if result.fits else EXIT_DOES_NOT_FIT
    if not result.fits:
        # Nothing on stdout: `vllm serve M $(vramplan flags ...)` must not start a launch
        # that cannot fit. The reason and the cheapest remedy that fits go to stderr.
        _note(str(result.verdict))
        for i in remedies:
            remedy = result.remedies[i]
            if remedy.fits:
                _note(f"remedy: {remedy.change}: {remedy.flags}")
                break
        return EXIT_DOES_NOT_FIT
    from .launchers import render_launch

    gpus = _gpus_needed(args)
    text = render_launch(
        fmt,
        model=str(args.model),
        argv=[*result.to_vllm_argv(), *passthrough],
        env=env,
        engine_version=str(result.breakdown.engine_version),
        gpus=gpus,
        resources=Deployment(**extra["deployment"]),
    )
    if fmt == "args" and env:
        # $(...) carries flags only: the environment comes from --format env (or shell).
        _note(
            "also set "
            + " ".join(f"{k}={v}" for k, v in env.items())
            + " in vLLM's environment: env $(vramplan flags ... --format env) vllm serve ..."
        )
    _print(text)
    return EXIT_OK


def _cmd_check(args: argparse.Namespace) -> int:
    """Judge a launch exactly as written (a command line after `--`, or an LLM(**kwargs)
    file), then plan it: what the solver changed and why, and the remedies."""
    from . import _render  # rich, loaded only for terminal output
    from .launch import (
        environment_for,
        parse_command,
        passthrough_words,
        read_kwargs_file,
        to_knobs,
    )

    if args.file and args.command_line:
        msg = "give either a command line after `--` or --file, not both"
        raise _core.ConfigError(msg)
    if args.file:
        launch = read_kwargs_file(args.file, version=args.engine_version)
    elif args.command_line:
        launch = parse_command(args.command_line, version=args.engine_version)
    else:
        msg = "give the launch: vramplan check --gpu G -- vllm serve MODEL --flags ..."
        raise _core.ConfigError(msg)
    if launch.model is None:
        msg = "the launch names no model (vllm serve MODEL, or --model MODEL)"
        raise _core.ConfigError(msg)
    version = args.engine_version or launch.image_version
    read = to_knobs(launch.args, env=environment_for(launch.env), version=version)
    _note_ignored(read)
    knobs = dict(read.knobs)
    if version:
        knobs["engine_version"] = version
    args.model = launch.model
    for knob in api.KNOBS:
        value = knobs.get(knob["name"])
        if value is not None and knob["type"] == "bytes" and knob["flag_unit_bytes"] != 1:
            # The namespace holds flag units (GiB), as parsed flags do; _knobs scales them once.
            value = value / knob["flag_unit_bytes"]
        setattr(args, knob["name"], value)
    args.num_gpus = args.num_gpus or read.num_gpus or launch.gpus
    args.vllm_flags = []
    args.context = "auto" if read.context_auto else None
    args.concurrency = None
    args.safety_margin_gib = None
    args.used_by_others_bytes = args.used_by_others_bytes or 0
    if args.num_gpus is not None:
        tp = int(knobs.get("tensor_parallel_size") or 1) * int(
            knobs.get("pipeline_parallel_size") or 1
        )
        args.num_gpus = max(args.num_gpus, tp)
        args.tensor_parallel_size = knobs.get("tensor_parallel_size") or 1
    result, extra = _plan_from_args(args)
    data = result.to_dict()
    data["remedies"] = [data["remedies"][i] for i in _remedies(result, args)]
    data.update(extra)
    data = _with_passthrough(
        data, passthrough_words(launch.args, [*read.no_memory_effect, *read.unmodelled])
    )
    data["launch"] = {"form": launch.form, "model": launch.model, "args": launch.args}
    data["no_memory_effect"] = read.no_memory_effect
    data["memory_effect_not_modelled"] = read.unmodelled
    if args.json:
        _print(json.dumps(data, indent=2))
    else:
        _render.check(_render.console(reading=True), data, how=_cli_args._VERBOSE)
        _source_notes(extra["model_source"], launch.model, result.breakdown.model_id)
    return EXIT_OK if result.as_written_fits else EXIT_DOES_NOT_FIT


def _cmd_sweep(args: argparse.Namespace) -> int:
    from . import _render  # rich, loaded only for terminal output

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
    if not _emit_sweep(frame, args.out, args.json):
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


def _cmd_validate(args: argparse.Namespace) -> int:
    from . import (
        _render,  # rich, loaded only for terminal output
        validate,
    )
    from .calibrate import Profile

    given = {
        "profile": Profile.load(args.profile) if args.profile else None,  # before any record
        "engine_version": args.engine_version,
    }
    if args.records:
        records = validate.read_records(args.records)
        replays = [
            validate.replay_record(r, **given) for r in _progress(records, "replaying records")
        ]
        for replay in replays:
            if replay.note:
                _note(f"{replay.id}: {replay.note}")
    elif args.logfile:
        # Streamed by the C++ parser: never the whole log in memory.
        replays = [validate.replay_log_file(args.logfile, model=args.model, gpu=args.gpu, **given)]
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
    from . import _render  # rich, loaded only for terminal output
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
    out.print(_render.bold_lead(e.term, f" ({e.kind})"))
    for label, text in (("what", e.what), ("why", e.why), ("moved by", e.flags)):
        out.print(_render.bold_lead(f"{label}:", f" {text}"))
    return EXIT_OK


def _cmd_models(args: argparse.Namespace) -> int:
    ids = api.models()
    _print(json.dumps(ids, indent=2) if args.json else "\n".join(ids))
    return EXIT_OK


def _cmd_gpus(args: argparse.Namespace) -> int:
    from . import _render  # rich, loaded only for terminal output

    db = api.spec_database()
    rows = [db.gpu(g).to_dict() for g in api.gpus()]
    if args.json:
        _print(json.dumps(rows, indent=2))
        return EXIT_OK
    out = _render.console()
    out.print(
        _render.table(
            out,
            ["id", "total", "total is", "name"],
            [
                [
                    r["id"],
                    gib_text(r["total_memory_bytes"]),
                    ("derived" if r["total_memory_derived"] else "measured")
                    + (", shared with host" if r["unified_memory"] else ""),
                    r["name"],
                ]
                for r in rows
            ],
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
    from .launch import parse_flags

    result = diagnose(
        read_text(args.logfile, what="log"),
        dmesg=None if args.dmesg is None else read_text(args.dmesg, what="kernel log"),
        model=args.model,
        gpu=args.gpu,
        host_ram_bytes=int((args.host_ram_gib or 0) * GIB),
        # vLLM flags after the log override what it states (`--max-model-len 16384`).
        overrides=parse_flags(args.vllm_flags, version=args.engine_version),
        engine_version=args.engine_version,
    )
    _print(json.dumps(result.data, indent=2) if args.json else format_text(result).rstrip("\n"))
    return EXIT_OK


def _cmd_probe(args: argparse.Namespace) -> int:
    from .probe import probe

    found = probe(nvidia_smi_csv=args.nvidia_smi_csv)
    if args.json:
        _print(json.dumps(found.to_json(), indent=2))
        return EXIT_OK
    gib = gib_text
    lines = [f"source: {found.source}"]
    for gpu in found.gpus:
        mapped = gpu.database_id or "not in the database"
        links = {True: ", NVLink up", False: ", no NVLink", None: ""}[gpu.nvlink]
        lines.append(
            f"  GPU {gpu.index}: {gpu.name} ({mapped})  total {gib(gpu.total_bytes)}, "
            f"used {gib(gpu.used_bytes)}, free {gib(gpu.free_bytes)}{links}"
        )
        for process in gpu.processes or []:
            used = "?" if process.used_bytes is None else gib(process.used_bytes)
            lines.append(f"    pid {process.pid}: {used}")
    host = found.host
    if host.mem_available_bytes is not None:
        lines.append(f"  host MemAvailable: {gib(host.mem_available_bytes)}")
    if host.mem_free_bytes is not None:
        cached = "" if host.cached_bytes is None else f", Cached {gib(host.cached_bytes)}"
        lines.append(f"  host MemFree: {gib(host.mem_free_bytes)}{cached}")
    if host.cgroup_limit_bytes is not None:
        lines.append(
            f"  memory cgroup limit: {gib(host.cgroup_limit_bytes)} "
            f"({host.cgroup_file}), in use {gib(host.cgroup_usage_bytes or 0)}"
        )
    if host.usable_bytes is not None:
        lines.append(f"  host RAM usable by a launch: {gib(host.usable_bytes)}")
    _print("\n".join(lines))
    return EXIT_OK


def _add_calibrate(sub: Any) -> None:
    """`vramplan calibrate LOG... | --records FILE`: fit an engine row's constants to measured
    startups of one GPU and vLLM version, print each figure's error before and after, and write
    the profile YAML (`--out`)."""

    def run(args: argparse.Namespace) -> int:
        from .calibrate import Profile, calibrate, priors_file

        start = Profile.load(args.profile) if args.profile else None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fitted = calibrate(
                *args.logs,
                records=args.records,
                ids=args.ids.split(",") if args.ids else None,
                model=args.model,
                gpu=args.gpu,
                terms=args.terms.split(",") if args.terms else None,
                held_out=args.held_out,
                profile=start,
                priors=priors_file() if args.priors == "" else args.priors,
            )
        for warning in caught:  # a shared GPU name: which size a sample assumed
            _note(str(warning.message))
        if args.json:
            report = {
                "engine_version": fitted.engine_version,
                "gpu": fitted.gpu,
                "fitted_on": fitted.fitted_on,
                "condition_number": fitted.condition_number,
                "constants": fitted.constants,
                "errors": fitted.errors,
            }
            _print(json.dumps(report, indent=2))
        else:
            _print(fitted.format_report())
        if args.out:
            fitted.save(args.out)
            if not args.json:
                _print(f"\nwrote {args.out}")
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
    p.add_argument(
        "--priors",
        nargs="?",
        const="",  # the flag alone: the packaged file
        metavar="PRIORS.yaml",
        help="fit from priors (maximum a posteriori; one launch is then enough): a priors YAML, "
        "or none for the packaged model_specs/calibration_priors.yaml (device measurements and "
        "vLLM's code)",
    )
    p.add_argument("--out", metavar="PROFILE.yaml", help="write the fitted profile here")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def _add_traffic_args(p: argparse.ArgumentParser) -> None:
    """The traffic a plan serves: max_num_seqs is sized from it (docs/traffic.md)."""
    group = p.add_argument_group(
        "traffic",
        "max_num_seqs is a scheduler cap (vLLM preempts or queues beyond the KV cache), kept at "
        "the release default unless a workload or --concurrency asks otherwise",
    )
    group.add_argument(
        "--workload",
        metavar="FILE",
        help="requests as CSV or JSONL (prompt_tokens, output_tokens[, count]) or vLLM's "
        "benchmark result JSON",
    )
    group.add_argument("--prompt-tokens", metavar="P50,P99", help="prompt length percentiles")
    group.add_argument("--output-tokens", metavar="P50,P99", help="output length percentiles")
    group.add_argument(
        "--prefix-tokens",
        type=_positive_int("prefix-tokens"),
        default=0,
        help="a prefix every request shares (prefix caching holds it once)",
    )
    group.add_argument(
        "--preemption-target",
        type=_finite_float("--preemption-target"),
        help="largest acceptable probability that busy slots overflow the KV cache (default 0.01)",
    )
    group.add_argument(
        "--request-seconds",
        type=_finite_float("--request-seconds"),
        help="mean seconds a request holds its slot (your figure): Little's-law throughput bound",
    )
    group.add_argument(
        "--runtime-headroom-gib",
        type=_finite_float("--runtime-headroom-gib"),
        help="GPU memory kept free for what runs after startup (default: what vLLM allocates "
        "beyond its profile; `vramplan diagnose` of a runtime OOM prints the figure it proves)",
    )


def _add_breakdown(sub: Any, knobs: bool) -> None:
    p = sub.add_parser("breakdown", help="per-rank memory breakdown for one launch")
    _add_launch_args(p, knobs=knobs)
    p.set_defaults(func=_cmd_breakdown)


def _add_solve(sub: Any, name: str, knobs: bool) -> None:
    """`plan` and `flags`: the same arguments (flags adds --format)."""
    func, text = {
        "plan": (_cmd_plan, "solve for the largest safe flags"),
        "flags": (_cmd_flags, "print only the `vllm serve` flag line (nothing if it cannot fit)"),
    }[name]
    p = sub.add_parser(name, help=text)
    _add_launch_args(p, knobs=knobs)
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
        help=f"GPU memory kept free (default {_core.DEFAULT_SAFETY_MARGIN_BYTES / GIB:g})",
    )
    _add_traffic_args(p)
    if name == "flags":
        p.add_argument(
            "--format",
            choices=FORMATS,
            default="args",
            help="args: one line for $(...) (JSON values without spaces); shell: the whole "
            "command, quoted, env included; json; env: KEY=value lines; docker, compose, "
            "k8s: a launcher",
        )
    p.set_defaults(func=func)


def _add_check(sub: Any, knobs: bool) -> None:
    p = sub.add_parser(
        "check",
        help="judge a launch as written: vramplan check --gpu G -- vllm serve MODEL --flags ...",
    )
    _add_launch_args(p, model=False, knobs=knobs)
    p.add_argument("--file", help="a JSON or YAML file of vllm.LLM(**kwargs) keyword arguments")
    p.add_argument(
        "command_line",
        nargs=argparse.REMAINDER,
        help="after `--`: vllm serve MODEL ..., python -m vllm.entrypoints.openai.api_server "
        "..., or docker run ... vllm/vllm-openai[:TAG] ...",
    )
    p.set_defaults(func=_cmd_check)


def _add_sweep(sub: Any, knobs: bool) -> None:
    p = sub.add_parser("sweep", help="a grid of launches as a table, CSV or Parquet")
    _add_launch_args(p, grid=True, knobs=knobs)
    p.add_argument("--out", help="write the grid to FILE.csv or FILE.parquet (needs pyarrow)")
    p.set_defaults(func=_cmd_sweep)


def _add_explain(sub: Any, knobs: bool) -> None:
    p = sub.add_parser("explain", help="what a breakdown term or outcome means, and its flags")
    p.add_argument("term", nargs="?", help="weights, activation_peak, non_torch, kv_cache, ...")
    _add_json(p)
    p.set_defaults(func=_cmd_explain)


def _add_validate(sub: Any, knobs: bool) -> None:
    p = sub.add_parser("validate", help="replay measured startups and compare per term")
    p.add_argument("logfile", nargs="?", help="a vLLM startup log: predict the same launch")
    p.add_argument("--records", help="startup records, one JSON object a line (JSONL)")
    p.add_argument("--model", help="model id to plan when the log names a local path")
    p.add_argument("--gpu", help="GPU id (default: from the total memory the log prints)")
    p.add_argument(
        "--profile",
        metavar="PROFILE.yaml",
        help="replay with this calibration profile (vramplan calibrate --out) over the release",
    )
    p.add_argument(
        "--engine-version",
        help="the vLLM release of a log or record that prints none (one that does keeps its own)",
    )
    _add_json(p)
    p.set_defaults(func=_cmd_validate)


def _add_listing(sub: Any, name: str, func: Any, text: str) -> None:
    p = sub.add_parser(name, help=text)
    _add_json(p)
    p.set_defaults(func=func)


def _add_inspect(sub: Any, knobs: bool) -> None:
    p = sub.add_parser("inspect", help="what a model path holds: files, exact checkpoint bytes")
    p.add_argument("path", help="config.json, checkpoint folder or HF cache entry")
    _add_json(p)
    p.set_defaults(func=_cmd_inspect)


def _add_diagnose(sub: Any, knobs: bool) -> None:
    p = sub.add_parser("diagnose", help="name the cause of a failed launch and the fixing flags")
    p.add_argument("logfile", help="the vLLM log (or a traceback / OOM excerpt); '-' for stdin")
    p.add_argument("--dmesg", help="a dmesg / journalctl -k excerpt; '-' for stdin")
    p.add_argument("--model", help="model id or path when the log names a local path")
    p.add_argument("--gpu", help="GPU id (default: from the total memory the log prints)")
    p.add_argument(
        "--engine-version",
        help="the vLLM release that ran (default: the one the log prints, else the newest known)",
    )
    p.add_argument(
        "--host-ram-gib", type=_finite_float("--host-ram-gib"), help="host RAM of the node (GiB)"
    )
    _add_json(p)
    p.set_defaults(func=_cmd_diagnose)


def _add_probe(sub: Any, knobs: bool) -> None:
    p = sub.add_parser("probe", help="this machine's GPUs (NVML / nvidia-smi) and host RAM")
    p.add_argument("--nvidia-smi-csv", help="saved nvidia-smi --query-gpu CSV output (MiB)")
    _add_json(p)
    p.set_defaults(func=_cmd_probe)


def _add_fit(sub: Any, knobs: bool) -> None:
    from .cli_fit import add_fit

    add_fit(sub, knobs)


def _add_colocate(sub: Any, knobs: bool) -> None:
    from .cli_fit import add_colocate

    add_colocate(sub)


# Each subcommand's registration (the subparsers, knob flags or not), in the order --help lists.
_COMMANDS: dict[str, Callable[[Any, bool], None]] = {
    "breakdown": _add_breakdown,
    "plan": lambda sub, knobs: _add_solve(sub, "plan", knobs),
    "flags": lambda sub, knobs: _add_solve(sub, "flags", knobs),
    "check": _add_check,
    "sweep": _add_sweep,
    "explain": _add_explain,
    "validate": _add_validate,
    "models": lambda sub, knobs: _add_listing(sub, "models", _cmd_models, "list model ids"),
    "gpus": lambda sub, knobs: _add_listing(
        sub, "gpus", _cmd_gpus, "list GPUs with their CUDA-reported totals"
    ),
    "inspect": _add_inspect,
    "schema": lambda sub, knobs: _add_listing(
        sub, "schema", _cmd_schema, "print the model/GPU YAML schema as Markdown"
    ),
    "diagnose": _add_diagnose,
    "probe": _add_probe,
    "calibrate": lambda sub, knobs: _add_calibrate(sub),
    "fit": _add_fit,
    "colocate": _add_colocate,
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The CLI's parser. With the name of a subcommand, only that subcommand is built (the
    usage line still lists them all): the parse and help of the command run are the whole
    parser's, at a fraction of the start-up. With another word, every subcommand is built
    without its knob flags, for argparse's "invalid choice" error."""
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="vramplan",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"vramplan {__version__} (plans vLLM up to {_core.newest_known_vllm_version()}, "
        "the newest release it knows; the default engine version)",
    )
    if command in _COMMANDS:
        # The usage line argparse would write with every subcommand built.
        sub = parser.add_subparsers(
            dest="command", required=True, metavar="{" + ",".join(_COMMANDS) + "}"
        )
        _COMMANDS[command](sub, True)
        return parser
    sub = parser.add_subparsers(dest="command", required=True)
    for add in _COMMANDS.values():
        add(sub, command is None)
    return parser


# Commands whose unknown flags are vLLM's own (any EngineArgs name of the release planned).
_TAKES_VLLM_FLAGS = frozenset({"plan", "flags", "breakdown", "sweep", "diagnose"})


# Commands that take `--engine NAME` (an engine's own CLI); fit and colocate have their own.
_ENGINE_COMMANDS = frozenset(
    {"plan", "breakdown", "flags", "sweep", "check", "diagnose", "validate"}
)


# What a write to standard output fails with when its file cannot take more.
_OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})


def _from_stdout(err: OSError) -> bool:
    """Whether an OSError that reached main is standard output's: every file vramplan reads
    or writes turns its OSErrors into named errors, and those carry the file's name."""
    return err.filename is None and err.errno in _OUTPUT_ERRNOS


def _discard_stdout() -> None:
    """Point stdout at /dev/null, with nothing left in its buffer, so that the interpreter's
    final flush does not fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    with contextlib.suppress(OSError):
        sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    try:
        words = _split_verbosity(list(sys.argv[1:] if argv is None else argv))
        if words and words[0] == "fit":
            from . import engines

            fitter = engines.get(engines.engine_named(words), argument="--engine")
            if fitter.cli_fits and fitter.cli is not None:
                return fitter.cli(words)  # its own fit (llama.cpp: GGUF across GPUs)
        if words and words[0] in _ENGINE_COMMANDS:
            from . import engines

            engine = engines.get(engines.engine_named(words), argument="--engine")
            if engine.cli is not None:
                return engine.cli(words)  # the engine's own commands, loaded only when named
            words = engines.without_engine(words)
        parser = build_parser(words[0] if words and not words[0].startswith("-") else None)
        if words and words[0] == "check":
            args = parser.parse_args(words)
            if args.command_line and args.command_line[0] == "--":
                args.command_line = args.command_line[1:]
        else:
            args, unknown = parser.parse_known_args(words)
            if unknown and args.command not in _TAKES_VLLM_FLAGS:
                parser.error(f"unrecognized arguments: {' '.join(unknown)}")
            args.vllm_flags = unknown
        code = int(args.func(args))
        sys.stdout.flush()
        return code
    except ValueError as err:  # vramplan.Error subclasses ValueError: bad input, not a crash
        print(f"vramplan: error: {visible(str(err), keep_newlines=True)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly. Point stdout at /dev/null so the
        # interpreter's final flush does not raise again.
        _discard_stdout()
        return EXIT_BROKEN_PIPE
    except OSError as err:
        if not _from_stdout(err):
            text = visible(f"{type(err).__name__}: {err}", keep_newlines=True)
            print(f"vramplan: internal error: {text}", file=sys.stderr)
            return EXIT_INTERNAL
        # Standard output cannot take what is written (a full disk, a quota, an I/O error).
        print(
            f"vramplan: error: cannot write to standard output ({err.strerror or err})",
            file=sys.stderr,
        )
        _discard_stdout()
        return EXIT_OUTPUT
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as err:  # noqa: BLE001 - last resort: a bug, told in one line, no traceback
        text = visible(f"{type(err).__name__}: {err}", keep_newlines=True)
        print(f"vramplan: internal error: {text}", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
