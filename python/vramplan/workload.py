"""Workloads: the traffic a plan serves, from a file, a list of requests or two percentiles.

The arithmetic (blocks per request, the overflow probability behind `max_num_seqs`) is C++
(`cpp/src/workload.cpp`); this module only reads what users have — a CSV or JSONL of requests,
a histogram with a count column, vLLM's benchmark result JSON — into `_core.Workload`.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from . import _core
from ._database import config_error

# A workload file is read whole: bounded so that a wrong path (a disk image, a log) fails fast.
MAX_WORKLOAD_FILE_BYTES = 256 << 20
MAX_WORKLOAD_ROWS: int = 10_000_000
# Column names for each field, as the tools people export traces with spell them.
PROMPT_COLUMNS = ("prompt_tokens", "input_tokens", "prompt_len", "input_len", "num_prompt_tokens")
OUTPUT_COLUMNS = (
    "output_tokens",
    "completion_tokens",
    "output_len",
    "num_output_tokens",
    "max_tokens",
)
COUNT_COLUMNS = ("count", "requests", "frequency", "n")
# The acceptable probability that busy slots overflow the KV cache, where none is given (the
# core's own default, `Workload.preemption_target`).
DEFAULT_PREEMPTION_TARGET: float = _core.DEFAULT_PREEMPTION_TARGET
# vLLM's benchmark result JSON keeps the per-request lengths as two lists.
BENCHMARK_LISTS = ("input_lens", "output_lens")


def _column(header: Iterable[str], names: Sequence[str], file: str, what: str) -> str | None:
    lowered = {h.strip().lower(): h for h in header}
    for name in names:
        if name in lowered:
            return lowered[name]
    if what == "count":
        return None
    raise config_error(
        f"{file}: columns", ", ".join(lowered) or "none", f"one of {', '.join(names)}", what
    )


def _count(value: Any, file: str, row: int, field: str, lowest: int = 0) -> int:
    if isinstance(value, bool):
        raise config_error(f"{file}: row {row}: {field}", value, "a whole number", "not a number")
    if isinstance(value, str):
        text = value.strip()
        if not text.isascii() or not text.lstrip("+").isdigit():
            raise config_error(
                f"{file}: row {row}: {field}", value, "a whole number", "not a number"
            )
        value = int(text)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or value < lowest or value > (1 << 40):
        raise config_error(
            f"{file}: row {row}: {field}", value, f"{lowest} .. 2^40", "token count out of range"
        )
    return value


def _rows(records: Iterable[Mapping[str, Any]], file: str) -> _core.Workload:
    prompts: list[int] = []
    outputs: list[int] = []
    counts: list[float] = []
    prompt_key = output_key = count_key = None
    for index, record in enumerate(records, start=1):
        if index > MAX_WORKLOAD_ROWS:
            raise config_error(file, f"more than {MAX_WORKLOAD_ROWS} rows", "fewer", "too long")
        if not isinstance(record, Mapping):
            raise config_error(f"{file}: row {index}", record, "an object", "wrong type")
        if prompt_key is None:
            prompt_key = _column(record.keys(), PROMPT_COLUMNS, file, "prompt tokens")
            output_key = _column(record.keys(), OUTPUT_COLUMNS, file, "output tokens")
            count_key = _column(record.keys(), COUNT_COLUMNS, file, "count")
        assert prompt_key is not None
        assert output_key is not None
        prompts.append(_count(record.get(prompt_key), file, index, prompt_key, lowest=1))
        outputs.append(_count(record.get(output_key), file, index, output_key))
        count = _count(record.get(count_key), file, index, count_key) if count_key else 1
        counts.append(float(count))
    if not prompts:
        raise config_error(file, "no requests", "at least one row", "empty workload")
    return _core.Workload.from_requests(prompts, outputs, counts, field=file)


def load_workload(path: str | Path) -> _core.Workload:
    """A workload file: CSV (a header naming prompt and output token columns, optionally a
    count column for a histogram), JSONL (one request object a line), or vLLM's benchmark
    result JSON (`input_lens` / `output_lens`)."""
    file = str(path)
    try:
        with Path(path).open("rb") as handle:
            data = handle.read(MAX_WORKLOAD_FILE_BYTES + 1)
    except OSError as err:
        raise config_error(
            "workload", file, "a readable file", err.strerror or "unreadable"
        ) from None
    if len(data) > MAX_WORKLOAD_FILE_BYTES:
        raise config_error(file, "larger than 256 MiB", "a smaller file", "too large")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise config_error(file, f"byte {err.start}", "UTF-8 text", "not text") from None
    stripped = text.lstrip()
    if stripped.startswith("{") and "\n{" not in stripped.rstrip():
        return _from_json_object(stripped, file)
    if stripped.startswith("{"):
        return _rows(_jsonl(text, file), file)
    import csv  # only for a CSV workload: not on every plan

    reader = csv.DictReader(io.StringIO(text))
    if reader.fieldnames is None:
        raise config_error(file, "no header", "a CSV header row", "empty workload")
    return _rows(reader, file)


def _jsonl(text: str, file: str) -> Iterable[Mapping[str, Any]]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise config_error(
                f"{file}: line {number}", line[:80], "a JSON object", err.msg
            ) from None
        yield record


def _from_json_object(text: str, file: str) -> _core.Workload:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as err:
        raise config_error(file, f"line {err.lineno}", "JSON", err.msg) from None
    if isinstance(document, Mapping) and all(key in document for key in BENCHMARK_LISTS):
        inputs, outputs = (document[key] for key in BENCHMARK_LISTS)
        if not isinstance(inputs, list) or not isinstance(outputs, list):
            raise config_error(f"{file}: input_lens", type(inputs).__name__, "a list", "wrong type")
        if len(inputs) != len(outputs):
            raise config_error(
                f"{file}: output_lens", len(outputs), f"{len(inputs)} entries", "lengths differ"
            )
        return _rows(
            ({"prompt_tokens": p, "output_tokens": o} for p, o in zip(inputs, outputs)), file
        )
    return _rows([document] if isinstance(document, Mapping) else document, file)


def _percentiles(field: str, value: Any) -> tuple[int, int]:
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, Sequence) or len(value) != 2:
        raise config_error(field, value, "p50,p99 (two token counts)", "wrong form")
    p50, p99 = (_count(v, field, 1, field, lowest=1) for v in value)
    if p99 < p50:
        raise config_error(field, f"{p50},{p99}", "p50 <= p99", "percentiles out of order")
    return p50, p99


def make_workload(
    workload: Any = None,
    *,
    prompt_tokens: Any = None,
    output_tokens: Any = None,
    prefix_tokens: int = 0,
    preemption_target: float | None = None,
    request_seconds: float | None = None,
) -> _core.Workload | None:
    """The workload a plan serves, or None: `workload` is a file path, a `_core.Workload`, or a
    list of (prompt_tokens, output_tokens[, count]); or `prompt_tokens` and `output_tokens` as
    (p50, p99) pairs. `preemption_target` None: DEFAULT_PREEMPTION_TARGET. A workload's
    options without a workload are refused by name (they would change nothing)."""
    if workload is None and prompt_tokens is None and output_tokens is None:
        for name, value, unset in (
            ("prefix_tokens", prefix_tokens, 0),
            ("preemption_target", preemption_target, None),
            ("request_seconds", request_seconds, None),
        ):
            if value != unset:
                raise config_error(name, value, "with a workload", "no workload given")
        return None
    if workload is not None and (prompt_tokens is not None or output_tokens is not None):
        raise config_error(
            "prompt_tokens", prompt_tokens, "a workload or percentiles", "both given"
        )
    if workload is None:
        if prompt_tokens is None or output_tokens is None:
            missing = "output_tokens" if output_tokens is None else "prompt_tokens"
            raise config_error(missing, None, "p50,p99", "needed beside the other percentiles")
        built = _core.Workload.from_percentiles(
            *_percentiles("prompt_tokens", prompt_tokens),
            *_percentiles("output_tokens", output_tokens),
        )
    elif isinstance(workload, _core.Workload):
        built = workload
    elif isinstance(workload, (str, Path)):
        built = load_workload(workload)
    elif isinstance(workload, Sequence):
        rows = []
        for index, item in enumerate(workload, start=1):
            if not isinstance(item, Sequence) or isinstance(item, str) or len(item) not in (2, 3):
                raise config_error(
                    f"workload[{index - 1}]",
                    item,
                    "(prompt_tokens, output_tokens[, count])",
                    "shape",
                )
            rows.append(dict(zip(("prompt_tokens", "output_tokens", "count"), (*item, 1)[:3])))
        built = _rows(rows, "workload")
    else:
        raise config_error("workload", type(workload).__name__, "a path or a list", "wrong type")
    built.prefix_tokens = _count(prefix_tokens, "prefix_tokens", 1, "prefix_tokens")
    if preemption_target is None:
        preemption_target = DEFAULT_PREEMPTION_TARGET
    if isinstance(preemption_target, bool) or not isinstance(preemption_target, (int, float)):
        raise config_error(
            "preemption_target", preemption_target, "a number in (0, 1)", "wrong type"
        )
    if not 0.0 < float(preemption_target) < 1.0:
        raise config_error("preemption_target", preemption_target, "(0, 1)", "out of range")
    built.preemption_target = float(preemption_target)
    if request_seconds is not None:
        if isinstance(request_seconds, bool) or not isinstance(request_seconds, (int, float)):
            raise config_error("request_seconds", request_seconds, "seconds > 0", "wrong type")
        if not (math.isfinite(request_seconds) and 0 < request_seconds <= 1e7):
            raise config_error("request_seconds", request_seconds, "seconds > 0", "out of range")
        built.request_seconds = float(request_seconds)
    return built
