"""llama.cpp's own model and KV buffer bytes per architecture, from its no-allocation load path.

For each architecture below (real hyper-parameters of a public checkpoint): write a metadata-only
GGUF with the `gguf` package, ask llama.cpp which tensors it builds from it (`llamacpp_dryrun
tensors`), write the model as a sparse GGUF (header-exact, zero data via truncate; a Q4_K_M-like
type mix), load that file through llama.cpp's file loader without allocating and read
llama_get_memory_breakdown for every KV cache type x slot count (`llamacpp_dryrun measure`).
Writes one JSON line per architecture: the GGUF (metadata and tensor list, enough to rebuild its
header), and llama.cpp's CPU model / KV (context) / compute bytes per run.

Usage: python run_oracle.py --llamacpp-src DIR [--build DIR] [--work DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import gguf
import numpy as np

HERE = Path(__file__).resolve().parent
CACHE_TYPES = ("f16", "q8_0", "q4_0")
SLOTS = (1, 4)
N_CTX = 8192

# Real configurations (config.json of the named checkpoint). Keys are GGUF keys without the
# architecture prefix; "vocab" is the token count.
ARCHS: dict[str, dict[str, Any]] = {
    # meta-llama/Llama-3.1-8B
    "llama": {
        "vocab": 128256,
        "embedding_length": 4096,
        "block_count": 32,
        "feed_forward_length": 14336,
        "head_count": 32,
        "head_count_kv": 8,
        "context_length": 131072,
    },
    # mistralai/Mixtral-8x7B-v0.1 (llama with experts)
    "llama-moe": {
        "arch": "llama",
        "vocab": 32000,
        "embedding_length": 4096,
        "block_count": 32,
        "feed_forward_length": 14336,
        "head_count": 32,
        "head_count_kv": 8,
        "context_length": 32768,
        "expert_count": 8,
        "expert_used_count": 2,
    },
    # Qwen/Qwen2.5-7B
    "qwen2": {
        "vocab": 152064,
        "embedding_length": 3584,
        "block_count": 28,
        "feed_forward_length": 18944,
        "head_count": 28,
        "head_count_kv": 4,
        "context_length": 32768,
    },
    # Qwen/Qwen3-8B
    "qwen3": {
        "vocab": 151936,
        "embedding_length": 4096,
        "block_count": 36,
        "feed_forward_length": 12288,
        "head_count": 32,
        "head_count_kv": 8,
        "key_length": 128,
        "value_length": 128,
        "context_length": 40960,
    },
    # Qwen/Qwen3-30B-A3B
    "qwen3moe": {
        "vocab": 151936,
        "embedding_length": 2048,
        "block_count": 48,
        "feed_forward_length": 6144,
        "expert_feed_forward_length": 768,
        "head_count": 32,
        "head_count_kv": 4,
        "key_length": 128,
        "value_length": 128,
        "context_length": 40960,
        "expert_count": 128,
        "expert_used_count": 8,
    },
    # google/gemma-7b
    "gemma": {
        "vocab": 256000,
        "embedding_length": 3072,
        "block_count": 28,
        "feed_forward_length": 24576,
        "head_count": 16,
        "head_count_kv": 16,
        "key_length": 256,
        "value_length": 256,
        "context_length": 8192,
    },
    # google/gemma-2-9b
    "gemma2": {
        "vocab": 256000,
        "embedding_length": 3584,
        "block_count": 42,
        "feed_forward_length": 14336,
        "head_count": 16,
        "head_count_kv": 8,
        "key_length": 256,
        "value_length": 256,
        "context_length": 8192,
        "sliding_window": 4096,
    },
    # google/gemma-3-12b-pt
    "gemma3": {
        "vocab": 262208,
        "embedding_length": 3840,
        "block_count": 48,
        "feed_forward_length": 15360,
        "head_count": 16,
        "head_count_kv": 8,
        "key_length": 256,
        "value_length": 256,
        "context_length": 131072,
        "sliding_window": 1024,
    },
    # microsoft/Phi-3-mini-4k-instruct
    "phi3": {
        "vocab": 32064,
        "embedding_length": 3072,
        "block_count": 32,
        "feed_forward_length": 8192,
        "head_count": 32,
        "head_count_kv": 32,
        "context_length": 4096,
        "rope_dimension_count": 96,
    },
    # bigcode/starcoder2-3b
    "starcoder2": {
        "vocab": 49152,
        "embedding_length": 3072,
        "block_count": 30,
        "feed_forward_length": 12288,
        "head_count": 24,
        "head_count_kv": 2,
        "context_length": 16384,
    },
    # tiiuae/falcon-7b
    "falcon": {
        "vocab": 65024,
        "embedding_length": 4544,
        "block_count": 32,
        "feed_forward_length": 18176,
        "head_count": 71,
        "head_count_kv": 1,
        "context_length": 2048,
    },
    # EleutherAI/pythia-1.4b
    "gptneox": {
        "vocab": 50304,
        "embedding_length": 2048,
        "block_count": 24,
        "feed_forward_length": 8192,
        "head_count": 16,
        "head_count_kv": 16,
        "context_length": 2048,
        "rope_dimension_count": 32,
    },
    # stabilityai/stablelm-2-1_6b
    "stablelm": {
        "vocab": 100352,
        "embedding_length": 2048,
        "block_count": 24,
        "feed_forward_length": 5632,
        "head_count": 32,
        "head_count_kv": 32,
        "context_length": 4096,
        "rope_dimension_count": 16,
    },
    # CohereForAI/c4ai-command-r-v01
    "command-r": {
        "vocab": 256000,
        "embedding_length": 8192,
        "block_count": 40,
        "feed_forward_length": 22528,
        "head_count": 64,
        "head_count_kv": 64,
        "context_length": 131072,
    },
    # CohereForAI/c4ai-command-r7b-12-2024
    "cohere2": {
        "vocab": 256000,
        "embedding_length": 4096,
        "block_count": 32,
        "feed_forward_length": 14336,
        "head_count": 32,
        "head_count_kv": 8,
        "context_length": 8192,
        "sliding_window": 4096,
    },
    # allenai/OLMo-2-1124-7B
    "olmo2": {
        "vocab": 100352,
        "embedding_length": 4096,
        "block_count": 32,
        "feed_forward_length": 11008,
        "head_count": 32,
        "head_count_kv": 32,
        "context_length": 4096,
    },
    # ibm-granite/granite-3.1-8b-instruct
    "granite": {
        "vocab": 49155,
        "embedding_length": 4096,
        "block_count": 40,
        "feed_forward_length": 12800,
        "head_count": 32,
        "head_count_kv": 8,
        "context_length": 131072,
    },
    # openai-community/gpt2
    "gpt2": {
        "vocab": 50257,
        "embedding_length": 768,
        "block_count": 12,
        "feed_forward_length": 3072,
        "head_count": 12,
        "head_count_kv": 12,
        "context_length": 1024,
    },
    # bigscience/bloom-560m
    "bloom": {
        "vocab": 250880,
        "embedding_length": 1024,
        "block_count": 24,
        "feed_forward_length": 4096,
        "head_count": 16,
        "head_count_kv": 16,
        "context_length": 2048,
    },
    # microsoft/phi-2
    "phi2": {
        "vocab": 51200,
        "embedding_length": 2560,
        "block_count": 32,
        "feed_forward_length": 10240,
        "head_count": 32,
        "head_count_kv": 32,
        "context_length": 2048,
        "rope_dimension_count": 32,
    },
    # Qwen/Qwen1.5-MoE-A2.7B
    "qwen2moe": {
        "vocab": 151936,
        "embedding_length": 2048,
        "block_count": 24,
        "feed_forward_length": 5632,
        "expert_feed_forward_length": 1408,
        "expert_shared_feed_forward_length": 5632,
        "head_count": 16,
        "head_count_kv": 16,
        "context_length": 8192,
        "expert_count": 60,
        "expert_used_count": 4,
    },
    # internlm/internlm2_5-7b
    "internlm2": {
        "vocab": 92544,
        "embedding_length": 4096,
        "block_count": 32,
        "feed_forward_length": 14336,
        "head_count": 32,
        "head_count_kv": 8,
        "context_length": 32768,
    },
    # openai/gpt-oss-20b (sliding window on every other layer, attention sinks)
    "gpt-oss": {
        "vocab": 201088,
        "embedding_length": 2880,
        "block_count": 24,
        "feed_forward_length": 2880,
        "expert_feed_forward_length": 2880,
        "head_count": 64,
        "head_count_kv": 8,
        "key_length": 64,
        "value_length": 64,
        "context_length": 131072,
        "sliding_window": 128,
        "expert_count": 32,
        "expert_used_count": 4,
    },
    # ibm-granite/granite-4.0-h-micro (Mamba2 layers, attention at layers 10, 13, 17, 27)
    "granitehybrid": {
        "vocab": 100352,
        "embedding_length": 2048,
        "block_count": 40,
        "feed_forward_length": 8192,
        "head_count": 16,
        "head_count_kv": [4 if i in (10, 13, 17, 27) else 0 for i in range(40)],
        "context_length": 131072,
        "ssm_conv_kernel": 4,
        "ssm_inner_size": 4096,
        "ssm_state_size": 128,
        "ssm_time_step_rank": 64,
        "ssm_group_count": 1,
    },
    # Qwen/Qwen3-Next-80B-A3B (gated delta-net layers, full attention every 4th layer)
    "qwen3next": {
        "vocab": 151936,
        "embedding_length": 2048,
        "block_count": 48,
        "feed_forward_length": 5120,
        "expert_feed_forward_length": 512,
        "expert_shared_feed_forward_length": 512,
        "head_count": 16,
        "head_count_kv": 2,
        "key_length": 256,
        "value_length": 256,
        "rope_dimension_count": 64,
        "context_length": 262144,
        "expert_count": 512,
        "expert_used_count": 10,
        "full_attention_interval": 4,
        "ssm_conv_kernel": 4,
        "ssm_inner_size": 4096,
        "ssm_state_size": 128,
        "ssm_time_step_rank": 32,
        "ssm_group_count": 16,
    },
    # deepseek-ai/DeepSeek-V2-Lite (MLA: the planner refuses it)
    "deepseek2": {
        "vocab": 102400,
        "embedding_length": 2048,
        "block_count": 27,
        "feed_forward_length": 10944,
        "expert_feed_forward_length": 1408,
        "head_count": 16,
        "head_count_kv": 1,
        "key_length": 576,
        "value_length": 512,
        "key_length_mla": 192,
        "value_length_mla": 128,
        "kv_lora_rank": 512,
        "rope_dimension_count": 64,
        "context_length": 163840,
        "expert_count": 64,
        "expert_used_count": 6,
        "expert_shared_count": 2,
        "leading_dense_block_count": 1,
    },
}

U32, F32, BOOL = gguf.GGUFValueType.UINT32, gguf.GGUFValueType.FLOAT32, gguf.GGUFValueType.BOOL
# GGUF key (after the architecture prefix) per configuration field.
KEYS = {
    "context_length": "context_length",
    "embedding_length": "embedding_length",
    "block_count": "block_count",
    "feed_forward_length": "feed_forward_length",
    "expert_feed_forward_length": "expert_feed_forward_length",
    "expert_shared_feed_forward_length": "expert_shared_feed_forward_length",
    "head_count": "attention.head_count",
    "head_count_kv": "attention.head_count_kv",
    "key_length": "attention.key_length",
    "value_length": "attention.value_length",
    "key_length_mla": "attention.key_length_mla",
    "value_length_mla": "attention.value_length_mla",
    "kv_lora_rank": "attention.kv_lora_rank",
    "sliding_window": "attention.sliding_window",
    "rope_dimension_count": "rope.dimension_count",
    "expert_count": "expert_count",
    "expert_used_count": "expert_used_count",
    "expert_shared_count": "expert_shared_count",
    "leading_dense_block_count": "leading_dense_block_count",
    "ssm_conv_kernel": "ssm.conv_kernel",
    "ssm_inner_size": "ssm.inner_size",
    "ssm_state_size": "ssm.state_size",
    "ssm_time_step_rank": "ssm.time_step_rank",
    "ssm_group_count": "ssm.group_count",
    "full_attention_interval": "full_attention_interval",
}
ARRAY = gguf.GGUFValueType.ARRAY


def metadata(name: str) -> tuple[str, list[tuple[str, int, Any]]]:
    """(architecture, [(key, GGUF value type, value)]): the configuration plus the keys every
    architecture's loader may read, at neutral values."""
    cfg = ARCHS[name]
    arch = cfg.get("arch", name)
    kvs: list[tuple[str, int, Any]] = [("general.architecture", gguf.GGUFValueType.STRING, arch)]
    for field, key in KEYS.items():
        if field in cfg:
            kvs.append(
                (f"{arch}.{key}", ARRAY if isinstance(cfg[field], list) else U32, cfg[field])
            )
    if "rope_dimension_count" not in cfg and "key_length" in cfg:
        kvs.append((f"{arch}.rope.dimension_count", U32, cfg["key_length"]))
    kvs += [
        (f"{arch}.attention.layer_norm_rms_epsilon", F32, 1e-5),
        (f"{arch}.attention.layer_norm_epsilon", F32, 1e-5),
        (f"{arch}.rope.freq_base", F32, 10000.0),
        (f"{arch}.use_parallel_residual", BOOL, True),
        (f"{arch}.logit_scale", F32, 1.0),
        (f"{arch}.residual_scale", F32, 0.22),
        (f"{arch}.embedding_scale", F32, 12.0),
        (f"{arch}.attention.scale", F32, 0.0078125),
        (f"{arch}.expert_weights_scale", F32, 1.0),
        (f"{arch}.expert_gating_func", U32, 1),
    ]
    return arch, kvs


