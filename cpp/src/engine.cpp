#include "vramplan/engine.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>
#include <sstream>

#include "vramplan/calibration.hpp"
#include "vramplan/errors.hpp"

namespace vramplan {
namespace {

using calibration::kGiB;
using calibration::kMiB;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) noexcept { return (a + b - 1) / b; }

std::string gib_text(std::int64_t bytes) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(2);
  out << static_cast<double>(bytes) / static_cast<double>(kGiB);
  return out.str();
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Capture sizes as each era builds them (vllm-memory.md 4.2).
std::vector<std::int32_t> capture_sizes(const EngineProfile& profile, std::int64_t max_num_seqs,
                                        std::int64_t max_num_batched_tokens,
                                        std::int32_t num_speculative_tokens) {
  std::vector<std::int32_t> sizes;
  if (profile.era == EngineEra::V0) {
    const std::int64_t limit = std::min<std::int64_t>(256, max_num_seqs);
    for (std::int32_t s : {1, 2, 4}) {
      if (s <= limit) sizes.push_back(s);
    }
    for (std::int32_t s = 8; s <= limit; s += 8) sizes.push_back(s);
    return sizes;
  }
  std::int64_t max_capture =
      std::min<std::int64_t>(max_num_seqs * (1 + num_speculative_tokens) * 2, 512);
  max_capture = std::min(max_capture, max_num_batched_tokens);
  for (std::int32_t s : {1, 2, 4}) {
    if (s <= max_capture) sizes.push_back(s);
  }
  if (profile.era == EngineEra::V1Early) {
    for (std::int32_t s = 8; s <= max_capture; s += 8) sizes.push_back(s);
    return sizes;
  }
  for (std::int32_t s = 8; s <= std::min<std::int64_t>(248, max_capture); s += 8)
    sizes.push_back(s);
  for (std::int32_t s = 256; s <= max_capture; s += 16) sizes.push_back(s);
  return sizes;
}

QuantSpec effective_quantization(const ModelSpec& spec, const EngineConfig& config) {
  const std::string q = lower(config.quantization);
  if (q.empty() || q == quant_method_name(spec.quantization.method)) return spec.quantization;
  if (spec.quantization.method != QuantMethod::None) {
    // vLLM upgrades checkpoint formats to faster kernels of the same layout (awq_marlin,
    // gptq_marlin, compressed-tensors); the bytes follow the checkpoint.
    if (q.find("marlin") != std::string::npos || q == "compressed-tensors" ||
        q == "compressed_tensors" || q == "modelopt" || q == "modelopt_fp4") {
      return spec.quantization;
    }
    throw ConfigError("quantization", "'" + config.quantization + "'",
                      std::string("the checkpoint's own format (") +
                          quant_method_name(spec.quantization.method) + ")",
                      "cannot re-quantize an already quantized checkpoint");
  }
  QuantSpec online;
  online.online = true;
  if (q == "fp8") {
    online.method = QuantMethod::Fp8;
    online.bits = 8;
    online.scale_strategy = ScaleStrategy::Tensor;
  } else if (q == "bitsandbytes") {
    online.method = QuantMethod::BnbNf4;
    online.bits = 4;
  } else {
    throw ConfigError("quantization", "'" + config.quantization + "'", "fp8, bitsandbytes",
                      "unsupported online quantization for a 16-bit checkpoint");
  }
  return online;
}

DType served_dtype(const ModelSpec& spec, const std::string& dtype) {
  const std::string d = lower(dtype);
  if (d.empty() || d == "auto") {
    // vLLM serves fp32 checkpoints in bf16 under `auto`; quantized checkpoints keep fp16.
    return spec.torch_dtype == DType::F32 ? DType::BF16 : spec.torch_dtype;
  }
  if (d == "half") return DType::F16;
  const auto parsed = parse_dtype(d);
  if (!parsed || (*parsed != DType::BF16 && *parsed != DType::F16 && *parsed != DType::F32)) {
    throw ConfigError("dtype", "'" + dtype + "'", "auto, bfloat16, float16, float32",
                      "unknown model dtype");
  }
  return *parsed;
}

std::int32_t kv_element_bytes(const std::string& kv_cache_dtype, DType served) {
  const std::string k = lower(kv_cache_dtype);
  if (k.empty() || k == "auto") return dtype_info(served).block_bytes;
  if (k == "fp8" || k == "fp8_e4m3" || k == "fp8_e5m2" || k == "fp8_inc") return 1;
  if (k == "bfloat16" || k == "float16" || k == "half") return 2;
  throw ConfigError("kv_cache_dtype", "'" + kv_cache_dtype + "'",
                    "auto, fp8, fp8_e4m3, fp8_e5m2, bfloat16, float16", "unknown KV cache dtype");
}

KvCacheOptions kv_options(const ResolvedConfig& c, const LayerRange& layers,
                          std::int32_t speculative) {
  KvCacheOptions o;
  o.tensor_parallel_size = c.tensor_parallel_size;
  o.block_size = c.block_size;
  o.kv_element_bytes = c.kv_element_bytes;
  o.state_element_bytes = dtype_info(c.served_dtype).block_bytes;
  o.num_speculative_tokens = speculative;
  o.layers = layers;
  return o;
}

}  // namespace

