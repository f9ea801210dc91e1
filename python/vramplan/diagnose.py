"""`diagnose`: the one cause of a failed launch, the lines it rests on, the advice in the engine's
flags and, where the engine plans one (vLLM), the flags that fix it. The classifier is the
engine's, in C++ (`_core.diagnose_log`); this module reads the files (bounded),
names the launch (model, GPU, knobs) from the log or the arguments, and asks the solver for the
fixing flags with the failure's cause taken into account."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import _core, _io, api, engines
from ._json_result import JsonResult
from ._quoting import shell_word
from ._units import GIB
from .probe import match_gpu

DEFAULT_SAFETY_MARGIN_BYTES: int = _core.DEFAULT_SAFETY_MARGIN_BYTES
# Read at most this much of a file: its head (launch settings) and its tail (the failure).
MAX_READ_BYTES = _io.LOG_MAX_BYTES
HEAD_BYTES = _io.LOG_HEAD_BYTES

CAUSES = (
    "host_ram_oom_killer",
    "gpu_memory_utilization_overshoot",
    "weights_do_not_fit",
    "kv_budget_exhausted",
    "max_model_len_exceeds_kv",
    "state_blocks_below_max_num_seqs",
    "activation_peak_oom",
    "cudagraph_profiling_oom",
    "cudagraph_capture_oom",
    "sampler_warmup_oom",
    "runtime_oom",
    "not_memory",
    "unknown",
)
# Causes the solver's flags address; the rest get no flags.
_MEMORY_CAUSES = frozenset(CAUSES[: CAUSES.index("runtime_oom") + 1])


@dataclass(frozen=True)
class Diagnosis(JsonResult):
    """`data` is the JSON: cause, evidence, explanation, advice (the knobs the explanation
    advises changing, as data: [{knob, action: lower|raise|set, value}]), oom_phase,
    oom_other_processes_bytes, oom_kills, figures (the log parser's reading), launch, fix,
    fix_unavailable."""

    @property
    def cause(self) -> str:
        return str(self.data["cause"])

    @property
    def evidence(self) -> list[str]:
        return list(self.data["evidence"])

    @property
    def explanation(self) -> str:
        return str(self.data["explanation"])

    @property
    def fix(self) -> dict[str, Any] | None:
        return self.data["fix"]


def read_text(source: str | Path, *, what: str) -> str:
    """A log or kernel excerpt from a file, or from standard input for "-": its head (launch
    settings) and tail (the failure), at most MAX_READ_BYTES; stdin bounded in time too."""
    if str(source) == "-":
        data = _io.read_stdin_head_tail(what=what, head_bytes=HEAD_BYTES, max_bytes=MAX_READ_BYTES)
    else:
        data = _io.read_head_tail(
            source, what=what, head_bytes=HEAD_BYTES, max_bytes=MAX_READ_BYTES
        )
    return data.decode("utf-8", "replace")


def _text(value: str | Path | None, what: str) -> str:
    if value is None:
        return ""
    if isinstance(value, Path):
        return read_text(value, what=what)
    return value


# The knobs a diagnosis reports as the launch's logged values (the solver may lower those the
# user left unset).
_EVALUATED_LOGGED = (
    "gpu_memory_utilization",
    "max_model_len",
    "max_num_seqs",
    "max_num_batched_tokens",
)
_PROMPT = re.compile(r"^\s*\$\s+(?=\S)")


def pasted_command(log_text: str) -> str | None:
    """A command line pasted at the top of a log (`$ vllm serve ...` or `$ python -m
    vllm.entrypoints.openai.api_server ...`, with `\\` continuations), or None."""
    lines = log_text[:65536].splitlines()
    for index, line in enumerate(lines[:50]):
        if not _PROMPT.match(line) or "vllm" not in line:
            continue
        command = [_PROMPT.sub("", line)]
        while command[-1].rstrip().endswith("\\") and index + 1 < len(lines):
            index += 1
            command.append(lines[index])
        return "\n".join(command)
    return None


_NON_DEFAULT_ARGS = re.compile(r"non-default args: (\{.*\})\s*$")
# Names the API server logs among its non-default args that are not engine arguments.
_SERVER_ONLY = frozenset({"model_tag", "api_server_count", "dispatch_function", "subparser"})


def logged_args(log_text: str) -> dict[str, Any]:
    """The launch's arguments from the API server's "non-default args: {...}" line (a Python
    dict literal), the last one in the log; {} when there is none or it does not parse."""
    import ast

    found: dict[str, Any] = {}
    for line in log_text.splitlines():
        if "non-default args: {" not in line or len(line) > 65536:
            continue
        match = _NON_DEFAULT_ARGS.search(line)
        if not match:
            continue
        try:
            value = ast.literal_eval(match.group(1))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        if isinstance(value, dict):
            found = {str(k): v for k, v in value.items() if k not in _SERVER_ONLY}
    return found


def _detected_drafter(log_text: str) -> str | None:
    """ "Detected MTP model" / an EAGLE drafter in the load lines: the speculative method."""
    if "Detected MTP model" in log_text:
        return "mtp"
    if re.search(r"Loading drafter model|EAGLE3? (?:head|drafter)", log_text):
        return "eagle"
    return None


def _pasted_launch(log_text: str) -> Any:
    """The launch of a pasted command line, or None when there is none (or it is not one
    vramplan can read: then the log's own lines name the launch)."""
    from .launch import parse_command

    command = pasted_command(log_text)
    if command is None:
        return None
    try:
        return parse_command(command)
    except ValueError:
        return None


def _launch(
    figures: dict[str, Any],
    model: str | Path | None,
    gpu: str | None,
    pasted: Any = None,
    stated: list[dict[str, Any]] | None = None,
    overrides: dict[str, Any] | None = None,
    engine_version: str | None = None,
) -> tuple[dict[str, Any] | None, str | None]:
    """The launch the log describes: (launch, None) or (None, why it cannot be planned)."""
    stated = stated or []
    name = model or figures.get("model") or (pasted.model if pasted is not None else None)
    if not name:
        return None, "the log does not name the model: pass --model"
    try:
        spec = api.load_model(name)
    except ValueError as err:
        return None, f"model {name!s} cannot be planned ({err}); pass --model ID or a config.json"
    if gpu:
        gpu_spec = api.load_gpu(gpu)
    elif figures.get("gpu_total_gib"):
        total = round(float(figures["gpu_total_gib"]) * GIB)
        try:
            gpu_spec = api.load_gpu(match_gpu(None, total, probed_total=False))
        except ValueError as err:
            return None, f"{err}; pass --gpu"
    else:
        return None, "the log does not show the GPU: pass --gpu"
    # The launch the log's figures state (the core's reading, the logged release at its patch);
    # the caller's release over the log's.
    stated_launch = _core.launch_from_figures("vllm", figures)
    logged = {k: v for k, v in stated_launch.items() if k in _EVALUATED_LOGGED}
    knobs = {k: v for k, v in stated_launch.items() if k not in _EVALUATED_LOGGED}
    quant = str(figures.get("quantization") or "")
    if quant.startswith("fp8") and spec.to_dict()["quantization"] == "none":
        knobs["quantization"] = "fp8"  # online fp8 of a 16-bit checkpoint
    if engine_version:
        knobs["engine_version"] = engine_version
    version = knobs.get("engine_version")
    from .launch import LOGGED_RUNTIME_KNOBS

    # The runtime parts the log says ran (Model Runner V2; FlashInfer's sampler, which 0.8-0.12
    # use wherever FlashInfer is installed): evaluated as they ran. A part the log does not
    # name, or names as not running, is the release's default.
    for figure, knob in LOGGED_RUNTIME_KNOBS.items():
        if figures.get(figure) is True:
            knobs[knob] = "1"
    # Then what the log states in vLLM's own arguments, a pasted command line, and the
    # caller's overrides, each over the one before.
    from .launch import engine_arg_names, passthrough_words, to_knobs

    names = engine_arg_names(version)
    sources: list[tuple[dict[str, Any], dict[str, str]]] = [
        ({k: v for k, v in (args or {}).items() if k in names}, {}) for args in stated
    ]
    if pasted is not None:
        sources.append((pasted.args, pasted.env))
    sources.append((overrides or {}, {}))
    user_context = any("max_model_len" in args for args, _ in sources[len(stated) :])
    # The batch limits the user wrote (a pasted command, flags given on top): what ran, and what
    # the fix keeps unless the diagnosis advises lowering them.
    user_batch: dict[str, Any] = {}
    for args, env in sources[len(stated) :]:
        for key, value in to_knobs(args, env=env, version=version).knobs.items():
            if key in ("max_num_seqs", "max_num_batched_tokens"):
                user_batch[key] = value
    # The user's arguments the planner does not model (a tool-call parser, prefix caching),
    # carried into the fix as written; the model is the command's own word, not a flag.
    carried: dict[str, Any] = {}
    for args, env in sources:
        read = to_knobs(args, env=env, version=version)
        for key, value in read.knobs.items():
            if key in _EVALUATED_LOGGED:
                logged[key] = value
            else:
                knobs[key] = value
        for name in [*read.no_memory_effect, *read.unmodelled]:
            if "." not in name and name not in ("model", "model_tag"):
                carried.pop(name, None)  # a later source's value, in its own place
                carried[name] = args[name]
    launch = {
        "spec": spec,
        "gpu": gpu_spec,
        "knobs": knobs,
        "logged": logged,
        "passthrough": passthrough_words(carried, list(carried)),
    }
    return {**launch, "user_context": user_context, "user_batch": user_batch}, None


def _others_bytes(result: dict[str, Any]) -> int:
    """GPU memory other processes held, as the log states it."""
    figures = result["figures"]
    if figures.get("startup_free_gib") is not None and figures.get("gpu_total_gib") is not None:
        return max(0, round((figures["gpu_total_gib"] - figures["startup_free_gib"]) * GIB))
    return int(result.get("oom_other_processes_bytes") or 0)


def _advises(result: dict[str, Any], knob: str, value: Any) -> bool:
    """Whether the diagnosis advises setting `knob` to `value` (its advice data, not its prose)."""
    return any(
        a["knob"] == knob and a["action"] == "set" and a["value"] == value for a in result["advice"]
    )


def _advises_lowering(result: dict[str, Any], knob: str) -> bool:
    """Whether the diagnosis advises lowering `knob`."""
    return any(a["knob"] == knob and a["action"] == "lower" for a in result["advice"])


def _runtime_headroom(result: dict[str, Any], predicted: api.Breakdown) -> int:
    """Bytes a plan keeps free beside its budget after a runtime OOM: what the failing launch
    left outside its budget (the core's headroom of the logged launch: total - budget - CUDA
    context - other processes) plus the shortfall its OOM line states (tried - free), less the
    solver's default safety margin."""
    rank = predicted.to_dict()["ranks"][0]
    figures = result.get("figures") or {}
    tried, free = figures.get("oom_tried_gib"), figures.get("oom_free_gib")
    missing = max(0, round((tried - free) * GIB)) if tried is not None and free is not None else 0
    left = int(rank["headroom_bytes"])
    return max(0, min(left + missing - DEFAULT_SAFETY_MARGIN_BYTES, rank["total_memory_bytes"] - 1))


def _fix(result: dict[str, Any], launch: dict[str, Any], host_ram_bytes: int) -> dict[str, Any]:
    """The solver's flags for the same model, GPU and fixed knobs, given the cause."""
    from .launch import remedy_available

    cause = result["cause"]
    knobs = dict(launch["knobs"])
    others = _others_bytes(result)
    context = int(launch["logged"].get("max_model_len") or 0)
    tp = int(knobs.get("tensor_parallel_size") or 1)
    pp = int(knobs.get("pipeline_parallel_size") or 1)
    predicted = api.breakdown(
        launch["spec"],
        launch["gpu"],
        num_gpus=tp * pp,
        memory_used_by_others_bytes=others,
        host_ram_bytes=host_ram_bytes,
        **launch["knobs"],
        **launch["logged"],
    )
    # The user's utilization is kept unless the failure is the utilization itself; a context
    # the user wrote (a pasted command line, an override) is pinned as written, a logged one
    # is the target the solver meets.
    utilization = {
        k: v
        for k, v in launch["logged"].items()
        if k == "gpu_memory_utilization" and cause != "gpu_memory_utilization_overshoot"
    }
    headroom = None
    if cause == "runtime_oom":
        # The launch ran out of memory serving traffic: the plan keeps free, outside its budget,
        # what this launch left there plus what the OOM proves was missing (torch's "Tried to
        # allocate X ... of which Y is free"), so it never takes more of the GPU than what ran.
        headroom = _runtime_headroom(result, predicted)
        utilization = {}
    written_context: dict[str, Any] = (
        {"max_model_len": context} if launch.get("user_context") and context else {}
    )
    target_context = 0 if written_context else context
    batch = dict(launch.get("user_batch") or {})

    def solve(extra: dict[str, Any]) -> api.Plan:
        return api.plan(
            launch["spec"],
            launch["gpu"],
            num_gpus=tp * pp,
            memory_used_by_others_bytes=others,
            host_ram_bytes=host_ram_bytes,
            context=target_context,
            runtime_headroom_bytes=headroom,
            **knobs,
            **written_context,
            **{**batch, **extra},
        )

    # The user's settings first (the solver only lowers what they left unset); then, in this
    # order, the utilization chosen instead of theirs, and eager mode where the diagnosis advises
    # it (a CUDA-graph failure outside the utilization budget).
    dropped: list[str] = []
    plan = solve(utilization)
    if not plan.fits and utilization:
        freed = solve({})
        if freed.fits:
            plan, dropped, utilization = freed, ["gpu_memory_utilization"], {}
    # A batch limit the user wrote gives way only where the diagnosis advises lowering it.
    for key in [k for k in batch if _advises_lowering(result, k)]:
        if plan.fits:
            break
        kept = batch.pop(key)
        lowered = solve(utilization)
        if lowered.fits:
            plan = lowered
            dropped.append(key)
        else:
            batch[key] = kept
    if not plan.fits and _advises(result, "enforce_eager", True) and not knobs.get("enforce_eager"):
        knobs["enforce_eager"] = True
        plan = solve(utilization)
    words = list(launch.get("passthrough") or [])
    tail = "".join(" " + shell_word(word) for word in words)
    return {
        "drops": dropped,
        "as_written": plan["as_written"],
        "changed": plan["changed"],
        "vllm_args": plan.to_vllm_args() + tail,
        "vllm_argv": [*plan.to_vllm_argv(), *words],
        "passthrough": words,
        "fits": plan.fits,
        "verdict": plan["verdict"],
        "binding": plan["binding"],
        "pinned": {k: v for k, v in knobs.items() if k != "engine_version"},
        "context": context,
        "memory_used_by_others_bytes": others,
        "runtime_headroom_bytes": headroom,
        "host_ram_required_bytes": plan.breakdown["host"]["required_bytes"],
        "remedies": [
            {**r, "flags": r["flags"] + tail}
            for r in plan["remedies"]
            if remedy_available(r, str(plan.breakdown["engine_version"]))
        ],
        # What the planner predicts for the launch exactly as logged: a "started" here for a
        # launch that failed is a failure the engine model does not capture yet.
        "logged_launch_predicted_outcome": predicted.outcome,
        # A release newer than the newest known is planned with that release's rules.
        "engine_version_warning": plan.engine_version_warning,
        "host_oom": _host_oom(result, predicted, launch),
    }


def _host_oom(
    result: dict[str, Any], predicted: api.Breakdown, launch: dict[str, Any]
) -> dict[str, Any] | None:
    """The last OOM kill set against the plan's host need for the launch as logged."""
    if result["cause"] != "host_ram_oom_killer" or not result["oom_kills"]:
        return None
    knobs = {**launch["knobs"], **launch["logged"]}
    workers = 1
    for key in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size"):
        workers *= int(knobs.get(key) or 1)
    kill = result["oom_kills"][-1]
    return dict(_core.read_host_oom(kill["anon_rss_bytes"], predicted.host, workers))


def diagnose(
    log: str | Path = "",
    *,
    engine: str = engines.DEFAULT_ENGINE,
    dmesg: str | Path | None = None,
    model: str | Path | None = None,
    gpu: str | None = None,
    host_ram_bytes: int | None = None,
    overrides: dict[str, Any] | None = None,
    engine_version: str | None = None,
) -> Diagnosis:
    """The cause of a failed launch of `engine` (vLLM by default; any of _core.ENGINE_NAMES), with
    the advice as data in the engine's own knobs and flags.

    `log`: the log text (or any part of it: a traceback, one OOM line), or a `pathlib.Path` to
    read; `dmesg`: a `dmesg` / `journalctl -k` excerpt, as text or a Path. The classifier is
    the engine's, in the core. Where the engine plans a fix (vLLM), `model` / `gpu` name the
    launch when the log does not (a local path, or no GPU total printed); with both known the
    answer carries the solver's fixing flags (`fix`). The launch is read from the log's
    figures, its "non-default args" line, a pasted command line and drafter detection;
    `overrides` (vLLM argument names) take precedence over all of them. `engine_version`: the
    release that ran, over the one the log prints (default: the log's, else the newest
    release the planner knows). An engine that plans no fix refuses these by name.
    """
    served = engines.get(engine)
    log_text = _text(log, "log")
    kernel_text = _text(dmesg, "kernel log")
    result = dict(_core.diagnose_log(served.name, log_text, kernel_text))
    result["launch"] = None
    result["fix"] = None
    result["fix_unavailable"] = None
    if served.diagnosis_fix is None:
        fix_inputs = {
            "model": model,
            "gpu": gpu,
            "host_ram_bytes": host_ram_bytes,
            "overrides": overrides,
            "engine_version": engine_version,
        }
        for name, value in fix_inputs.items():
            if value:
                raise api.config_error(
                    name, str(value), f"unset with engine={served.name!r}",
                    "it names the launch a fix is planned for; this engine's diagnosis plans none",
                )  # fmt: skip
        result["fix_unavailable"] = (
            f"{served.display_name}'s diagnosis gives its advice (above) without a planned fix"
        )
        return Diagnosis(result)
    served.diagnosis_fix(
        result,
        log_text,
        model=model,
        gpu=gpu,
        host_ram_bytes=host_ram_bytes,
        overrides=overrides,
        engine_version=engine_version,
    )
    return Diagnosis(result)


def _vllm_fix(
    result: dict[str, Any],
    log_text: str,
    *,
    model: str | Path | None,
    gpu: str | None,
    host_ram_bytes: int | None,
    overrides: dict[str, Any] | None,
    engine_version: str | None,
) -> None:
    """vLLM's fix for a diagnosis `result` (updated in place): the launch the log describes and
    the solver's flags for it given the cause, or why there are none."""
    if result["cause"] not in _MEMORY_CAUSES:
        result["fix_unavailable"] = "no memory failure to fix"
        return
    pasted = _pasted_launch(log_text)
    result["pasted_command"] = None if pasted is None else {"model": pasted.model, **pasted.args}
    args = logged_args(log_text)
    result["logged_args"] = args
    stated = [args]
    drafter = _detected_drafter(log_text)
    result["detected_speculative_method"] = drafter
    if drafter and "speculative_config" not in args:
        stated.append({"speculative_config": {"method": drafter, "num_speculative_tokens": 1}})
        result["speculative_note"] = (
            f"the log shows a {drafter} drafter but not its token count: planned with 1 "
            "(pass --speculative-config to say otherwise)"
        )
    try:
        launch, why = _launch(
            result["figures"], model, gpu, pasted, stated, overrides, engine_version
        )
    except ValueError as err:  # an override or logged argument vLLM does not accept
        launch, why = None, str(err)
    if launch is None:
        result["fix_unavailable"] = why
        return
    result["launch"] = {
        "model": launch["spec"].id,
        "gpu": launch["gpu"].id,
        **launch["knobs"],
        **launch["logged"],
    }
    try:
        result["fix"] = _fix(result, launch, int(host_ram_bytes or 0))
    except ValueError as err:  # vramplan.Error: the planner rejects the launch as logged
        result["fix_unavailable"] = f"the planner cannot plan this launch: {err}"


def format_text(diagnosis: Diagnosis) -> str:
    """The human-readable report."""
    out = io.StringIO()
    data = diagnosis.data
    out.write(f"cause: {data['cause']}\n\n{data['explanation']}\n")
    if data["evidence"]:
        out.write("\nevidence:\n")
        for line in data["evidence"]:
            out.write(f"  {line}\n")
    for kill in data["oom_kills"]:
        scope = "memory cgroup" if kill["cgroup"] else "host"
        rss = kill["anon_rss_bytes"]
        rss_text = "?" if rss is None else f"{rss / GIB:.2f} GiB"
        out.write(
            f"\nOOM kill ({scope}): pid {kill['pid']} {kill['process']}, anon-rss {rss_text}\n"
        )
    # The advice that carries its own reason (vLLM's explanation gives the reasons of its own).
    reasoned = [item for item in data["advice"] if item.get("why")]
    if reasoned:
        out.write("\nadvice:\n")
    for item in reasoned:
        value = "" if item["value"] is None else f" {item['value']}"
        out.write(f"  {item['action']} {item['flag'] or item['knob']}{value}: {item['why']}\n")
    fix = data["fix"]
    serve = engines.get(data["engine"]).serve_command
    if fix:
        launch = data["launch"]
        out.write(f"\nthe launch as logged, planned: {fix['as_written']['verdict']}\n")
        if fix.get("engine_version_warning"):
            out.write(f"  {fix['engine_version_warning']}\n")
        for change in fix["changed"]:
            before = change["before"] or "unset"
            out.write(
                f"  changed {change['knob']}: {before} -> {change['value']} ({change['reason']})\n"
            )
        if fix["drops"]:
            out.write(f"  not kept from your launch: {', '.join(fix['drops'])}\n")
        model = shell_word(str(launch["model"]))
        out.write(f"\nfix ({fix['verdict']}):\n  {serve} {model} {fix['vllm_args']}\n")
        if fix.get("runtime_headroom_bytes"):
            out.write(
                f"  (planned keeping {fix['runtime_headroom_bytes'] / GIB:.2f} GiB free for the "
                "running server beside the budget: what this launch left plus what its OOM "
                f"lacked; vramplan plan --runtime-headroom-gib "
                f"{fix['runtime_headroom_bytes'] / GIB:.2f})\n"
            )
        if fix["memory_used_by_others_bytes"]:
            out.write(
                f"  (planned with {fix['memory_used_by_others_bytes'] / GIB:.2f} GiB held by "
                "other processes)\n"
            )
        if not fix["fits"]:
            for remedy in fix["remedies"]:
                mark = "fits" if remedy["fits"] else "not enough alone"
                drops = f"; drops your {', '.join(remedy['drops'])}" if remedy["drops"] else ""
                out.write(f"  {remedy['change']:<46} [{mark}] {remedy['detail']}{drops}\n")
                if remedy["fits"]:
                    out.write(f"    {serve} {model} {remedy['flags']}\n")
        out.write(
            "  planner's prediction for the launch as logged: "
            f"{fix['logged_launch_predicted_outcome']}\n"
        )
        if fix.get("host_oom"):
            out.write(f"\nhost RAM against the plan: {fix['host_oom']['explanation']}\n")
    elif data["fix_unavailable"] and data["cause"] in _MEMORY_CAUSES:
        out.write(f"\nno fixing flags: {data['fix_unavailable']}\n")
    return out.getvalue()
