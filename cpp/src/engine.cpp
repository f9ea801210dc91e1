#include "vramplan/engine.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>
#include <sstream>

#include "vramplan/calibration.hpp"
#include "vramplan/compiled.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/knobs.hpp"

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
  const std::string k = lower(kv_cache_dtype);
  if (k.empty() || k == "auto") return 0;
  if (k == "fp8" || k == "fp8_e4m3" || k == "fp8_e5m2" || k == "fp8_inc") return 1;
  if (k == "bfloat16" || k == "float16" || k == "half") return 2;
  throw ConfigError("kv_cache_dtype", "'" + kv_cache_dtype + "'",
                    "auto, fp8, fp8_e4m3, fp8_e5m2, bfloat16, float16", "unknown KV cache dtype");
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
    case Outcome::CudagraphCaptureOom:
      return "cudagraph_capture_oom";  // records call both this and the next oom_kv_alloc
    case Outcome::SamplerWarmupOom:
      return "sampler_warmup_oom";
    case Outcome::CudagraphProfilingOom:
      return "cudagraph_profiling_oom";
  }
  return "?";
}

const char* model_runner_v2_routing_name(ModelRunnerV2Routing routing) noexcept {
  switch (routing) {
    case ModelRunnerV2Routing::None:
      return "none";
    case ModelRunnerV2Routing::Qwen3Dense:
      return "qwen3_dense";
    case ModelRunnerV2Routing::Dense:
      return "dense";
    case ModelRunnerV2Routing::All:
      return "all";
  }
  return "?";
}