const char* engine_era_name(EngineEra era) noexcept {
  switch (era) {
    case EngineEra::V0:
      return "v0";
    case EngineEra::V1Early:
      return "v1-early (0.8-0.10)";
    case EngineEra::V1Mid:
      return "v1 (0.11-0.20)";
    case EngineEra::V1Latest:
      return "v1 (>=0.21)";
  }
  return "?";
}

const char* outcome_name(Outcome outcome) noexcept {
  switch (outcome) {
    case Outcome::Started:
      return "started";
    case Outcome::InsufficientKvForMaxModelLen:
      return "insufficient_kv_for_max_model_len";
    case Outcome::NoKvMemory:
      return "oom_kv_alloc";  // the records' name for it
    case Outcome::StartupFreeMemory:
      return "startup_free_memory";
    case Outcome::OomAtLoad:
      return "oom_at_load";
    case Outcome::HostOomKilled:
      return "host_oom_killed";
    case Outcome::OomAfterKvAlloc:
      return "oom_kv_alloc";
  }
  return "?";
}

ResolvedConfig resolve_config(const ModelSpec& spec, const HardwareConfig& hardware,
                              const EngineConfig& config, const EngineProfile& profile) {
  ResolvedConfig r;
  auto check_positive = [](const char* field, std::int64_t value) {
    if (value == 0 || value < -1) {
      throw ConfigError(field, std::to_string(value), "a positive integer or unset",
                        "must be positive");
    }
  };
  check_positive("max_model_len", config.max_model_len);
  check_positive("max_num_seqs", config.max_num_seqs);
  check_positive("max_num_batched_tokens", config.max_num_batched_tokens);
  if (config.tensor_parallel_size < 1) {
    throw ConfigError("tensor_parallel_size", std::to_string(config.tensor_parallel_size), ">= 1",
                      "must be at least 1");
  }
  if (config.pipeline_parallel_size < 1 || config.pipeline_parallel_size > spec.num_hidden_layers) {
    throw ConfigError("pipeline_parallel_size", std::to_string(config.pipeline_parallel_size),
                      "1 .. num_hidden_layers", "out of range");
  }
  if (spec.num_attention_heads % config.tensor_parallel_size != 0) {
    throw ConfigError(
        "tensor_parallel_size", std::to_string(config.tensor_parallel_size),
        "a divisor of num_attention_heads (" + std::to_string(spec.num_attention_heads) + ")",
        "attention heads do not split evenly");
  }
  if (config.gpu_memory_utilization != -1.0 &&
      !(config.gpu_memory_utilization > 0.0 && config.gpu_memory_utilization <= 1.0)) {
    throw ConfigError("gpu_memory_utilization", std::to_string(config.gpu_memory_utilization),
                      "(0, 1]", "out of range");
  }
  const std::int64_t gpus_needed =
      std::int64_t{config.tensor_parallel_size} * config.pipeline_parallel_size;
  if (gpus_needed > hardware.num_gpus) {
    throw ConfigError("tensor_parallel_size", std::to_string(config.tensor_parallel_size),
                      "TP x PP <= the " + std::to_string(hardware.num_gpus) + " GPUs given",
                      "the launch needs " + std::to_string(gpus_needed) + " GPUs");
  }
  r.tensor_parallel_size = config.tensor_parallel_size;
  r.pipeline_parallel_size = config.pipeline_parallel_size;
  r.gpu_memory_utilization = config.gpu_memory_utilization > 0
                                 ? config.gpu_memory_utilization
                                 : profile.default_gpu_memory_utilization;
  r.served_dtype = served_dtype(spec, config.dtype);
  r.kv_element_bytes = kv_element_bytes(config.kv_cache_dtype, r.served_dtype);
  if (config.max_loras < 0) {
    throw ConfigError("max_loras", std::to_string(config.max_loras), ">= 0", "negative LoRA slots");
  }
  if (config.max_loras > 0) {
    // The ranks vLLM's LoRA kernels accept.
    static constexpr std::int32_t kLoraRanks[] = {1, 8, 16, 32, 64, 128, 256, 320, 512};
    if (std::find(std::begin(kLoraRanks), std::end(kLoraRanks), config.max_lora_rank) ==
        std::end(kLoraRanks)) {
      throw ConfigError("max_lora_rank", std::to_string(config.max_lora_rank),
                        "1, 8, 16, 32, 64, 128, 256, 320 or 512", "rank vLLM does not support");
    }
  }
  r.quantization = effective_quantization(spec, config);
  if (r.quantization.method == QuantMethod::Mxfp4) {
    // MXFP4 MoE backend by architecture: Blackwell's TRT-LLM kernels round H and I to 256;
    // Ampere/Hopper run Marlin, which rounds H to 256 and I to 128 (gpt-oss-120b 65.97 GiB,
    // gpt-oss-20b 13.64 GiB measured on H100).
    const bool blackwell = hardware.gpu.compute_capability >= 10.0;
    r.quantization.expert_hidden_multiple = 256;
    r.quantization.expert_intermediate_multiple = blackwell ? 256 : 128;
  }
  if (config.max_model_len > spec.max_position_embeddings) {
    // vLLM refuses unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (then quality is not guaranteed).
    throw ConfigError("max_model_len", std::to_string(config.max_model_len),
                      "<= " + std::to_string(spec.max_position_embeddings) +
                          " (the model's max_position_embeddings)",
                      "longer than the model supports");
  }
  r.max_model_len = config.max_model_len > 0 ? config.max_model_len : spec.max_position_embeddings;
  // Block size: 16, except MLA backends (FlashMLA 64 on Hopper, CUTLASS MLA 128 on Blackwell).
  r.block_size = 16;
  if (spec.has_mla && profile.era != EngineEra::V0) {
    r.block_size = hardware.gpu.compute_capability >= 10.0 ? 128 : 64;
  }
  if (config.block_size > 0) r.block_size = config.block_size;

  // Batch defaults (EngineArgs.get_batch_defaults): big cards (>= 70 GiB, not A100) vs others.
  const bool big_gpu =
      hardware.gpu.total_memory_bytes >= 70 * kGiB &&
      lower(hardware.gpu.id + " " + hardware.gpu.name).find("a100") == std::string::npos;
  const std::int64_t default_seqs =
      big_gpu ? profile.max_num_seqs_large_gpu : profile.max_num_seqs_other_gpu;
  const std::int64_t default_tokens =
      config.llm_class ? (big_gpu ? profile.max_num_batched_tokens_llm_large_gpu
                                  : profile.max_num_batched_tokens_llm_other_gpu)
                       : (big_gpu ? profile.max_num_batched_tokens_serve_large_gpu
                                  : profile.max_num_batched_tokens_serve_other_gpu);
  r.chunked_prefill = profile.chunked_prefill_default;
  r.max_num_seqs = config.max_num_seqs > 0 ? config.max_num_seqs : default_seqs;
  if (config.max_num_batched_tokens > 0) {
    r.max_num_batched_tokens = config.max_num_batched_tokens;
  } else {
    std::int64_t tokens = default_tokens;
    if (!r.chunked_prefill) tokens = std::max(tokens, r.max_model_len);
    r.max_num_batched_tokens = std::min(r.max_num_seqs * r.max_model_len, tokens);
  }
  if (config.max_num_seqs <= 0) r.max_num_seqs = std::min(r.max_num_seqs, r.max_num_batched_tokens);
  if (!r.chunked_prefill && r.max_num_batched_tokens < r.max_model_len) {
    throw ConfigError("max_num_batched_tokens", std::to_string(r.max_num_batched_tokens),
                      ">= max_model_len (" + std::to_string(r.max_model_len) + ")",
                      "without chunked prefill a whole prompt must fit in one batch");
  }
  r.enforce_eager = config.enforce_eager;
  if (!r.enforce_eager) {
    const auto sizes = capture_sizes(profile, r.max_num_seqs, r.max_num_batched_tokens,
                                     config.num_speculative_tokens);
    r.num_cudagraph_sizes = static_cast<std::int32_t>(sizes.size());
    r.max_cudagraph_capture_size = sizes.empty() ? 0 : sizes.back();
  }
  return r;
}

