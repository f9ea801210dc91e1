#!/usr/bin/env bash
# Build the libFuzzer targets (tests/fuzz: safetensors, GGUF, YAML spec, config.json readers, the
# vLLM and SGLang log parsers, the vLLM and SGLang plan paths from arbitrary knobs, the whole
# plan from a spec YAML, calibration profiles and priors, Hugging Face cache layouts) with clang
# in build-fuzz/ and run each one, one after the other:
#   scripts/fuzz.sh [RUNS]                 at most RUNS executions each (default 200000)
#   FUZZ_SECONDS=60 scripts/fuzz.sh        at most 60 s each, runs unbounded (CI: <= 60 s)
# (both given: whichever limit comes first).
# Seeds: the committed corpus tests/fuzz/corpus/<target>/ (reproducers of past bugs), plus
# tiny valid files generated or copied from tests/data into build-fuzz/corpus/<target>/;
# libFuzzer adds the inputs it finds there, and writes crashing inputs to build-fuzz/artifacts/.
# Exits non-zero if a fuzzer crashes (sanitizer report, abort, timeout, out-of-memory).
# Environment: JOBS (build parallelism, default 2), FUZZ_SECONDS (time bound per target),
# FUZZ_BUILD_DIR (default build-fuzz/), FUZZ_READERS (default: all eleven).
set -euo pipefail

if [ -n "${FUZZ_SECONDS:-}" ]; then RUNS="${1:--1}"; else RUNS="${1:-200000}"; fi
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
JOBS="${JOBS:-2}"

# --- toolchain: clang with the libFuzzer runtime ----------------------------------------
have_libfuzzer() {
  command -v clang++ >/dev/null 2>&1 || return 1
  local tmp
  tmp="$(mktemp -d)"
  printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' \
    >"$tmp/t.cpp"
  clang++ -fsanitize=fuzzer,address,undefined "$tmp/t.cpp" -o "$tmp/t" >/dev/null 2>&1
  local rc=$?
  rm -rf "$tmp"
  return $rc
}
if ! have_libfuzzer; then
  echo "fuzz.sh: installing clang and its libFuzzer runtime with apt-get" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update
  # Debian 12 ships clang 14; the runtime package follows the default clang's major version.
  CLANG_MAJOR="$(apt-cache policy clang | sed -n 's/.*Candidate: *[0-9]*:\{0,1\}\([0-9]*\)\..*/\1/p')"
  $SUDO apt-get install -y clang "libclang-rt-${CLANG_MAJOR:-14}-dev" ||
    $SUDO apt-get install -y clang
  have_libfuzzer || { echo "fuzz.sh: clang cannot link -fsanitize=fuzzer" >&2; exit 2; }
fi

# --- build -------------------------------------------------------------------------------
# A folder already configured with the fuzzers keeps its configuration (scripts/test.sh builds
# them beside the sanitized tests in build/sanitize); any other is configured for them alone.
if ! grep -qs '^VRAMPLAN_BUILD_FUZZERS:BOOL=ON$' "$BUILD/CMakeCache.txt"; then
  cmake -S "$ROOT" -B "$BUILD" \
    -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DVRAMPLAN_BUILD_FUZZERS=ON \
    -DVRAMPLAN_BUILD_TESTS=OFF \
    -DVRAMPLAN_BUILD_PYTHON=OFF \
    -DVRAMPLAN_BUILD_BENCHMARKS=OFF >/dev/null
fi
read -r -a READERS <<<"${FUZZ_READERS:-safetensors gguf spec_yaml hf_import log_parser sglang_log_parser plan sglang_plan spec_plan profile hf_cache}"
cmake --build "$BUILD" --target "${READERS[@]/#/fuzz_}" -j "$JOBS"

# --- seed corpus and dictionaries ----------------------------------------------------------
mkdir -p "$BUILD/corpus/safetensors" "$BUILD/corpus/gguf" "$BUILD/corpus/spec_yaml" \
  "$BUILD/corpus/hf_import" "$BUILD/corpus/log_parser" "$BUILD/corpus/plan" \
  "$BUILD/corpus/sglang_log_parser" "$BUILD/corpus/sglang_plan" "$BUILD/corpus/spec_plan" \
  "$BUILD/corpus/profile" "$BUILD/corpus/hf_cache" "$BUILD/artifacts"
