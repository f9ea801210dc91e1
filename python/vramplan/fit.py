"""Which GPUs, how many, and which split: `vramplan.fit` runs the C++ solver over every GPU type
x count x TP/PP/DP split for one model and target, and `vramplan.fit_models` asks the reverse,
which models fit a given GPU.

Every number comes from the compiled launch and the solver: for vLLM the core's option loop
(`_core.fit_options`, one call per GPU type), else one `vramplan.plan` per option; this module
only enumerates launches, keeps their answers and orders them (orchestration, not arithmetic).
"""

from __future__ import annotations

import functools
import io
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from . import _core, _io, api, engines
from ._quoting import shell_word
from ._resources import model_specs_file
from .deployment import check_mig_parallel
from .search import plan_on_gpus

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_MAX_GPUS = 8  # one node
# The context `fit_models` counts concurrent sequences at when none is given.
DEFAULT_REVERSE_CONTEXT = 4096
PRICE_FILE_MAX_BYTES = 1 << 20
SPLIT_FIELDS = ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size")

FIT_COLUMNS = [
    "gpu",
    "num_gpus",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "data_parallel_size",
    "fits",
    "usd_per_hour",
    "max_concurrency",
    "max_context",
    "kv_headroom",
    "kv_tokens",
    "gpu_memory_utilization",
    "max_model_len",
    "max_num_seqs",
    "max_num_batched_tokens",
    "launch",
    "verdict",
]

# Progress callback: (launches done, launches in all).
Progress = Callable[[int, int], None]


# fit(engine="sglang")'s columns under SGLang's names: its rows are built under the vLLM
# columns' keys (one ordering and typing for both) and renamed last.


def check_engine(engine: str) -> engines.Engine:
    """The engine of a catalogue-wide search (fit_models, colocate): one whose launches those
    searches cover, refused by name otherwise, never answered as another engine's."""
    found = engines.get(engine)
    if not found.searches_catalogue:
        raise api.config_error(
            "engine",
            engine,
            ", ".join(name for name in engines.names() if engines.get(name).searches_catalogue),
            f"this command does not search {found.display_name} launches; `vramplan fit MODEL "
            f"--engine {engine}` searches GPUs for one model and `vramplan plan --engine "
            f"{engine}` plans one launch",
        )
    return found