std::int64_t activation_peak_bytes(const ModelSpec& spec, const ResolvedConfig& c,
                                   const EngineProfile& profile, const LayerRange& layers,
                                   bool last_stage) {
  const std::int64_t tokens = c.max_num_batched_tokens;
  const std::int64_t act_bytes = dtype_info(c.served_dtype).block_bytes;
  const std::int64_t tp = c.tensor_parallel_size;
  const std::int64_t gate_factor = spec.gated_mlp ? 2 : 1;
  // Widest per-token MLP intermediate of a dense layer on this stage (gate_up out + act out).
  std::int64_t dense_width = 0;
  std::int64_t moe_width = 0;
  for (std::int32_t i = layers.begin; i < layers.end; ++i) {
    const LayerSpec& layer = spec.layers[static_cast<std::size_t>(i)];
    if (!layer.mlp) continue;
    if (layer.moe) {
      const std::int64_t inter = ceil_div(spec.moe.moe_intermediate_size, tp);
      // fused-MoE workspaces: [T, topk, 2I] + [T*topk, I] + [T, topk, h].
      moe_width = spec.moe.num_experts_per_tok * ((gate_factor + 1) * inter + spec.hidden_size);
    } else {
      dense_width = std::max(dense_width, (gate_factor + 1) * ceil_div(spec.intermediate_size, tp));
    }
  }
  const std::int64_t hidden_buffers = static_cast<std::int64_t>(
      calibration::kForwardHiddenBuffers * static_cast<double>(spec.hidden_size));
  const std::int64_t forward = tokens * act_bytes * (dense_width + hidden_buffers);
  // MXFP4 experts run through kernels that do not use the fused-MoE workspace.
  const bool moe_workspace = moe_width > 0 && c.quantization.method != QuantMethod::Mxfp4;
  const std::int64_t moe = moe_workspace ? tokens * act_bytes * moe_width : 0;
  const std::int64_t sampler = last_stage ? sampler_peak_bytes(spec, c, profile) : 0;
  return std::max(forward, sampler) + moe;
}