for dir in "$ROOT"/tests/fuzz/corpus/*/; do
  cp "$dir"* "$BUILD/corpus/$(basename "$dir")/"
done
cp "$ROOT"/tests/data/vllm_logs/*.log "$BUILD/corpus/log_parser/"
find "$ROOT/tests/data/sglang" -type f -exec cp {} "$BUILD/corpus/sglang_log_parser/" \;
# Text readers start from the real files: every spec, the malformed ones, real configs.
cp "$ROOT"/model_specs/gpus.yaml "$ROOT"/tests/data/bad_specs/*.yaml "$BUILD/corpus/spec_yaml/"
find "$ROOT/model_specs/models" -name '*.yaml' -exec cp {} "$BUILD/corpus/spec_yaml/" \;
# The whole plan starts from every real spec; the generator below adds each numeric key at its
# schema bound (the specs the sanitizers must plan without an overflow).
find "$ROOT/model_specs/models" -name '*.yaml' -exec cp {} "$BUILD/corpus/spec_plan/" \;
cp "$ROOT"/model_specs/calibration_priors.yaml "$BUILD/corpus/profile/seed_priors.yaml"
find "$ROOT/tests/data" -path '*bad_configs*' -name '*.json' -exec cp {} "$BUILD/corpus/hf_import/" \;
if [ -d "$ROOT/../shared/reference/configs" ]; then
  cp "$ROOT"/../shared/reference/configs/*.json "$BUILD/corpus/hf_import/"
fi
python3 - "$BUILD" "$ROOT" <<'PY'
import json, struct, sys
from pathlib import Path

build = Path(sys.argv[1])
st_dir, gg_dir = build / "corpus" / "safetensors", build / "corpus" / "gguf"

def safetensors(entries, metadata=None, pad=0):
    head, off = {}, 0
    if metadata is not None:
        head["__metadata__"] = metadata
    for name, dtype, shape, size in entries:
        head[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + size]}
        off += size
    text = json.dumps(head, separators=(",", ":")).encode() + b" " * pad
    return struct.pack("<Q", len(text)) + text + b"\0" * off

seeds = {
    "empty": safetensors([]),
    "one_f32": safetensors([("w", "F32", [2, 2], 16)]),
    "dtypes": safetensors([("a", "BF16", [4], 8), ("b", "F16", [3], 6), ("c", "F8_E4M3", [5], 5),
                           ("d", "I32", [2], 8), ("e", "U8", [0, 3], 0), ("f", "F64", [], 8)],
                          {"format": "pt"}, pad=3),
    "meta_only": safetensors([], {"format": "pt", "k": "v"}),
}
for name, data in seeds.items():
    (st_dir / f"seed_{name}.safetensors").write_bytes(data)

def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b

def gguf(kvs, tensors, version=3, alignment=32):
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    for key, typ, payload in kvs:
        out += gstr(key) + struct.pack("<I", typ) + payload
    off = 0
    for name, ne, typ, size in tensors:
        out += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        out += struct.pack("<IQ", typ, off)
        off += (size + alignment - 1) // alignment * alignment
    out += b"\0" * (-len(out) % alignment)
    return out + b"\0" * off

U32, F32, BOOL, STR, ARR, I32 = 4, 6, 7, 8, 9, 5
kv_arch = ("general.architecture", STR, gstr("llama"))
kv_blocks = ("llama.block_count", U32, struct.pack("<I", 2))
kv_rope = ("llama.rope.freq_base", F32, struct.pack("<f", 10000.0))
kv_flag = ("general.flag", BOOL, b"\1")
kv_toks = ("tokenizer.ggml.tokens", ARR,
           struct.pack("<IQ", STR, 3) + gstr("a") + gstr("b") + gstr("<0x0A>"))
kv_ints = ("llama.attention.head_count_kv", ARR, struct.pack("<IQ", I32, 2) + struct.pack("<ii", 8, 4))
gseeds = {
    "empty_v3": gguf([], []),
    "empty_v2": gguf([kv_arch], [], version=2),
    "meta": gguf([kv_arch, kv_blocks, kv_rope, kv_flag, kv_toks, kv_ints], []),
    "tensors": gguf([kv_arch], [("f32", [8, 2], 0, 64), ("q4_0", [32, 2], 2, 36),
                                ("q8_0", [32], 8, 34), ("q4_k", [256], 12, 144),
                                ("q6_k", [256], 14, 210), ("iq4_xs", [256], 23, 136),
                                ("mxfp4", [32, 1, 2], 39, 34), ("bf16", [4], 30, 8)]),
    "aligned64": gguf([("general.alignment", U32, struct.pack("<I", 64))],
                      [("w", [16], 1, 32), ("v", [4], 0, 16)], alignment=64),
}
for name, data in gseeds.items():
    (gg_dir / f"seed_{name}.gguf").write_bytes(data)

# spec_plan: Llama-3.1-8B with each numeric key at its bound, from the schema doc's table.
llama = ("id: seed/llama\nmodel_type: llama\nhidden_size: 4096\nnum_hidden_layers: 32\n"
         "num_attention_heads: 32\nnum_key_value_heads: 8\nintermediate_size: 14336\n"
         "vocab_size: 128256\nmax_position_embeddings: 131072\ntorch_dtype: bfloat16\n")
blocks = {
    "mla": "mla:\n  kv_lora_rank: 512\n  qk_nope_head_dim: 128\n  qk_rope_head_dim: 64\n"
           "  v_head_dim: 128\n",
    "moe": "moe:\n  num_experts: 8\n  num_experts_per_tok: 2\n  moe_intermediate_size: 1024\n",
    "mamba": "layer_pattern: [mamba, full_attention]\nmamba:\n  num_heads: 128\n  head_dim: 64\n"
             "  state_size: 128\n",
    "linear_attention": "layer_pattern: [linear_attention, full_attention]\nlinear_attention:\n"
                        "  num_key_heads: 16\n  key_head_dim: 128\n  num_value_heads: 32\n"
                        "  value_head_dim: 128\n",
    "quantization": "quantization:\n  method: fp8\n",
    "vision": "vision:\n  num_parameters: 400000000\n  image_tokens_per_item: 576\n"
              "  encoder_tokens_per_item: 577\n  pixel_values_per_item: 602112\n"
              "  encoder_hidden_size: 1024\n  encoder_intermediate_size: 4096\n",
}
# Keys a cross-field rule ties to the one at its bound (heads that divide, top-k <= experts).
companions = {"hidden_size": "head_dim: 128", "num_key_value_heads": "num_attention_heads: 256",
              "num_experts_per_tok": "  num_experts: 8192",
              "num_kv_shared_layers": "num_hidden_layers: 4096"}
record = None
for line in (Path(sys.argv[2]) / "docs" / "model-specs.md").read_text().splitlines():
    if line.startswith("### `"):
        record = line[5:-1]
    cells = [c.strip() for c in line.split("|")]
    if record not in ("model", *blocks) or len(cells) < 7 or cells[2] != "int" or not cells[4]:
        continue
    key, bound = cells[1].strip("`"), cells[4]
    sets = {key: f"{key}: {bound}" if record == "model" else f"  {key}: {bound}"}
    if key in companions:
        sets[companions[key].split(":")[0].strip()] = companions[key]
    lines = (llama + blocks.get(record, "")).splitlines()
    kept = [l for l in lines if l.split(":")[0].strip() not in sets]
    top = [v for v in sets.values() if not v.startswith(" ")]
    text = "\n".join([*top, *kept, *(v for v in sets.values() if v.startswith(" "))]) + "\n"
    (build / "corpus" / "spec_plan" / f"seed_bound_{record}_{key}.yaml").write_text(text)

# profile: a saved profile, and one with overrides and a launch list.
prof = build / "corpus" / "profile"
(prof / "seed_minimal.yaml").write_text('engine_version: "0.10.1"\noverrides: {}\n')
(prof / "seed_full.yaml").write_text(
    'engine_version: "0.10.1"\ngpu: H100-80GB\nfitted_on: [a, b]\n'
    "overrides:\n  cuda_context_bytes: 524288000\n  non_torch_single_rank_bytes: 209715200\n")

# hf_cache: refs/main NUL snapshot name NUL config.json NUL layout byte.
cache = build / "corpus" / "hf_cache"
config = json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                     "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                     "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 256,
                     "max_position_embeddings": 512, "torch_dtype": "bfloat16"})
for layout in range(16):
    (cache / f"seed_layout{layout}").write_bytes(
        b"abc\0abc\0" + config.encode() + b"\0" + bytes([layout]))

def dict_line(i, b):
    return "kw%d=\"%s\"\n" % (i, "".join(chr(c) if 32 <= c < 127 and c not in b'"\\' else "\\x%02x" % c
                                          for c in b))
st_words = [b'"dtype"', b'"shape"', b'"data_offsets"', b'"__metadata__"', b'"F32"', b'"BF16"',
            b'"F16"', b'"F8_E4M3"', b'"F8_E5M2"', b'"I64"', b'"U8"', b'"BOOL"', b"18446744073709551615",
            b"9223372036854775807", b"\\ud800", b"\xc3\xa9", b"\xff"]
gg_words = [b"GGUF", b"general.alignment", b"general.architecture", struct.pack("<I", 3),
            struct.pack("<I", 9), struct.pack("<Q", 2**63), struct.pack("<Q", 2**64 - 1),
            struct.pack("<Q", 256), struct.pack("<Q", 32)]
(build / "safetensors.dict").write_text("".join(dict_line(i, w) for i, w in enumerate(st_words)))
(build / "gguf.dict").write_text("".join(dict_line(i, w) for i, w in enumerate(gg_words)))
PY

# --- run -----------------------------------------------------------------------------------
status=0
for reader in "${READERS[@]}"; do
  extra=()
  if [ -f "$BUILD/$reader.dict" ]; then extra+=("-dict=$BUILD/$reader.dict"); fi
  if [ -n "${FUZZ_SECONDS:-}" ]; then extra+=("-max_total_time=$FUZZ_SECONDS"); fi
  if [ "$reader" = sglang_plan ]; then
    # Structured input read from the start; a plan replays its remedies (each a plan), so
    # RUNS alone is capped at 30 s.
    extra+=("-len_control=0")
    if [ -z "${FUZZ_SECONDS:-}" ]; then extra+=("-max_total_time=30"); fi
  fi
  if [ "$reader" = plan ]; then
    # Structured input: the whole knob vector is read from the start, so inputs may be long at
    # once; a plan runs a solve with remedies (~350 runs/s), so RUNS alone is capped at 55 s.
    extra+=("-len_control=0")
    if [ -z "${FUZZ_SECONDS:-}" ]; then extra+=("-max_total_time=55"); fi
  fi
  if [ "$reader" = hf_cache ] && [ -z "${FUZZ_SECONDS:-}" ]; then
    # Each input lays out a cache on disk (~50 runs/s): RUNS alone is capped at 55 s too.
    extra+=("-max_total_time=55")
  fi
  log="$BUILD/fuzz_$reader.log"
  echo "== fuzz_$reader: runs ${RUNS/#-1/unbounded}, seconds ${FUZZ_SECONDS:-unbounded} (log: $log)"
  set +e
  "$BUILD/tests/fuzz/fuzz_$reader" \
    -runs="$RUNS" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 \
    -artifact_prefix="$BUILD/artifacts/$reader-" "${extra[@]}" \
    "$BUILD/corpus/$reader" >"$log" 2>&1
  rc=$?
  set -e
  grep -E "^Done|stat::number_of_executed_units|stat::peak_rss_mb" "$log" || true
  if [ $rc -ne 0 ]; then
    echo "fuzz_$reader FAILED (exit $rc); crashing input in $BUILD/artifacts/:" >&2
    tail -n 40 "$log" >&2
    status=1
  fi
done
exit $status
