"""Hostile input (issue 14): each reproducer in the issue that the readers and the log parser
answer, as a regression test. Files are written by the tests into tmp_path."""

from __future__ import annotations

import json
import struct
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import vramplan
from vramplan import _core, validate

LLAMA_YAML = b"""id: test/llama-3.1-8b
model_type: llama
hidden_size: 4096
num_hidden_layers: 32
num_attention_heads: 32
num_key_value_heads: 8
intermediate_size: 14336
vocab_size: 128256
max_position_embeddings: 131072
torch_dtype: bfloat16
"""

# Llama-3.1-8B's config.json fields (shared/reference/configs), enough for an import.
LLAMA_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "torch_dtype": "bfloat16",
}


def safetensors_bytes(header: bytes, data_bytes: int = 0) -> bytes:
    return struct.pack("<Q", len(header)) + header + b"\0" * data_bytes


# --- safetensors: the quadratic duplicate-key check ------------------------------------------


def test_eighty_thousand_empty_entries_are_refused_in_under_a_second(tmp_path: Path) -> None:
    # The reproducer: {"0":{},...,"79999":{}} beside a config.json, then `inspect`.
    header = ("{" + ",".join(f'"{i}":{{}}' for i in range(80_000)) + "}").encode()
    (tmp_path / "model.safetensors").write_bytes(safetensors_bytes(header))
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_CONFIG))
    start = time.monotonic()
    with pytest.raises(vramplan.ParseError, match="tensor '0': dtype: missing") as err:
        vramplan.inspect_checkpoint(tmp_path)
    assert time.monotonic() - start < 1.0
    assert err.value.file == str(tmp_path / "model.safetensors")


def steps_while_inside(
    core_function: Any, call: Callable[[], object]
) -> tuple[int, dict[str, Any]]:
    """Runs `call` on a worker thread and counts the steps this thread made while the worker was
    inside `core_function` (from its c_call to its c_return / c_exception profile event).

    The switch interval is set far beyond the call's length, so no thread is made to give the
    GIL up: this thread lets it go only in its own sleeps, the worker only where the core
    releases it. A core that held the GIL would leave this thread no step inside the call:
    exactly 0, on any machine under any load. A core that releases it lets this thread step
    the whole time the worker is inside."""
    steps = 0
    marks: dict[str, int] = {}
    outcome: dict[str, Any] = {}

    def profile(_frame: Any, event: str, arg: Any) -> None:
        if arg is core_function and event == "c_call":
            marks.setdefault("entered", steps)
        elif arg is core_function and event in ("c_return", "c_exception"):
            marks.setdefault("left", steps)

    def work() -> None:
        try:
            outcome["value"] = call()
        except vramplan.Error as err:
            outcome["error"] = err

    interval = sys.getswitchinterval()
    sys.setswitchinterval(60.0)
    try:
        threading.setprofile(profile)
        worker = threading.Thread(target=work)
        worker.start()
        threading.setprofile(None)  # for threads started later; the worker keeps it
        while worker.is_alive():
            steps += 1
            if steps % 64 == 0:
                time.sleep(0.0001)  # where this thread lets the worker have the GIL
        worker.join()
    finally:
        sys.setswitchinterval(interval)
    assert set(marks) == {"entered", "left"}, marks
    return marks["left"] - marks["entered"], outcome


def test_readers_release_the_gil(tmp_path: Path) -> None:
    # 160,000 valid one-byte tensors, then t0 again: parsing in C++ until the duplicate is
    # refused (no result to convert, so the whole call is C++).
    count = 160_000
    entries = [
        f'"t{i}":{{"dtype":"U8","shape":[1],"data_offsets":[{i},{i + 1}]}}' for i in range(count)
    ]
    entries.append(entries[0])
    header = ("{" + ",".join(entries) + "}").encode()
    (tmp_path / "model.safetensors").write_bytes(safetensors_bytes(header, count))
    steps, outcome = steps_while_inside(
        _core.read_safetensors_folder, lambda: _core.read_safetensors_folder(str(tmp_path))
    )
    assert "tensor 't0' appears twice" in str(outcome["error"])
    assert steps > 0


# --- the log parser ---------------------------------------------------------------------------


def test_long_error_line_cut_inside_a_character_does_not_raise() -> None:
    # The reproducer: the 2000-byte cut used to split an "é" (type_error.316).
    figures = vramplan.parse_vllm_log("ValueError: x" + "é" * 3000)
    (line,) = figures["error_lines"]
    assert line == "ValueError: x" + "é" * 993  # 13 + 2 x 993 = 1999 bytes, whole characters
    json.dumps(figures)


def test_invalid_bytes_in_a_log_become_replacement_characters() -> None:
    figures = vramplan.parse_vllm_log(b"ValueError: bad \xff byte\nModel loading took 1.5 GiB\n")
    assert figures["error_lines"] == ["ValueError: bad \ufffd byte"]
    assert figures["weights_gib"] == pytest.approx(1.5)


def test_parse_vllm_log_streams_a_path(data_dir: Path, tmp_path: Path) -> None:
    path = data_dir / "vllm_logs" / "v019_gpt_oss_20b_sampler_oom.log"
    assert vramplan.parse_vllm_log(path) == vramplan.parse_vllm_log(path.read_text())
    assert vramplan.parse_vllm_log(path)["truncated"] is False
    with pytest.raises(vramplan.ParseError) as err:
        vramplan.parse_vllm_log(tmp_path / "missing.log")
    assert err.value.file == str(tmp_path / "missing.log")


def test_replay_log_file_matches_replay_log(data_dir: Path) -> None:
    path = data_dir / "vllm_logs" / "v019_gpt_oss_20b_sampler_oom.log"
    by_file = validate.replay_log_file(path)
    by_text = validate.replay_log(path.read_text(), log_id=path.name)
    assert by_file.to_json() == by_text.to_json()
    assert by_file.id == path.name


def test_log_parser_releases_the_gil_while_reading(tmp_path: Path) -> None:
    # 256 MiB of a sparse file (one NUL line, skipped as over-long) keeps the parser busy for
    # a while; this thread steps meanwhile only if the parser released the GIL.
    path = tmp_path / "sparse.log"
    with path.open("wb") as handle:
        handle.truncate(256 << 20)
    steps, outcome = steps_while_inside(
        vramplan.parse_vllm_log, lambda: vramplan.parse_vllm_log(path)
    )
    assert outcome["value"]["kv_cache_gib"] is None
    assert steps > 0


# --- spec YAML ---------------------------------------------------------------------------------


def test_invalid_utf8_in_a_spec_id_is_a_spec_error(tmp_path: Path) -> None:
    path = tmp_path / "bad_id.yaml"
    path.write_bytes(LLAMA_YAML.replace(b"test/llama", b"\xffest/llama"))
    with pytest.raises(vramplan.SpecError) as err:
        vramplan.load_model(path)
    assert err.value.file == str(path)
    assert err.value.field_path == "id"
    assert "not valid UTF-8 at byte offset 4 (line 1, column 5)" in str(err.value)


def test_invalid_utf8_in_a_spec_key_is_a_spec_error_not_a_decode_error(tmp_path: Path) -> None:
    path = tmp_path / "bad_key.yaml"
    text = LLAMA_YAML.replace(b"vocab_size", b"v\xc3cab_size")
    path.write_bytes(text)
    with pytest.raises(vramplan.SpecError) as err:
        vramplan.load_model(path)
    assert err.value.field_path == "v\ufffdcab_size"
    offset = text.index(b"\xc3")
    assert f"byte offset {offset}" in str(err.value)