std::int64_t sampler_peak_bytes(const ModelSpec& spec, const ResolvedConfig& c,
                                const EngineProfile& profile) {
  const std::int64_t requests = std::min(c.max_num_seqs, c.max_num_batched_tokens);
  const std::int64_t act_bytes = dtype_info(c.served_dtype).block_bytes;
  const double per_logit = profile.sampler_bytes_per_logit + static_cast<double>(act_bytes);
  return static_cast<std::int64_t>(per_logit * static_cast<double>(requests) *
                                   static_cast<double>(padded_vocab_size(spec.vocab_size))) +
         c.max_num_batched_tokens * spec.hidden_size * act_bytes;
}

std::int64_t non_torch_bytes(const ResolvedConfig& c, const EngineProfile& profile) {
  // Custom all-reduce and NCCL buffers exist at TP >= 2 in every era (V0 dev-004: 3.58 GiB).
  if (c.tensor_parallel_size > 1) return calibration::kNonTorchTensorParallel;
  if (c.pipeline_parallel_size > 1 && profile.era != EngineEra::V0) {
    return calibration::kNonTorchPipelineOnly;
  }
  return profile.non_torch_single_rank_bytes;  // per version: model_specs/engines.yaml
}

std::int64_t cudagraph_bytes(const ModelSpec& spec, const ResolvedConfig& c,
                             const LayerRange& layers) {
  if (c.enforce_eager || c.num_cudagraph_sizes == 0) return 0;
  double per_size = 0.0;
  const double dense_piece = calibration::kCudagraphPieceBytesFixed +
                             calibration::kCudagraphPieceBytesPerHidden *
                                 static_cast<double>(spec.hidden_size) / c.tensor_parallel_size;
  for (std::int32_t i = layers.begin; i < layers.end; ++i) {
    const LayerSpec& layer = spec.layers[static_cast<std::size_t>(i)];
    per_size += dense_piece;
    if (layer.moe) per_size += calibration::kCudagraphPieceBytesMoe;
    if (layer.moe && c.quantization.method == QuantMethod::Mxfp4) {
      per_size += calibration::kCudagraphPieceBytesMxfp4Moe;
    }
    if (layer.attention == AttentionKind::Mla) per_size += calibration::kCudagraphPieceBytesMla;
  }
  return calibration::kCudagraphBase +
         static_cast<std::int64_t>(per_size * static_cast<double>(c.num_cudagraph_sizes));
}

std::int64_t cuda_context_bytes(const ResolvedConfig& c) {
  const bool distributed = c.tensor_parallel_size * c.pipeline_parallel_size > 1;
  return calibration::kCudaContext + (distributed ? calibration::kNcclCommunicators : 0);
}

namespace {

std::int64_t next_power_of_two(std::int64_t bytes) noexcept {
  std::int64_t p = 1;
  while (p < bytes && p < (std::int64_t{1} << 62)) p <<= 1;
  return p;
}

}  // namespace