def write_gguf(path: Path, name: str, tensors: list[dict[str, Any]]) -> None:
    """A GGUF with `name`'s metadata, a dummy tokenizer of the vocabulary size and `tensors` (ggml
    type name, ggml shape) whose data region is left sparse."""
    arch, kvs = metadata(name)
    writer = gguf.GGUFWriter(path, arch)
    for key, vtype, value in kvs[1:]:
        writer.add_key_value(key, value, vtype, sub_type=U32 if vtype == ARRAY else None)
    n_vocab = ARCHS[name]["vocab"]
    writer.add_string("tokenizer.ggml.model", "test")
    writer.add_array("tokenizer.ggml.tokens", [f"tok_{i}" for i in range(n_vocab)])
    writer.add_array("tokenizer.ggml.scores", [0.0] * n_vocab)
    data_bytes = 0
    for t in tensors:
        qtype = gguf.GGMLQuantizationType[t["type"].upper()]
        block, type_bytes = gguf.GGML_QUANT_SIZES[qtype]
        nbytes = int(np.prod(t["shape"])) // block * type_bytes
        writer.add_tensor_info(
            t["name"], list(reversed(t["shape"])), np.dtype(np.float32), nbytes, raw_dtype=qtype
        )
        data_bytes += gguf.GGUFWriter.ggml_pad(nbytes, writer.data_alignment)
    writer.write_header_to_file(path)
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    assert writer.fout is not None
    fout = writer.fout[0]
    header_end = fout.tell()
    data_start = gguf.GGUFWriter.ggml_pad(header_end, writer.data_alignment)
    fout.write(b"\0" * (data_start - header_end))
    fout.truncate(data_start + data_bytes)
    writer.close()


