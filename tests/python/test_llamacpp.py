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