HostBreakdown host_ram(const ModelSpec& spec, const ResolvedConfig& c, const EngineProfile& profile,
                       const EngineConfig& knobs) {
  HostBreakdown h;
  const std::int64_t workers =
      static_cast<std::int64_t>(c.tensor_parallel_size) * c.pipeline_parallel_size;
  h.process_baseline_bytes = calibration::kHostApiServer + calibration::kHostEngineCore +
                             workers * calibration::kHostWorker;
  // Every rank reads every shard and keeps its slice. Memory-mapped (lazy) loading holds about
  // one tensor per worker in anonymous memory, eager loading a whole shard, prefetch only
  // warms the page cache. The rest is file-backed page cache, shared and reclaimable.
  std::int64_t largest_tensor = 0;
  std::int64_t checkpoint_bytes = 0;
  for (const auto& g : model_tensor_groups(spec)) {
    const std::int64_t bytes = tensor_group_bytes(g, spec.quantization, spec.torch_dtype, 1, true);
    checkpoint_bytes += bytes;
    largest_tensor = std::max(largest_tensor, bytes / std::max<std::int64_t>(1, g.count));
  }
  h.page_cache_bytes = spec.checkpoint_bytes > 0 ? spec.checkpoint_bytes : checkpoint_bytes;
  const std::string strategy = lower(knobs.safetensors_load_strategy);
  std::string staging_note = "formula: largest tensor per worker (memory-mapped safetensors)";
  if (strategy == "eager") {
    // save_pretrained's default shard cap is 5 GB; a smaller checkpoint is one file.
    const std::int64_t shard = std::min(h.page_cache_bytes, calibration::kHostShardBytes);
    h.loader_anonymous_bytes = workers * std::max(shard, largest_tensor);
    staging_note = "formula: one whole shard per worker (eager load, 5 GB shards)";
  } else if (strategy == "lazy" || strategy == "prefetch" || strategy.empty()) {
    h.loader_anonymous_bytes = workers * largest_tensor;
  } else {
    throw ConfigError("safetensors_load_strategy", "'" + knobs.safetensors_load_strategy + "'",
                      "lazy, eager, prefetch", "unknown loader strategy");
  }
  h.input_batch_bytes = workers * 5 * c.max_num_seqs * c.max_model_len;
  // Pinned memory: torch's host allocator rounds each pin_memory block up to a power of two.
  // cpu_offload pins many tensors (measured 1.15-1.9x, 1.9 planned); one KV offload buffer
  // per worker rounds exactly; V0 pinned its swap space per GPU (default 4 GiB).
  const std::int64_t offload_pinned = static_cast<std::int64_t>(
      calibration::kPinnedOverhead * static_cast<double>(knobs.cpu_offload_bytes * workers));
  const std::int64_t kv_offload_pinned =
      knobs.kv_offloading_bytes > 0
          ? c.tensor_parallel_size *
                next_power_of_two(knobs.kv_offloading_bytes / c.tensor_parallel_size)
          : 0;
  std::int64_t swap = 0;
  if (profile.era == EngineEra::V0) {
    swap = workers *
           (knobs.swap_space_bytes >= 0 ? knobs.swap_space_bytes : calibration::kHostV0SwapSpace);
  }
  h.pinned_bytes = offload_pinned + kv_offload_pinned + swap;
  h.required_bytes =
      h.process_baseline_bytes + h.loader_anonymous_bytes + h.input_batch_bytes + h.pinned_bytes;
  h.terms = {
      {"process_baseline", h.process_baseline_bytes,
       "calibrated: API server 1.5 GiB + engine core 1.5 GiB + 3 GiB per worker (host-ram.md 6)"},
      {"loader_staging", h.loader_anonymous_bytes, staging_note},
      {"input_batch", h.input_batch_bytes,
       "formula: 5 B x max_num_seqs x max_model_len per worker"},
      {"pinned", h.pinned_bytes,
       "formula: cpu_offload x workers x 1.9 + KV offload per worker rounded to a power of two"
       " + V0 swap space"},
      {"page_cache", h.page_cache_bytes,
       "formula: checkpoint bytes, file-backed and reclaimable (not required)"},
  };
  return h;
}

