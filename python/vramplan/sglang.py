"""SGLang, the second engine: breakdown, plan, launch lines and startup logs under SGLang's own
knob names (ServerArgs: mem_fraction_static, max_running_requests, context_length, ...). The
numbers come from the C++ core (cpp/include/vramplan/sglang.hpp); Python only reshapes them."""

from __future__ import annotations

import functools
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import _core, _database
from . import launch as launch_args
from ._json_result import JsonResult

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure


config_error = _database.config_error


@functools.cache
def _core_row() -> dict[str, Any]:
    if "sglang" not in _core.ENGINE_NAMES:
        raise config_error(
            "engine", "sglang", "vllm", "this build has no SGLang row"
        )  # pragma: no cover
    return dict(_core.engine_row("sglang"))


def _engine_row() -> dict[str, Any]:
    return dict(_core_row())


def knobs() -> list[dict[str, Any]]:
    """SGLang's knob table (name, type, unit, range, default rule, flag), from the core."""
    return [dict(k) for k in _engine_row()["knobs"]]


def newest_known_version() -> str:
    return str(_engine_row()["newest_known_version"])


@dataclass(frozen=True)
class SglangBreakdown(JsonResult):
    """One SGLang launch per rank, in SGLang's terms (the core's dict: `data`). `ranks` and
    `terms` are shaped as a vLLM Breakdown's, so the HTML view and the plot draw both alike."""

    @property
    def verdict(self) -> str:
        return str(self.data["verdict"])

    @property
    def started(self) -> bool:
        return self.verdict == "started"

    @property
    def ranks(self) -> list[dict[str, Any]]:
        """The reported rank (the pipeline stage SGLang's ranks agree on) as a vLLM
        breakdown's rank: pipeline_rank, total_memory_bytes, requested_memory_bytes (the GPU
        less the slack B x (1 - f)) and its terms."""
        return [dict(r) for r in self.data["ranks"]]

    @property
    def terms(self) -> list[dict[str, Any]]:
        """The reported rank's GPU memory in SGLang's accounting order (name, bytes,
        provenance), adding up to the GPU's total."""
        return [dict(t) for t in self.data["ranks"][0]["terms"]]

    def _repr_html_(self) -> str:
        """Notebook view: the terms as a table and a stacked bar, as a vLLM breakdown's."""
        from ._html import breakdown_html

        return breakdown_html(self.data)

    def plot(self) -> Figure:
        """A matplotlib Figure: the rank's terms as one stacked bar (needs `vramplan[plot]`)."""
        from ._figures import breakdown_figure

        return breakdown_figure(self.data)


@dataclass(frozen=True)
class SglangPlan(JsonResult):
    """The launch as written judged (`launch`), the largest safe value of each knob, the
    planned launch (`planned`, at the largest safe mem_fraction_static) and its launch line."""

    model_path: str = ""
    launch_knobs: dict[str, Any] = field(default_factory=dict)

    @property
    def launch(self) -> SglangBreakdown:
        return SglangBreakdown(self.data["launch"])

    @property
    def planned(self) -> SglangBreakdown:
        return SglangBreakdown(self.data["planned"])

    @property
    def fits(self) -> bool:
        """The planned launch starts with the safety margin left in the slack and holds the
        target's sequences."""
        return bool(self.data["fits"])

    @property
    def verdict(self) -> str:
        return str(self.data["verdict"])

    @property
    def safety_margin_bytes(self) -> int:
        return int(self.data["safety_margin_bytes"])

    @property
    def error_band(self) -> str:
        """How far the model is from logged SGLang startups, in one sentence."""
        return str(self.data["error_band"])

    @property
    def remedies(self) -> list[dict[str, Any]]:
        """Changes that make a launch that does not fit fit (each replayed through the solver):
        kind, change (the flag as SGLang spells it), changes, drops, fits, detail, flags."""
        return [dict(r) for r in self.data["remedies"]]

    @property
    def launch_line(self) -> str:
        return str(self.data["launch_line"])

    def to_argv(self) -> list[str]:
        """The planned launch's flags as argv words (the model not included)."""
        return [str(word) for word in self.data["launch_argv"]]

    def to_engine_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for `sglang.Engine(**kwargs)`, model_path included."""
        return dict(self.data["engine_kwargs"])

    def _repr_html_(self) -> str:
        """Notebook view: verdict, the largest safe knobs, the launch line, the remedies and
        the planned breakdown, as a vLLM plan's."""
        from ._html import plan_html

        return plan_html(self.data)

    def plot(self) -> Figure:
        """The planned launch's breakdown as a matplotlib Figure (needs `vramplan[plot]`)."""
        return self.planned.plot()