def read_prices(path: str | Path) -> dict[str, float]:
    """A price file: CSV with the header `gpu,usd_per_hour` and one row per GPU (database id or
    alias), dollars per GPU-hour. Returns {database GPU id: price}. A malformed file is a
    ConfigError naming the file, the line, the field and the value."""
    path = Path(path)
    # Bounded and refused by type (a FIFO would block), like every user file.
    raw = _io.read_bytes(path, what="price file", max_bytes=PRICE_FILE_MAX_BYTES)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise api.config_error("prices", str(path), "UTF-8 text", "not UTF-8") from err
    import csv  # only for a price file: `fit` starts without it

    rows = list(csv.reader(io.StringIO(text)))
    if not rows or [cell.strip() for cell in rows[0]] != ["gpu", "usd_per_hour"]:
        got = ",".join(rows[0]) if rows else ""
        raise api.config_error(
            f"{path}: line 1: header", got, "gpu,usd_per_hour", "missing or wrong header"
        )
    db = api.spec_database()
    prices: dict[str, float] = {}
    for number, row in enumerate(rows[1:], start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        where = f"{path}: line {number}"
        if len(row) != 2:
            raise api.config_error(where, ",".join(row), "two fields: gpu,usd_per_hour", "bad row")
        name, price_text = row[0].strip(), row[1].strip()
        if not db.has_gpu(name):
            raise api.config_error(
                f"{where}: gpu", name, "a GPU id or alias (vramplan gpus)", "unknown GPU"
            )
        try:
            price = float(price_text)
        except ValueError:
            price = math.nan
        if not math.isfinite(price) or price <= 0:
            raise api.config_error(
                f"{where}: usd_per_hour", price_text, "a positive number", "not a price"
            )
        gpu_id = db.gpu(name).id
        if gpu_id in prices:
            raise api.config_error(f"{where}: gpu", name, "each GPU once", "listed twice")
        prices[gpu_id] = price
    return prices


def splits(num_gpus: int) -> list[tuple[int, int, int]]:
    """Every (TP, PP, DP) with TP x PP x DP = `num_gpus`: one replica before data parallelism,
    and within each, fewer pipeline stages first."""
    out = [
        (tp, pp, num_gpus // (tp * pp))
        for tp in range(1, num_gpus + 1)
        for pp in range(1, num_gpus + 1)
        if num_gpus % (tp * pp) == 0
    ]
    return sorted(out, key=lambda s: (s[2], s[1], s[0]))


def launch_line(model: str, result: api.Plan) -> str:
    """The `vllm serve` command for a plan, pasteable into a shell: the model id as given,
    environment variables the version reads first."""
    env = " ".join(f"{k}={shell_word(v)}" for k, v in result.to_vllm_env().items())
    line = f"vllm serve {shell_word(model)} {result.to_vllm_args()}".rstrip()
    return f"{env} {line}" if env else line


class _Target(NamedTuple):  # not a dataclass: `fit` starts without `dataclasses`
    context: int
    concurrency: int


def _split_plan(
    model_id: str,
    spec: _core.ModelSpec,
    gpu: _core.GpuSpec,
    num_gpus: int,
    split: tuple[int, int, int],
    target: _Target,
    node: dict[str, Any],
    knobs: dict[str, Any],
) -> dict[str, Any]:
    """One GPU type x count x split: the plan at the target and what it can stretch to.
    `node`: memory_used_by_others_bytes and host_ram_bytes, as `vramplan.plan` takes them."""
    tp, pp, dp = split
    pinned = {**knobs, **dict(zip(SPLIT_FIELDS, split))}
    per_replica = -(-target.concurrency // dp)

    def one(context: int, concurrency: int) -> api.Plan:
        return api.plan(
            spec, gpu, num_gpus=num_gpus, context=context, concurrency=concurrency, **node, **pinned
        )

    row: dict[str, Any] = {
        "gpu": gpu.id,
        "num_gpus": num_gpus,
        "tensor_parallel_size": tp,
        "pipeline_parallel_size": pp,
        "data_parallel_size": dp,
    }
    try:
        result = one(target.context, per_replica)
    except _core.ConfigError as err:
        if getattr(err, "field", "") not in SPLIT_FIELDS:
            raise
        return {**row, "fits": False, "verdict": f"invalid split: {err}"}
    breakdown = result.breakdown  # a new wrapper at each access: once
    started = breakdown.outcome == "started"
    row.update(
        fits=bool(result.fits),
        verdict=str(result.verdict),
        max_concurrency=int(result.concurrent_sequences) * dp if started else 0,
        kv_tokens=int(breakdown.kv_tokens) * dp if started else 0,
        gpu_memory_utilization=float(result.gpu_memory_utilization),
        max_model_len=int(result.max_model_len),
        max_num_seqs=int(result.max_num_seqs),
        max_num_batched_tokens=int(result.max_num_batched_tokens),
        launch=launch_line(model_id, result),
    )
    row["kv_headroom"] = row["max_concurrency"] / target.concurrency
    if result.fits:
        longest = one(0, per_replica)  # context 0: the solver's longest that holds them
        row["max_context"] = int(longest.max_model_len) if longest.fits else 0
    return row


def _sglang_split_plan(
    model_id: str,
    spec: _core.ModelSpec,
    gpu: _core.GpuSpec,
    num_gpus: int,
    split: tuple[int, int, int],
    target: _Target,
    node: dict[str, Any],
    knobs: dict[str, Any],
) -> dict[str, Any]:
    """One GPU type x count x split for SGLang: its solver (the largest mem_fraction_static
    that leaves the safety margin in the slack) judging whether each DP replica holds
    ceil(concurrency / DP) sequences of the target's context in its KV pool, within its
    max_running_requests."""
    from . import sglang

    for name, value in node.items():
        if value:
            raise api.config_error(name, value, "unset with engine='sglang'", "vLLM only")
    tp, pp, dp = split
    split_fields = tuple(engines.get("sglang").column(name) for name in SPLIT_FIELDS)
    pinned = {
        **{k: v for k, v in knobs.items() if v is not None},
        **dict(zip(split_fields, split)),
    }
    per_replica = -(-target.concurrency // dp)
    row: dict[str, Any] = {
        "gpu": gpu.id,
        "num_gpus": num_gpus,
        "tensor_parallel_size": tp,
        "pipeline_parallel_size": pp,
        "data_parallel_size": dp,
    }
    try:
        result = sglang.plan(
            spec,
            gpu,
            model_path=model_id,
            context=target.context,
            concurrency=per_replica,
            **pinned,
        )
    except _core.ConfigError as err:
        if getattr(err, "field", "") not in split_fields:
            raise
        return {**row, "fits": False, "verdict": f"invalid split: {err}"}
    planned = result.planned
    started = planned.started
    held = int(result["concurrent_sequences"])
    row.update(
        fits=result.fits,
        verdict=result.verdict,
        max_concurrency=held * dp,
        kv_tokens=int(planned["max_total_num_tokens"]) * dp if started else 0,
        gpu_memory_utilization=float(planned["mem_fraction_static"]),
        max_model_len=int(planned["context_length"]),
        max_num_seqs=int(planned["max_running_requests"]),
        max_num_batched_tokens=int(planned["chunked_prefill_size"]),
        launch=result.launch_line,
    )
    row["kv_headroom"] = row["max_concurrency"] / target.concurrency
    if result.fits:
        # The pool's tokens do not depend on context_length (req_to_token is in the slack), so
        # the longest context holding the replica's sequences is the pool's share, within the
        # longest context the solver finds to start at the planned mem_fraction_static.
        at_planned = {**pinned, "mem_fraction_static": planned["mem_fraction_static"]}
        longest = sglang.plan(spec, gpu, model_path=model_id, **at_planned)["max_context_length"]
        row["max_context"] = min(
            int(longest or 0), int(planned["max_total_num_tokens"]) // per_replica
        )
    return row


# Integer columns stay integers where a row has no value (an invalid split, a misfit's longest
# context): pandas' nullable Int64.
INTEGER_COLUMNS = (
    "max_concurrency",
    "max_context",
    "kv_tokens",
    "max_model_len",
    "max_num_seqs",
    "max_num_batched_tokens",
)


def _descending(value: float | None) -> tuple[bool, float]:
    """A sort key putting larger numbers first and missing ones (None, NaN) last."""
    if value is None or math.isnan(value):
        return (True, 0.0)
    return (False, -value)


def _order(rows: list[dict[str, Any]], priced: bool) -> list[dict[str, Any]]:
    """Fitting options first; then cheapest (options without a price after the priced ones),
    or with no prices the fewest GPUs; then fewer pipeline stages and replicas, more headroom
    (a stable sort: ties keep the order the options were planned in)."""

    def key(row: dict[str, Any]) -> tuple[Any, ...]:
        price = row["usd_per_hour"]
        cost = (math.isnan(price), 0.0 if math.isnan(price) else price) if priced else ()
        return (
            not row["fits"],
            *cost,
            row["num_gpus"],
            row["pipeline_parallel_size"],
            row["data_parallel_size"],
            _descending(row.get("kv_headroom")),
            row["gpu"],
        )

    return sorted(rows, key=key)


def frame_of(
    rows: Sequence[Mapping[str, Any]], columns: Sequence[str], integers: Sequence[str]
) -> pd.DataFrame:
    """Rows as fit's DataFrame: the columns in order, a key a row lacks as NA, `integers` as
    pandas' nullable Int64 (pandas is imported here, only when a DataFrame is asked for)."""
    import pandas as pd

    frame = pd.DataFrame(list(rows), columns=list(columns))
    typed: pd.DataFrame = frame.astype({c: "Int64" for c in integers})
    return typed


def records(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> list[dict[str, Any]]:
    """Rows as JSON records, as the DataFrame's `to_json(orient="records")` writes them: every
    column, null where a row has no value (or NaN), floats to 10 decimal places."""

    def cell(value: Any) -> Any:
        if isinstance(value, float):
            return None if math.isnan(value) else round(value, 10)
        return value

    return [{column: cell(row.get(column)) for column in columns} for row in rows]


def records_json(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str],
    names: Mapping[str, str] | None = None,
) -> str:
    """`json.dumps(records(rows, columns), indent=2)`, each column renamed by `names`, written
    without json's pure-Python encoder (which `indent` selects; half a second for the whole
    catalogue): the records are flat, so each cell is encoded alone (a string by json's own C
    escaper) and the lines joined. A cell of another type falls back to json.dumps."""
    import json
    from json.encoder import encode_basestring_ascii as quoted

    renames = names or {}
    if not columns:
        return json.dumps([{} for _ in rows], indent=2)
    keys = [f"    {quoted(renames.get(c, c))}: " for c in columns]
    lines = []
    for row in rows:
        cells = []
        for key, column in zip(keys, columns):
            value = row.get(column)
            if isinstance(value, str):
                text = quoted(value)
            elif value is None:
                text = "null"
            elif isinstance(value, bool):
                text = "true" if value else "false"
            elif isinstance(value, int):
                text = int.__repr__(value)
            elif isinstance(value, float) and math.isfinite(value):
                text = float.__repr__(round(value, 10))
            elif isinstance(value, float) and math.isnan(value):
                text = "null"
            else:  # infinities, lists, ...: json's own rules
                renamed = [
                    {renames.get(k, k): v for k, v in record.items()}
                    for record in records(rows, columns)
                ]
                return json.dumps(renamed, indent=2)
            cells.append(key + text)
        lines.append("  {\n" + ",\n".join(cells) + "\n  }")
    return "[\n" + ",\n".join(lines) + "\n]" if lines else "[]"


def _gpu_list(gpus: str | Sequence[str] | None) -> list[str]:
    db = api.spec_database()
    if gpus is None or gpus == "all":
        return list(db.gpu_ids())
    names = gpus.split(",") if isinstance(gpus, str) else list(gpus)
    if not names or not all(isinstance(n, str) and n.strip() for n in names):
        raise api.config_error("gpus", gpus, "'all' or a list of GPU ids", "empty or wrong type")
    out: list[str] = []
    for name in names:
        gpu_id = db.gpu(name.strip()).id  # raises ConfigError with near names
        if gpu_id not in out:
            out.append(gpu_id)
    return out


def fit(
    model: str | _core.ModelSpec = api.DEFAULT_MODEL,
    *,
    context: int,
    concurrency: int,
    gpus: str | Sequence[str] | None = None,
    max_gpus: int = DEFAULT_MAX_GPUS,
    num_gpus: int | None = None,
    prices: str | Path | Mapping[str, float] | None = None,
    engine: str = "vllm",
    memory_used_by_others_bytes: int = 0,
    host_ram_bytes: int = 0,
    revision: str | None = None,
    offline: bool | None = None,
    progress: Progress | None = None,
    **knobs: Any,
) -> pd.DataFrame:
    """Every GPU type (`gpus`: 'all', or ids) x count (1 .. `max_gpus`, or exactly `num_gpus`)
    x TP/PP/DP split, planned by the C++ solver for `concurrency` sequences of `context` tokens.
    Knobs (vLLM's names) are pinned on every launch; a pinned TP/PP/DP keeps only the splits
    with that size. The model id goes into the launch lines exactly as given (`revision` and
    `offline` as `vramplan.load_model` takes them). `memory_used_by_others_bytes` (per GPU)
    and `host_ram_bytes` (the node's) apply to every option.

    Returns a DataFrame, one row per option, ranked: fitting first, then cheapest (`prices`: a
    `gpu,usd_per_hour` CSV or a mapping, dollars per GPU-hour), or fewest GPUs without prices.
    Columns: the split; fits; usd_per_hour (whole option); max_concurrency (sequences of
    `context` held at once, all DP replicas, at most max_num_seqs each); max_context (longest
    context holding `concurrency` sequences, fitting rows only); kv_headroom (max_concurrency /
    concurrency); kv_tokens; the chosen knobs; launch (the `vllm serve` line); verdict.
    With data parallelism each replica holds ceil(concurrency / DP) sequences.
    engine="sglang": SGLang's solver per option (knobs and columns under SGLang's names:
    tp_size, pp_size, dp_size, mem_fraction_static, context_length, max_running_requests,
    chunked_prefill_size; launch: the `python -m sglang.launch_server` line);
    memory_used_by_others_bytes and host_ram_bytes are vLLM's and refused."""
    rows = fit_rows(
        model,
        context=context,
        concurrency=concurrency,
        gpus=gpus,
        max_gpus=max_gpus,
        num_gpus=num_gpus,
        prices=prices,
        engine=engine,
        memory_used_by_others_bytes=memory_used_by_others_bytes,
        host_ram_bytes=host_ram_bytes,
        revision=revision,
        offline=offline,
        progress=progress,
        **knobs,
    )
    frame = frame_of(rows, FIT_COLUMNS, INTEGER_COLUMNS)
    renamed: pd.DataFrame = frame.rename(columns=dict(engines.get(engine).fit_columns))
    return renamed


def fit_rows(
    model: str | _core.ModelSpec = api.DEFAULT_MODEL,
    *,
    context: int,
    concurrency: int,
    gpus: str | Sequence[str] | None = None,
    max_gpus: int = DEFAULT_MAX_GPUS,
    num_gpus: int | None = None,
    prices: str | Path | Mapping[str, float] | None = None,
    engine: str = "vllm",
    memory_used_by_others_bytes: int = 0,
    host_ram_bytes: int = 0,
    revision: str | None = None,
    offline: bool | None = None,
    progress: Progress | None = None,
    **knobs: Any,
) -> list[dict[str, Any]]:
    """`fit`'s options as dicts, ranked, without pandas: FIT_COLUMNS' keys (vLLM's names; a
    key is missing where the DataFrame holds NA, usd_per_hour NaN when unpriced)."""
    searched = engines.get(engine)
    split_fields = tuple(searched.column(name) for name in SPLIT_FIELDS)
    if isinstance(model, _core.ModelSpec):
        spec, model_id = model, str(model.id)
    else:
        spec, model_id = api.load_model(model, revision=revision, offline=offline), str(model)
    api._integer("context", context, 1, int(spec.max_position_embeddings))
    api._integer("concurrency", concurrency, 1, 1 << 30)
    api._integer("max_gpus", max_gpus, 1, 1 << 10)
    counts = range(1, max_gpus + 1)
    if num_gpus is not None:
        counts = range(api._integer("num_gpus", num_gpus, 1, 1 << 10), num_gpus + 1)
    price_of = _prices(prices)
    db = api.spec_database()
    gpu_specs = [db.gpu(g) for g in _gpu_list(gpus)]
    fixed = {f: knobs[f] for f in split_fields if knobs.get(f) is not None}
    work = [
        (gpu, count, split)
        for gpu in gpu_specs
        for count in counts
        for split in splits(count)
        if all(split[split_fields.index(f)] == v for f, v in fixed.items())
    ]
    free_knobs = {k: v for k, v in knobs.items() if k not in split_fields}
    target = _Target(context, concurrency)
    node = {
        "memory_used_by_others_bytes": memory_used_by_others_bytes,
        "host_ram_bytes": host_ram_bytes,
    }
    rows = None
    if searched.fit_rows is not None:
        rows = searched.fit_rows(model_id, spec, work, target, node, free_knobs, progress)
    if rows is None:
        rows = []
        for done, (gpu, count, split) in enumerate(work, start=1):
            rows.append(
                searched.fit_option(model_id, spec, gpu, count, split, target, node, free_knobs)
            )
            if progress is not None:
                progress(done, len(work))
    for row in rows:
        price = price_of.get(row["gpu"])
        row["usd_per_hour"] = math.nan if price is None else price * row["num_gpus"]
    return _order(rows, bool(price_of))


# `vramplan.plan`'s keywords beyond the launch's knobs (and its positional arguments): knobs
# that name one are planned option by option (`_split_plan`), as `plan` takes them.
_PLAN_KEYWORDS = frozenset(
    (
        "model",
        "gpu",
        "safety_margin_bytes",
        "runtime_headroom_bytes",
        *api.TRAFFIC_KEYWORDS,
    )
)


def _vllm_rows(
    model_id: str,
    spec: _core.ModelSpec,
    work: list[tuple[_core.GpuSpec, int, tuple[int, int, int]]],
    target: _Target,
    node: dict[str, Any],
    knobs: dict[str, Any],
    progress: Progress | None,
) -> list[dict[str, Any]] | None:
    """`_split_plan`'s rows for every option of `work`, from the core's option loop
    (`_core.fit_options`: each launch compiled once, solved without remedies, in one call per
    GPU type). None where the knobs are not the launch's alone (`_PLAN_KEYWORDS`), or where the
    split changes how the other knobs translate: `_split_plan` answers those."""
    if _PLAN_KEYWORDS.intersection(knobs):
        return None
    knobs = dict(knobs)
    profile = api._engine_profile(knobs.pop("profile", None))
    api._integer("memory_used_by_others_bytes", node["memory_used_by_others_bytes"], 0, 1 << 50)
    api._integer("host_ram_bytes", node["host_ram_bytes"], 0, 1 << 60)
    # Each split's knobs as `vramplan.plan` translates them; a refusal naming a split field is
    # that split's row, as in `_split_plan`.
    shared: tuple[dict[str, Any], dict[str, Any]] | None = None
    refused: dict[tuple[int, int, int], str] = {}
    for split in dict.fromkeys(split for _, _, split in work):
        sizes = dict(zip(SPLIT_FIELDS, split))
        try:
            translated = api._vllm_names_to_knobs({**knobs, **sizes})
        except _core.ConfigError as err:
            if getattr(err, "field", "") not in SPLIT_FIELDS:
                raise
            refused[split] = str(err)
            continue
        if any(translated.get(field) != size for field, size in sizes.items()):
            return None
        others = {k: v for k, v in translated.items() if k not in SPLIT_FIELDS}
        parts = (
            {k: v for k, v in others.items() if k not in api._EVALUATED},
            {k: v for k, v in others.items() if k in api._EVALUATED},
        )
        if shared is not None and parts != shared:
            return None
        shared = parts
    compiled, evaluated = shared if shared is not None else ({}, {})
    compiled = api._resolve_draft(compiled)  # a drafter named by id or path: loaded once
    bands = api._band_table(model_specs_file(api.BANDS_FILE))
    model_word = shell_word(model_id)
    per_gpu: dict[str, list[tuple[Any, ...]]] = {}
    for gpu, count, split in work:
        per_gpu.setdefault(gpu.id, []).append((gpu, count, *split, _refusal(gpu, split, refused)))
    rows: list[dict[str, Any]] = []
    for options in per_gpu.values():
        rows += _core.fit_options(
            spec,
            compiled,
            evaluated,
            options,
            context=target.context,
            concurrency=target.concurrency,
            bands=bands,
            model_word=model_word,
            quote=shell_word,
            profile=profile,
            **node,
        )
        if progress is not None:
            for done in range(len(rows) - len(options) + 1, len(rows) + 1):
                progress(done, len(work))
    return rows


def _refusal(
    gpu: _core.GpuSpec, split: tuple[int, int, int], refused: Mapping[tuple[int, int, int], str]
) -> str:
    """Why an option is an invalid split before its launch compiles ("" when it compiles):
    its knobs' translation, then TP or PP on a MIG slice (check_mig_parallel); the core's row
    says "invalid split: " and this."""
    if split in refused:
        return refused[split]
    if gpu.mig_profile and (split[0] > 1 or split[1] > 1):
        try:
            check_mig_parallel(gpu, dict(zip(SPLIT_FIELDS, split)))
        except _core.ConfigError as err:
            return str(err)
    return ""


def _prices(prices: str | Path | Mapping[str, float] | None) -> dict[str, float]:
    if prices is None:
        return {}
    if isinstance(prices, (str, Path)):
        return read_prices(prices)
    if not isinstance(prices, Mapping):
        raise api.config_error("prices", prices, "a CSV path or {gpu: usd_per_hour}", "wrong type")
    db = api.spec_database()
    out = {}
    for name, price in prices.items():
        if not isinstance(name, str) or not db.has_gpu(name):
            raise api.config_error("prices", name, "GPU ids or aliases", "unknown GPU")
        if isinstance(price, bool) or not isinstance(price, (int, float)) or not price > 0:
            raise api.config_error(f"prices[{name}]", price, "a positive number", "not a price")
        out[db.gpu(name).id] = float(price)
    return out


MODEL_COLUMNS = [
    "model",
    "source",
    "fits",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "max_context",
    "context",
    "max_concurrency",
    "gpu_memory_utilization",
    "launch",
    "verdict",
]

MODEL_INTEGER_COLUMNS = (
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "max_context",
    "max_concurrency",
    "context",
)


def _hf_cache_models() -> list[tuple[str, str]]:
    """(repo id, cache folder) of every model entry in the local Hugging Face cache."""
    from .resolve import hub_cache_dir

    root = hub_cache_dir()
    if not root.is_dir():
        return []
    out = []
    for entry in sorted(root.glob("models--*")):
        parts = entry.name[len("models--") :].split("--")
        if len(parts) >= 2 and entry.is_dir():
            out.append((parts[0] + "/" + "--".join(parts[1:]), str(entry)))
    return out


def _model_row(
    model_id: str,
    source: str,
    spec: _core.ModelSpec,
    gpu: _core.GpuSpec,
    num_gpus: int,
    context: int,
    concurrency: int,
    node: dict[str, Any],
    knobs: dict[str, Any],
) -> dict[str, Any]:
    """One model on `num_gpus` x `gpu`: the first split that fits one sequence of `context`
    tokens (or `concurrency` of them), its longest context and its sequences of `context`."""
    row: dict[str, Any] = {"model": model_id, "source": source, "context": context}
    if context > spec.max_position_embeddings:
        return {
            **row,
            "fits": False,
            "verdict": f"does not fit: context {context} is beyond the model's "
            f"max_position_embeddings ({spec.max_position_embeddings})",
        }

    def at(tp: int, pp: int, context_: int) -> api.Plan:
        return api.plan(
            spec,
            gpu,
            num_gpus=num_gpus,
            context=context_,
            concurrency=concurrency,
            **node,
            tensor_parallel_size=tp,
            pipeline_parallel_size=pp,
            **knobs,
        )

    result, attempts = plan_on_gpus(lambda tp, pp: at(tp, pp, context), num_gpus)
    fitted = next((a for a in attempts if a.result == "fits"), None)
    row.update(fits=bool(result.fits), verdict=str(result.verdict))
    if fitted is None:
        return row
    tp, pp = fitted.tensor_parallel_size, fitted.pipeline_parallel_size
    longest = at(tp, pp, 0)  # context 0: the solver's longest that holds them
    row.update(
        tensor_parallel_size=tp,
        pipeline_parallel_size=pp,
        max_context=int(longest.max_model_len) if longest.fits else context,
        max_concurrency=int(result.concurrent_sequences),
        gpu_memory_utilization=float(result.gpu_memory_utilization),
        launch=launch_line(model_id, result),
    )
    return row


def fit_models(
    gpu: str | _core.GpuSpec = api.DEFAULT_GPU,
    *,
    num_gpus: int = 1,
    context: int = DEFAULT_REVERSE_CONTEXT,
    concurrency: int = 1,
    hf_cache: bool = True,
    engine: str = "vllm",
    memory_used_by_others_bytes: int = 0,
    host_ram_bytes: int = 0,
    progress: Progress | None = None,
    **knobs: Any,
) -> pd.DataFrame:
    """The reverse question: which models (the database, and with `hf_cache` every model in
    the local Hugging Face cache) fit `num_gpus` x `gpu`. Per model: the first TP x PP split
    that holds `concurrency` sequences of `context` tokens (default one of 4096), the longest
    context that still holds them (max_context) and how many sequences of `context` fit at once
    (max_concurrency, at most max_num_seqs); fitting models first, longest context first.
    A cache entry that cannot be read offline is listed with the reason (fits False).
    `memory_used_by_others_bytes` (per GPU) and `host_ram_bytes` (the node's) apply to all."""
    rows = fit_model_rows(
        gpu,
        num_gpus=num_gpus,
        context=context,
        concurrency=concurrency,
        hf_cache=hf_cache,
        engine=engine,
        memory_used_by_others_bytes=memory_used_by_others_bytes,
        host_ram_bytes=host_ram_bytes,
        progress=progress,
        **knobs,
    )
    return frame_of(rows, MODEL_COLUMNS, MODEL_INTEGER_COLUMNS)


def fit_model_rows(
    gpu: str | _core.GpuSpec = api.DEFAULT_GPU,
    *,
    num_gpus: int = 1,
    context: int = DEFAULT_REVERSE_CONTEXT,
    concurrency: int = 1,
    hf_cache: bool = True,
    engine: str = "vllm",
    memory_used_by_others_bytes: int = 0,
    host_ram_bytes: int = 0,
    progress: Progress | None = None,
    **knobs: Any,
) -> list[dict[str, Any]]:
    """`fit_models`' rows as dicts, ranked, without pandas: MODEL_COLUMNS' keys (a key is
    missing where the DataFrame holds NA)."""
    check_engine(engine)
    gpu_spec = gpu if isinstance(gpu, _core.GpuSpec) else api.load_gpu(gpu)
    api._integer("num_gpus", num_gpus, 1, 1 << 10)
    api._integer("context", context, 1, api.INT64_MAX)  # the solver bounds it per model
    api._integer("concurrency", concurrency, 1, 1 << 30)
    node = {
        "memory_used_by_others_bytes": memory_used_by_others_bytes,
        "host_ram_bytes": host_ram_bytes,
    }
    db = api.spec_database()
    work: list[tuple[str, str, Callable[[], _core.ModelSpec]]] = [
        (m, "database", functools.partial(db.model, m)) for m in db.model_ids()
    ]
    if hf_cache:
        from .resolve import resolve_model

        for repo_id, folder in _hf_cache_models():
            if not db.has_model(repo_id):
                work.append(
                    (
                        repo_id,
                        f"hf_cache: {folder}",
                        functools.partial(lambda r: resolve_model(r, offline=True).spec, repo_id),
                    )
                )
    rows = []
    for done, (model_id, source, load) in enumerate(work, start=1):
        try:
            spec = load()
            rows.append(
                _model_row(
                    model_id, source, spec, gpu_spec, num_gpus, context, concurrency, node, knobs
                )
            )
        except _core.Error as err:
            # A launch the release refuses (a checkpoint format it no longer loads) is this
            # model's verdict; any other error of a database model is a defect and raised.
            if source == "database" and not isinstance(err, _core.ConfigError):
                raise
            rows.append({"model": model_id, "source": source, "fits": False, "verdict": str(err)})
        if progress is not None:
            progress(done, len(work))
    return sorted(
        rows,
        key=lambda row: (
            not row["fits"],
            _descending(row.get("max_context")),
            _descending(row.get("max_concurrency")),
            row["model"],
        ),
    )