namespace {

// The drafter a speculative-decoding launch adds, resolved from the knobs.
struct Drafter {
  bool mtp = false;                  // the target's own MTP layers
  const ModelSpec* model = nullptr;  // a separate draft model (EAGLE heads, small LM)
  std::vector<LayerSpec> kv_layers;  // attention layers the drafter adds to the KV pool
};

Drafter resolve_drafter(const ModelSpec& spec, const EngineConfig& config) {
  Drafter d;
  if (config.num_speculative_tokens < 0) {
    throw ConfigError("num_speculative_tokens", std::to_string(config.num_speculative_tokens),
                      ">= 0", "negative speculative tokens");
  }
  std::string method = lower(config.speculative_method);
  if (config.num_speculative_tokens == 0) {
    if (!method.empty()) {
      throw ConfigError("num_speculative_tokens", "0", ">= 1",
                        "speculative_method '" + method + "' needs num_speculative_tokens");
    }
    return d;
  }
  if (method.empty()) {
    if (spec.num_nextn_predict_layers == 0) {
      throw ConfigError("speculative_method", "unset", "mtp, eagle, eagle3, draft_model, ngram",
                        spec.id + " ships no MTP layers: name the speculative method");
    }
    method = "mtp";
  }
  if (method == "mtp" || method == "deepseek_mtp") {
    if (spec.num_nextn_predict_layers == 0) {
      throw ConfigError("speculative_method", "'mtp'", "eagle, eagle3, draft_model, ngram",
                        spec.id + " ships no MTP layers");
    }
    d.mtp = true;
    d.kv_layers.assign(static_cast<std::size_t>(spec.num_nextn_predict_layers), spec.layers.back());
  } else if (method == "eagle" || method == "eagle3" || method == "draft_model") {
    if (!config.draft_model) {
      throw ConfigError("speculative_model", "unset", "a model id or path",
                        "speculative_method '" + method + "' needs the drafter's model");
    }
    d.model = config.draft_model.get();
    for (const LayerSpec& layer : d.model->layers) {
      if (layer.attention != AttentionKind::None) d.kv_layers.push_back(layer);
    }
  } else if (method != "ngram" && method != "suffix") {
    throw ConfigError("speculative_method", "'" + config.speculative_method + "'",
                      "mtp, eagle, eagle3, draft_model, ngram", "unknown speculative method");
  }
  return d;
}

// The spec whose layers the last stage's KV pool holds: the target's plus the drafter's.
ModelSpec with_drafter_layers(const ModelSpec& spec, const Drafter& drafter) {
  ModelSpec merged = spec;
  merged.layers.insert(merged.layers.end(), drafter.kv_layers.begin(), drafter.kv_layers.end());
  merged.num_hidden_layers = static_cast<std::int32_t>(merged.layers.size());
  return merged;
}

}  // namespace