def breakdown(
    spec: _core.ModelSpec, gpu: _core.GpuSpec, *, model_path: str = "", **knobs: Any
) -> SglangBreakdown:
    """What an SGLang server's startup finds per rank (knobs under SGLang's names; a vLLM name
    is an error naming SGLang's knob). `model_path` is the model as the user wrote it."""
    return SglangBreakdown(dict(_core.sglang_breakdown(spec, gpu, knobs, model_path=model_path)))


def plan(
    spec: _core.ModelSpec,
    gpu: _core.GpuSpec,
    *,
    model_path: str = "",
    context: int = 0,
    concurrency: int = 0,
    safety_margin_bytes: int | None = None,
    **knobs: Any,
) -> SglangPlan:
    """The launch as written judged; the largest mem_fraction_static, max_running_requests,
    context_length, chunked_prefill_size and cuda_graph_max_bs that start (each with the others
    as given); the planned launch (given knobs kept, mem_fraction_static the largest that leaves
    `safety_margin_bytes` free in the slack, context_length `context` where not given) judged
    against holding `concurrency` sequences of that context, with remedies when it does not
    fit, and its `python -m sglang.launch_server` line."""
    margin = {} if safety_margin_bytes is None else {"safety_margin_bytes": safety_margin_bytes}
    data = dict(
        _core.sglang_plan(
            spec,
            gpu,
            knobs,
            model_path=model_path,
            context=context,
            concurrency=concurrency,
            **margin,
        )
    )
    return SglangPlan(data, model_path or str(spec.id), dict(knobs))


# The knobs a sweep lists values of, in the rows' nesting order (outermost first), each with
# the type of its values.
SWEEP_KNOBS: tuple[tuple[str, type], ...] = (
    ("mem_fraction_static", float),
    ("context_length", int),
    ("max_running_requests", int),
    ("chunked_prefill_size", int),
)
SWEEP_CHUNK_POINTS = 1 << 16  # rows per core call: progress and Ctrl-C between calls


def sweep(
    spec: _core.ModelSpec,
    gpu: _core.GpuSpec,
    *,
    grid: dict[str, list[Any]],
    progress: Callable[[int, int], None] | None = None,
    **knobs: Any,
) -> pd.DataFrame:
    """Every combination of the listed values of SWEEP_KNOBS (`grid`; a knob not listed keeps
    its value in `knobs`, or SGLang's default), evaluated in C++ (sglang_sweep), in chunks along
    the outermost listed knob. Each row is what `breakdown` reports at that point: the knobs as
    resolved, kv_pool_bytes, max_total_num_tokens and the verdict (`outcome`, a Categorical of
    SGLang's verdicts)."""
    import pandas as pd

    lists = [grid.get(name, []) for name, _ in SWEEP_KNOBS]
    rows = _database.sweep_rows(lists)
    columns = _core.sglang_sweep_columns(rows)
    for chunk, first_row, done in _database.sweep_chunks(lists, SWEEP_CHUNK_POINTS):
        fractions, lengths, requests, chunks = chunk
        _core.sglang_sweep(
            spec,
            gpu,
            knobs,
            fractions,
            lengths,
            requests,
            chunks,
            out=columns,
            row_offset=first_row,
        )
        if progress is not None:
            progress(done, rows)
    codes = columns.pop("verdict")
    frame: pd.DataFrame = pd.DataFrame(columns, copy=False)
    frame["outcome"] = pd.Categorical.from_codes(
        codes, categories=pd.Index(list(_core.SGLANG_VERDICTS))
    )
    return frame


