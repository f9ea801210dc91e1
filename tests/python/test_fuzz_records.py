"""Fuzzing the records path (the JSONL files `validate --records` and `calibrate --records`
read): random lines, random JSON, and records of the measured format with random values in
every field. Every file must give replays / a profile or a vramplan.Error naming what is
wrong; any other exception is a bug. Derandomized, so CI runs the same examples each time."""

from __future__ import annotations

import contextlib
import json
import math
import tempfile
from pathlib import Path
from typing import Any

import vramplan
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from vramplan import _render, validate

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)

# Field names of the measured format (shared/measured), and the values records hold.
FIELDS = (
    "id", "model", "gpu", "gpu_total_gib", "vllm_version", "notes", "dtype", "quantization",
    "kv_cache_dtype", "tensor_parallel_size", "pipeline_parallel_size", "max_model_len",
    "max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization", "enforce_eager",
    "weights_gib", "activation_peak_gib", "non_torch_gib", "cudagraph_gib", "kv_cache_gib",
    "kv_tokens", "max_concurrency", "outcome", "block_size", "enable_prefix_caching",
)  # fmt: skip
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["meta-llama/Llama-3.1-8B-Instruct", "H100", "A100 80GB", "0.10.1", "V0",
                     "auto", "fp8", "bfloat16", "", "x" * 300]),
    st.text(max_size=20),
)  # fmt: skip
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3), max_leaves=6)
RECORDS = st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=len(FIELDS))
BASE = {
    "id": "fuzz",
    "model": "meta-llama/Llama-3.1-8B-Instruct",
    "gpu": "H100",
    "vllm_version": "0.10.1",
    "max_model_len": 8192,
}


def _line(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, bytes) else value.decode("latin-1")


LINES = st.one_of(
    RECORDS.map(lambda r: json.dumps({**BASE, **r})),
    RECORDS.map(json.dumps),
    VALUES.map(json.dumps),
    st.binary(max_size=40).map(lambda b: b.decode("latin-1")),
    st.sampled_from(['{"a": 1e400}', '{"a": NaN}', '{"id": 1, "id": 2}', "[" * 5000]),
)


@SETTINGS
@given(lines=st.lists(LINES, min_size=1, max_size=4))
def test_records_files_give_replays_or_named_errors(lines: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "records.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        check_records_file(path)


def check_records_file(path: Path) -> None:
    try:
        records = validate.read_records(path)
    except vramplan.Error as err:
        if "records.jsonl" not in str(err):
            raise
        return
    replays = [validate.replay_record(record) for record in records]
    for replay in replays:
        assert replay.unsupported or replay.predicted is not None
        if replay.predicted is not None:
            assert all(
                not isinstance(v, float) or math.isfinite(v) for v in replay.predicted.values()
            )
    # What `vramplan validate --records` prints: the table, its problems and the JSON.
    validate.format_table(replays)
    _render.replay_rows(replays, validate.TERMS)
    json.dumps([replay.to_json() for replay in replays])
    with contextlib.suppress(vramplan.Error):
        vramplan.calibrate(records=path)