Breakdown compute_breakdown(const ModelSpec& spec, const HardwareConfig& hardware,
                            const EngineConfig& config) {
  Breakdown b;
  const Drafter drafter = resolve_drafter(spec, config);
  b.model_id = spec.id;
  b.gpu_id = hardware.gpu.id;
  b.profile = engine_profile(config.engine_version);
  b.config = resolve_config(spec, hardware, config, b.profile);
  const ResolvedConfig& c = b.config;
  if (hardware.gpu.total_memory_bytes <= 0) {
    throw ConfigError("gpu.total_memory_bytes", std::to_string(hardware.gpu.total_memory_bytes),
                      "> 0", "GPU total memory must be positive");
  }
  const std::int64_t total = hardware.gpu.total_memory_bytes;
  const std::int64_t requested =
      static_cast<std::int64_t>(std::ceil(static_cast<double>(total) * c.gpu_memory_utilization));
  const std::int64_t context = cuda_context_bytes(c);
  b.startup_free_bytes = total - hardware.memory_used_by_others_bytes - context;

  b.num_blocks = -1;
  bool any_rank_empty = false;
  for (std::int32_t stage = 0; stage < c.pipeline_parallel_size; ++stage) {
    RankBreakdown rank;
    rank.pipeline_rank = stage;
    const bool last_stage = stage == c.pipeline_parallel_size - 1;
    const LayerRange layers =
        pipeline_layer_range(spec.num_hidden_layers, c.pipeline_parallel_size, stage);
    const RankPlacement placement{c.tensor_parallel_size, c.pipeline_parallel_size, stage};
    const WeightBytes weights =
        weight_bytes_per_rank(spec, c.quantization, c.served_dtype, placement, drafter.mtp);
    // A separate drafter lives on the last stage, sharded with the target's TP.
    const RankPlacement draft_placement{c.tensor_parallel_size, 1, 0};
    const std::int64_t draft_weights =
        drafter.model != nullptr && last_stage
            ? weight_bytes_per_rank(*drafter.model, drafter.model->quantization, c.served_dtype,
                                    draft_placement)
                  .total()
            : 0;
    rank.total_memory_bytes = total;
    rank.requested_memory_bytes = requested;
    const std::int64_t lora = lora_bytes_per_rank(spec, config.max_loras, config.max_lora_rank,
                                                  c.served_dtype, placement);
    rank.weights_bytes = std::max<std::int64_t>(0, weights.total() - config.cpu_offload_bytes) +
                         lora + draft_weights;
    rank.activation_peak_bytes = activation_peak_bytes(spec, c, b.profile, layers, last_stage);
    rank.non_torch_bytes = non_torch_bytes(c, b.profile);
    rank.cudagraph_bytes = cudagraph_bytes(spec, c, layers);
    if (last_stage && drafter.model != nullptr) {
      // The drafter's dummy forward follows the target's in the profile run; its graphs are
      // captured too (pieces only: the pool base is shared).
      const LayerRange draft_layers{0, drafter.model->num_hidden_layers};
      rank.activation_peak_bytes =
          std::max(rank.activation_peak_bytes,
                   activation_peak_bytes(*drafter.model, c, b.profile, draft_layers, false));
      if (rank.cudagraph_bytes > 0) {
        rank.cudagraph_bytes +=
            cudagraph_bytes(*drafter.model, c, draft_layers) - calibration::kCudagraphBase;
      }
    }
    rank.cuda_context_bytes = context;
    const std::int64_t graph_in_budget = b.profile.cudagraph_in_budget ? rank.cudagraph_bytes : 0;
    rank.kv_cache_bytes = config.kv_cache_memory_bytes > 0
                              ? config.kv_cache_memory_bytes
                              : requested - rank.weights_bytes - rank.activation_peak_bytes -
                                    rank.non_torch_bytes - graph_in_budget;
    if (last_stage && !drafter.kv_layers.empty()) {
      // The drafter's attention layers share the KV pool (same page size, one more group
      // member each).
      const ModelSpec merged = with_drafter_layers(spec, drafter);
      const LayerRange kv_layers{layers.begin, merged.num_hidden_layers};
      rank.kv_layout = kv_layout(merged, kv_options(c, kv_layers, config.num_speculative_tokens));
    } else {
      rank.kv_layout = kv_layout(spec, kv_options(c, layers, config.num_speculative_tokens));
    }
    rank.kv_bytes_per_token = rank.kv_layout.bytes_per_token;
    rank.num_blocks = kv_num_blocks(rank.kv_layout, rank.kv_cache_bytes);
    rank.headroom_bytes = total - hardware.memory_used_by_others_bytes - context - requested;
    if (b.profile.era == EngineEra::V1Mid || b.profile.era == EngineEra::V1Latest) {
      // After the KV cache is allocated the profile activations (and the graph estimate the
      // budget reserved) are free again; graph capture outside the budget and then the
      // sampler warm-up on max_num_seqs dummy requests need their room, and weights repacked
      // at load leave segments the allocator cannot reuse for those large blocks.
      const std::int64_t graphs = c.enforce_eager ? 0 : rank.cudagraph_bytes;
      const std::int64_t freed = rank.activation_peak_bytes + graph_in_budget;
      const std::int64_t unusable =
          c.quantization.method == QuantMethod::Mxfp4 ? calibration::kRepackedWeightsUnreusable : 0;
      const std::int64_t sampler = last_stage ? sampler_peak_bytes(spec, c, b.profile) : 0;
      rank.post_allocation_bytes = graphs + sampler + unusable - freed;
    }
    any_rank_empty |= rank.kv_layout.groups.empty();
    const std::string weights_note =
        std::string("exact: tensors of the spec in ") +
        (c.quantization.method == QuantMethod::None ? dtype_info(c.served_dtype).name.data()
                                                    : quant_method_name(c.quantization.method)) +
        " + rotary cos/sin cache" +
        (lora > 0 ? " + " + std::to_string(config.max_loras) + " LoRA slots of rank " +
                        std::to_string(config.max_lora_rank) + " (" + gib_text(lora) + " GiB)"
                  : std::string());
    rank.terms = {
        {"weights", rank.weights_bytes, weights_note},
        {"activation_peak", rank.activation_peak_bytes,
         "formula + calibrated: forward of max_num_batched_tokens, fused-MoE workspace, sampler "
         "on requests x vocab logits"},
        {"non_torch", rank.non_torch_bytes,
         "calibrated: cuBLAS/attention workspaces; custom all-reduce + NCCL buffers at TP>=2"},
        {"cudagraph", rank.cudagraph_bytes,
         std::string("calibrated: base + per captured layer piece x ") +
             std::to_string(c.num_cudagraph_sizes) + " sizes" +
             (b.profile.cudagraph_in_budget
                  ? " (inside the budget)"
                  : " (captured after KV allocation, outside the budget)")},
        {"kv_cache", rank.kv_cache_bytes,
         "budget: requested - weights - activation - non_torch" +
             std::string(b.profile.cudagraph_in_budget ? " - cudagraph" : "")},
        {"cuda_context", context, "calibrated: CUDA context (+ NCCL), outside the budget"},
    };
    if (b.num_blocks < 0 || rank.num_blocks < b.num_blocks) b.num_blocks = rank.num_blocks;
    b.ranks.push_back(std::move(rank));
  }
  b.num_blocks = std::max<std::int64_t>(0, b.num_blocks);

  // Reported tokens and concurrency (worst rank's layout; ranks share the block count).
  std::int64_t min_kv = b.ranks.front().kv_cache_bytes;
  const KvLayout* worst = &b.ranks.front().kv_layout;
  std::int64_t worst_request = 0;
  for (const auto& rank : b.ranks) {
    min_kv = std::min(min_kv, rank.kv_cache_bytes);
    const std::int64_t need =
        kv_request_bytes(rank.kv_layout, c.max_model_len, c.max_num_batched_tokens);
    if (need - rank.kv_cache_bytes >= worst_request - min_kv) {
      worst_request = need;
      worst = &rank.kv_layout;
    }
  }
  b.request_kv_bytes = worst_request;
  const std::int64_t blocks_per_request =
      kv_blocks_per_request(*worst, c.max_model_len, c.max_num_batched_tokens);
  if (blocks_per_request > 0) {
    b.max_concurrency = static_cast<double>(b.num_blocks) / static_cast<double>(blocks_per_request);
  }
  if (b.profile.tokens_from_concurrency) {
    b.kv_tokens =
        static_cast<std::int64_t>(b.max_concurrency * static_cast<double>(c.max_model_len));
  } else {
    const std::int64_t groups =
        std::max<std::int64_t>(1, static_cast<std::int64_t>(worst->groups.size()));
    b.kv_tokens = (b.num_blocks / groups) * worst->block_size;
  }
  b.host = host_ram(spec, c, b.profile, config);

  // Startup verdict, in the order vLLM meets the checks.
  const RankBreakdown& first = b.ranks.front();
  std::int64_t max_weights = 0;
  for (const auto& rank : b.ranks) max_weights = std::max(max_weights, rank.weights_bytes);
  if (b.profile.era != EngineEra::V0 && b.profile.era != EngineEra::V1Early &&
      b.startup_free_bytes < requested) {
    b.outcome = Outcome::StartupFreeMemory;
    b.messages.push_back(
        "Free memory on device (" + gib_text(b.startup_free_bytes) + "/" + gib_text(total) +
        " GiB) on startup is less than desired GPU memory "
        "utilization (" +
        std::to_string(c.gpu_memory_utilization) + ", " + gib_text(requested) + " GiB).");
    return b;
  }
  if (hardware.host_ram_bytes > 0 && b.host.required_bytes > hardware.host_ram_bytes) {
    b.outcome = Outcome::HostOomKilled;
    b.messages.push_back("Host RAM exhausted while loading: " + gib_text(b.host.required_bytes) +
                         " GiB of anonymous and pinned memory needed, " +
                         gib_text(hardware.host_ram_bytes) +
                         " GiB on the host. The kernel OOM killer ends the process (`Killed`, "
                         "visible in dmesg).");
    return b;
  }
  if (max_weights > b.startup_free_bytes) {
    b.outcome = Outcome::OomAtLoad;
    b.messages.push_back("CUDA out of memory while loading weights: " + gib_text(max_weights) +
                         " GiB per rank, " + gib_text(b.startup_free_bytes) + " GiB free.");
    return b;
  }
  if (min_kv <= 0 && !any_rank_empty) {
    b.outcome = Outcome::NoKvMemory;
    b.messages.push_back("No available memory for the cache blocks (" + gib_text(min_kv) +
                         " GiB). Try increasing `gpu_memory_utilization`.");
    return b;
  }
  b.estimated_max_model_len =
      kv_max_model_len_that_fits(*worst, min_kv, c.max_model_len, c.max_num_batched_tokens);
  if (worst_request > min_kv) {
    b.outcome = Outcome::InsufficientKvForMaxModelLen;
    std::string msg = "To serve at least one request with the model's max seq len (" +
                      std::to_string(c.max_model_len) + "), (" + gib_text(worst_request) +
                      " GiB KV cache is needed, which is larger than the available KV cache "
                      "memory (" +
                      gib_text(min_kv) + " GiB).";
    if (b.estimated_max_model_len > 0) {
      msg += " Based on the available memory, the estimated maximum model length is " +
             std::to_string(b.estimated_max_model_len) + ".";
    }
    b.messages.push_back(msg);
    return b;
  }
  const RankBreakdown* tightest = &first;
  for (const auto& rank : b.ranks) {
    if (rank.post_allocation_bytes - rank.headroom_bytes >
        tightest->post_allocation_bytes - tightest->headroom_bytes) {
      tightest = &rank;
    }
  }
  if (tightest->post_allocation_bytes > tightest->headroom_bytes) {
    const std::int64_t graphs = c.enforce_eager ? 0 : tightest->cudagraph_bytes;
    const std::int64_t freed = tightest->activation_peak_bytes +
                               (b.profile.cudagraph_in_budget ? tightest->cudagraph_bytes : 0);
    b.outcome = Outcome::OomAfterKvAlloc;
    if (graphs > tightest->headroom_bytes + freed) {
      b.messages.push_back("CUDA out of memory capturing CUDA graphs: " + gib_text(graphs) +
                           " GiB needed after the KV cache allocation.");
    } else {
      b.messages.push_back("CUDA out of memory occurred when warming up sampler with " +
                           std::to_string(std::min(c.max_num_seqs, c.max_num_batched_tokens)) +
                           " dummy requests: " +
                           gib_text(tightest->post_allocation_bytes - tightest->headroom_bytes) +
                           " GiB short after the KV cache and graphs. Lower max_num_seqs or "
                           "gpu_memory_utilization.");
    }
  }
  return b;
}

}  // namespace vramplan