def quantized(tensor: dict[str, Any]) -> dict[str, Any]:
    """A Q4_K_M-like type for a weight matrix llama.cpp built: Q6_K for output, attn_v and
    ffn_down, Q4_K for the other matrices; Q8_0 or F16 where the row is not whole K-blocks;
    vectors (norms, biases) and convolution / SSM tensors keep llama.cpp's type."""
    name, shape = tensor["name"], tensor["shape"]
    keep = ("norm", "conv1d", "ssm_a", "ssm_d", "rope_freqs", "bias", "exp_probs", "gate_inp")
    if len(shape) < 2 or any(k in name for k in keep):
        return {**tensor, "type": "f32"}
    wide = name.startswith("output.") or "attn_v." in name or "ffn_down" in name
    if shape[0] % 256 == 0:
        qtype = "q6_k" if wide else "q4_k"
    elif shape[0] % 32 == 0:
        qtype = "q8_0"
    else:
        qtype = "f16"
    return {**tensor, "type": qtype}


# Which optional bias vectors the checkpoint ships (llama.cpp builds every optional tensor from
# metadata alone; the file keeps those the real checkpoint has): all, the Q/K/V ones, or none.
BIASES = {
    "qwen2": "qkv",
    "qwen2moe": "qkv",
    "stablelm": "qkv",
    "gptneox": "all",
    "gpt2": "all",
    "bloom": "all",
    "phi2": "all",
    "starcoder2": "all",
    "gpt-oss": "all",
}
QKV_BIAS = ("attn_q.bias", "attn_k.bias", "attn_v.bias", "attn_qkv.bias")


