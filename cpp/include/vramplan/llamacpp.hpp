// llama.cpp (llama-server) as a serving engine: the bytes its loader and KV cache allocate per
// device, from a GGUF file's tensor table and llama.cpp's own flags, and a solver for the
// largest -ngl (and smallest --n-cpu-moe) that fits a GPU budget. Model and KV buffers follow
// llama.cpp's allocator rule for rule (src/llama-model.cpp load_tensors, src/llama-kv-cache.cpp,
// src/llama-context.cpp, ggml-cuda's alloc size); the compute buffer is a stated approximation.
// Rules and their sources: model_specs/llamacpp.yaml and docs/llamacpp.md.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "vramplan/dtype.hpp"
#include "vramplan/tensor_headers.hpp"

namespace vramplan {

struct ModelSpec;

enum class LlamacppFlashAttn { Off, On, Auto };

// -ngl values that are not a count (llama.cpp's common_params: -1 auto, -2 all).
inline constexpr std::int64_t kLlamacppLayersAuto = -1;
inline constexpr std::int64_t kLlamacppLayersAll = -2;

// A llama-server launch: the flags with a memory effect, at llama.cpp's defaults.
struct LlamacppLaunch {
  std::int64_t ctx_size = 0;  // -c; 0: the trained context (n_ctx_train)
  DType cache_type_k = DType::F16;
  DType cache_type_v = DType::F16;
  LlamacppFlashAttn flash_attn = LlamacppFlashAttn::Auto;  // auto: on (CUDA, CPU)
  std::int64_t n_gpu_layers = kLlamacppLayersAll;          // -ngl; auto is what the solver answers
  std::int64_t parallel = 1;                               // -np: sequences (server slots)
  bool kv_unified = false;     // --kv-unified: one KV stream for all slots
  std::int64_t n_cpu_moe = 0;  // -ncmoe: first N layers' experts on CPU
  bool no_mmap = false;
  bool mlock = false;
  bool swa_full = false;
  bool no_kv_offload = false;  // -nkvo: KV of GPU layers stays in host memory
  std::int64_t batch = 2048;   // -b
  std::int64_t ubatch = 512;   // -ub
  // -ts with -sm layer: each GPU's share of the offloaded layers (any scale); empty: one GPU.
  std::vector<double> tensor_split;
};

// One tensor of the GGUF as the loader places it.
struct LlamacppTensor {
  std::string name;
  int layer = -1;          // blk.N; -1 for the input and output tensors
  bool is_output = false;  // output / output_norm: placed with the output layer
  bool per_layer = false;  // rope_freqs: one copy in every layer's buffer type
  bool is_expert = false;  // matches --n-cpu-moe's pattern (ffn_{up,down,gate,gate_up}_{,ch}exps)
  std::int64_t bytes = 0;  // ggml_nbytes: the file's bytes
  std::int64_t cuda_bytes = 0;   // ggml-cuda's alloc size, padded to its 128-byte alignment
  std::int64_t host_bytes = 0;   // a host buffer's alloc size (32-byte alignment)
  std::int64_t file_offset = 0;  // absolute, for the mmap span
};

// What llama.cpp reads from a GGUF for memory: hyper-parameters and the tensor list.
struct LlamacppModel {
  std::string file;
  std::string architecture;
  std::int64_t n_layer = 0;        // block_count: every layer, MTP/NextN ones included
  std::int64_t n_layer_nextn = 0;  // nextn_predict_layers: the last ones, with no KV cache
  std::int64_t n_ctx_train = 0;
  std::int64_t n_embd = 0;
  std::int64_t n_head = 0;
  std::int64_t n_ff = 0;
  std::int64_t n_vocab = 0;
  std::int64_t n_expert = 0;
  std::int64_t head_dim_k = 0;
  std::int64_t head_dim_v = 0;
  std::vector<std::int64_t> n_head_kv;  // per layer; 0: the layer has no KV cache
  std::int64_t n_swa = 0;               // sliding window; 0: none
  std::vector<bool> swa_layer;          // per layer
  bool tied_output = false;             // no output.weight: token_embd serves as the output
  // Hybrid attention + recurrent models (Mamba2 / gated delta-net layers): per layer whether it
  // holds recurrent state instead of K/V, and that state's f32 values per sequence
  // (llama_hparams::n_embd_r, the conv state; n_embd_s, the SSM state).
  std::vector<bool> recurrent_layer;
  std::int64_t n_embd_r = 0;
  std::int64_t n_embd_s = 0;
  std::vector<LlamacppTensor> tensors;
  // Non-empty when the tensor list is not a file's but built from a database entry: how it
  // departs from the file (one GGUF type per role). Every plan of the model carries it as a note,
  // and its model bytes are then approximations.
  std::string approximation;
};

// Reads the hyper-parameters and the tensor list llama.cpp would. SpecError naming the file and
// key for a missing key; ConfigError for what this planner does not model yet (pure recurrent
// and RWKV-style state, MLA, KV shared across layers), never a silent answer.
LlamacppModel llamacpp_model_from_gguf(const GgufHeader& header);

// The model llama.cpp would load for a database GGUF entry (quantization.method gguf): the
// architecture's hyper-parameters from the spec's shapes, and the tensors llama.cpp's converter
// writes, under llama.cpp's names, each in its role's type from quantization.gguf_types (norms
// F32). The llama architecture only (model_type llama or mistral: dense, full attention, gated
// MLP, no biases); ConfigError naming any other model_type or feature. `approximation` says
// that one type per role stands in for the file's per-layer mix.
LlamacppModel llamacpp_model_from_spec(const ModelSpec& spec);

// One GPU's buffers under -sm layer.
struct LlamacppGpu {
  std::int64_t layers = 0;  // repeating layers it holds
  bool output = false;      // it holds the output layer
  std::int64_t model_bytes = 0;
  std::int64_t kv_bytes = 0;
  std::int64_t rs_bytes = 0;
  std::int64_t compute_bytes = 0;  // approximation
  std::int64_t total_bytes() const { return model_bytes + kv_bytes + rs_bytes + compute_bytes; }
};

// The bytes one launch allocates, per device kind (the GPUs summed; CPU = host memory), and
// per GPU in `gpus`.
struct LlamacppMemory {
  // Resolved as llama.cpp resolves them.
  std::int64_t n_ctx = 0;      // after padding to 256 (and to whole streams)
  std::int64_t n_ctx_seq = 0;  // the cache size of one stream
  std::int64_t n_stream = 1;   // 1 when unified, else -np
  std::int64_t kv_size_swa = 0;
  std::int64_t n_ubatch = 0;
  bool flash_attn = false;
  std::int64_t n_gpu_layers = 0;   // resolved -ngl (0 .. n_layer + 1)
  std::int64_t layers_on_gpu = 0;  // repeating layers on the GPU
  bool output_on_gpu = false;
  std::int64_t n_cpu_moe = 0;
  // Exact (llama.cpp's own figures).
  std::int64_t gpu_model_bytes = 0;    // "CUDA0 model buffer size"
  std::int64_t host_model_bytes = 0;   // CPU_Mapped span (mmap) or CUDA_Host/CPU buffer (no-mmap)
  std::int64_t host_weight_bytes = 0;  // the CPU-resident tensors themselves
  std::int64_t gpu_kv_bytes = 0;       // "CUDA0 KV buffer size"
  std::int64_t host_kv_bytes = 0;      // "CPU KV buffer size"
  std::int64_t gpu_rs_bytes = 0;       // "CUDA0 RS buffer size": recurrent state
  std::int64_t host_rs_bytes = 0;      // "CPU RS buffer size"
  // Approximations (not the graph allocator's figure).
  std::int64_t gpu_compute_bytes = 0;
  std::int64_t host_compute_bytes = 0;
  std::int64_t host_output_bytes = 0;  // logits buffer
  std::int64_t gpu_total_bytes() const {
    return gpu_model_bytes + gpu_kv_bytes + gpu_rs_bytes + gpu_compute_bytes;
  }
  std::vector<LlamacppGpu> gpus;  // one per -ts entry (one without -ts)
  // The fullest GPU's bytes: what a per-GPU budget has to hold.
  std::int64_t max_gpu_total_bytes() const {
    std::int64_t most = 0;
    for (const LlamacppGpu& g : gpus) most = std::max(most, g.total_bytes());
    return most;
  }
  // Host RAM the process holds: anonymous buffers, plus with --mlock the mapped weights; with
  // mmap the mapped weights otherwise sit in the page cache (host_weight_bytes of it hot).
  std::int64_t host_ram_bytes = 0;
  std::vector<std::string> notes;
};

LlamacppMemory llamacpp_memory(const LlamacppModel& model, const LlamacppLaunch& launch);

// KV bytes of one layer's K or V tensor on a device: ggml_row_size(type, width x cells x
// streams), with ggml-cuda's quantized-row padding when `cuda`, aligned as the buffer aligns.
std::int64_t llamacpp_kv_tensor_bytes(DType type, std::int64_t width, std::int64_t cells,
                                      std::int64_t streams, bool cuda);

// The largest -ngl (and, for MoE with every layer offloaded, the smallest --n-cpu-moe) whose
// fullest GPU fits `gpu_budget_bytes` (a budget per GPU); the launch's other flags are kept. An
// -ngl or --n-cpu-moe the launch pins is kept and only checked.
struct LlamacppFit {
  bool fits = false;
  LlamacppLaunch launch;  // with the chosen -ngl / --n-cpu-moe
  LlamacppMemory memory;
  std::string verdict;
};
LlamacppFit llamacpp_solve(const LlamacppModel& model, const LlamacppLaunch& launch,
                           std::int64_t gpu_budget_bytes, bool pinned_ngl, bool pinned_n_cpu_moe);

// The largest -c (a multiple of 256 per stream, at most the trained context per stream) whose GPU
// bytes fit `gpu_budget_bytes` with the launch's -ngl, -np and cache types; 0 when not even 256 per
// stream fits.
std::int64_t llamacpp_max_context(const LlamacppModel& model, const LlamacppLaunch& launch,
                                  std::int64_t gpu_budget_bytes);

// llama.cpp's KV cache types (common/arg.cpp kv_cache_types), by llama.cpp's names.
DType llamacpp_cache_type(const std::string& name);
// A type as llama.cpp spells it (ggml_type_name: lower case, "q8_0").
std::string llamacpp_type_name(DType type);

// llama.cpp's defaults a caller needs beside the launch (model_specs/llamacpp.yaml).
struct LlamacppDefaults {
  std::string source;                     // the llama.cpp release the rules were read from
  std::vector<std::string> cache_types;   // -ctk / -ctv values
  std::int64_t fit_target_bytes = 0;      // --fit-target: free memory left per device
  std::int64_t server_auto_parallel = 0;  // llama-server's -np auto (with a unified KV cache)
};
const LlamacppDefaults& llamacpp_defaults();

}  // namespace vramplan
