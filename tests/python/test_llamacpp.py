"""llama.cpp as the third engine from Python and the CLI: `--engine llamacpp` (and its alias
`llama.cpp`) takes llama.cpp's own flag spellings over a GGUF file. The GGUF here is written
header-only (a sparse file): Llama-3.1-8B's shape, every linear Q4_K, output Q6_K."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from vramplan import _core, cli, engines, llamacpp

MIB = 1 << 20
Q4_K, Q6_K, F32 = 12, 14, 0


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def write_llama_31_8b(path: Path) -> None:
    """Llama-3.1-8B: 32 layers, h 4096, 32 heads, 8 KV heads of 128, ff 14336, vocab 128256."""
    kvs = [
        ("general.architecture", 8, _string("llama")),
        ("llama.block_count", 4, struct.pack("<I", 32)),
        ("llama.context_length", 4, struct.pack("<I", 131072)),
        ("llama.embedding_length", 4, struct.pack("<I", 4096)),
        ("llama.feed_forward_length", 4, struct.pack("<I", 14336)),
        ("llama.attention.head_count", 4, struct.pack("<I", 32)),
        ("llama.attention.head_count_kv", 4, struct.pack("<I", 8)),
    ]
    tensors: list[tuple[str, list[int], int, int]] = [
        ("token_embd.weight", [4096, 128256], Q4_K, 4096 * 128256 // 256 * 144)
    ]
    for i in range(32):
        b = f"blk.{i}."
        tensors += [
            (b + "attn_norm.weight", [4096], F32, 4096 * 4),
            (b + "attn_q.weight", [4096, 4096], Q4_K, 4096 * 4096 // 256 * 144),
            (b + "attn_k.weight", [4096, 1024], Q4_K, 4096 * 1024 // 256 * 144),
            (b + "attn_v.weight", [4096, 1024], Q4_K, 4096 * 1024 // 256 * 144),
            (b + "attn_output.weight", [4096, 4096], Q4_K, 4096 * 4096 // 256 * 144),
            (b + "ffn_norm.weight", [4096], F32, 4096 * 4),
            (b + "ffn_gate.weight", [4096, 14336], Q4_K, 4096 * 14336 // 256 * 144),
            (b + "ffn_up.weight", [4096, 14336], Q4_K, 4096 * 14336 // 256 * 144),
            (b + "ffn_down.weight", [14336, 4096], Q4_K, 4096 * 14336 // 256 * 144),
        ]
    tensors += [
        ("output_norm.weight", [4096], F32, 4096 * 4),
        ("output.weight", [4096, 128256], Q6_K, 4096 * 128256 // 256 * 210),
    ]
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, kind, value in kvs:
        head += _string(key) + struct.pack("<I", kind) + value
    offset = 0
    for name, dims, kind, size in tensors:
        head += _string(name) + struct.pack("<I", len(dims))
        head += b"".join(struct.pack("<Q", d) for d in dims)
        head += struct.pack("<IQ", kind, offset)
        offset += (size + 31) // 32 * 32
    head += b"\0" * (-len(head) % 32)
    with path.open("wb") as f:
        f.write(head)
        f.truncate(len(head) + offset)


@pytest.fixture(scope="module")
def gguf(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("llamacpp") / "Meta-Llama-3.1-8B-Q4_K.gguf"
    write_llama_31_8b(path)
    return str(path)


def test_kv_buffer_is_1024_mib_in_f16_and_544_in_q8_0(gguf: str) -> None:
    # 32 layers x K and V x 1024 values x 8192 cells: x 2 B = 1024 MiB; q8_0 = 34 B / 32 values.
    f16 = llamacpp.breakdown(gguf, ctx_size=8192)["memory"]
    q8 = llamacpp.breakdown(gguf, ctx_size=8192, cache_type_k="q8_0", cache_type_v="q8_0")
    assert f16["gpu_kv_bytes"] == 1024 * MIB
    assert q8["memory"]["gpu_kv_bytes"] == 544 * MIB


@pytest.mark.parametrize("engine", ["llamacpp", "llama.cpp"])
def test_cli_takes_llama_cpp_flag_spellings(
    gguf: str, engine: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["plan", gguf, "--engine", engine, "-c", "8192", "-ctk", "q8_0"]
    argv += ["--cache-type-v", "q8_0", "--gpu-budget-mib", "20000", "--json"]
    assert cli.main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["memory"]["gpu_kv_bytes"] == 544 * MIB
    assert result["launch"]["n_gpu_layers"] == 33  # all 32 layers + output fit 20000 MiB
    assert "--cache-type-k q8_0" in result["launch_line"]


def test_ngl_solver_keeps_the_layers_that_fit(gguf: str) -> None:
    # Per layer: 122,716,160 B of weights + 32 MiB f16 KV at -c 8192 = 156,270,592 B; output
    # 430,956,544 B (Q6_K + norm); compute (approximation, flash attention on): logits
    # 128256 x 512 x 4 + hidden 4096 x 512 x 4 = 271,056,896 B. A 4096 MiB budget:
    # (4,294,967,296 - 430,956,544 - 271,056,896) / 156,270,592 = 22.99 -> 22 layers, -ngl 23.
    result = llamacpp.plan(gguf, gpu_budget=4096 * MIB, ctx_size=8192, flash_attn="on")
    assert result["fits"]
    assert result["launch"]["n_gpu_layers"] == 23
    assert result["memory"]["layers_on_gpu"] == 22
    assert result["memory"]["host_kv_bytes"] == 10 * 32 * MIB


def test_bad_cache_type_and_non_gguf_are_errors(gguf: str) -> None:
    with pytest.raises(_core.ConfigError, match="q4_k"):
        llamacpp.breakdown(gguf, cache_type_k="q4_k")
    with pytest.raises(_core.ConfigError, match="GGUF"):
        llamacpp.plan("Qwen/Qwen3-8B", gpu_budget=1)


def test_registered_as_the_third_engine() -> None:
    assert engines.get("llama.cpp") is engines.get("llamacpp")
    assert engines.get("llamacpp").serve_command == "llama-server"


LOGS = Path(__file__).parent.parent / "data" / "llamacpp_logs"


def test_diagnose_names_the_kv_buffer_of_a_real_oom(capsys: pytest.CaptureFixture[str]) -> None:
    # gpustack#1269: the fourth GPU's KV buffer (4480 MiB on device 3) does not fit.
    log = str(LOGS / "oom_kv_gpustack_1269.log")
    assert cli.main(["diagnose", log, "--engine", "llamacpp"]) == 1
    out = capsys.readouterr().out
    assert "the KV cache buffer (4480 MiB) on CUDA3 does not fit" in out
    assert "fix: lower -c / --ctx-size" in out


def test_validate_compares_the_logs_kv_and_compute_with_the_plan(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Pythia-2.8B on a V100 (ggml-ci, build 4343): KV 640.00 MiB by the exact rule; the compute
    # buffer's attention phase (flash attention off): KQ scores 32 heads x 2048 cells x 512
    # tokens x 4 B = 128 MiB, the mask 2048 x 512 x 4 = 4 MiB, and six f32 vectors of n_embd
    # 2560 x 512 tokens (5 MiB each: the residual, the fused Q/K/V (three), the roped Q and KQV)
    # = 162 MiB, the figure the log prints; still a model of the allocator, not an exact rule.
    result = llamacpp.validate(str(LOGS / "ci_v100_4343_pythia_2_8b_f16.log"))
    rows = {row["buffer"]: row for row in result["rows"]}
    assert rows["kv"]["plan_bytes"] == rows["kv"]["log_bytes"] == 640 * MIB
    assert rows["compute"]["plan_bytes"] == rows["compute"]["log_bytes"] == 162 * MIB
    assert not rows["compute"]["exact"]
    assert "model" not in rows  # no GGUF given
    pythia = str(LOGS / "ci_v100_4343_pythia_2_8b_f16.log")
    assert cli.main(["validate", pythia, "--engine", "llama.cpp"]) == 0
    assert "CUDA0 kv" in capsys.readouterr().out


def test_validate_reads_a_metal_log() -> None:
    # Qwen2.5-0.5B on an Apple M4, flash attention auto -> enabled: KV 24 x 2 x 128 x 512 x 2 B
    # = 6 MiB exact; compute: logits 151936 x 512 x 4 = 296.75 MiB + hidden 896 x 512 x 4 =
    # 1.75 MiB = 298.50 MiB against the 300.25 MiB printed (-0.58%).
    rows = {
        r["buffer"]: r
        for r in llamacpp.validate(str(LOGS / "metal_m4_qwen2_5_0_5b_q4_k_m.log"))["rows"]
    }
    assert rows["kv"]["device"] == "MTL0"
    assert rows["kv"]["plan_bytes"] == rows["kv"]["log_bytes"] == 6 * MIB
    assert rows["compute"]["plan_bytes"] == 298 * MIB + MIB // 2
    assert rows["compute"]["error_pct"] == pytest.approx(-0.583, abs=0.001)


def _modelfile(tmp_path: Path, gguf: str, extra: str = "") -> str:
    path = tmp_path / "Modelfile"
    path.write_text(
        f"FROM {gguf}\nPARAMETER num_ctx 8192\nPARAMETER temperature 0.7\n{extra}"
        'TEMPLATE """{{ .System }}\nPARAMETER num_ctx 1\n{{ .Prompt }}"""\n'
    )
    return str(path)


def test_ollama_modelfile_and_env_are_planned_in_ollamas_words(gguf: str, tmp_path: Path) -> None:
    # OLLAMA_NUM_PARALLEL=2: llama.cpp gets -c 16384 -np 2 (2 streams of 8192), -b 1024,
    # -ub 512; q8_0 KV: 32 layers x (K + V) x 1088 B x 8192 x 2 streams = 1088 MiB.
    # Budget: RTX-4090's 25,382,879,232 B less Ollama's 457 MiB minimum and a 16 GiB
    # OLLAMA_GPU_OVERHEAD = 7,723,810,816 B. Weights 32 x 122,716,160 + output 430,956,544 +
    # compute 271,056,896 = 4,628,930,560 B: every layer fits (num_gpu 33). KV room
    # 3,094,880,256 B at 32 x 2 x 1088 = 69,632 B per cell of -c: 44,446 -> 86 steps of
    # 2 x 256 = -c 44032, num_ctx 22016 per request.
    from vramplan import ollama

    env = {
        "OLLAMA_NUM_PARALLEL": "2",
        "OLLAMA_KV_CACHE_TYPE": "q8_0",
        "OLLAMA_FLASH_ATTENTION": "1",
        "OLLAMA_GPU_OVERHEAD": str(16 << 30),
    }
    result = ollama.plan(_modelfile(tmp_path, gguf), "RTX-4090", env)
    assert result["gpu_budget_bytes"] == 7_723_810_816
    assert result["launch"]["ctx_size"] == 16384
    assert result["launch"]["parallel"] == 2
    assert result["memory"]["gpu_kv_bytes"] == 1088 * MIB
    o = result["ollama"]
    assert (o["num_ctx"], o["num_gpu"], o["max_num_ctx"]) == (8192, 33, 22016)
    assert "PARAMETER num_ctx 8192\nPARAMETER num_gpu 33" in o["modelfile"]
    assert "OLLAMA_NUM_PARALLEL=2" in o["env"]
    assert "OLLAMA_FLASH_ATTENTION=1" in o["env"]


def test_ollama_quantized_cache_without_flash_attention_falls_back_to_f16(
    gguf: str, tmp_path: Path
) -> None:
    from vramplan import ollama

    modelfile = ollama.read_modelfile(_modelfile(tmp_path, gguf))
    launch, notes = ollama.llamacpp_launch(
        modelfile, {"OLLAMA_KV_CACHE_TYPE": "q4_0", "OLLAMA_FLASH_ATTENTION": "false"}
    )
    assert launch["cache_type_k"] == "f16"
    assert launch["flash_attn"] == "off"
    assert "needs flash attention" in notes[0]
    assert launch["ctx_size"] == 8192  # the Modelfile's num_ctx, not the TEMPLATE's text


def test_ollama_modelfile_errors_name_the_line(gguf: str, tmp_path: Path) -> None:
    from vramplan import ollama

    bad = _modelfile(tmp_path, gguf, "PARAMETER num_gpu lots\n")
    with pytest.raises(_core.ConfigError, match="Modelfile:4"):
        ollama.read_modelfile(bad)
    empty = tmp_path / "Empty"
    empty.write_text("PARAMETER num_ctx 4096\n")
    with pytest.raises(_core.ConfigError, match="FROM"):
        ollama.read_modelfile(str(empty))


def test_fit_finds_the_fewest_gpus_that_hold_every_layer(
    gguf: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # A 3000 MiB (3,145,728,000 B) budget per GPU, -c 8192, flash attention on. One GPU:
    # (3,145,728,000 - output 430,956,544 - compute 271,056,896) / 156,270,592 = 15.6 -> -ngl 16.
    # Two GPUs (-ts 1,1, -ngl 33): layer il on GPU 0 while il / 33 < 0.5: layers 0-16 there
    # (17 x 156,270,592 + compute FFN 58,720,256 + hidden 8,388,608 = 2,723,708,928 B), layers
    # 17-31 and the output on GPU 1 (15 x 156,270,592 + 430,956,544 + 271,056,896 =
    # 3,046,072,320 B): both fit.
    fitted = llamacpp.fit_gpus(gguf, "RTX-4090", 4, 3000 * MIB, ctx_size=8192, flash_attn="on")
    assert fitted["num_gpus"] == 2
    one, two = fitted["rows"]
    assert one["n_gpu_layers"] == 16
    assert not one["all_layers_on_gpu"]
    assert two["max_gpu_total_bytes"] == 3_046_072_320
    assert "--tensor-split 1,1" in two["launch_line"]
    argv = ["fit", gguf, "--engine", "llamacpp", "--gpu-budget-mib", "3000", "-c", "8192"]
    assert cli.main([*argv, "-fa", "on", "--gpu", "RTX-4090"]) == 0
    assert "2 x RTX-4090: every layer" in capsys.readouterr().out


LLAMA_8B_Q4_K_M = "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:Q4_K_M"
LLAMA_70B_Q4_K_S = "bartowski/Llama-3.3-70B-Instruct-GGUF:Q4_K_S"


def test_database_gguf_entry_holds_1024_mib_f16_and_544_q8_0() -> None:
    # The database entry at -c 8192: 32 layers x 2 (K, V) x 8 KV heads x 128 x 8192 cells x 2 B
    # = 1024 MiB; q8_0 stores 34 B per 32 values: 1024 x 34 / 64 = 544 MiB.
    f16 = llamacpp.breakdown(LLAMA_8B_Q4_K_M, ctx_size=8192)
    q8 = llamacpp.breakdown(
        LLAMA_8B_Q4_K_M, ctx_size=8192, cache_type_k="q8_0", cache_type_v="q8_0"
    )
    assert f16["memory"]["gpu_kv_bytes"] == 1024 * MIB
    assert q8["memory"]["gpu_kv_bytes"] == 544 * MIB
    # The per-role types stand in for the file's mix: said, and the model bytes not called exact.
    assert "per-layer type mix" in f16["model"]["approximation"]
    assert f16["model"]["approximation"] in f16["memory"]["notes"]
    assert "gpu_model_bytes" in f16["memory"]["approximate"]
    assert "gpu_model_bytes" not in f16["memory"]["exact"]
    assert "gpu_kv_bytes" in f16["memory"]["exact"]


def test_cli_plans_a_database_gguf_id_with_llama_cpp_short_flags(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["plan", LLAMA_8B_Q4_K_M, "--engine", "llama.cpp", "--gpu", "RTX-4090"]
    argv += ["-c", "8192", "-ctk", "q8_0", "-ctv", "q8_0", "-ngl", "33", "--json"]
    assert cli.main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["memory"]["gpu_kv_bytes"] == 544 * MIB
    assert result["launch"]["n_gpu_layers"] == 33
    # llama-server's own spelling for a Hugging Face GGUF: -hf OWNER/REPO:QUANT.
    assert result["launch_line"].startswith(f"llama-server -hf {LLAMA_8B_Q4_K_M} ")
    assert cli.main(argv[:-1]) == 0  # text: the approximation is a note line
    text = capsys.readouterr().out
    assert "CUDA0 KV buffer size      = 544.00 MiB" in text
    assert "note: tensors built from the database entry" in text


def test_70b_q4_k_s_database_entry_on_a_3090_states_its_approximation() -> None:
    # 483,459,072 B a layer + 32 MiB f16 KV at -c 8192 = 517,013,504 B; output, output_norm and
    # the compute estimate 1,141,358,592 B; the RTX 3090's 25,318,916,096 B less 1 GiB:
    # (24,245,174,272 - 1,141,358,592) / 517,013,504 = 44.69 -> 44 layers, -ngl 45
    # (tests/cpp/test_llamacpp.cpp derives each figure).
    result = llamacpp.plan(LLAMA_70B_Q4_K_S, "RTX-3090", ctx_size=8192)
    assert result["fits"]
    assert result["launch"]["n_gpu_layers"] == 45
    assert result["memory"]["gpu_total_bytes"] == 23_889_952_768
    assert any(
        "Q4_K" in note and "per-layer type mix" in note for note in result["memory"]["notes"]
    )


def test_a_database_id_not_stored_as_gguf_keeps_the_clear_error() -> None:
    with pytest.raises(_core.ConfigError, match=r"GGUF files.*Q4_K_S") as err:
        llamacpp.plan("meta-llama/Llama-3.1-8B-Instruct", gpu_budget=1 << 34)
    assert LLAMA_8B_Q4_K_M in str(err.value)
