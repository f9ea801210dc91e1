// vLLM's startup memory accounting, per GPU rank: the engine's knobs (named as vLLM names
// them), version profiles, the non-KV terms, the KV budget and the breakdown it produces.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vramplan/hardware.hpp"
#include "vramplan/kv_cache.hpp"
#include "vramplan/model_spec.hpp"
#include "vramplan/weights.hpp"

namespace vramplan {

// vLLM releases whose memory accounting differs (vllm-memory.md section 9).
enum class EngineEra : std::uint8_t {
  V0,        // <= 0.7: V0 worker, "memory profiling results" line, no chunked prefill default
  V1Early,   // 0.8 - 0.10: V1, snapshot before NCCL init, piecewise graphs, old token formula
  V1Mid,     // 0.11 - 0.20: FULL_AND_PIECEWISE graphs captured after KV allocation
  V1Latest,  // >= 0.21: CUDA-graph estimate inside the budget, default utilization 0.92
};

const char* engine_era_name(EngineEra era) noexcept;

// Version-specific rules as data.
struct EngineProfile {
  std::string version;  // as given, e.g. "0.19.0"
  EngineEra era = EngineEra::V1Latest;
  std::int32_t from_minor = 21;  // the model_specs/engines.yaml row this profile comes from
  double default_gpu_memory_utilization = 0.92;
  bool cudagraph_in_budget = true;  // estimate subtracted from the KV budget
  bool chunked_prefill_default = true;
  bool tokens_from_concurrency = true;   // "GPU KV cache size" = int(concurrency * max_model_len)
  double sampler_bytes_per_logit = 0.0;  // fitted: peak sampler bytes per (request x vocab entry)
  std::int64_t non_torch_single_rank_bytes = 0;  // TP=1, no PP: cuBLAS/attention workspaces
  // Batch defaults: "large" GPUs have >= 70 GiB and are not A100s; `llm` is vllm.LLM(...).
  std::int64_t max_num_seqs_large_gpu = 1024;
  std::int64_t max_num_seqs_other_gpu = 256;
  std::int64_t max_num_batched_tokens_serve_large_gpu = 8192;
  std::int64_t max_num_batched_tokens_serve_other_gpu = 2048;
  std::int64_t max_num_batched_tokens_llm_large_gpu = 16384;
  std::int64_t max_num_batched_tokens_llm_other_gpu = 8192;
};

// The rows of an engines YAML document (model_specs/engines.yaml), validated: eras known,
// versions ascending, every field present with a sane value. Throws SpecError naming `file`.
std::vector<EngineProfile> parse_engine_profiles(const std::string& yaml_text,
                                                 const std::string& file);

// Parse "0.19.0", "v0.6.4.post2", "0.10.1.x"; empty -> newest profile. The profile is the
// compiled-in engines.yaml row for that version. Throws ConfigError.
EngineProfile engine_profile(const std::string& version);

// The knobs, with vLLM's names. Negative / empty = unset: the engine default applies.
struct EngineConfig {
  std::string engine_version;  // empty: newest
  double gpu_memory_utilization = -1.0;
  std::int64_t max_model_len = -1;
  std::int64_t max_num_seqs = -1;
  std::int64_t max_num_batched_tokens = -1;
  std::int32_t block_size = -1;
  std::string kv_cache_dtype = "auto";  // auto, fp8, fp8_e4m3, fp8_e5m2, bfloat16, float16
  std::string dtype = "auto";           // auto, bfloat16, float16, float32
  std::string quantization;             // empty: checkpoint's; "fp8": online fp8
  std::int32_t tensor_parallel_size = 1;
  std::int32_t pipeline_parallel_size = 1;
  bool enforce_eager = false;
  bool llm_class = false;                          // vllm.LLM(...) defaults instead of `vllm serve`
  std::int64_t cpu_offload_bytes = 0;              // --cpu-offload-gb, per GPU
  std::string safetensors_load_strategy = "lazy";  // lazy (mmap), eager, prefetch
  std::int64_t kv_offloading_bytes = 0;            // --kv-offloading-size, total over TP ranks
  std::int64_t swap_space_bytes = -1;       // V0 --swap-space per GPU (-1: 4 GiB default in V0)
  std::int64_t kv_cache_memory_bytes = -1;  // --kv-cache-memory-bytes, per GPU
  std::int32_t num_speculative_tokens = 0;
  // "mtp" (the checkpoint's own MTP layers), "eagle" / "eagle3" / "draft_model" (a separate
  // drafter: draft_model), "ngram" (no GPU memory). Empty with num_speculative_tokens > 0:
  // "mtp" when the model ships MTP layers.
  std::string speculative_method;
  std::shared_ptr<const ModelSpec> draft_model;  // the drafter's spec for eagle/draft_model
  std::int32_t max_loras = 0;                    // --max-loras with --enable-lora (0: LoRA off)
  std::int32_t max_lora_rank = 16;               // --max-lora-rank
};

// The machine: GPU as CUDA reports it, what else occupies it, and the host.
struct HardwareConfig {
  GpuSpec gpu;
  std::int32_t num_gpus = 1;                     // GPUs on the node (>= TP x PP)
  std::int64_t memory_used_by_others_bytes = 0;  // per GPU, before vLLM starts
  std::int64_t host_ram_bytes = 0;               // 0 = unknown (host check skipped)
};

// Knobs after vLLM's defaulting, the values the breakdown is computed at.
struct ResolvedConfig {
  double gpu_memory_utilization = 0.0;
  std::int64_t max_model_len = 0;
  std::int64_t max_num_seqs = 0;
  std::int64_t max_num_batched_tokens = 0;
  std::int32_t block_size = 16;
  std::int32_t kv_element_bytes = 2;
  DType served_dtype = DType::BF16;
  QuantSpec quantization;  // effective weight format
  std::int32_t tensor_parallel_size = 1;
  std::int32_t pipeline_parallel_size = 1;
  std::int32_t num_cudagraph_sizes = 0;  // capture sizes (0 with enforce_eager)
  std::int32_t max_cudagraph_capture_size = 0;
  bool enforce_eager = false;
  bool chunked_prefill = true;
};

ResolvedConfig resolve_config(const ModelSpec& spec, const HardwareConfig& hardware,
                              const EngineConfig& config, const EngineProfile& profile);

// One term of the breakdown, with how we know it.
struct Term {
  std::string name;
  std::int64_t bytes = 0;
  std::string provenance;
};

struct RankBreakdown {
  std::int32_t pipeline_rank = 0;
  std::int64_t total_memory_bytes = 0;
  std::int64_t requested_memory_bytes = 0;  // ceil(total * gpu_memory_utilization)
  std::int64_t weights_bytes = 0;
  std::int64_t activation_peak_bytes = 0;
  std::int64_t non_torch_bytes = 0;
  std::int64_t cudagraph_bytes = 0;     // graph pool (estimate where in budget)
  std::int64_t cuda_context_bytes = 0;  // outside the budget: context + NCCL init
  std::int64_t kv_cache_bytes = 0;      // "Available KV cache memory" (may be negative)
  std::int64_t kv_bytes_per_token = 0;
  std::int64_t num_blocks = 0;
  std::int64_t headroom_bytes =
      0;  // total - R - others - context: room for graphs outside the budget
  // What must still fit in the headroom after the KV cache is allocated (0.11+): graphs
  // captured outside the budget, the sampler warm-up and unusable repacked segments, less the
  // profile activations (and in-budget graph estimate) freed by then. <= 0: nothing extra.
  std::int64_t post_allocation_bytes = 0;
  KvLayout kv_layout;
  std::vector<Term> terms;
};

// What the startup will do.
enum class Outcome : std::uint8_t {
  Started,
  InsufficientKvForMaxModelLen,  // "To serve at least one request with the model's max seq len"
  NoKvMemory,         // "No available memory for the cache blocks" (reported as oom_kv_alloc)
  StartupFreeMemory,  // "Free memory on device ... less than desired"
  OomAtLoad,          // weights alone exceed the device
  HostOomKilled,      // host RAM exhausted while loading (the silent `Killed`)
  // CUDA OOM after the KV cache is allocated: graph capture or the sampler warm-up on
  // max_num_seqs dummy requests does not fit what is left of the GPU.
  OomAfterKvAlloc,
};
const char* outcome_name(Outcome outcome) noexcept;

struct HostBreakdown {
  std::int64_t process_baseline_bytes = 0;  // API server + engine core + workers
  std::int64_t loader_anonymous_bytes = 0;  // staging copies (anonymous)
  std::int64_t page_cache_bytes = 0;        // mmap'd safetensors pages (reclaimable)
  std::int64_t pinned_bytes = 0;            // pinned buffers + cpu offload
  std::int64_t input_batch_bytes = 0;       // token ids [max_num_seqs, max_model_len] per worker
  std::int64_t required_bytes = 0;          // anonymous + pinned: what must fit in RAM
  std::vector<Term> terms;
};

struct Breakdown {
  std::string model_id;
  std::string gpu_id;
  EngineProfile profile;
  ResolvedConfig config;
  std::vector<RankBreakdown> ranks;   // one per pipeline stage (TP ranks are symmetric)
  std::int64_t num_blocks = 0;        // min over ranks
  std::int64_t kv_tokens = 0;         // "GPU KV cache size: N tokens" as this version reports
  double max_concurrency = 0.0;       // "Maximum concurrency for max_model_len tokens"
  std::int64_t request_kv_bytes = 0;  // one max_model_len request, worst rank
  std::int64_t estimated_max_model_len = 0;  // largest length that fits (vLLM's estimate)
  std::int64_t startup_free_bytes = 0;       // free memory at the startup check
  HostBreakdown host;
  Outcome outcome = Outcome::Started;
  std::vector<std::string> messages;  // what vLLM would print for a failure, and warnings
};

Breakdown compute_breakdown(const ModelSpec& spec, const HardwareConfig& hardware,
                            const EngineConfig& config);

// --- The non-KV terms, one function each (bytes per rank). ---

// Peak torch allocation of the profile run: one eager forward of max_num_batched_tokens over
// min(max_num_seqs, max_num_batched_tokens) requests, the MoE kernel workspace, and (last
// pipeline stage) the sampler on fp32 logits.
std::int64_t activation_peak_bytes(const ModelSpec& spec, const ResolvedConfig& config,
                                   const EngineProfile& profile, const LayerRange& layers,
                                   bool last_stage);
// The sampler on `requests` x vocab logits (fp32 logits, probabilities, top-k/top-p sort
// buffers) plus the forward's output still alive: part of the profile peak on the last stage,
// and allocated again by the warm-up after the KV cache and the graphs.
std::int64_t sampler_peak_bytes(const ModelSpec& spec, const ResolvedConfig& config,
                                const EngineProfile& profile);
// Memory outside torch's allocator grown during the profile run (cuBLAS/attention workspaces,
// custom all-reduce buffers at TP >= 2).
std::int64_t non_torch_bytes(const ResolvedConfig& config, const EngineProfile& profile);
// CUDA-graph pool for the capture sizes; 0 with enforce_eager.
std::int64_t cudagraph_bytes(const ModelSpec& spec, const ResolvedConfig& config,
                             const LayerRange& layers);
// CUDA context and NCCL communicators: outside the budget, but must fit beside it.
std::int64_t cuda_context_bytes(const ResolvedConfig& config);
// Host RAM while loading and serving, per node.
HostBreakdown host_ram(const ModelSpec& spec, const ResolvedConfig& config,
                       const EngineProfile& profile, const EngineConfig& knobs);

}  // namespace vramplan