def in_checkpoint(name: str, tensor: str) -> bool:
    """Whether the real checkpoint has this tensor llama.cpp can build: no FP8-style scales, biases
    (other than LayerNorm and SSM ones, always required) as BIASES says, rope_freqs only for Llama 3.1's long-context RoPE."""
    if tensor.endswith((".scale", ".input_scale")):
        return False
    if tensor.endswith(".bias") and "norm" not in tensor and "ssm_" not in tensor:
        kind = BIASES.get(name)
        return kind == "all" or (kind == "qkv" and tensor.endswith(QKV_BIAS))
    if tensor.startswith("rope_freqs."):
        return name == "llama"
    return True


def run(cmd: list[str]) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {done.stderr.strip()[-2000:]}")
    return done.stdout


def oracle_one(exe: Path, work: Path, name: str) -> dict[str, Any]:
    meta = work / f"{name}.meta.gguf"
    write_gguf(meta, name, [])
    built = [json.loads(line) for line in run([str(exe), "tensors", str(meta)]).splitlines()]
    # A tensor duplicated into several layers' buffers (rope_freqs) is listed once per layer.
    unique = {t["name"]: t for t in reversed(built)}
    tensors = [quantized(unique.pop(t["name"])) for t in built if t["name"] in unique]
    tensors = [t for t in tensors if in_checkpoint(name, t["name"])]
    model = work / f"{name}.gguf"
    write_gguf(model, name, tensors)
    runs = []
    launches = [(c, n, False) for c in CACHE_TYPES for n in SLOTS]
    launches += [(c, n, True) for c in CACHE_TYPES for n in SLOTS if n > 1]
    for cache, slots, unified in launches:
        run_shape = {
            "n_ctx": N_CTX,
            "n_seq": slots,
            "kv_unified": unified,
            "flash_attn": True,
            "n_ubatch": 512,
            "n_batch": 2048,
            "type_k": cache,
            "type_v": cache,
        }
        try:
            out = json.loads(
                run(
                    [
                        str(exe),
                        "measure",
                        str(model),
                        str(N_CTX),
                        str(slots),
                        cache,
                        cache,
                        "unified" if unified else "streams",
                    ]
                )
            )
        except RuntimeError as error:
            # llama.cpp refuses this launch (e.g. a quantized cache on a head size that is
            # not whole blocks): the record keeps its words.
            refusal = [ln for ln in str(error).splitlines() if "llama_init_from_model" in ln]
            if not refusal or cache == "f16":
                raise
            runs.append({**run_shape, "refused": refusal[0].split(": ", 1)[1]})
            continue
        cpu = out["buffers"]["CPU"]
        runs.append(
            {
                **run_shape,
                "n_ctx_resolved": out["n_ctx"],
                "n_ctx_seq": out["n_ctx_seq"],
                "cpu_model_bytes": cpu["model"],
                "cpu_context_bytes": cpu["context"],
                "cpu_compute_bytes": cpu["compute"],
            }
        )
    arch, kvs = metadata(name)
    return {
        "name": name,
        "architecture": arch,
        "checkpoint_shape": ARCHS[name],
        "metadata": [[k, int(t), v] for k, t, v in kvs],
        "n_vocab": ARCHS[name]["vocab"],
        "tensors": [[t["name"], t["type"], t["shape"]] for t in tensors],
        "runs": runs,
    }