namespace {

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

namespace {

// Whether `size` is on the profile's capture ladder.
bool on_capture_ladder(const EngineProfile& profile, std::int64_t size) noexcept {
  for (std::int32_t i = 0; i < profile.capture_ladder_segments; ++i) {
    const CaptureSegment& seg = profile.capture_ladder[static_cast<std::size_t>(i)];
    if (size >= seg.start && size <= seg.end && (size - seg.start) % seg.step == 0) return true;
  }
  return false;
}

// The speculative request-count grid (0.29 _set_cudagraph_sizes.request_counts): 1, 2, 4,
// 8..248 step 8, 256.. step 16 (then the maximum itself); `index` walks it in ascending order.
std::int64_t request_grid_value(std::int64_t index) noexcept {
  if (index < 3) return std::int64_t{1} << index;  // 1, 2, 4
  const std::int64_t eights = index - 3;           // 8, 16, ..., 248
  if (eights < 31) return 8 * (eights + 1);
  return 256 + 16 * (eights - 31);  // 256, 272, ...
}

}  // namespace

CaptureSizes cudagraph_capture_sizes(const EngineProfile& profile, std::int64_t max_num_seqs,
                                     std::int64_t max_num_batched_tokens,
                                     std::int32_t num_speculative_tokens) noexcept {
  std::int64_t limit = profile.capture_max_size;
  if (profile.capture_bounded_by_max_num_seqs) {
    std::int64_t by_seqs = max_num_seqs * profile.capture_seq_multiplier;
    if (profile.capture_counts_speculative_tokens) by_seqs *= 1 + num_speculative_tokens;
    limit = std::min(limit, by_seqs);
  }
  if (profile.capture_bounded_by_batched_tokens) limit = std::min(limit, max_num_batched_tokens);
  CaptureSizes sizes;
  for (std::int32_t i = 0; i < profile.capture_ladder_segments; ++i) {
    const CaptureSegment& seg = profile.capture_ladder[static_cast<std::size_t>(i)];
    if (limit < seg.start) break;
    const std::int64_t last = std::min<std::int64_t>(seg.end, limit);
    const std::int64_t steps = (last - seg.start) / seg.step;
    sizes.count += static_cast<std::int32_t>(steps + 1);
    sizes.largest = static_cast<std::int32_t>(seg.start + steps * seg.step);
  }
  // Uniform-decode sizes appended off the ladder (they need not land on its stride).
  auto add = [&](std::int64_t size) {
    if (size < 1 || size > limit || on_capture_ladder(profile, size)) return;
    sizes.count += 1;
    sizes.largest = static_cast<std::int32_t>(std::max<std::int64_t>(sizes.largest, size));
  };
  if (num_speculative_tokens > 0 && profile.capture_speculative_request_grid) {
    // n x (1 + k) for n in the request grid up to min(max_num_seqs, ceiling), distinct values.
    const std::int64_t query = 1 + num_speculative_tokens;
    const std::int64_t max_requests =
        std::min<std::int64_t>(max_num_seqs, profile.capture_max_size);
    bool max_on_grid = false;
    for (std::int64_t i = 0;; ++i) {
      const std::int64_t n = request_grid_value(i);
      if (n > max_requests) break;
      max_on_grid |= n == max_requests;
      add(n * query);
    }
    if (!max_on_grid) add(max_requests * query);
  } else if (num_speculative_tokens == 0 && profile.capture_includes_max_num_seqs &&
             max_num_seqs <= profile.capture_max_size) {
    add(max_num_seqs);
  }
  return sizes;
}

std::int64_t sampler_peak_bytes(const SamplerModel& sampler, std::int64_t requests,
                                std::int64_t batched_tokens) noexcept {
  return static_cast<std::int64_t>(sampler.bytes_per_logit * static_cast<double>(requests) *
                                   sampler.padded_vocab) +
         batched_tokens * sampler.bytes_per_batched_token;
}

std::int64_t all2all_dispatch_bytes(const ActivationModel& model,
                                    std::int64_t batched_tokens) noexcept {
  if (model.dispatch_replicas <= 1) return 0;
  // The fused-MoE workspace already counts T tokens; the gathered batch widens it to
  // replicas x T, at most one kernel chunk at a time where the version chunks.
  const std::int64_t gathered = std::int64_t{model.dispatch_replicas} * batched_tokens;
  const std::int64_t workspace_tokens =
      model.moe_chunk_tokens > 0 ? std::min(gathered, model.moe_chunk_tokens) : gathered;
  return batched_tokens * model.dispatch_bytes_per_token +
         std::max<std::int64_t>(0, workspace_tokens - batched_tokens) * model.moe_bytes_per_token;
}

std::int64_t activation_peak_bytes(const ActivationModel& model, const SamplerModel& sampler,
                                   std::int64_t batched_tokens, std::int64_t requests) noexcept {
  const std::int64_t forward = batched_tokens * model.forward_bytes_per_token;
  const std::int64_t sampled =
      model.sampler ? sampler_peak_bytes(sampler, requests, batched_tokens) : 0;
  return std::max(forward, sampled) + batched_tokens * model.moe_bytes_per_token +
         all2all_dispatch_bytes(model, batched_tokens);
}

namespace {

// Image counts and their bytes, saturated at 2^60: absurd knobs or specs read as "does not
// fit", never as an int64 overflow.
std::int64_t saturating_product(std::int64_t items, std::int64_t bytes) noexcept {
  constexpr std::int64_t kCeiling = std::int64_t{1} << 60;
  std::int64_t out = 0;
  if (__builtin_mul_overflow(items, bytes, &out) || out > kCeiling) return kCeiling;
  return out;
}

}  // namespace

EncoderBudget encoder_budget(const EncoderProfileModel& encoder,
                             std::int64_t max_num_batched_tokens, std::int64_t max_num_seqs,
                             std::int64_t max_model_len, bool chunked_prefill) noexcept {
  EncoderBudget out;
  if (encoder.tokens_per_item <= 0) return out;
  const std::int64_t per_item = encoder.tokens_per_item;
  out.budget_tokens = std::max(max_num_batched_tokens, per_item);
  const std::int64_t per_prompt =
      std::max<std::int64_t>(1, std::min(encoder.limit_per_prompt, max_model_len / per_item));
  std::int64_t requests = max_num_seqs;
  if (!chunked_prefill) requests = std::min(requests, max_num_batched_tokens / per_item);
  out.items = std::max<std::int64_t>(
      1, std::min(out.budget_tokens / per_item, saturating_product(requests, per_prompt)));
  return out;
}

std::int64_t multimodal_activation_peak_bytes(const EncoderProfileModel& encoder,
                                              std::int64_t items,
                                              std::int64_t text_peak_bytes) noexcept {
  const std::int64_t forward = saturating_product(items, encoder.forward_bytes_per_item);
  const std::int64_t cache = saturating_product(items, encoder.cache_bytes_per_item);
  return saturating_product(items, encoder.input_bytes_per_item) +
         std::max(forward, cache + text_peak_bytes);
}

namespace {

// Peak torch allocation of the profile run per token: one eager forward over the stage's layers
// (widest dense MLP intermediate, hidden-size buffers) and the fused-MoE workspace.
ActivationModel activation_model(const ModelSpec& spec, const QuantSpec& quant,
                                 std::int64_t act_bytes, std::int64_t tp, std::int64_t expert_tp,
                                 const LayerRange& layers, bool last_stage,
                                 double forward_hidden_buffers) {
  const std::int64_t gate_factor = spec.gated_mlp ? 2 : 1;
  std::int64_t dense_width = 0;
  std::int64_t moe_width = 0;
  for (std::int32_t i = layers.begin; i < layers.end; ++i) {
    const LayerSpec& layer = spec.layers[static_cast<std::size_t>(i)];
    if (!layer.mlp) continue;
    if (layer.moe) {
      const std::int64_t inter = ceil_div(spec.moe.moe_intermediate_size, expert_tp);
      // fused-MoE workspaces: [T, topk, 2I] + [T*topk, I] + [T, topk, h].
      moe_width = spec.moe.num_experts_per_tok * ((gate_factor + 1) * inter + spec.hidden_size);
    } else {
      dense_width = std::max(dense_width, (gate_factor + 1) * ceil_div(spec.intermediate_size, tp));
    }
  }
  const std::int64_t hidden_buffers =
      static_cast<std::int64_t>(forward_hidden_buffers * static_cast<double>(spec.hidden_size));
  ActivationModel model;
  model.forward_bytes_per_token = act_bytes * (dense_width + hidden_buffers);
  // MXFP4 experts run through kernels that do not use the fused-MoE workspace.
  const bool moe_workspace = moe_width > 0 && quant.method != QuantMethod::Mxfp4;
  model.moe_bytes_per_token = moe_workspace ? act_bytes * moe_width : 0;
  model.sampler = last_stage;
  return model;
}

// vLLM's environment defaults for the expert-parallel exchange (vllm/envs.py).
constexpr std::int64_t kMoeDpChunkTokens = 256;                     // VLLM_MOE_DP_CHUNK_SIZE
constexpr std::int64_t kDeepEpNvlBytes = std::int64_t{1024} << 20;  // VLLM_DEEPEP_BUFFER_SIZE_MB
// DeepEP's Buffer also cudaMallocs a fixed workspace (NUM_WORKSPACE_BYTES,
// csrc/kernels/configs.cuh).
constexpr std::int64_t kDeepEpWorkspaceBytes = std::int64_t{32} << 20;

// DeepEP's get_low_latency_rdma_size_hint (csrc/config.hpp, LowLatencyLayout): two (odd/even)
// send, receive and signalling buffers. A dispatch message is an int4 header plus the larger of
// a bf16 token and an fp8 token with one float scale per 128 channels; a combine message is a
// bf16 token plus a bf16x2 min/max per 128 channels. The hint rounds past the next 128 bytes
// (NUM_BUFFER_ALIGNMENT_BYTES); the rank count does not enter the layout.
std::int64_t deepep_low_latency_rdma_bytes(std::int64_t tokens_per_rank, std::int64_t hidden,
                                           std::int64_t num_experts) {
  const std::int64_t scales = hidden / 128;
  const std::int64_t dispatch_message = 16 + std::max(hidden * 2, hidden + scales * 4);
  const std::int64_t combine_message = scales * 4 + hidden * 2;
  const std::int64_t send =
      std::max(tokens_per_rank * dispatch_message, num_experts * tokens_per_rank * combine_message);
  const std::int64_t receive =
      num_experts * tokens_per_rank * std::max(dispatch_message, combine_message);
  const std::int64_t signal = ceil_div(num_experts * 4, 128) * 128;
  return (2 * (send + receive + signal) + 128) / 128 * 128;
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
  std::int64_t buffer_bytes = 0;  // DeepEP buffers made after load (non-torch)
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
      x.buffer_bytes +=
          deepep_low_latency_rdma_bytes(kMoeDpChunkTokens, spec.hidden_size, spec.moe.num_experts);
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

bool stage_has_moe(const ModelSpec& spec, const LayerRange& layers) {
  for (std::int32_t i = layers.begin; i < layers.end; ++i) {
    const LayerSpec& layer = spec.layers[static_cast<std::size_t>(i)];
    if (layer.mlp && layer.moe) return true;
  }
  return false;
}

// CUDA-graph pool bytes per capture size: one piece per captured layer, wider with the rank's
// hidden width, more for routed-expert, MXFP4-expert and MLA layers.
double cudagraph_bytes_per_size(const ModelSpec& spec, const EngineProfile& profile,
                                const QuantSpec& quant, std::int32_t tp, const LayerRange& layers) {
  const double mib = static_cast<double>(calibration::kMiB);
  const double dense_piece =
      profile.cudagraph_piece_mib * mib +
      profile.cudagraph_piece_mib_per_hidden * mib * static_cast<double>(spec.hidden_size) / tp;
  double per_size = 0.0;
  for (std::int32_t i = layers.begin; i < layers.end; ++i) {
    const LayerSpec& layer = spec.layers[static_cast<std::size_t>(i)];
    per_size += dense_piece;
    if (layer.moe) per_size += profile.cudagraph_piece_mib_moe * mib;
    if (layer.moe && quant.method == QuantMethod::Mxfp4) {
      per_size += profile.cudagraph_piece_mib_mxfp4_moe * mib;
    }
    if (layer.attention == AttentionKind::Mla) per_size += profile.cudagraph_piece_mib_mla * mib;
  }
  return per_size;
}

std::int64_t next_power_of_two(std::int64_t bytes) noexcept {
  std::int64_t p = 1;
  while (p < bytes && p < (std::int64_t{1} << 62)) p <<= 1;
  return p;
}

// Host RAM while loading and serving, per node, without the input batch (it grows with the
// evaluated knobs; see CompiledLaunch::host).
HostBreakdown host_model(const ModelSpec& spec, std::int64_t workers, std::int64_t engine_cores,
                         std::int32_t tp, const EngineProfile& profile, const EngineConfig& knobs) {
  HostBreakdown h;
  // One API server; one engine core per data-parallel replica; one process per GPU.
  h.process_baseline_bytes = calibration::kHostApiServer +
                             engine_cores * calibration::kHostEngineCore +
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
  if (strategy == "eager") {
    // save_pretrained's default shard cap is 5 GB; a smaller checkpoint is one file.
    const std::int64_t shard = std::min(h.page_cache_bytes, calibration::kHostShardBytes);
    h.loader_anonymous_bytes = workers * std::max(shard, largest_tensor);
  } else {
    h.loader_anonymous_bytes = workers * largest_tensor;
  }
  // Pinned memory: torch's host allocator rounds each pin_memory block up to a power of two.
  // cpu_offload pins many tensors (measured 1.15-1.9x, 1.9 planned); one KV offload buffer
  // per worker rounds exactly; V0 pinned its swap space per GPU (default 4 GiB).
  const std::int64_t offload_pinned = static_cast<std::int64_t>(
      calibration::kPinnedOverhead * static_cast<double>(knobs.cpu_offload_bytes * workers));
  const std::int64_t kv_offload_pinned =
      knobs.kv_offloading_bytes > 0 ? tp * next_power_of_two(knobs.kv_offloading_bytes / tp) : 0;
  const std::int64_t swap =
      profile.swap_space_default_bytes > 0
          ? workers * knobs.swap_space_bytes.value_or(profile.swap_space_default_bytes)
          : 0;
  h.pinned_bytes = offload_pinned + kv_offload_pinned + swap;
  h.required_bytes = h.process_baseline_bytes + h.loader_anonymous_bytes + h.pinned_bytes;
  return h;
}

}  // namespace

CompiledLaunch::CompiledLaunch(std::shared_ptr<const ModelSpec> spec, HardwareConfig hardware,
                               EngineConfig config)
    : spec_(std::move(spec)), hardware_(std::move(hardware)), config_(std::move(config)) {
  const ModelSpec& s = *spec_;
  const EngineConfig& c = config_;
  validate_knobs(c);
  const Drafter drafter = resolve_drafter(s, c);
  profile_ = c.profile ? *c.profile : engine_profile(c.engine_version);
  if (c.pipeline_parallel_size > s.num_hidden_layers) {
    throw ConfigError("pipeline_parallel_size", std::to_string(c.pipeline_parallel_size),
                      "1 .. num_hidden_layers (" + std::to_string(s.num_hidden_layers) + ")",
                      "more stages than layers");
  }
  if (s.num_attention_heads % c.tensor_parallel_size != 0) {
    throw ConfigError(
        "tensor_parallel_size", std::to_string(c.tensor_parallel_size),
        "a divisor of num_attention_heads (" + std::to_string(s.num_attention_heads) + ")",
        "attention heads do not split evenly");
  }
  const std::int64_t gpus_needed =
      std::int64_t{c.tensor_parallel_size} * c.pipeline_parallel_size * c.data_parallel_size;
  if (gpus_needed > hardware_.num_gpus) {
    throw ConfigError("tensor_parallel_size", std::to_string(c.tensor_parallel_size),
                      "TP x PP x DP <= the " + std::to_string(hardware_.num_gpus) + " GPUs given",
                      "the launch needs " + std::to_string(gpus_needed) + " GPUs");
  }
  const std::int64_t total = hardware_.gpu.total_memory_bytes;
  if (total <= 0) {
    throw ConfigError("gpu.total_memory_bytes", std::to_string(total), "> 0",
                      "GPU total memory must be positive");
  }
  if (hardware_.memory_used_by_others_bytes < 0 || hardware_.memory_used_by_others_bytes >= total) {
    throw ConfigError("memory_used_by_others_bytes",
                      std::to_string(hardware_.memory_used_by_others_bytes),
                      "0 .. the GPU's total (" + std::to_string(total) + ")", "out of range");
  }
  if (hardware_.host_ram_bytes < 0) {
    throw ConfigError("host_ram_bytes", std::to_string(hardware_.host_ram_bytes),
                      ">= 0 (0: unknown)", "negative host RAM");
  }
  served_dtype_ = dtype_served(s, c.dtype);
  quantization_ = effective_quantization(s, c);
  if (quantization_.method == QuantMethod::Mxfp4) {
    // MXFP4 MoE backend by architecture: Blackwell's TRT-LLM kernels round H and I to 256;
    // Ampere/Hopper run Marlin, which rounds H to 256 and I to 128 (gpt-oss-120b 65.97 GiB,
    // gpt-oss-20b 13.64 GiB measured on H100).
    const bool blackwell = hardware_.gpu.compute_capability >= 10.0;
    quantization_.expert_hidden_multiple = 256;
    quantization_.expert_intermediate_multiple = blackwell ? 256 : 128;
  }
  // Block size: 16, except where an MLA backend forces its own (vllm/platforms/cuda.py):
  // CUTLASS MLA 128 on data-centre Blackwell (10.x), FlashMLA 64 on Hopper (9.x, the only
  // capability FlashMLA's dense kernel supports). Ampere, Ada and consumer Blackwell (12.x)
  // fall back to Triton MLA, which keeps 16; so does ROCm without AITER.
  if (s.has_mla && profile_.mla_backend_block_size && hardware_.gpu.vendor == "nvidia") {
    const double cc = hardware_.gpu.compute_capability;
    if (cc >= 10.0 && cc < 11.0) {
      default_block_size_ = 128;
    } else if (cc >= 9.0 && cc < 10.0) {
      default_block_size_ = 64;
    }
  }
  const bool large = uses_large_batch_defaults(profile_, hardware_.gpu);
  default_max_num_seqs_ = large ? profile_.max_num_seqs_large_gpu : profile_.max_num_seqs_other_gpu;
  default_max_num_batched_tokens_ = c.llm_class
                                        ? (large ? profile_.max_num_batched_tokens_llm_large_gpu
                                                 : profile_.max_num_batched_tokens_llm_other_gpu)
                                        : (large ? profile_.max_num_batched_tokens_serve_large_gpu
                                                 : profile_.max_num_batched_tokens_serve_other_gpu);
  if (profile_.huge_gpu_min_memory_bytes > 0 &&
      hardware_.gpu.total_memory_bytes >= profile_.huge_gpu_min_memory_bytes) {
    // get_batch_defaults checks the >= 160 GiB tier before the large one (0.28+).
    default_max_num_seqs_ = profile_.max_num_seqs_large_gpu;
    default_max_num_batched_tokens_ = c.llm_class ? profile_.max_num_batched_tokens_llm_huge_gpu
                                                  : profile_.max_num_batched_tokens_serve_huge_gpu;
  }
  const double capability = hardware_.gpu.compute_capability;
  if (profile_.capture_max_size_datacenter_blackwell > 0 && hardware_.gpu.vendor == "nvidia" &&
      capability >= 10.0 && capability < 11.0) {
    // is_device_capability_family(100): the default capture ceiling is 1024 (0.28+).
    profile_.capture_max_size = profile_.capture_max_size_datacenter_blackwell;
    // The last ladder run (256.. step 16) continues up to the raised ceiling.
    CaptureSegment& last =
        profile_.capture_ladder[static_cast<std::size_t>(profile_.capture_ladder_segments - 1)];
    last.end = std::max(last.end, profile_.capture_max_size);
  }
  model_runner_v2_ = uses_model_runner_v2(s, profile_, c, quantization_);
  if (model_runner_v2_ && !profile_.model_runner_v2_cudagraph_estimate) {
    // MRV2 before 0.29: profile_cudagraph_memory returns 0, so nothing is profiled and the
    // graphs are captured after the KV allocation, outside the budget (as up to 0.20).
    profile_.cudagraph_in_budget = false;
    profile_.graph_profiling_minimal_kv_cache = false;
  }
  const std::int32_t tp = c.tensor_parallel_size;
  const std::int32_t pp = c.pipeline_parallel_size;
  const std::int32_t dp = c.data_parallel_size;
  const std::int32_t ep = c.enable_expert_parallel && s.has_moe ? tp * dp : 1;
  const All2AllExchange exchange = all2all_exchange(s, c, profile_);
  all2all_exchange_ = exchange.applies;
  cuda_context_bytes_ =
      profile_.cuda_context_bytes + (tp * pp * dp > 1 ? profile_.nccl_communicator_bytes : 0);
  startup_free_bytes_ = total - hardware_.memory_used_by_others_bytes - cuda_context_bytes_;
  cudagraph_base_bytes_ = static_cast<std::int64_t>(profile_.cudagraph_base_mib *
                                                    static_cast<double>(calibration::kMiB));
  unusable_after_repack_bytes_ =
      quantization_.method == QuantMethod::Mxfp4 ? calibration::kRepackedWeightsUnreusable : 0;
  num_speculative_tokens_ = c.num_speculative_tokens;
  const std::int64_t act_bytes = dtype_info(served_dtype_).block_bytes;
  sampler_.bytes_per_logit = profile_.sampler_bytes_per_logit + static_cast<double>(act_bytes);
  sampler_.padded_vocab = static_cast<double>(padded_vocab_size(s.vocab_size));
  sampler_.bytes_per_batched_token = s.hidden_size * act_bytes;

  const std::int64_t tensor_parallel_non_torch = hardware_.gpu.pcie_only
                                                     ? profile_.non_torch_tensor_parallel_pcie_bytes
                                                     : profile_.non_torch_tensor_parallel_bytes;
  const std::int64_t non_torch = tp > 1   ? tensor_parallel_non_torch
                                 : pp > 1 ? profile_.non_torch_pipeline_only_bytes
                                          : profile_.non_torch_single_rank_bytes;
  const EncoderProfileModel encoder = multimodal_profile(act_bytes);
  // With every modality limited to 0, vLLM skips the encoder profile and (where the row says
  // so) does not build the tower, so its weights stay on disk.
  std::unique_ptr<ModelSpec> text_only;
  if (s.vision.num_parameters > 0 && !multimodal_enabled() &&
      profile_.skips_encoder_without_modalities) {
    text_only = std::make_unique<ModelSpec>(s);
    text_only->vision = TowerSpec{};
  }
  const ModelSpec& loaded = text_only ? *text_only : s;
  std::unique_ptr<ModelSpec> merged;  // the last stage's KV pool holds the drafter's layers
  if (!drafter.kv_layers.empty()) {
    merged = std::make_unique<ModelSpec>(with_drafter_layers(s, drafter));
  }
  for (std::int32_t stage = 0; stage < pp; ++stage) {
    CompiledRank rank;
    rank.pipeline_rank = stage;
    rank.last_stage = stage == pp - 1;
    const LayerRange layers = pipeline_layer_range(s.num_hidden_layers, pp, stage);
    // Experts split whole over EP ranks, or each one over TP x DP ranks without EP.
    const std::int32_t expert_tp = ep > 1 ? 1 : tp * dp;
    const RankPlacement placement{tp, pp, stage, ep, expert_tp};
    const WeightBytes weights =
        weight_bytes_per_rank(loaded, quantization_, served_dtype_, placement, drafter.mtp);
    // A separate drafter lives on the last stage, sharded with the target's TP.
    const std::int64_t draft_weights =
        drafter.model != nullptr && rank.last_stage
            ? weight_bytes_per_rank(*drafter.model, drafter.model->quantization, served_dtype_,
                                    RankPlacement{tp, 1, 0})
                  .total()
            : 0;
    rank.lora_bytes =
        lora_bytes_per_rank(s, c.max_loras, c.max_lora_rank, served_dtype_, placement);
    rank.weights_bytes = std::max<std::int64_t>(0, weights.total() - c.cpu_offload_bytes) +
                         rank.lora_bytes + draft_weights;
    const bool moe_stage = stage_has_moe(s, layers);
    rank.all2all_buffer_bytes = moe_stage ? exchange.buffer_bytes : 0;
    rank.non_torch_bytes = non_torch + rank.all2all_buffer_bytes;
    rank.encoder = encoder;
    // Under expert parallelism each rank runs whole experts: the MoE workspace is unsplit.
    rank.activation = activation_model(s, quantization_, act_bytes, tp, expert_tp, layers,
                                       rank.last_stage, profile_.forward_hidden_buffers);
    if (exchange.gathers && moe_stage) {
      // Per local token, dp gathered rows of hidden states and router logits (served dtype)
      // and dp - 1 more rows of expert output, alive with the fused-MoE workspace.
      rank.activation.dispatch_replicas = dp;
      rank.activation.dispatch_bytes_per_token =
          act_bytes * (std::int64_t{dp} * (s.hidden_size + s.moe.num_experts) +
                       std::int64_t{dp - 1} * s.hidden_size);
      rank.activation.moe_chunk_tokens = profile_.fused_moe_chunk_tokens;
    }
    rank.cudagraph_bytes_per_size =
        cudagraph_bytes_per_size(s, profile_, quantization_, tp, layers);
    if (rank.last_stage && drafter.model != nullptr) {
      // The drafter's dummy forward follows the target's in the profile run; its graphs are
      // captured too (pieces only: the pool base is shared).
      const LayerRange draft_layers{0, drafter.model->num_hidden_layers};
      rank.draft_activation =
          activation_model(*drafter.model, quantization_, act_bytes, tp, tp, draft_layers, false,
                           profile_.forward_hidden_buffers);
      rank.draft_cudagraph_bytes_per_size =
          cudagraph_bytes_per_size(*drafter.model, profile_, quantization_, tp, draft_layers);
    }
    KvCacheOptions kv;
    kv.tensor_parallel_size = tp;
    kv.state_element_bytes = state_width(c.mamba_cache_dtype, act_bytes);
    kv.ssm_state_element_bytes = state_width(c.mamba_ssm_cache_dtype, 0);
    kv.num_speculative_tokens = c.num_speculative_tokens;
    if (rank.last_stage && merged) {
      // The drafter's attention layers share the KV pool (same page size, one more group
      // member each).
      kv.layers = LayerRange{layers.begin, merged->num_hidden_layers};
      rank.kv = kv_geometry(*merged, kv);
    } else {
      kv.layers = layers;
      rank.kv = kv_geometry(s, kv);
    }
    ranks_.push_back(std::move(rank));
  }
  host_ = host_model(s, std::int64_t{tp} * pp * dp, dp, tp, profile_, c);
}

std::int64_t CompiledLaunch::mm_limit(const std::string& modality) const {
  constexpr std::int64_t kDefaultLimit = 999;  // MultiModalConfig.get_limit_per_prompt
  if (config_.language_model_only) return 0;
  for (const ModalityLimit& limit : mm_limits_) {
    if (limit.modality == modality) return limit.count;
  }
  return kDefaultLimit;
}

bool CompiledLaunch::multimodal_enabled() const {
  const TowerSpec& tower = spec_->vision;
  if (tower.num_parameters <= 0) return false;
  bool enabled = mm_limit("image") > 0;
  for (const std::string& modality : tower.unmodelled_modalities) {
    enabled |= mm_limit(modality) > 0;
  }
  return enabled;
}

EncoderProfileModel CompiledLaunch::multimodal_profile(std::int64_t act_bytes) {
  const ModelSpec& s = *spec_;
  const EngineConfig& c = config_;
  const TowerSpec& tower = s.vision;
  mm_limits_ = parse_limit_mm_per_prompt(c.limit_mm_per_prompt);
  EncoderProfileModel encoder;
  if (tower.num_parameters <= 0) {
    // vLLM: "limit_mm_per_prompt is only supported for multimodal models".
    if (!mm_limits_.empty() || c.language_model_only) {
      const bool limits = !mm_limits_.empty();
      throw ConfigError(limits ? "limit_mm_per_prompt" : "language_model_only",
                        limits ? "'" + c.limit_mm_per_prompt + "'" : "true",
                        "unset for a text-only model",
                        s.id +
                            " has no vision/audio encoder; vLLM takes it only for multimodal "
                            "models");
    }
    return encoder;
  }
  for (const std::string& modality : tower.unmodelled_modalities) {
    if (mm_limit(modality) > 0) {
      std::string note = "Not modelled: vLLM may profile ";
      note += modality;
      note += " items of ";
      note += s.id;
      note +=
          " (their tokens grow with max_model_len) instead of images; the activation peak "
          "counts only the image profile. limit_mm_per_prompt '{\"";
      note += modality;
      note += "\": 0}' makes the plan exact.";
      multimodal_notes_.push_back(std::move(note));
    }
  }
  const std::int64_t image_limit = mm_limit("image");
  if (image_limit == 0) return encoder;
  if (profile_.era == EngineEra::V0) {
    multimodal_notes_.push_back(
        "Not modelled: vLLM V0 profiles images inside its dummy sequences; the activation "
        "peak of " +
        s.id + " omits the vision encoder.");
    return encoder;
  }
  if (tower.image_tokens_per_item <= 0) {
    const bool asked = std::any_of(mm_limits_.begin(), mm_limits_.end(),
                                   [](const ModalityLimit& l) { return l.modality == "image"; });
    if (asked) {
      throw ConfigError("limit_mm_per_prompt", "'" + c.limit_mm_per_prompt + "'",
                        "{\"image\": 0} or language_model_only",
                        s.id +
                            " has no encoder-profile facts (vision.image_tokens_per_item and "
                            "the encoder keys in its spec): its image profile cannot be "
                            "counted");
    }
    multimodal_notes_.push_back(
        "Not modelled: " + s.id +
        " has no encoder-profile facts (vision.image_tokens_per_item "
        "in its spec), so the activation peak omits the encoder forward and encoder cache of "
        "vLLM's image profile; language_model_only or limit_mm_per_prompt '{\"image\": 0}' "
        "makes the plan exact.");
    return encoder;
  }
  const std::int64_t tp = c.tensor_parallel_size;
  // The encoder forward peaks in an MLP: its intermediate buffers (gate+up and the activation,
  // or fc1 and the activation) beside the residual stream and the normed input.
  const std::int64_t mlp_buffers = tower.encoder_gated_mlp ? 3 : 2;
  const std::int64_t hidden_buffers = 2 * std::int64_t{tower.encoder_hidden_size};
  encoder.tokens_per_item = tower.image_tokens_per_item;
  encoder.limit_per_prompt = image_limit;
  encoder.cache_bytes_per_item = tower.image_tokens_per_item * s.hidden_size * act_bytes;
  encoder.input_bytes_per_item = tower.pixel_values_per_item * act_bytes;
  // The encoder's Linears are split over TP like the decoder's (mm_encoder_tp_mode "weights").
  encoder.forward_bytes_per_item =
      tower.encoder_tokens_per_item * act_bytes *
      (mlp_buffers * ceil_div(tower.encoder_intermediate_size, tp) + hidden_buffers);
  return encoder;
}

KnobProblem CompiledLaunch::try_resolve(const LaunchKnobs& k, ResolvedKnobs& r) const noexcept {
  const ModelSpec& s = *spec_;
  if ((k.max_model_len && *k.max_model_len <= 0) || (k.max_num_seqs && *k.max_num_seqs <= 0) ||
      (k.max_num_batched_tokens && *k.max_num_batched_tokens <= 0) ||
      (k.block_size && *k.block_size <= 0) || k.kv_element_bytes < 0 ||
      (k.gpu_memory_utilization &&
       !(*k.gpu_memory_utilization > 0.0 && *k.gpu_memory_utilization <= 1.0))) {
    return KnobProblem::NotPositive;
  }
  // vLLM refuses a longer context unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (then quality is not
  // guaranteed).
  if (k.max_model_len && *k.max_model_len > s.max_position_embeddings) {
    return KnobProblem::MaxModelLenBeyondModel;
  }
  r.gpu_memory_utilization =
      k.gpu_memory_utilization.value_or(profile_.default_gpu_memory_utilization);
  r.max_model_len = k.max_model_len.value_or(s.max_position_embeddings);
  r.block_size = k.block_size.value_or(default_block_size_);
  r.kv_element_bytes =
      k.kv_element_bytes > 0 ? k.kv_element_bytes : dtype_info(served_dtype_).block_bytes;
  // Batch defaults (EngineArgs.get_batch_defaults), then the scheduler's own clamps.
  r.max_num_seqs = k.max_num_seqs.value_or(default_max_num_seqs_);
  if (k.max_num_batched_tokens) {
    r.max_num_batched_tokens = *k.max_num_batched_tokens;
  } else {
    std::int64_t tokens = default_max_num_batched_tokens_;
    if (!profile_.chunked_prefill_default) tokens = std::max(tokens, r.max_model_len);
    r.max_num_batched_tokens = std::min(r.max_num_seqs * r.max_model_len, tokens);
  }
  if (!k.max_num_seqs) r.max_num_seqs = std::min(r.max_num_seqs, r.max_num_batched_tokens);
  if (!profile_.chunked_prefill_default && r.max_num_batched_tokens < r.max_model_len) {
    return KnobProblem::BatchedTokensBelowModelLen;
  }
  if (r.max_num_batched_tokens < r.max_num_seqs) return KnobProblem::BatchedTokensBelowNumSeqs;
  r.num_cudagraph_sizes = 0;
  r.max_cudagraph_capture_size = 0;
  if (!config_.enforce_eager) {
    const CaptureSizes sizes = cudagraph_capture_sizes(
        profile_, r.max_num_seqs, r.max_num_batched_tokens, num_speculative_tokens_);
    r.num_cudagraph_sizes = sizes.count;
    r.max_cudagraph_capture_size = sizes.largest;
  }
  return KnobProblem::None;
}

ResolvedKnobs CompiledLaunch::resolve(const LaunchKnobs& k) const {
  ResolvedKnobs r;
  switch (try_resolve(k, r)) {
    case KnobProblem::None:
      return r;
    case KnobProblem::NotPositive: {
      // The registry names the knob; C++ callers filling LaunchKnobs directly land here.
      EngineConfig probe;
      probe.gpu_memory_utilization = k.gpu_memory_utilization;
      probe.max_model_len = k.max_model_len;
      probe.max_num_seqs = k.max_num_seqs;
      probe.max_num_batched_tokens = k.max_num_batched_tokens;
      probe.block_size = k.block_size;
      validate_knobs(probe);
      throw ConfigError("kv_element_bytes", std::to_string(k.kv_element_bytes), "1, 2 or 4",
                        "unknown KV element width");
    }
    case KnobProblem::MaxModelLenBeyondModel:
      throw ConfigError("max_model_len", std::to_string(*k.max_model_len),
                        "<= " + std::to_string(spec_->max_position_embeddings) +
                            " (the model's max_position_embeddings)",
                        "longer than the model supports");
    case KnobProblem::BatchedTokensBelowModelLen:
      throw ConfigError("max_num_batched_tokens", std::to_string(r.max_num_batched_tokens),
                        ">= max_model_len (" + std::to_string(r.max_model_len) + ")",
                        "without chunked prefill a whole prompt must fit in one batch");
    case KnobProblem::BatchedTokensBelowNumSeqs:
      throw ConfigError("max_num_batched_tokens", std::to_string(r.max_num_batched_tokens),
                        ">= max_num_seqs (" + std::to_string(r.max_num_seqs) + ")",
                        "vLLM schedules at least one token per sequence");
  }
  return r;
}

RankEvaluation CompiledLaunch::evaluate_rank(std::size_t index,
                                             const ResolvedKnobs& k) const noexcept {
  const CompiledRank& rank = ranks_[index];
  RankEvaluation e;
  const std::int64_t total = hardware_.gpu.total_memory_bytes;
  const std::int64_t tokens = k.max_num_batched_tokens;
  const std::int64_t requests = std::min(k.max_num_seqs, tokens);
  e.requested_memory_bytes =
      static_cast<std::int64_t>(std::ceil(static_cast<double>(total) * k.gpu_memory_utilization));
  e.activation_peak_bytes = activation_peak_bytes(rank.activation, sampler_, tokens, requests);
  e.persistent_buffers_bytes = persistent_buffers_bytes(k.max_num_seqs);
  if (rank.draft_activation) {
    e.activation_peak_bytes =
        std::max(e.activation_peak_bytes,
                 activation_peak_bytes(*rank.draft_activation, sampler_, tokens, requests));
  }
  if (rank.encoder.tokens_per_item > 0) {
    const EncoderBudget budget = encoder_budget(rank.encoder, tokens, k.max_num_seqs,
                                                k.max_model_len, profile_.chunked_prefill_default);
    const std::int64_t text_peak = e.activation_peak_bytes;
    e.activation_peak_bytes =
        multimodal_activation_peak_bytes(rank.encoder, budget.items, text_peak);
    e.mm_encoder_bytes = e.activation_peak_bytes - text_peak;
  }
  if (k.num_cudagraph_sizes > 0) {
    const double sizes = static_cast<double>(k.num_cudagraph_sizes);
    e.cudagraph_bytes =
        cudagraph_base_bytes_ + static_cast<std::int64_t>(rank.cudagraph_bytes_per_size * sizes);
    if (rank.draft_activation) {
      e.cudagraph_bytes += static_cast<std::int64_t>(rank.draft_cudagraph_bytes_per_size * sizes);
    }
  }
  const std::int64_t graph_in_budget = profile_.cudagraph_in_budget ? e.cudagraph_bytes : 0;
  // The consumed formula (0.27+) sees buffers made after the init snapshot; before, they were
  // held but counted nowhere, so they come out of the headroom instead.
  const std::int64_t persistent_in_budget =
      profile_.consumed_budget_formula ? e.persistent_buffers_bytes : 0;
  e.kv_cache_bytes = config_.kv_cache_memory_bytes
                         ? *config_.kv_cache_memory_bytes
                         : e.requested_memory_bytes - rank.weights_bytes - e.activation_peak_bytes -
                               rank.non_torch_bytes - graph_in_budget -
                               cached_activation_bytes(e.activation_peak_bytes) -
                               persistent_in_budget;
  e.page = kv_page(rank.kv, k.block_size, k.kv_element_bytes);
  e.num_blocks = kv_num_blocks(rank.kv, e.page, e.kv_cache_bytes);
  e.headroom_bytes = total - hardware_.memory_used_by_others_bytes - cuda_context_bytes_ -
                     e.requested_memory_bytes;
  if (profile_.post_allocation_check) {
    // After the KV cache is allocated the profile activations (and the graph estimate the
    // budget reserved) are free again; graph capture outside the budget and then the
    // sampler warm-up on max_num_seqs dummy requests need their room, and weights repacked
    // at load leave segments the allocator cannot reuse for those large blocks.
    const std::int64_t sampler =
        rank.last_stage ? sampler_peak_bytes(sampler_, requests, tokens) : 0;
    e.post_allocation_bytes = e.cudagraph_bytes + sampler + unusable_after_repack_bytes_ +
                              (e.persistent_buffers_bytes - persistent_in_budget) -
                              (e.activation_peak_bytes + graph_in_budget);
  }
  return e;
}

Evaluation CompiledLaunch::evaluate(const ResolvedKnobs& k) const noexcept {
  Evaluation out;
  out.knobs = k;
  std::int64_t num_blocks = -1;
  std::int64_t worst_request = 0;
  std::int64_t tightest_margin = 0;  // post-allocation need beyond the headroom
  std::int64_t worst_requested = 0;
  std::int64_t worst_blocks = 0;  // blocks one request needs on the worst rank
  KvPage worst_page;
  for (std::size_t i = 0; i < ranks_.size(); ++i) {
    const RankEvaluation e = evaluate_rank(i, k);
    const CompiledRank& rank = ranks_[i];
    out.kv_empty |= rank.kv.groups.empty();
    if (num_blocks < 0 || e.num_blocks < num_blocks) num_blocks = e.num_blocks;
    out.max_weights_bytes = std::max(out.max_weights_bytes, rank.weights_bytes);
    out.max_post_allocation_bytes =
        std::max(out.max_post_allocation_bytes, e.post_allocation_bytes);
    if (profile_.graph_profiling_minimal_kv_cache && k.num_cudagraph_sizes > 0) {
      // Graph profiling holds the weights, the workspaces, a minimal KV cache and the graphs.
      const std::int64_t minimal_kv = kv_blocks_bytes(rank.kv, e.page, graph_profiling_blocks(k));
      out.max_graph_profiling_bytes =
          std::max(out.max_graph_profiling_bytes, rank.weights_bytes + rank.non_torch_bytes +
                                                      e.persistent_buffers_bytes + minimal_kv +
                                                      e.cudagraph_bytes);
    }
    // The worst rank: the largest shortfall of one request against its KV cache.
    out.min_kv_cache_bytes =
        i == 0 ? e.kv_cache_bytes : std::min(out.min_kv_cache_bytes, e.kv_cache_bytes);
    const std::int64_t blocks =
        kv_blocks_per_request(rank.kv, e.page, k.max_model_len, k.max_num_batched_tokens);
    const std::int64_t need = kv_blocks_bytes(rank.kv, e.page, blocks);
    if (need - e.kv_cache_bytes >= worst_request - out.min_kv_cache_bytes) {
      worst_request = need;
      out.worst_rank = static_cast<std::int32_t>(i);
      worst_page = e.page;
      worst_blocks = blocks;
    }
    const std::int64_t margin = e.post_allocation_bytes - e.headroom_bytes;
    if (i == 0 || margin > tightest_margin) {
      tightest_margin = margin;
      out.tightest_rank = static_cast<std::int32_t>(i);
    }
    worst_requested = e.requested_memory_bytes;
  }
  out.num_blocks = std::max<std::int64_t>(0, num_blocks);
  out.request_kv_bytes = worst_request;
  const KvGeometry& worst = ranks_[static_cast<std::size_t>(out.worst_rank)].kv;
  if (worst_blocks > 0) {
    out.max_concurrency = static_cast<double>(out.num_blocks) / static_cast<double>(worst_blocks);
  }
  if (profile_.tokens_from_concurrency) {
    out.kv_tokens =
        static_cast<std::int64_t>(out.max_concurrency * static_cast<double>(k.max_model_len));
  } else {
    const std::int64_t groups =
        std::max<std::int64_t>(1, static_cast<std::int64_t>(worst.groups.size()));
    out.kv_tokens = (out.num_blocks / groups) * worst_page.block_size;
  }
  const std::int64_t workers = std::int64_t{config_.tensor_parallel_size} *
                               config_.pipeline_parallel_size * config_.data_parallel_size;
  out.host_required_bytes = host_.required_bytes + workers * 5 * k.max_num_seqs * k.max_model_len;

  // Startup verdict, in the order vLLM meets the checks.
  const std::int64_t kv_fixed = config_.kv_cache_memory_bytes.value_or(0);
  if (profile_.startup_free_memory_check && startup_free_bytes_ < worst_requested) {
    out.outcome = Outcome::StartupFreeMemory;
  } else if (hardware_.host_ram_bytes > 0 && out.host_required_bytes > hardware_.host_ram_bytes) {
    out.outcome = Outcome::HostOomKilled;
  } else if (out.max_weights_bytes > startup_free_bytes_) {
    out.outcome = Outcome::OomAtLoad;
  } else if (out.max_graph_profiling_bytes > startup_free_bytes_) {
    out.outcome = Outcome::CudagraphProfilingOom;
  } else if ((out.min_kv_cache_bytes <= 0 && !out.kv_empty) ||
             (kv_fixed > 0 && out.max_weights_bytes + ranks_.front().non_torch_bytes + kv_fixed >
                                  startup_free_bytes_)) {
    // A fixed --kv-cache-memory-bytes is allocated as asked: it must fit beside the weights.
    out.outcome = Outcome::NoKvMemory;
  } else if (worst_request > out.min_kv_cache_bytes) {
    out.outcome = Outcome::InsufficientKvForMaxModelLen;
  } else if (tightest_margin > 0) {
    // Graphs captured after the allocation come first; then the sampler warm-up.
    const RankEvaluation t = evaluate_rank(static_cast<std::size_t>(out.tightest_rank), k);
    const std::int64_t graph_in_budget = profile_.cudagraph_in_budget ? t.cudagraph_bytes : 0;
    out.outcome = t.cudagraph_bytes > t.headroom_bytes + t.activation_peak_bytes + graph_in_budget
                      ? Outcome::CudagraphCaptureOom
                      : Outcome::SamplerWarmupOom;
  }
  return out;
}

std::int64_t CompiledLaunch::persistent_buffers_bytes(std::int64_t max_num_seqs) const noexcept {
  if (!model_runner_v2_) return 0;
  const std::int64_t vocab = spec_->vocab_size;
  return max_num_seqs * (vocab + ceil_div(vocab, 32)) * 4;
}

std::int64_t CompiledLaunch::graph_profiling_blocks(const ResolvedKnobs& k) const noexcept {
  const std::int64_t blocks =
      profile_.graph_profiling_blocks_bounded_by_max_num_seqs
          ? std::min<std::int64_t>(k.max_num_seqs, k.max_cudagraph_capture_size)
          : k.max_cudagraph_capture_size;
  return std::max<std::int64_t>(1, blocks);
}

std::int64_t CompiledLaunch::estimated_max_model_len(const Evaluation& e) const noexcept {
  const ResolvedKnobs& k = e.knobs;
  const std::size_t worst = static_cast<std::size_t>(e.worst_rank);
  const KvPage page = kv_page(ranks_[worst].kv, k.block_size, k.kv_element_bytes);
  return kv_max_model_len_that_fits(ranks_[worst].kv, page, e.min_kv_cache_bytes, k.max_model_len,
                                    k.max_num_batched_tokens);
}

std::int64_t CompiledLaunch::blocks_per_request(const ResolvedKnobs& k,
                                                std::int64_t context) const noexcept {
  std::int64_t worst = 0;
  for (const CompiledRank& rank : ranks_) {
    const KvPage page = kv_page(rank.kv, k.block_size, k.kv_element_bytes);
    worst =
        std::max(worst, kv_blocks_per_request(rank.kv, page, context, k.max_num_batched_tokens));
  }
  return worst;
}

HostBreakdown CompiledLaunch::host(const ResolvedKnobs& k) const {
  HostBreakdown h = host_;
  const std::int64_t workers = std::int64_t{config_.tensor_parallel_size} *
                               config_.pipeline_parallel_size * config_.data_parallel_size;
  h.input_batch_bytes = workers * 5 * k.max_num_seqs * k.max_model_len;
  h.required_bytes += h.input_batch_bytes;
  h.terms = {
      {"process_baseline", h.process_baseline_bytes,
       "calibrated: API server 1.5 GiB + 1.5 GiB per engine core (one per DP replica) + 3 GiB "
       "per worker (host-ram.md 6)"},
      {"loader_staging", h.loader_anonymous_bytes,
       lower(config_.safetensors_load_strategy) == "eager"
           ? "formula: one whole shard per worker (eager load, 5 GB shards)"
           : "formula: largest tensor per worker (memory-mapped safetensors)"},
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

Breakdown CompiledLaunch::breakdown(const LaunchKnobs& knobs) const {
  Breakdown b = startup_breakdown(knobs);
  b.messages.insert(b.messages.end(), multimodal_notes_.begin(), multimodal_notes_.end());
  return b;
}

Breakdown CompiledLaunch::startup_breakdown(const LaunchKnobs& knobs) const {
  const ResolvedKnobs k = resolve(knobs);
  const Evaluation e = evaluate(k);
  Breakdown b;
  b.model_id = spec_->id;
  b.gpu_id = hardware_.gpu.id;
  b.profile = profile_;
  b.model_runner_v2 = model_runner_v2_;
  ResolvedConfig& c = b.config;
  static_cast<ResolvedKnobs&>(c) = k;
  c.served_dtype = served_dtype_;
  c.quantization = quantization_;
  c.tensor_parallel_size = config_.tensor_parallel_size;
  c.pipeline_parallel_size = config_.pipeline_parallel_size;
  c.enforce_eager = config_.enforce_eager;
  c.chunked_prefill = profile_.chunked_prefill_default;
  const std::int64_t total = hardware_.gpu.total_memory_bytes;
  b.startup_free_bytes = startup_free_bytes_;
  b.num_blocks = e.num_blocks;
  b.kv_tokens = e.kv_tokens;
  b.max_concurrency = e.max_concurrency;
  b.request_kv_bytes = e.request_kv_bytes;
  b.outcome = e.outcome;
  b.host = host(k);
  const char* graph_note =
      profile_.cudagraph_in_budget
          ? "calibrated: base + per captured layer piece x capture sizes (inside the budget)"
      : model_runner_v2_
          ? "calibrated: base + per captured layer piece x capture sizes (Model Runner V2 before "
            "0.29 estimates no graphs: captured after KV allocation, outside the budget)"
          : "calibrated: base + per captured layer piece x capture sizes (captured after KV "
            "allocation, outside the budget)";
  const bool persistent_in_budget = model_runner_v2_ && profile_.consumed_budget_formula;
  const char* kv_note =
      profile_.cudagraph_in_budget
          ? (persistent_in_budget ? "budget: requested - weights - activation - non_torch - "
                                    "mrv2_persistent_buffers - cudagraph"
                                  : "budget: requested - weights - activation - non_torch - "
                                    "cudagraph")
          : (persistent_in_budget
                 ? "budget: requested - weights - activation - non_torch - mrv2_persistent_buffers"
                 : "budget: requested - weights - activation - non_torch");
  b.ranks.reserve(ranks_.size());
  for (std::size_t i = 0; i < ranks_.size(); ++i) {
    const CompiledRank& compiled = ranks_[i];
    const RankEvaluation r = evaluate_rank(i, k);
    RankBreakdown rank;
    rank.pipeline_rank = compiled.pipeline_rank;
    rank.total_memory_bytes = total;
    rank.requested_memory_bytes = r.requested_memory_bytes;
    rank.weights_bytes = compiled.weights_bytes;
    rank.lora_bytes = compiled.lora_bytes;
    rank.activation_peak_bytes = r.activation_peak_bytes;
    rank.mm_encoder_bytes = r.mm_encoder_bytes;
    rank.non_torch_bytes =
        compiled.non_torch_bytes + cached_activation_bytes(r.activation_peak_bytes);
    rank.cudagraph_bytes = r.cudagraph_bytes;
    rank.cuda_context_bytes = cuda_context_bytes_;
    rank.kv_cache_bytes = r.kv_cache_bytes;
    rank.kv_layout = kv_layout(compiled.kv, r.page);
    rank.kv_bytes_per_token = r.page.bytes_per_token;
    rank.num_blocks = r.num_blocks;
    rank.headroom_bytes = r.headroom_bytes;
    rank.post_allocation_bytes = r.post_allocation_bytes;
    rank.persistent_buffers_bytes = r.persistent_buffers_bytes;
    // The all-to-all's shares of the activation peak and of non-torch memory, shown apart.
    std::int64_t dispatch = 0;
    if (all2all_exchange_) {
      const std::int64_t requests = std::min(k.max_num_seqs, k.max_num_batched_tokens);
      ActivationModel gathered_apart = compiled.activation;
      gathered_apart.dispatch_replicas = 1;
      std::int64_t without =
          activation_peak_bytes(gathered_apart, sampler_, k.max_num_batched_tokens, requests);
      if (compiled.draft_activation) {
        without = std::max(without, activation_peak_bytes(*compiled.draft_activation, sampler_,
                                                          k.max_num_batched_tokens, requests));
      }
      dispatch = rank.activation_peak_bytes - without;
    }
    rank.terms = {
        {"weights", rank.weights_bytes,
         "exact: the spec's tensors in their stored format + rotary cos/sin cache (+ LoRA "
         "slots, drafter; less CPU offload)"},
        {"activation_peak", rank.activation_peak_bytes - dispatch,
         "formula + calibrated: forward of max_num_batched_tokens, fused-MoE workspace, sampler "
         "on requests x vocab logits"},
        {"non_torch", rank.non_torch_bytes - compiled.all2all_buffer_bytes,
         "calibrated: cuBLAS/attention workspaces; NCCL (+ custom all-reduce) buffers at TP>=2"},
        {"cudagraph", rank.cudagraph_bytes, graph_note},
        {"kv_cache", rank.kv_cache_bytes, kv_note},
        {"cuda_context", cuda_context_bytes_,
         "calibrated: CUDA context (+ NCCL), outside the budget"},
    };
    if (all2all_exchange_) {
      rank.terms.insert(
          rank.terms.begin() + 2,
          {"all2all_dispatch", dispatch,
           "formula (activation peak): DP dispatch gathers dp x T tokens into each MoE layer: "
           "hidden states, router logits, expert output, fused-MoE workspace"});
      rank.terms.insert(rank.terms.begin() + 4,
                        {"all2all_buffers", compiled.all2all_buffer_bytes,
                         "formula (non-torch): DeepEP NVLink buffer (VLLM_DEEPEP_BUFFER_SIZE_MB) "
                         "+ 32 MiB workspace [+ low-latency RDMA size hint], or pplx intranode "
                         "buffers, made after load"});
    }
    if (model_runner_v2_) {
      rank.terms.insert(
          rank.terms.begin() + 2,
          {"mrv2_persistent_buffers", rank.persistent_buffers_bytes,
           profile_.consumed_budget_formula
               ? "formula: Model Runner V2 sampler state, max_num_seqs x (vocab + vocab/32) x 4 B "
                 "(inside the budget: 0.27+ counts memory consumed since the init snapshot)"
               : "formula: Model Runner V2 sampler state, max_num_seqs x (vocab + vocab/32) x 4 B "
                 "(held but outside the budget before 0.27: it comes out of the headroom)"});
    }
    if (spec_->vision.num_parameters > 0) {
      // Shown apart, and taken out of activation_peak so the stacked terms still add up.
      rank.terms[1].bytes -= rank.mm_encoder_bytes;
      rank.terms.insert(
          rank.terms.begin() + 2,
          {"mm_encoder", rank.mm_encoder_bytes,
           "formula: profile run's multimodal encoder: max(encoder forward, encoder cache "
           "(items x tokens per image x hidden) + the text peak) + pixel inputs, less the text "
           "peak; items from the encoder budget (0: every modality limited to 0)"});
    }
    b.ranks.push_back(std::move(rank));
  }

  // What vLLM prints for a failure.
  const std::int64_t requested = b.ranks.front().requested_memory_bytes;
  switch (e.outcome) {
    case Outcome::StartupFreeMemory:
      b.messages.push_back(
          "Free memory on device (" + gib_text(startup_free_bytes_) + "/" + gib_text(total) +
          " GiB) on startup is less than desired GPU memory utilization (" +
          std::to_string(k.gpu_memory_utilization) + ", " + gib_text(requested) + " GiB).");
      return b;
    case Outcome::HostOomKilled:
      b.messages.push_back("Host RAM exhausted while loading: " + gib_text(e.host_required_bytes) +
                           " GiB of anonymous and pinned memory needed, " +
                           gib_text(hardware_.host_ram_bytes) +
                           " GiB on the host. The kernel OOM killer ends the process (`Killed`, "
                           "visible in dmesg).");
      return b;
    case Outcome::OomAtLoad:
      b.messages.push_back(
          "CUDA out of memory while loading weights: " + gib_text(e.max_weights_bytes) +
          " GiB per rank, " + gib_text(startup_free_bytes_) + " GiB free.");
      return b;
    case Outcome::CudagraphProfilingOom: {
      const RankBreakdown& first = b.ranks.front();
      const std::int64_t blocks = graph_profiling_blocks(k);
      const std::int64_t minimal_kv =
          blocks * first.kv_layout.page_bytes * first.kv_layout.group_size;
      b.messages.push_back(
          "CUDA out of memory profiling CUDA graphs (profile_cudagraph_memory -> "
          "_init_minimal_kv_cache_for_profiling): a minimal KV cache of " +
          std::to_string(blocks) + " blocks of " + std::to_string(first.kv_layout.block_size) +
          " tokens (" + gib_text(minimal_kv) + " GiB) beside " + gib_text(e.max_weights_bytes) +
          " GiB of weights and " + gib_text(first.cudagraph_bytes) + " GiB of graphs; " +
          gib_text(startup_free_bytes_) +
          " GiB free. This happens before the KV budget: lowering gpu_memory_utilization cannot "
          "help. Lower max_num_seqs (fewer capture sizes), fewer speculative tokens, or "
          "--enforce-eager.");
      return b;
    }
    case Outcome::NoKvMemory:
      if (config_.kv_cache_memory_bytes && e.min_kv_cache_bytes > 0) {
        b.messages.push_back("CUDA out of memory allocating the KV cache: kv_cache_memory_bytes " +
                             gib_text(*config_.kv_cache_memory_bytes) + " GiB beside " +
                             gib_text(e.max_weights_bytes) + " GiB of weights, " +
                             gib_text(startup_free_bytes_) + " GiB free.");
      } else {
        b.messages.push_back("No available memory for the cache blocks (" +
                             gib_text(e.min_kv_cache_bytes) +
                             " GiB). Try increasing `gpu_memory_utilization`.");
      }
      return b;
    default:
      break;
  }
  b.estimated_max_model_len = estimated_max_model_len(e);
  if (e.outcome == Outcome::InsufficientKvForMaxModelLen) {
    std::string msg = "To serve at least one request with the model's max seq len (" +
                      std::to_string(k.max_model_len) + "), (" + gib_text(e.request_kv_bytes) +
                      " GiB KV cache is needed, which is larger than the available KV cache "
                      "memory (" +
                      gib_text(e.min_kv_cache_bytes) + " GiB).";
    if (b.estimated_max_model_len > 0) {
      msg += " Based on the available memory, the estimated maximum model length is " +
             std::to_string(b.estimated_max_model_len) + ".";
    }
    b.messages.push_back(msg);
  } else if (e.outcome == Outcome::CudagraphCaptureOom || e.outcome == Outcome::SamplerWarmupOom) {
    const RankBreakdown& tightest = b.ranks[static_cast<std::size_t>(e.tightest_rank)];
    if (e.outcome == Outcome::CudagraphCaptureOom) {
      b.messages.push_back(
          "CUDA out of memory capturing CUDA graphs: " + gib_text(tightest.cudagraph_bytes) +
          " GiB needed after the KV cache allocation.");
    } else {
      b.messages.push_back(
          "CUDA out of memory occurred when warming up sampler with " +
          std::to_string(std::min(k.max_num_seqs, k.max_num_batched_tokens)) +
          " dummy requests: " + gib_text(tightest.post_allocation_bytes - tightest.headroom_bytes) +
          " GiB short after the KV cache and graphs. Lower max_num_seqs or "
          "gpu_memory_utilization.");
    }
  }
  return b;
}

Breakdown compute_breakdown(const ModelSpec& spec, const HardwareConfig& hardware,
                            const EngineConfig& config) {
  const CompiledLaunch launch(std::make_shared<const ModelSpec>(spec), hardware, config);
  return launch.breakdown(launch_knobs(config));
}

}  // namespace vramplan
