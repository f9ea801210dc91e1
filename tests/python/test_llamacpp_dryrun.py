"""The planner's llama.cpp model and KV buffers against llama.cpp's own arithmetic, byte for byte.

tests/data/llamacpp_dryrun/records.jsonl holds, per architecture, a GGUF (metadata and tensor list
of a public checkpoint's shape) and what llama.cpp's no-allocation load path
(llama_get_memory_breakdown, benchmarks/llamacpp_oracle) reported for it: the CPU model buffer
(--no-mmap, -ngl 0) and the CPU KV buffer (llama.cpp's "context" bytes: K/V and recurrent state)
at -c 8192 for f16, q8_0 and q4_0 caches and 1 and 4 slots (4 also with --kv-unified). Each test rewrites the GGUF header as
a sparse file and plans the same launch.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
from vramplan import _core, llamacpp

RECORDS = Path(__file__).parent.parent / "data" / "llamacpp_dryrun" / "records.jsonl"
ALIGNMENT = 32
# ggml type id and (values per block, bytes per block), ggml/src/ggml.c type_traits.
GGML_TYPES = {
    "f32": (0, 1, 4),
    "f16": (1, 1, 2),
    "q8_0": (8, 32, 34),
    "q4_k": (12, 256, 144),
    "q6_k": (14, 256, 210),
}
GGUF_UINT32, GGUF_FLOAT32, GGUF_BOOL, GGUF_STRING, GGUF_ARRAY = 4, 6, 7, 8, 9


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def _value(kind: int, value: Any) -> bytes:
    if kind == GGUF_UINT32:
        return struct.pack("<I", value)
    if kind == GGUF_FLOAT32:
        return struct.pack("<f", value)
    if kind == GGUF_BOOL:
        return struct.pack("<?", value)
    if kind == GGUF_STRING:
        return _string(value)
    if kind == GGUF_ARRAY:  # the records' arrays are per-layer uint32 counts
        return struct.pack("<IQ", GGUF_UINT32, len(value)) + b"".join(
            struct.pack("<I", v) for v in value
        )
    raise ValueError(f"records.jsonl: GGUF value type {kind} is not written here")


def write_sparse_gguf(path: Path, record: dict[str, Any]) -> None:
    """The record's GGUF as llama.cpp read it, without the tokenizer (the planner takes the
    vocabulary from token_embd) and with its data region left sparse."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(record["tensors"]), len(record["metadata"]))
    for key, kind, value in record["metadata"]:
        head += _string(key) + struct.pack("<I", kind) + _value(kind, value)
    offset = 0
    for name, type_name, shape in record["tensors"]:
        type_id, block, block_bytes = GGML_TYPES[type_name]
        elements = 1
        for dim in shape:
            elements *= dim
        head += _string(name) + struct.pack("<I", len(shape))
        head += b"".join(struct.pack("<Q", d) for d in shape)
        head += struct.pack("<IQ", type_id, offset)
        offset += (elements // block * block_bytes + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
    head += b"\0" * (-len(head) % ALIGNMENT)
    with path.open("wb") as f:
        f.write(head)
        f.truncate(len(head) + offset)


def _records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in RECORDS.read_text().splitlines() if line.strip()]


RECORDED = _records()
# Architectures the planner refuses with a named reason (MLA is not modelled yet).
REFUSED = {"deepseek2": "MLA"}


def _runs() -> list[Any]:
    params = []
    for record in RECORDED:
        for run in record["runs"]:
            unified = "-kvu" if run["kv_unified"] else ""
            run_id = f"{record['name']}-{run['type_k']}-np{run['n_seq']}{unified}"
            params.append(pytest.param(record, run, id=run_id))
    return params


def test_records_cover_15_architectures_by_3_cache_types_by_2_slot_counts() -> None:
    # Each slot count with one KV stream per slot, and 4 slots also in one unified stream.
    planned = {r["architecture"] for r in RECORDED if r["name"] not in REFUSED}
    assert len(planned) >= 15
    for record in RECORDED:
        shapes = {(run["type_k"], run["n_seq"], run["kv_unified"]) for run in record["runs"]}
        streams = {(t, n, False) for t in ("f16", "q8_0", "q4_0") for n in (1, 4)}
        assert shapes == streams | {(t, 4, True) for t in ("f16", "q8_0", "q4_0")}


@pytest.fixture(scope="module")
def gguf_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("llamacpp_dryrun")


def _gguf(gguf_dir: Path, record: dict[str, Any]) -> str:
    path = gguf_dir / f"{record['name']}.gguf"
    if not path.exists():
        write_sparse_gguf(path, record)
    return str(path)


@pytest.mark.parametrize(("record", "run"), _runs())
def test_model_and_kv_bytes_equal_llama_cpps_dry_run(
    gguf_dir: Path, record: dict[str, Any], run: dict[str, Any]
) -> None:
    launch = {
        "ctx_size": run["n_ctx"],
        "parallel": run["n_seq"],
        "kv_unified": run["kv_unified"],
        "cache_type_k": run["type_k"],
        "cache_type_v": run["type_v"],
        "flash_attn": "on" if run["flash_attn"] else "off",
        "batch_size": run["n_batch"],
        "ubatch_size": run["n_ubatch"],
        "n_gpu_layers": 0,
        "no_mmap": True,
    }
    path = _gguf(gguf_dir, record)
    if record["name"] in REFUSED:
        with pytest.raises(_core.ConfigError, match=REFUSED[record["name"]]):
            llamacpp.breakdown(path, **launch)
        return
    if "refused" in run:
        # llama.cpp refuses the launch (its words are in the record); so does the planner.
        with pytest.raises(_core.ConfigError, match="does not divide"):
            llamacpp.breakdown(path, **launch)
        return
    memory = llamacpp.breakdown(path, **launch)["memory"]
    assert memory["n_ctx"] == run["n_ctx_resolved"]
    assert memory["host_model_bytes"] == run["cpu_model_bytes"]
    assert memory["host_kv_bytes"] + memory["host_rs_bytes"] == run["cpu_context_bytes"]
