"""Hostile input: files, logs, flags and API arguments built to break the readers, one test per
failure: header and log readers fast, bounded and GIL-free; reads bounded and typed (FIFOs, /dev/zero,
sparse files, endless stdin); paths confined to the cache; schema bounds; parsers refusing duplicate
keys, alias bombs, non-finite and malformed numbers; every user error a named vramplan.Error;
long work reporting progress and leaving no partial file on Ctrl-C. Every hostile input is
generated into tmp_path (small files, FIFOs, links, sparse files); nothing large is committed."""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import vramplan
from vramplan import _core, _io, api, probe, validate
from vramplan.diagnose import MAX_READ_BYTES, read_text

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


ROOT = Path(__file__).resolve().parents[2]
LLAMA_YAML_TEXT = LLAMA_YAML.decode()
# The config.json fields above as the inside of a JSON object, to add fields after them.
LLAMA_CONFIG_FIELDS = json.dumps(LLAMA_CONFIG)[1:-1]


# --- safetensors: the quadratic duplicate-key check ------------------------------------------


def test_eighty_thousand_empty_entries_are_refused(tmp_path: Path) -> None:
    # {"0":{},...,"79999":{}} beside a config.json, then `inspect` (its time, once quadratic:
    # benchmarks/bench_bounds.py).
    header = ("{" + ",".join(f'"{i}":{{}}' for i in range(80_000)) + "}").encode()
    (tmp_path / "model.safetensors").write_bytes(safetensors_bytes(header))
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_CONFIG))
    with pytest.raises(vramplan.ParseError, match="tensor '0': dtype: missing") as err:
        vramplan.inspect_checkpoint(tmp_path)
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
    # A 2000-byte cut inside an "é" must not raise (nlohmann type_error.316).
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
    steps, outcome = steps_while_inside(_core.parse_log, lambda: _core.parse_log("vllm", path))
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


def cli(
    *args: str, stdin: int | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "vramplan", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=stdin,
        env=env,
    )


# --- every read bounded: type before open, size before read, stdin in time and bytes --------


