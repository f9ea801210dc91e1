// Compiling a launch: everything that depends only on the model, the GPU, parallelism,
// formats, speculation, LoRA, offload and the engine version, worked out once per stage.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "launch_internal.hpp"
#include "vramplan/calibration.hpp"
#include "vramplan/compiled.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/knobs.hpp"
#include "vramplan/saturating.hpp"
#include "vramplan/text_scan.hpp"

namespace vramplan {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

namespace {

using calibration::kMiB;

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

DType dtype_served(const ModelSpec& spec, const std::string& dtype) {
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

// Bytes per KV element for --kv-cache-dtype; 0 for "auto" (the served dtype's width).
std::int32_t kv_element_bytes(const std::string& kv_cache_dtype) {
  // Matched without a lowered copy: every plan reads it twice.
  const auto is = [&](std::string_view name) {
    return text::equals_ignoring_case(kv_cache_dtype, name);
  };
  if (kv_cache_dtype.empty() || is("auto")) return 0;
  if (is("fp8") || is("fp8_e4m3") || is("fp8_e5m2") || is("fp8_inc")) return 1;
  if (is("bfloat16") || is("float16") || is("half")) return 2;
  throw ConfigError("kv_cache_dtype", "'" + kv_cache_dtype + "'",
                    "auto, fp8, fp8_e4m3, fp8_e5m2, bfloat16, float16", "unknown KV cache dtype");
}

}  // namespace

namespace {

// How many times max_position_embeddings positions MRotaryEmbedding caches, for this release.
std::int64_t mrope_cache_positions_factor(MropeKind kind, const EngineProfile& profile) {
  switch (kind) {
    case MropeKind::None:
      return 1;
    case MropeKind::Standard:
      return profile.mrope_cache_positions_factor_standard;
    case MropeKind::Qwen3Vl:
      return profile.mrope_cache_positions_factor_qwen3_vl;
  }
  return 1;
}

// Whether the launch runs on Model Runner V2 (VllmConfig.use_v2_model_runner): the environment
// variable decides when set; else the release's default set of models, less the features MRV2
// does not support.
bool uses_model_runner_v2(const ModelSpec& spec, const EngineProfile& profile,
                          const EngineConfig& config, const QuantSpec& quant) {
  const std::string forced = config.vllm_use_v2_model_runner;
  if (forced == "1") return true;
  if (forced == "0") return false;
  const bool hybrid = spec.has_mamba || spec.has_linear_attention;
  const bool attention_free =
      std::none_of(spec.layers.begin(), spec.layers.end(), [](const LayerSpec& layer) {
        return layer.attention != AttentionKind::None && layer.attention != AttentionKind::Mamba &&
               layer.attention != AttentionKind::LinearAttention;
      });
  const auto& whitelist = profile.model_runner_v2_moe_model_types;
  const bool whitelisted =
      std::find(whitelist.begin(), whitelist.end(), lower(spec.model_type)) != whitelist.end();
  bool routed = false;
  switch (profile.model_runner_v2) {
    case ModelRunnerV2Routing::None:
      return false;
    case ModelRunnerV2Routing::Qwen3Dense:
      routed = lower(spec.model_type) == "qwen3" && quant.method == QuantMethod::None;
      break;
    case ModelRunnerV2Routing::Dense:
      routed = whitelisted || (!hybrid && !attention_free && !spec.has_moe);
      break;
    case ModelRunnerV2Routing::All:
      routed = true;
      break;
  }
  const auto& unsupported = profile.model_runner_v2_unsupported_speculative_methods;
  const std::string method = lower(config.speculative_method);
  if (config.num_speculative_tokens > 0 &&
      std::find(unsupported.begin(), unsupported.end(), method) != unsupported.end()) {
    return false;
  }
  return routed;
}

// Whether the profile's top-k/top-p runs torch's sort: not on FlashInfer's kernels (the row's
// sampler_full_sort_below_rows says where the release's own kernels take over).
bool sorts_top_k_top_p(const EngineConfig& config, bool model_runner_v2) {
  return config.vllm_use_flashinfer_sampler != "1" || model_runner_v2;
}

// The sampler's temporaries per (request x vocab entry) beside the served-dtype logits. The V1
// runner samples with FlashInfer's top-k/top-p kernels when VLLM_USE_FLASHINFER_SAMPLER=1 (and
// on 0.8-0.12 wherever FlashInfer is installed, which the log's "Using FlashInfer for top-p &
// top-k sampling" shows); Model Runner V2 has its own sampler and does not read the variable.
double sampler_bytes_per_logit(const EngineProfile& profile, const EngineConfig& config,
                               bool model_runner_v2) {
  if (sorts_top_k_top_p(config, model_runner_v2)) return profile.sampler_bytes_per_logit;
  if (profile.flashinfer_sampler_bytes_per_logit <= 0.0) {
    throw ConfigError("vllm_use_flashinfer_sampler", "1", "auto or 0 at vLLM " + profile.version,
                      "the V0 engine's FlashInfer sampling is not modelled");
  }
  return profile.flashinfer_sampler_bytes_per_logit;
}

// Bytes per element of a --mamba-cache-dtype / --mamba-ssm-cache-dtype value ("auto" ->
// `auto_bytes`); the knob registry has checked the name.
std::int32_t state_width(const std::string& dtype, std::int64_t auto_bytes) noexcept {
  if (dtype == "auto") return static_cast<std::int32_t>(auto_bytes);
  const std::optional<DType> parsed = parse_dtype(dtype);
  return parsed ? static_cast<std::int32_t>(dtype_info(*parsed).block_bytes)
                : static_cast<std::int32_t>(auto_bytes);
}

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

LaunchKnobs launch_knobs(const EngineConfig& config) {
  LaunchKnobs k;
  k.gpu_memory_utilization = config.gpu_memory_utilization;
  k.max_model_len = config.max_model_len;
  k.max_num_seqs = config.max_num_seqs;
  k.max_num_batched_tokens = config.max_num_batched_tokens;
  k.block_size = config.block_size;
  k.kv_element_bytes = kv_element_bytes(config.kv_cache_dtype);
  return k;
}

std::int64_t deepep_low_latency_rdma_bytes(const DeepEpLowLatencyLayout& layout,
                                           std::int64_t tokens) noexcept {
  if (layout.bytes_per_token == 0) return 0;
  const std::int64_t one_copy =
      saturating_add(saturating_mul(tokens, layout.bytes_per_token), layout.signal_bytes);
  return saturating_add(saturating_mul(2, one_copy), 128) / 128 * 128;
}

namespace {

// vLLM's environment defaults for the expert-parallel exchange (vllm/envs.py).
// VLLM_MOE_DP_CHUNK_SIZE; from 0.20 the same 256 is SchedulerConfig's batched-DP default.
constexpr std::int64_t kMoeDpChunkTokens = 256;
constexpr std::int64_t kDeepEpNvlBytes = std::int64_t{1024} << 20;  // VLLM_DEEPEP_BUFFER_SIZE_MB
// DeepEP's Buffer also cudaMallocs a fixed workspace (NUM_WORKSPACE_BYTES,
// csrc/kernels/configs.cuh).
constexpr std::int64_t kDeepEpWorkspaceBytes = std::int64_t{32} << 20;

// DeepEP's get_low_latency_rdma_size_hint (csrc/config.hpp, LowLatencyLayout): two (odd/even)
// send, receive and signalling buffers. A dispatch message is an int4 header plus the larger of
// a bf16 token and an fp8 token with one float scale per 128 channels; a combine message is a
// bf16 token plus a bf16x2 min/max per 128 channels. The send and receive buffers grow with the
// tokens per rank; the hint rounds past the next 128 bytes (NUM_BUFFER_ALIGNMENT_BYTES); the
// rank count does not enter the layout.
DeepEpLowLatencyLayout deepep_low_latency_layout(std::int64_t hidden, std::int64_t num_experts) {
  const std::int64_t scales = hidden / 128;
  const std::int64_t dispatch_message = 16 + std::max(hidden * 2, hidden + scales * 4);
  const std::int64_t combine_message = scales * 4 + hidden * 2;
  DeepEpLowLatencyLayout layout;
  layout.bytes_per_token = std::max(dispatch_message, num_experts * combine_message) +
                           num_experts * std::max(dispatch_message, combine_message);
  layout.signal_bytes = ceil_div(num_experts * 4, 128) * 128;
  return layout;
}

// pplx-kernels' AllToAllIntraNode (csrc/all_to_all/intranode.cpp), the one-node case vLLM
// builds: one buffer per peer rank, each the larger of the dispatch and the combine layout.
// Combine carries fp32 tokens (hidden x 4 B, 16-aligned), which never fall below a dispatched
// bf16 or fp8 token with its scales and 4 B of metadata, so it sets the size: an int4 header,
// the local experts' uint32 counts (16-aligned) and tokens x local experts x token bytes.
// Beside them: peer pointer arrays, per-token receive counts, per-expert counters and six
// uint32 token-tracking arrays of local experts x tokens x ranks.
std::int64_t pplx_intranode_bytes(std::int64_t tokens, std::int64_t hidden,
                                  std::int64_t num_experts, std::int64_t ranks) {
  const std::int64_t local_experts = ceil_div(num_experts, ranks);
  const std::int64_t buffer = 16 + ceil_div(local_experts * 4, 16) * 16 +
                              tokens * local_experts * (ceil_div(hidden * 4, 16) * 16);
  const std::int64_t pointers = 3 * ranks * 8;  // send, receive and count pointer arrays
  const std::int64_t counters = tokens * 4 + num_experts * 4 + local_experts * ranks * 4 + 4;
  const std::int64_t tracking = 6 * local_experts * tokens * ranks * 4;
  return ranks * buffer + pointers + counters + tracking;
}

// How the MoE layers of a data-parallel launch exchange tokens (vLLM FusedMoE.forward_impl,
// all2all_utils.maybe_make_prepare_finalize, device_communicators/all2all.py).
struct All2AllExchange {
  bool applies = false;           // an MoE model under DP
  bool gathers = false;           // naive dispatch: all DP ranks' tokens through each MoE layer
  std::int64_t buffer_bytes = 0;  // DeepEP buffers made after load (non-torch), fixed part
  // DeepEP low latency's RDMA buffer when it is sized for max_num_batched_tokens (0.20+), and
  // vLLM's batched-DP defaults apply (EngineArgs: max_num_batched_tokens 256 unless set).
  DeepEpLowLatencyLayout batch_sized_rdma;
  bool batched_dp = false;
};

All2AllExchange all2all_exchange(const ModelSpec& spec, const EngineConfig& config,
                                 const EngineProfile& profile) {
  All2AllExchange x;
  // MoE layers exchange tokens only across DP ranks (do_naive_dispatch_combine and
  // use_all2all_kernels both need dp_size > 1).
  if (!spec.has_moe || config.data_parallel_size <= 1) return x;
  x.applies = true;
  const std::string backend = config.all2all_backend.empty() ? profile.all2all_backend_default
                                                             : lower(config.all2all_backend);
  if (backend == "naive" || backend == "allgather_reducescatter") {
    x.gathers = true;
    return x;
  }
  const bool deepep = backend == "deepep_high_throughput" || backend == "deepep_low_latency";
  if (deepep && config.enable_expert_parallel) {
    // One Buffer per process (cached by its arguments): the NVLink buffer (no RDMA buffer on
    // one node in high-throughput mode) and the workspace; low latency adds the RDMA buffer
    // sized for VLLM_MOE_DP_CHUNK_SIZE tokens per rank over the global experts.
    x.buffer_bytes = kDeepEpNvlBytes + kDeepEpWorkspaceBytes;
    if (backend == "deepep_low_latency") {
      // Its experts are the physical ones: EPLB's redundant experts included. Its tokens per
      // rank: VLLM_MOE_DP_CHUNK_SIZE, then (0.20+, FusedMoEConfig.max_num_tokens) the
      // scheduler's max_num_batched_tokens, known per evaluated point.
      const DeepEpLowLatencyLayout layout = deepep_low_latency_layout(
          spec.hidden_size, std::int64_t{spec.moe.num_experts} + config.num_redundant_experts);
      x.batched_dp = profile.moe_exchange_tokens_from_batch;
      if (x.batched_dp) {
        x.batch_sized_rdma = layout;
      } else {
        x.buffer_bytes += deepep_low_latency_rdma_bytes(layout, kMoeDpChunkTokens);
      }
    }
    return x;
  }
  if (backend == "pplx" && config.enable_expert_parallel) {
    // vLLM passes max_num_tokens = VLLM_MOE_DP_CHUNK_SIZE and the EP group (TP x DP ranks).
    x.buffer_bytes =
        pplx_intranode_bytes(kMoeDpChunkTokens, spec.hidden_size, spec.moe.num_experts,
                             std::int64_t{config.tensor_parallel_size} * config.data_parallel_size);
    return x;
  }
  const bool kernels = deepep || backend == "pplx";
  throw ConfigError("all2all_backend", "'" + backend + "'",
                    "naive, allgather_reducescatter, or deepep_high_throughput / "
                    "deepep_low_latency / pplx with enable_expert_parallel",
                    kernels ? "these kernels run only with enable_expert_parallel: this launch "
                              "is not modelled"
                            : "the memory this backend allocates is not modelled");
}

// vLLM's own refusals: redundant experts only with EPLB, EPLB only under expert parallelism,
// and the physical experts must split evenly over the EP ranks (fused_moe/layer.py,
// config/parallel.py).
void check_eplb(const ModelSpec& spec, const EngineConfig& config, std::int32_t ep) {
  if (config.num_redundant_experts > 0 && !config.enable_eplb) {
    throw ConfigError("num_redundant_experts", std::to_string(config.num_redundant_experts),
                      "0 without enable_eplb", "redundant experts are only supported with EPLB");
  }
  if (!config.enable_eplb) return;
  if (!spec.has_moe || !config.enable_expert_parallel) {
    throw ConfigError("enable_eplb", "true",
                      "enable_eplb with enable_expert_parallel on an MoE model",
                      spec.has_moe ? "EPLB needs expert parallelism (--enable-expert-parallel)"
                                   : "the model has no routed experts");
  }
  const std::int64_t physical = std::int64_t{spec.moe.num_experts} + config.num_redundant_experts;
  if (physical % ep != 0) {
    throw ConfigError("num_redundant_experts", std::to_string(config.num_redundant_experts),
                      "a count that makes experts + redundant a multiple of the " +
                          std::to_string(ep) + " EP ranks",
                      std::to_string(spec.moe.num_experts) + " experts + " +
                          std::to_string(config.num_redundant_experts) +
                          " redundant do not split evenly over " + std::to_string(ep) +
                          " EP ranks");
  }
}

bool stage_has_moe(const ModelSpec& spec, const LayerRange& layers) {
  for (std::int32_t i = layers.begin; i < layers.end; ++i) {
    const LayerSpec& layer = spec.layers[static_cast<std::size_t>(i)];
    if (layer.mlp && layer.moe) return true;
  }
  return false;
}

// CUDA-graph pool bytes per capture size: one piece per captured layer, more for
// routed-expert, MXFP4-expert and MLA layers.
double cudagraph_bytes_per_size(const ModelSpec& spec, const EngineProfile& profile,
                                const QuantSpec& quant, const LayerRange& layers) {
  const double mib = static_cast<double>(calibration::kMiB);
  double per_size = 0.0;
  for (std::int32_t i = layers.begin; i < layers.end; ++i) {
    const LayerSpec& layer = spec.layers[static_cast<std::size_t>(i)];
    per_size += profile.cudagraph_piece_mib * mib;
    if (layer.moe) per_size += profile.cudagraph_piece_mib_moe * mib;
    if (layer.moe && quant.method == QuantMethod::Mxfp4) {
      per_size += profile.cudagraph_piece_mib_mxfp4_moe * mib;
    }
    if (layer.attention == AttentionKind::Mla) per_size += profile.cudagraph_piece_mib_mla * mib;
  }
  return per_size;
}

// FlashAttention 3's split-KV accumulators, per token of the largest FULL graph: out
// [splits, heads, tokens, head_size_v] and log-sum-exp [splits, heads, tokens], fp32, made once
// by the first FULL capture and reused by the smaller ones. 0 where no FULL graph runs FA3:
// FA3 is Hopper's (compute capability 9.x); fp32 and prefix-LM multimodal models take the
// Triton backend, chunked local attention has no FULL graphs (Llama-4 Scout captures PIECEWISE
// only, dev-029), and gpt-oss (attention sinks) logs FLASH_ATTN yet its first FULL capture takes
// 6-8 MiB (dev-032/033/034), so sink models get none.
std::int64_t attention_split_bytes_per_token(const ModelSpec& spec, const EngineProfile& profile,
                                             const GpuSpec& gpu, DType served, std::int32_t tp,
                                             const LayerRange& layers) {
  if (profile.full_cudagraph_attention_splits <= 0 || gpu.vendor != "nvidia" ||
      gpu.compute_capability < 9.0 || gpu.compute_capability >= 10.0 || served == DType::F32 ||
      spec.attention_sinks) {
    return 0;
  }
  if (profile.mm_prefix_lm_model_types.contains(spec.model_type)) return 0;
  std::int32_t head_size_v = 0;
  std::int32_t query_heads = spec.num_attention_heads;  // the most a layer has (Laguna's differ)
  for (std::int32_t i = layers.begin; i < layers.end; ++i) {
    const LayerSpec& layer = spec.layers[static_cast<std::size_t>(i)];
    switch (layer.attention) {
      case AttentionKind::ChunkedLocal:
        return 0;
      case AttentionKind::Mla:  // decode attends over the latent
        head_size_v = std::max(head_size_v, spec.mla.kv_lora_rank);
        break;
      case AttentionKind::Full:
      case AttentionKind::SlidingWindow:
        head_size_v = std::max(head_size_v, layer.head_dim_v);
        query_heads = std::max(query_heads, layer.num_attention_heads);
        break;
      default:
        break;
    }
  }
  if (head_size_v == 0) return 0;
  const std::int64_t heads = query_heads / tp;
  return std::int64_t{profile.full_cudagraph_attention_splits} * heads * (head_size_v + 1) * 4;
}

// The CUDA context this process holds before vLLM's init snapshot. It follows the GPU's
// resident threads (SMs x the architecture's most threads per SM): the driver reserves local
// memory for every thread that can be resident, so an H100 (132 x 2048) holds about seven
// times a T4's (40 x 1024). GPUs of another vendor, an unlisted architecture or an unknown SM
// count keep the reference GPU's figure.
std::int64_t gpu_cuda_context_bytes(const EngineProfile& profile, const GpuSpec& gpu) {
  if (gpu.vendor != "nvidia" || gpu.num_sms <= 0) return profile.cuda_context_bytes;
  for (std::int32_t i = 0; i < profile.max_resident_threads_per_sm_entries; ++i) {
    const ResidentThreadsPerSm& arch =
        profile.max_resident_threads_per_sm[static_cast<std::size_t>(i)];
    if (std::abs(arch.compute_capability - gpu.compute_capability) < 0.05) {
      const double threads = static_cast<double>(gpu.num_sms) * arch.threads;
      return static_cast<std::int64_t>(
          std::llround(static_cast<double>(profile.cuda_context_bytes) * threads /
                       static_cast<double>(profile.cuda_context_reference_threads)));
    }
  }
  return profile.cuda_context_bytes;
}

// The rules a launch plans with: the configured profile, else the release's row, or the V0 row
// where the release falls back to V0 on this GPU (with a note saying so).
EngineProfile launch_rules(const EngineConfig& c, const GpuSpec& gpu,
                           std::vector<std::string>& notes) {
  if (c.profile) return *c.profile;
  EngineProfile requested = engine_profile(c.engine_version);
  if (!runs_v0_fallback(requested, gpu)) return requested;
  char capability[16];
  std::snprintf(capability, sizeof capability, "%.1f", gpu.compute_capability);
  notes.push_back("vLLM " + requested.version + " runs the V0 engine on " + gpu.id +
                  " (compute capability " + capability +
                  " < 8.0: \"Compute Capability < 8.0 is not supported by the V1 "
                  "Engine. Falling back to V0.\"); planned with the V0 rules");
  return v0_fallback_profile(requested);
}

// What the spec assumed (defaults filled, a generic mapping) or leaves out, as launch notes.
void note_model_assumptions(const ModelSpec& s, std::vector<std::string>& notes) {
  if (!s.config_defaults.empty()) {
    std::string keys;
    for (const std::string& d : s.config_defaults) keys += (keys.empty() ? "" : ", ") + d;
    notes.push_back(
        "config.json omits keys that vLLM fills from the transformers config class's defaults; "
        "planned with them: " +
        keys);
  }
  if (!s.generic_assumptions.empty()) {
    std::string assumed;
    for (const std::string& a : s.generic_assumptions) assumed += (assumed.empty() ? "" : "; ") + a;
    notes.push_back("generic: model_type " + s.model_type + " is not mapped; assumed " + assumed +
                    "; weights " +
                    (s.checkpoint_bytes > 0
                         ? "exact from the checkpoint's tensor headers"
                         : "from these standard fields (no tensor headers read)"));
  }
  if (s.mla.index_head_dim > 0) {
    // vllm/models/deepseek_v32/nvidia/model.py allocates it in the model's __init__, sized by a
    // knob the plan varies after the weights are fixed.
    notes.push_back(
        "DeepSeek sparse attention: the top-k index buffer vLLM allocates while loading "
        "(max_num_batched_tokens x index_topk int32: 64 MiB at 8192 tokens and index_topk "
        "2048) is not counted");
  }
}

// The parallel layout must fit the model and the GPUs given, and the hardware figures must be
// physical; throws ConfigError naming the knob.
void validate_launch_shape(const ModelSpec& s, const EngineConfig& c,
                           const HardwareConfig& hardware) {
  if (c.pipeline_parallel_size > s.num_hidden_layers) {
    throw ConfigError("pipeline_parallel_size", std::to_string(c.pipeline_parallel_size),
                      "1 .. num_hidden_layers (" + std::to_string(s.num_hidden_layers) + ")",
                      "more stages than layers");
  }
  if (const auto unsplit = tensor_parallel_split_problem(s, c.tensor_parallel_size)) {
    throw ConfigError(
        "tensor_parallel_size", std::to_string(c.tensor_parallel_size),
        "a divisor of " + unsplit->field + " (" + std::to_string(unsplit->value) + ")",
        unsplit->why);
  }
  const std::int64_t gpus_needed =
      std::int64_t{c.tensor_parallel_size} * c.pipeline_parallel_size * c.data_parallel_size;
  if (gpus_needed > hardware.num_gpus) {
    throw ConfigError("tensor_parallel_size", std::to_string(c.tensor_parallel_size),
                      "TP x PP x DP <= the " + std::to_string(hardware.num_gpus) + " GPUs given",
                      "the launch needs " + std::to_string(gpus_needed) + " GPUs");
  }
  const std::int64_t total = hardware.gpu.total_memory_bytes;
  if (total <= 0) {
    throw ConfigError("gpu.total_memory_bytes", std::to_string(total), "> 0",
                      "GPU total memory must be positive");
  }
  if (hardware.memory_used_by_others_bytes < 0 || hardware.memory_used_by_others_bytes >= total) {
    throw ConfigError("memory_used_by_others_bytes",
                      std::to_string(hardware.memory_used_by_others_bytes),
                      "0 .. the GPU's total (" + std::to_string(total) + ")", "out of range");
  }
  if (hardware.host_ram_bytes < 0) {
    throw ConfigError("host_ram_bytes", std::to_string(hardware.host_ram_bytes),
                      ">= 0 (0: unknown)", "negative host RAM");
  }
}

// A checkpoint format the release can no longer load is vLLM's error at startup.
void check_release_loads(const QuantSpec& quantization, const EngineProfile& profile) {
  const QuantMethod m = quantization.method;
  const char* removed = nullptr;
  if (m == QuantMethod::Gguf && !profile.loads_gguf) removed = "GGUF (removed in 0.24.0)";
  if ((m == QuantMethod::BnbNf4 || m == QuantMethod::BnbInt8) && !profile.loads_bitsandbytes) {
    removed = "bitsandbytes (removed in 0.28.0)";
  }
  if (removed) {
    throw ConfigError("quantization", quant_method_name(m),
                      "a release that loads " + std::string(removed),
                      "vLLM " + profile.version + " has no loader for this checkpoint's format");
  }
  if (m == QuantMethod::Gptq && quantization.desc_act && quantization.group_size != -1 &&
      !profile.gptq_group_act_order) {
    throw ConfigError("quantization.desc_act",
                      "true (group_size " + std::to_string(quantization.group_size) + ")",
                      "desc_act false, group_size -1, or vLLM 0.32 or older",
                      "vLLM " + profile.version +
                          " refuses GPTQ group activation ordering (\"no longer supported\")");
  }
}

// Block size: 16 (`fallback`), except where an MLA backend forces its own
// (vllm/platforms/cuda.py): CUTLASS MLA 128 on data-centre Blackwell (10.x), FlashMLA 64 on
// Hopper (9.x, the only capability FlashMLA's dense kernel supports). Ampere, Ada and consumer
// Blackwell (12.x) fall back to Triton MLA, which keeps 16; so does ROCm without AITER.
std::int32_t mla_default_block_size(const ModelSpec& s, const EngineProfile& profile,
                                    const GpuSpec& gpu, std::int32_t fallback) {
  if (s.has_mla && s.mla.latent_kv_cache && profile.mla_backend_block_size &&
      gpu.vendor == "nvidia") {
    const double cc = gpu.compute_capability;
    if (cc >= 10.0 && cc < 11.0) return 128;
    if (cc >= 9.0 && cc < 10.0) return 64;
  }
  return fallback;
}

// V0's long-context chunked prefill threshold for this launch (0: never). V0's exclusions
// (EngineArgs.create_engine_config): multimodal models, a sliding window, speculative decoding,
// LoRA, and on 0.7 ROCm.
std::int64_t long_context_chunked_prefill_threshold(const ModelSpec& s, const EngineConfig& c,
                                                    const EngineProfile& profile,
                                                    const GpuSpec& gpu) {
  const bool sliding_window = std::any_of(
      s.layers.begin(), s.layers.end(),
      [](const LayerSpec& layer) { return layer.attention == AttentionKind::SlidingWindow; });
  const bool excluded = s.vision.num_parameters > 0 || sliding_window ||
                        c.num_speculative_tokens > 0 || c.max_loras > 0 ||
                        (gpu.vendor == "amd" && !profile.long_context_chunked_prefill_rocm);
  return excluded ? 0 : profile.long_context_chunked_prefill_above;
}

// The capture ladder this model and GPU get: a model type with its own ladder uses it, and
// data-centre Blackwell raises the ceiling where the row says so.
void fit_capture_ladder(EngineProfile& profile, const ModelSpec& s, const GpuSpec& gpu) {
  if (profile.model_capture_model_types.contains(s.model_type)) {
    profile.capture_ladder = profile.model_capture_ladder;
    profile.capture_ladder_segments = profile.model_capture_ladder_segments;
    profile.capture_max_size =
        profile.capture_ladder[static_cast<std::size_t>(profile.capture_ladder_segments - 1)].end;
    profile.capture_bounded_by_max_num_seqs = false;
  }
  const double capability = gpu.compute_capability;
  if (profile.capture_max_size_datacenter_blackwell > 0 && gpu.vendor == "nvidia" &&
      capability >= 10.0 && capability < 11.0) {
    // is_device_capability_family(100): the default capture ceiling is 1024 (0.28+).
    profile.capture_max_size = profile.capture_max_size_datacenter_blackwell;
    // The last ladder run (256.. step 16) continues up to the raised ceiling.
    CaptureSegment& last =
        profile.capture_ladder[static_cast<std::size_t>(profile.capture_ladder_segments - 1)];
    last.end = std::max(last.end, profile.capture_max_size);
  }
}

// The sampler's peak model: bytes per logit at this launch's sampling path.
SamplerModel sampler_model(const ModelSpec& s, const EngineProfile& profile, const EngineConfig& c,
                           bool model_runner_v2, std::int64_t act_bytes) {
  SamplerModel sampler;
  sampler.bytes_per_logit =
      sampler_bytes_per_logit(profile, c, model_runner_v2) + static_cast<double>(act_bytes);
  if (sorts_top_k_top_p(c, model_runner_v2)) {
    sampler.full_sort_below_rows = profile.sampler_full_sort_below_rows;
    sampler.full_sort_bytes_per_logit =
        profile.sampler_full_sort_bytes_per_logit + static_cast<double>(act_bytes);
  }
  sampler.padded_vocab = static_cast<double>(padded_vocab_size(s.vocab_size));
  sampler.bytes_per_batched_token = s.hidden_size * act_bytes;
  return sampler;
}

// What every pipeline stage's rank is compiled from: the model as configured and as loaded,
// the drafter, the served types and the parallel layout.
struct RankInputs {
  const ModelSpec& spec;
  const ModelSpec& loaded;  // the weights loaded (no tower where the encoder is skipped)
  const ModelSpec* merged;  // the last stage's KV pool holds the drafter's layers (or null)
  const Drafter& drafter;
  const EngineProfile& profile;
  const EngineConfig& config;
  const GpuSpec& gpu;
  const QuantSpec& quantization;
  DType served_dtype;
  std::int64_t act_bytes;
  std::int32_t tp;
  std::int32_t pp;
  std::int32_t dp;
  std::int32_t ep;
  const All2AllExchange& exchange;
  std::int64_t non_torch;
  const EncoderProfileModel& encoder;
};

// The last stage's KV pool also holds the drafter's attention layers (same page size, one more
// group member each); they are grouped with the target's on every stage.
KvGeometry rank_kv_geometry(const RankInputs& in, const LayerRange& layers, bool last_stage) {
  const EngineConfig& c = in.config;
  KvCacheOptions kv;
  kv.tensor_parallel_size = in.tp;
  kv.state_element_bytes = state_width(c.mamba_cache_dtype, in.act_bytes);
  kv.ssm_state_element_bytes = state_width(c.mamba_ssm_cache_dtype, 0);
  kv.num_speculative_tokens = c.num_speculative_tokens;
  kv.group_size_close_ratio = in.profile.kv_group_size_close_ratio;
  if (in.merged != nullptr) {
    kv.layers = last_stage ? LayerRange{layers.begin, in.merged->num_hidden_layers} : layers;
    return kv_geometry(*in.merged, kv);
  }
  kv.layers = layers;
  return kv_geometry(in.spec, kv);
}

// The drafter's dummy forward follows the target's in the profile run on the last stage; its
// graphs are captured too (pieces only: the pool base is shared).
void add_draft_forward(const RankInputs& in, CompiledRank& rank) {
  const ModelSpec& draft = *in.drafter.model;
  const LayerRange draft_layers{0, draft.num_hidden_layers};
  rank.draft_activation = activation_model(draft, in.quantization, in.act_bytes, in.tp, in.tp,
                                           draft_layers, false, in.profile.forward_hidden_buffers);
  rank.draft_cudagraph_bytes_per_size =
      cudagraph_bytes_per_size(draft, in.profile, in.quantization, draft_layers);
  // The drafter's attention reuses the same freed accumulators: the wider one counts.
  rank.attention_split_bytes_per_token =
      std::max(rank.attention_split_bytes_per_token,
               attention_split_bytes_per_token(draft, in.profile, in.gpu, in.served_dtype, in.tp,
                                               draft_layers));
}

// EPLB's state, made inside load_model (so in "Model loading took"; vLLM 0.33
// distributed/eplb/eplb_state.py EplbState.add_model): the int32 load window [window_size 1000,
// MoE layers, physical experts] and expert_buffer, an empty_like of one MoE layer's local
// expert weights.
std::int64_t eplb_state_bytes(const RankInputs& in, const RankPlacement& placement,
                              const LayerRange& layers) {
  if (!in.config.enable_eplb) return 0;
  constexpr std::int64_t kWindowSize = 1000;  // EPLBConfig.window_size
  std::int64_t moe_layers = 0;
  std::int32_t first_moe_layer = -1;
  for (std::int32_t i = layers.begin; i < layers.end; ++i) {
    const LayerSpec& layer = in.spec.layers[static_cast<std::size_t>(i)];
    if (!layer.mlp || !layer.moe) continue;
    ++moe_layers;
    if (first_moe_layer < 0) first_moe_layer = i;
  }
  if (moe_layers == 0) return 0;
  const std::int64_t physical_experts =
      std::int64_t{in.spec.moe.num_experts} + in.config.num_redundant_experts;
  std::int64_t expert_buffer = 0;
  for (const TensorGroup& g : model_tensor_groups(in.loaded)) {
    if (g.layer != first_moe_layer) continue;
    if (g.role != TensorRole::ExpertGateUp && g.role != TensorRole::ExpertDown) continue;
    expert_buffer += tensor_group_bytes_on_rank(g, in.quantization, in.served_dtype, placement);
  }
  return 4 * kWindowSize * moe_layers * physical_experts + expert_buffer;
}

// One pipeline stage's rank: its weights, non-torch memory, activation and graph models, KV.
CompiledRank compile_rank(const RankInputs& in, std::int32_t stage) {
  const ModelSpec& s = in.spec;
  const EngineProfile& profile = in.profile;
  const std::int32_t tp = in.tp;
  CompiledRank rank;
  rank.pipeline_rank = stage;
  rank.last_stage = stage == in.pp - 1;
  const LayerRange layers = pipeline_layer_range(s.num_hidden_layers, in.pp, stage);
  // Experts split whole over EP ranks, or each one over TP x DP ranks without EP.
  const std::int32_t expert_tp = in.ep > 1 ? 1 : tp * in.dp;
  const RankPlacement placement{tp,    in.pp,     stage,
                                in.ep, expert_tp, in.ep > 1 ? in.config.num_redundant_experts : 0};
  const WeightBytes weights =
      weight_bytes_per_rank(in.loaded, in.quantization, in.served_dtype, placement, in.drafter.mtp);
  // The spec's rotary cache covers max_position_embeddings; MRotaryEmbedding's covers a
  // release's multiple of it (bounded: positions x rotary dims x 4 B x 64 stays in int64).
  const std::int64_t mrope_extra_bytes =
      weights.rotary_cache * (mrope_cache_positions_factor(s.mrope, profile) - 1);
  // A separate drafter lives on the last stage, sharded with the target's TP.
  const std::int64_t draft_weights =
      in.drafter.model != nullptr && rank.last_stage
          ? weight_bytes_per_rank(*in.drafter.model, in.drafter.model->quantization,
                                  in.served_dtype, RankPlacement{tp, 1, 0})
                .total()
          : 0;
  rank.lora_bytes = lora_bytes_per_rank(s, in.config.max_loras, in.config.max_lora_rank,
                                        in.served_dtype, placement);
  const CpuOffload offload = cpu_offload_per_rank(in.loaded, in.quantization, in.served_dtype,
                                                  placement, in.config.cpu_offload_bytes);
  rank.cpu_offload_pinned_bytes = offload.pinned_bytes;
  if (in.config.enable_sleep_mode) {
    // Level 1 backs the weights up in pinned host RAM; level 2 discards them and keeps a
    // pageable copy of the model's buffers (the rotary cache); level 0 only pauses. From 0.32
    // the runtime tag (the input batch's GPU tensors, a few MiB) is backed up too: not counted.
    const std::int32_t level = in.config.sleep_level.value_or(1);
    if (level == 1) {
      rank.sleep_backup_bytes = sleep_weights_backup_bytes(
          in.loaded, in.quantization, in.served_dtype, placement, offload.parameters);
    } else if (level == 2) {
      rank.sleep_backup_bytes = weights.rotary_cache + mrope_extra_bytes;
    }
  }
  rank.weights_bytes =
      std::max<std::int64_t>(0, weights.total() + mrope_extra_bytes - offload.offloaded_bytes) +
      rank.lora_bytes + draft_weights + eplb_state_bytes(in, placement, layers);
  const bool moe_stage = stage_has_moe(s, layers);
  rank.all2all_buffer_bytes = moe_stage ? in.exchange.buffer_bytes : 0;
  if (moe_stage) rank.batch_sized_rdma = in.exchange.batch_sized_rdma;
  rank.non_torch_bytes = in.non_torch + rank.all2all_buffer_bytes;
  rank.encoder = in.encoder;
  // Under expert parallelism each rank runs whole experts: the MoE workspace is unsplit.
  rank.activation = activation_model(s, in.quantization, in.act_bytes, tp, expert_tp, layers,
                                     rank.last_stage, profile.forward_hidden_buffers);
  if (in.exchange.gathers && moe_stage) {
    // Per local token, dp gathered rows of hidden states and router logits (served dtype)
    // and dp - 1 more rows of expert output, alive with the fused-MoE workspace.
    const std::int32_t dp = in.dp;
    rank.activation.dispatch_replicas = dp;
    rank.activation.dispatch_bytes_per_token =
        in.act_bytes * (std::int64_t{dp} * (s.hidden_size + s.moe.num_experts) +
                        std::int64_t{dp - 1} * s.hidden_size);
    rank.activation.moe_chunk_tokens = profile.fused_moe_chunk_tokens;
  }
  rank.cudagraph_bytes_per_size = cudagraph_bytes_per_size(s, profile, in.quantization, layers);
  rank.attention_split_bytes_per_token =
      attention_split_bytes_per_token(s, profile, in.gpu, in.served_dtype, tp, layers);
  if (rank.last_stage && in.drafter.model != nullptr) add_draft_forward(in, rank);
  rank.kv = rank_kv_geometry(in, layers, rank.last_stage);
  return rank;
}

}  // namespace

CompiledLaunch::CompiledLaunch(std::shared_ptr<const ModelSpec> spec, HardwareConfig hardware,
                               EngineConfig config)
    : spec_(std::move(spec)), hardware_(std::move(hardware)), config_(std::move(config)) {
  const ModelSpec& s = *spec_;
  const EngineConfig& c = config_;
  const GpuSpec& gpu = hardware_.gpu;
  validate_knobs(c);
  const Drafter drafter = resolve_drafter(s, c);
  // Adjusted below for the runner, then read only (shared with every breakdown).
  const auto rules = std::make_shared<EngineProfile>(launch_rules(c, gpu, launch_notes_));
  profile_ = rules;
  note_model_assumptions(s, launch_notes_);
  EngineProfile& profile = *rules;
  if (c.enable_chunked_prefill == false && !profile.chunked_prefill_flag_honored) {
    launch_notes_.push_back("vLLM " + profile.version +
                            " sets enable_chunked_prefill=True for generative models whatever "
                            "the flag says: planned with chunked prefill");
  }
  validate_launch_shape(s, c, hardware_);
  served_dtype_ = dtype_served(s, c.dtype);
  quantization_ = effective_quantization(s, c);
  check_release_loads(quantization_, profile);
  if (quantization_.method == QuantMethod::Mxfp4) {
    // MXFP4 MoE backend by architecture: Blackwell's TRT-LLM kernels round H and I to 256;
    // Ampere/Hopper run Marlin, which rounds H to 256 and I to 128 (gpt-oss-120b 65.97 GiB,
    // gpt-oss-20b 13.64 GiB measured on H100).
    const bool blackwell = gpu.compute_capability >= 10.0;
    quantization_.expert_hidden_multiple = 256;
    quantization_.expert_intermediate_multiple = blackwell ? 256 : 128;
  }
  default_block_size_ = mla_default_block_size(s, profile, gpu, default_block_size_);
  const BatchDefaults batch = batch_defaults(profile, gpu, c.llm_class);
  default_max_num_seqs_ = batch.max_num_seqs;
  default_max_num_batched_tokens_ = batch.max_num_batched_tokens;
  long_context_chunked_prefill_above_ = long_context_chunked_prefill_threshold(s, c, profile, gpu);
  fit_capture_ladder(profile, s, gpu);
  capture_ladder_prefix_ = capture_ladder_prefix(profile);
  model_runner_v2_ = uses_model_runner_v2(s, profile, c, quantization_);
  persistent_bytes_per_sequence_ =
      model_runner_v2_ ? (s.vocab_size + ceil_div(s.vocab_size, 32)) * 4 : 0;
  if (model_runner_v2_ && !profile.model_runner_v2_cudagraph_estimate) {
    // MRV2 before 0.29: profile_cudagraph_memory returns 0, so nothing is profiled and the
    // graphs are captured after the KV allocation, outside the budget (as up to 0.20).
    profile.cudagraph_in_budget = false;
    profile.graph_profiling_minimal_kv_cache = false;
  }
  const std::int32_t tp = c.tensor_parallel_size;
  const std::int32_t pp = c.pipeline_parallel_size;
  const std::int32_t dp = c.data_parallel_size;
  const std::int32_t ep = c.enable_expert_parallel && s.has_moe ? tp * dp : 1;
  check_eplb(s, c, ep);
  if (c.sleep_level && !c.enable_sleep_mode) {
    throw ConfigError("sleep_level", std::to_string(*c.sleep_level),
                      "unset without enable_sleep_mode",
                      "the server sleeps only with --enable-sleep-mode: a level without it "
                      "changes nothing");
  }
  const All2AllExchange exchange = all2all_exchange(s, c, profile);
  all2all_exchange_ = exchange.applies;
  // SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS_FOR_BATCHED_DP: the batch the low-latency
  // buffers are sized for stays small unless the user asks for more.
  if (exchange.batched_dp) default_max_num_batched_tokens_ = kMoeDpChunkTokens;
  cuda_context_bytes_ = gpu_cuda_context_bytes(profile, gpu) +
                        (tp * pp * dp > 1 ? profile.nccl_communicator_bytes : 0);
  // A unified-memory GPU's free memory is the host's (MemFree or MemAvailable, by release).
  startup_free_bytes_ = unified_startup_free_bytes(gpu, profile, c, cuda_context_bytes_)
                            .value_or(gpu.total_memory_bytes -
                                      hardware_.memory_used_by_others_bytes - cuda_context_bytes_);
  cudagraph_base_bytes_ = static_cast<std::int64_t>(profile.cudagraph_base_mib *
                                                    static_cast<double>(calibration::kMiB));
  unusable_after_repack_bytes_ =
      quantization_.method == QuantMethod::Mxfp4 ? calibration::kRepackedWeightsUnreusable : 0;
  num_speculative_tokens_ = c.num_speculative_tokens;
  const std::int64_t act_bytes = dtype_info(served_dtype_).block_bytes;
  sampler_ = sampler_model(s, profile, c, model_runner_v2_, act_bytes);

  const std::int64_t tensor_parallel_non_torch = gpu.pcie_only
                                                     ? profile.non_torch_tensor_parallel_pcie_bytes
                                                     : profile.non_torch_tensor_parallel_bytes;
  const std::int64_t non_torch = tp > 1   ? tensor_parallel_non_torch
                                 : pp > 1 ? profile.non_torch_pipeline_only_bytes
                                          : profile.non_torch_single_rank_bytes;
  const EncoderProfileModel encoder = multimodal_profile(act_bytes);
  // With every modality of a tower limited to 0, vLLM skips its profile and (where the row says
  // so) does not build it, so its weights stay on disk.
  std::unique_ptr<ModelSpec> text_only;
  const std::int64_t loaded_tower = loaded_tower_parameters();
  if (loaded_tower != s.vision.num_parameters && profile.skips_encoder_without_modalities) {
    text_only = std::make_unique<ModelSpec>(s);
    text_only->vision = TowerSpec{};
    text_only->vision.num_parameters = loaded_tower;
  }
  std::unique_ptr<ModelSpec> merged;  // the last stage's KV pool holds the drafter's layers
  if (!drafter.kv_layers.empty()) {
    merged = std::make_unique<ModelSpec>(with_drafter_layers(s, drafter));
  }
  const RankInputs inputs{s,
                          text_only ? *text_only : s,
                          merged.get(),
                          drafter,
                          profile,
                          c,
                          gpu,
                          quantization_,
                          served_dtype_,
                          act_bytes,
                          tp,
                          pp,
                          dp,
                          ep,
                          exchange,
                          non_torch,
                          encoder};
  for (std::int32_t stage = 0; stage < pp; ++stage) ranks_.push_back(compile_rank(inputs, stage));
  for (CompiledRank& rank : ranks_) {
    rank.default_page_block_size = default_block_size_;
    rank.default_page_element_bytes = static_cast<std::int32_t>(act_bytes);
    rank.default_page = kv_page(rank.kv, default_block_size_, rank.default_page_element_bytes);
  }
  host_ = host_model(s, std::int64_t{tp} * pp * dp, dp, profile, c);
  input_batch_bytes_per_token_ = std::int64_t{tp} * pp * dp * 5;
  // --enforce-eager captures no graphs; FULL_AND_PIECEWISE is every 0.20+ release's default.
  state_blocks_bound_max_num_seqs_ =
      profile.state_blocks_bound_max_num_seqs && !c.enforce_eager &&
      std::any_of(ranks_.begin(), ranks_.end(),
                  [](const CompiledRank& rank) { return rank.kv.state_bytes > 0; });
  std::vector<std::int64_t> stage_kv_tensors;
  for (const CompiledRank& rank : ranks_) stage_kv_tensors.push_back(rank.kv.group_size);
  const std::int64_t kv_offload = kv_offload_pinned_bytes(
      c.kv_offloading_bytes, dp, tp, stage_kv_tensors, profile, lower(gpu.vendor) == "amd");
  // Every TP rank of a stage pins its own shard, in every data-parallel replica.
  std::int64_t weight_offload = 0;
  for (const CompiledRank& rank : ranks_)
    weight_offload = saturating_add(weight_offload, rank.cpu_offload_pinned_bytes);
  weight_offload = saturating_mul(weight_offload, std::int64_t{tp} * dp);
  host_.pinned_bytes += kv_offload + weight_offload;
  // Asleep, every worker holds its own backup (the KV cache is discarded, the serving-time
  // buffers above stay).
  std::int64_t sleep_backup = 0;
  for (const CompiledRank& rank : ranks_)
    sleep_backup = saturating_add(sleep_backup, rank.sleep_backup_bytes);
  host_.sleep_backup_bytes = saturating_mul(sleep_backup, std::int64_t{tp} * dp);
  host_.required_bytes =
      saturating_add(host_.required_bytes, kv_offload + weight_offload + host_.sleep_backup_bytes);
}

}  // namespace vramplan