def build(src: Path, build_dir: Path) -> Path:
    run(
        [
            "cmake",
            "-S",
            str(HERE),
            "-B",
            str(build_dir),
            "-G",
            "Ninja",
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DLLAMACPP_SOURCE_DIR={src}",
        ]
    )
    run(["cmake", "--build", str(build_dir), "-j", "2", "--target", "llamacpp_dryrun"])
    return build_dir / "llamacpp_dryrun"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llamacpp-src", type=Path, required=True)
    parser.add_argument("--build", type=Path, default=Path("build/llamacpp-oracle"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/llamacpp-oracle-gguf"))
    parser.add_argument(
        "--out", type=Path, default=Path("tests/data/llamacpp_dryrun/records.jsonl")
    )
    parser.add_argument("--arch", action="append", help="only these (default: all)")
    args = parser.parse_args()
    exe = build(args.llamacpp_src.resolve(), args.build)
    # The records name the llama.cpp they came from: a source tree without git is refused.
    commit = run(["git", "-C", str(args.llamacpp_src), "rev-parse", "HEAD"]).strip()
    date = run(["git", "-C", str(args.llamacpp_src), "log", "-1", "--format=%cs"]).strip()
    args.work.mkdir(parents=True, exist_ok=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    lines, refused = [], []
    for name in args.arch or list(ARCHS):
        try:
            record = oracle_one(exe, args.work, name)
        except RuntimeError as error:
            refused.append(name)
            print(f"{name}: llama.cpp refuses: {error}", file=sys.stderr)
            continue
        record["llama_cpp_commit"] = commit
        record["llama_cpp_commit_date"] = date
        lines.append(json.dumps(record, separators=(",", ":")))
        print(
            f"{name}: {len(record['tensors'])} tensors, {len(record['runs'])} runs", file=sys.stderr
        )
    args.out.write_text("\n".join(lines) + "\n")
    print(f"{len(lines)} architectures written to {args.out}; refused: {refused}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