def test_a_fifo_is_refused_at_every_read_site_without_blocking(tmp_path: Path) -> None:
    # Run in a child with a timeout: a read site that opens the FIFO blocking would hang it.
    script = textwrap.dedent(
        f"""
        import os, pathlib, vramplan
        from vramplan import probe, validate
        from vramplan.diagnose import read_text
        fifo = pathlib.Path({str(tmp_path / "x.fifo")!r})
        os.mkfifo(fifo)
        sites = {{
            "profile": lambda: vramplan.Profile.load(fifo),
            "log (C++)": lambda: vramplan.parse_vllm_log(fifo),
            "calibrate log": lambda: vramplan.calibrate(fifo, gpu="H100"),
            "diagnose log": lambda: read_text(fifo, what="log"),
            "nvidia-smi CSV": lambda: probe.read_nvidia_smi_csv(fifo),
            "records": lambda: validate.read_records(fifo),
            "spec YAML": lambda: vramplan.load_model(fifo),
        }}
        for name, read in sites.items():
            try:
                read()
                print(name, "READ")
            except vramplan.Error as err:
                print(name, "refused" if "x.fifo" in str(err) else "unnamed: " + str(err))
        """
    )
    env = dict(os.environ)
    done = subprocess.run(
        [sys.executable, "-c", script],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 7
    assert all(line.endswith("refused") for line in lines), done.stdout


def test_dev_zero_as_a_log_and_as_stdin_return_named_errors(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text("INFO Available KV cache memory: 5.00 GiB\n")
    done = cli("diagnose", "/dev/zero")
    assert done.returncode == 2
    assert "/dev/zero" in done.stderr
    assert "character device" in done.stderr
    with Path("/dev/zero").open("rb") as zero:
        done = cli("diagnose", str(log), "--dmesg", "-", stdin=zero.fileno())
    assert done.returncode == 2
    assert "standard input" in done.stderr
    assert "without ending" in done.stderr


def test_stdin_that_never_ends_is_refused_in_time() -> None:
    read_end, write_end = os.pipe()  # the writer stays open: the stream never ends
    try:
        # The error names the 0.5 s bound it gave up at (without one this test never ends).
        with (
            os.fdopen(read_end, "rb", buffering=0) as stream,
            pytest.raises(vramplan.ConfigError, match=r"did not end within 0\.5 s"),
        ):
            _io.read_stream_head_tail(stream, "log", 1 << 10, 1 << 20, 0.5, 1 << 30)
    finally:
        os.close(write_end)


def test_sparse_files_are_refused_by_size_before_reading(tmp_path: Path) -> None:
    for name, read in (
        ("profile.yaml", vramplan.Profile.load),
        ("gpus.csv", probe.read_nvidia_smi_csv),
        ("records.jsonl", validate.read_records),
    ):
        path = tmp_path / name
        with path.open("wb") as handle:
            handle.truncate(1 << 40)  # 1 TiB of holes
        with pytest.raises(vramplan.ConfigError, match="over the"):  # time: bench_bounds.py
            read(path)


def test_a_huge_sparse_log_is_read_as_head_and_tail(tmp_path: Path) -> None:
    path = tmp_path / "huge.log"
    with path.open("wb") as handle:
        handle.write(b"INFO vLLM API server version 0.10.1\n")
        handle.truncate(8 << 30)  # 8 GiB of NULs after the first line
        handle.seek(8 << 30)
        handle.write(b"\nERROR torch.OutOfMemoryError: CUDA out of memory.\n")
    text = read_text(path, what="log")
    assert len(text) <= MAX_READ_BYTES + 1
    assert text.startswith("INFO vLLM API server version")
    assert "OutOfMemoryError" in text


# --- paths confined to the cache --------------------------------------------------------------


def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    hub = tmp_path / "hub"
    entry = hub / "models--acme--m"
    (entry / "refs").mkdir(parents=True)
    (entry / "snapshots").mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("VRAMPLAN_CACHE", str(tmp_path / "vramplan"))
    return entry


def test_a_revision_climbing_out_of_refs_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = _cache(tmp_path, monkeypatch)
    # A file outside refs/ that the join would have read as a commit.
    (entry / "secret").write_text("a" * 40)
    for revision in ("../secret", "../../../etc/passwd", "/etc/passwd", "main/../../secret"):
        with pytest.raises(vramplan.ConfigError, match="--revision"):
            api.load_model("acme/m", revision=revision)
    assert cli("plan", "acme/m", "--revision", "../../x").returncode == 2


def test_a_snapshot_linked_outside_the_cache_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = _cache(tmp_path, monkeypatch)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "config.json").write_text(json.dumps(LLAMA_CONFIG))
    commit = "b" * 40
    (entry / "snapshots" / commit).symlink_to(outside, target_is_directory=True)
    (entry / "refs" / "main").write_text(commit)
    with pytest.raises(vramplan.ConfigError, match="outside the cache"):
        api.load_model("acme/m")
    # A config.json linked outside from a real snapshot folder: refused too.
    (entry / "snapshots" / commit).unlink()
    (entry / "snapshots" / commit).mkdir()
    (entry / "snapshots" / commit / "config.json").symlink_to(outside / "config.json")
    with pytest.raises(vramplan.ConfigError, match="outside the cache"):
        api.load_model("acme/m")


def test_a_fifo_as_refs_main_does_not_hang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    entry = _cache(tmp_path, monkeypatch)
    os.mkfifo(entry / "refs" / "main")
    with pytest.raises(vramplan.Error):
        api.load_model("acme/m")


# --- bounds -----------------------------------------------------------------------------------


def test_num_nextn_predict_layers_is_capped(tmp_path: Path) -> None:
    # 2^20 MTP layers took 13 s and 1.4 GB; 2^30 threw bad_alloc.
    path = tmp_path / "m.yaml"
    path.write_text(LLAMA_YAML_TEXT + f"num_nextn_predict_layers: {1 << 20}\n")
    with pytest.raises(vramplan.SpecError, match=r"num_nextn_predict_layers.*out of range"):
        api.load_model(path)  # its time: benchmarks/bench_bounds.py


def test_the_schema_document_states_every_bound() -> None:
    text = (ROOT / "docs" / "model-specs.md").read_text()
    assert api.schema_markdown() in text  # generated, not hand-edited
    assert "| `num_nextn_predict_layers` | int | no | 16 |" in text
    assert "| `num_experts` | int | yes | 8192 |" in text


def test_ten_million_experts_name_the_field_not_a_knob(tmp_path: Path) -> None:
    path = tmp_path / "moe.yaml"
    path.write_text(
        LLAMA_YAML_TEXT
        + "moe:\n  num_experts: 10000000\n  num_experts_per_tok: 2\n"
        + "  moe_intermediate_size: 1024\n"
    )
    done = cli("plan", str(path))
    assert done.returncode == 2
    assert "moe.num_experts" in done.stderr
    assert "cpu_offload" not in done.stderr


# --- parsers: duplicate keys, aliases, non-finite numbers, launches, malformed numbers -------


def test_duplicate_keys_are_errors_in_every_format(tmp_path: Path) -> None:
    spec = tmp_path / "dup.yaml"
    spec.write_text(LLAMA_YAML_TEXT + "hidden_size: 8192\n")
    with pytest.raises(vramplan.SpecError, match="duplicate key"):
        api.load_model(spec)
    config = tmp_path / "config.json"
    config.write_text("{" + LLAMA_CONFIG_FIELDS + ', "hidden_size": 8192}')
    with pytest.raises(vramplan.SpecError, match="duplicate key"):
        api.from_hf_config(config)
    profile = tmp_path / "p.yaml"
    profile.write_text("engine_version: 0.10.1\nengine_version: 0.11.0\noverrides: {}\n")
    with pytest.raises(vramplan.SpecError, match="duplicate key"):
        vramplan.Profile.load(profile)
    records = tmp_path / "r.jsonl"
    records.write_text('{"id": "a", "id": "b"}\n')
    with pytest.raises(vramplan.ParseError, match="duplicate key 'id'"):
        validate.read_records(records)


def test_a_yaml_alias_bomb_with_a_bad_byte_is_refused_quickly(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    path = tmp_path / "bomb.yaml"
    path.write_bytes(("\n".join(lines) + "\n").encode() + b'id: "\xff"\n')
    with pytest.raises(vramplan.SpecError, match="too many nodes"):
        api.load_model(path)  # its time: benchmarks/bench_bounds.py


def test_1e400_in_config_json_is_bad_input_not_does_not_fit(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text("{" + LLAMA_CONFIG_FIELDS + ', "rope_theta": 1e400}')
    done = cli("plan", str(config))
    assert done.returncode == 2, done.stderr
    assert "config.json" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_log_with_two_launches_is_not_mixed(tmp_path: Path) -> None:
    log = tmp_path / "two.log"
    log.write_text(
        "INFO 11-24 07:00:00 [api_server.py:1] vLLM API server version 0.10.1\n"
        "INFO 11-24 07:00:00 [utils.py:1] non-default args: {'model': 'a/first', "
        "'max_model_len': 8192, 'gpu_memory_utilization': 0.5}\n"
        "INFO 11-24 07:10:00 [api_server.py:1] vLLM API server version 0.10.1\n"
        "INFO 11-24 07:10:00 [utils.py:1] non-default args: {'model': 'b/second', "
        "'max_model_len': 4096}\n"
        "INFO 11-24 07:10:31 [kv_cache_utils.py:1] GPU KV cache size: 40,960 tokens\n"
    )
    figures = vramplan.parse_vllm_log(log)
    assert figures["launches"] == 2
    assert figures["model"] == "b/second"
    assert figures["max_model_len"] == 4096
    assert figures["gpu_memory_utilization"] is None  # the first launch's, not carried over
    assert figures["kv_tokens"] == 40960
    # validate says which launch it replays.
    done = cli("validate", str(log), "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "H100")
    assert "holds 2 launches" in done.stderr
    assert "Traceback" not in done.stderr


def test_malformed_numbers_in_a_log_line_are_not_read() -> None:
    assert vramplan.parse_vllm_log("GPU KV cache size: -476,016 tokens\n")["kv_tokens"] is None
    assert vramplan.parse_vllm_log("GPU KV cache size: 47,6016 tokens\n")["kv_tokens"] is None
    assert vramplan.parse_vllm_log("Available KV cache memory: 1.2.3 GiB\n")["kv_cache_gib"] is None


# --- every user error a vramplan.Error naming what is wrong ------------------------------------


@pytest.mark.parametrize(
    ("flag", "command"),
    [
        ("--host-ram-gib", "plan"),
        ("--cpu-offload-gb", "plan"),
        ("--safety-margin-gib", "flags"),
        ("--gpu-memory-utilization", "plan"),
    ],
)
@pytest.mark.parametrize("value", ["inf", "nan", "-inf", "1e400"])
def test_non_finite_flag_values_are_refused_by_name(flag: str, command: str, value: str) -> None:
    done = cli(command, f"{flag}={value}")
    assert done.returncode == 2
    assert flag in done.stderr
    assert "Traceback" not in done.stderr


def test_api_misuse_is_a_named_error(tmp_path: Path) -> None:
    with pytest.raises(vramplan.ConfigError, match="parse_log"):
        vramplan.parse_vllm_log(None)  # type: ignore[call-overload]
    with pytest.raises(vramplan.ConfigError, match=r"records\[0\]"):
        vramplan.calibrate(records=[1])  # type: ignore[list-item]
    with pytest.raises(vramplan.ConfigError, match="gpu_total_gib"):
        vramplan.calibrate(
            records=[
                {
                    "id": "r",
                    "model": "meta-llama/Llama-3.1-8B-Instruct",
                    "gpu": "X",
                    "gpu_total_gib": "80",
                    "vllm_version": "0.10.1",
                }
            ]
        )
    huge_gpu = {"id": "r", "gpu": "Z9", "gpu_total_gib": 2.0**40, "max_model_len": 8}
    with pytest.raises(vramplan.ConfigError, match="gpu_total_gib"):
        validate._gpu(huge_gpu)
    with pytest.raises(vramplan.ConfigError, match="at most 4096"):
        api.load_model("x" * 100_000)
    with pytest.raises(vramplan.ConfigError, match="64-bit"):
        api.sweep(max_model_len=[1 << 64])
    done = cli("sweep", "--max-num-seqs", str(1 << 64))
    assert done.returncode == 2
    assert "--max-num-seqs" in done.stderr


def test_profile_errors_name_the_file(tmp_path: Path) -> None:
    bad_utf8 = tmp_path / "utf8.yaml"
    bad_utf8.write_bytes(b"engine_version: 0.10.1\ngpu: \xff\noverrides: {}\n")
    with pytest.raises(vramplan.ParseError, match=r"utf8\.yaml.*offset 28"):
        vramplan.Profile.load(bad_utf8)
    sequence_key = tmp_path / "seq.yaml"
    sequence_key.write_text("? [a, b]\n: 1\nengine_version: 0.10.1\n")
    with pytest.raises(vramplan.SpecError, match=r"seq\.yaml"):
        vramplan.Profile.load(sequence_key)


def test_nvidia_smi_csv_with_inf_is_named(tmp_path: Path) -> None:
    path = tmp_path / "smi.csv"
    path.write_text("0, NVIDIA H100 80GB HBM3, inf, 0, 81559\n")
    with pytest.raises(vramplan.ParseError, match=r"smi\.csv:1"):
        probe.read_nvidia_smi_csv(path)


def test_records_errors_name_file_and_line(tmp_path: Path) -> None:
    cases = {
        "[1, 2]": "expected a JSON object",
        '{"a": 1e400}': "does not fit a double",
        '{"a": NaN}': "non-finite",
        "[" * 100_000 + "]" * 100_000: "nested too deep",
    }
    for text, problem in cases.items():
        path = tmp_path / "r.jsonl"
        path.write_text('{"id": "ok"}\n' + text + "\n")
        with pytest.raises(vramplan.ParseError, match=rf"r\.jsonl:2: .*{problem}"):
            validate.read_records(path)
    done = cli("validate", "--records", str(tmp_path / "missing.jsonl"))
    assert done.returncode == 2
    assert "missing.jsonl" in done.stderr


# --- long work: progress, Ctrl-C, atomic output ----------------------------------------------


def test_sweep_reports_progress_in_chunks() -> None:
    calls: list[tuple[int, int]] = []
    seqs = list(range(1, 1 + 3 * api.SWEEP_CHUNK_POINTS // 2))
    frame = api.sweep(max_num_seqs=seqs, progress=lambda done, total: calls.append((done, total)))
    assert len(frame) == len(seqs)
    assert list(frame["max_num_seqs"][:3]) == [1, 2, 3]  # order kept across chunks
    assert len(calls) == 2
    assert calls[-1] == (len(seqs), len(seqs))


def test_ctrl_c_during_a_sweep_leaves_no_partial_file(tmp_path: Path) -> None:
    out = tmp_path / "grid.csv"
    out.write_text("previous\n")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    lens = ",".join(str(n) for n in range(1024, 1024 + 4000))
    seqs = ",".join(str(n) for n in range(1, 2001))
    proc = subprocess.Popen(
        [sys.executable, "-m", "vramplan", "sweep", "--max-model-len", lens,
         "--max-num-seqs", seqs, "--out", str(out)],
        env=env,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    time.sleep(3)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert out.read_text() == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grid.csv"]