# --- SGLang's argv ------------------------------------------------------------------------

# Flags SGLang spells in more than one way, to the knob they set.
_FLAG_ALIASES = {
    "--enable-hicache": "enable_hierarchical_cache",
    "--tp": "tp_size",
    "--tensor-parallel-size": "tp_size",
    "--pp": "pp_size",
    "--pipeline-parallel-size": "pp_size",
    "--dp": "dp_size",
    "--data-parallel-size": "dp_size",
}


@dataclass
class SglangLaunch:
    """A `python -m sglang.launch_server ...` line read: the model, the knobs vramplan models
    (SGLang's names), and the flags passed through unmodelled (named, never dropped silently)."""

    model_path: str
    knobs: dict[str, Any]
    unmodelled: list[str]


def _knob_value(knob: dict[str, Any], flag: str, text: str) -> Any:
    kind = knob["type"]
    try:
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
    except ValueError:
        raise config_error(flag, text, f"a {kind}", "not a number") from None
    return text


def parse_command(words: Sequence[str]) -> SglangLaunch:
    """argv of `python -m sglang.launch_server --model-path M ...` (or `sglang.launch_server
    ...`, `sglang serve ...`) to the launch. Unknown flags are kept by name in `unmodelled`."""
    words = list(words)
    start = 0
    for i, word in enumerate(words):
        if word in ("sglang.launch_server", "sglang.launch_server.py") or (
            word == "serve" and i > 0 and words[i - 1].endswith("sglang")
        ):
            start = i + 1
            break
    else:
        raise config_error(
            "command",
            " ".join(words[:4]) or "''",
            "python -m sglang.launch_server --model-path MODEL ...",
            "not an SGLang launch line",
        )
    by_flag = {k["flag"]: k for k in knobs() if k["flag"]}
    by_flag.update(
        {
            alias: next(k for k in knobs() if k["name"] == name)
            for alias, name in _FLAG_ALIASES.items()
        }
    )
    model_path = ""
    found: dict[str, Any] = {}
    unmodelled: list[str] = []
    # The options of the release the image tag names (else the newest), as SGLang reads them.
    version = launch_args.sglang_image_version(words[:start])
    if version:
        found["sglang_version"] = version
    rest = words[start:]
    i = 0
    while i < len(rest):
        word = rest[i]
        flag, eq, inline = word.partition("=")
        if not flag.startswith("--"):
            raise config_error("command", word, "--flag [value] words", "a word outside any flag")
        flag = launch_args.sglang_option(flag, version, serve=words[start - 1] == "serve")
        takes_value = True
        knob = by_flag.get(flag)
        if knob is not None and knob["type"] == "bool":
            takes_value = False
        if eq:
            value: str | None = inline
        elif takes_value and i + 1 < len(rest) and not rest[i + 1].startswith("--"):
            value = rest[i + 1]
            i += 1
        else:
            value = None
        i += 1
        if flag in ("--model-path", "--model"):
            if value is None:
                raise config_error(flag, "''", "a model id or path", "missing value")
            model_path = value
        elif knob is not None:
            if knob["type"] == "bool":
                found[knob["name"]] = True
            elif value is None:
                raise config_error(flag, "''", "a value", "missing value")
            else:
                found[knob["name"]] = _knob_value(knob, flag, value)
        else:
            unmodelled.append(flag if value is None else f"{flag} {value}")
    if not model_path:
        raise config_error("--model-path", "''", "a model id or path", "the launch names no model")
    return SglangLaunch(model_path, found, unmodelled)


# --- text ---------------------------------------------------------------------------------


def breakdown_text(data: dict[str, Any], *, solved: bool = False) -> str:
    """The breakdown as the CLI prints it to a pipe: the renderer of vLLM's breakdown
    (`_render.sglang_breakdown`; `solved`: its mem_fraction_static is the solver's)."""
    from . import _render

    buffer = io.StringIO()
    _render.sglang_breakdown(_render.console(buffer), data, solved=solved)
    return buffer.getvalue().rstrip("\n")
