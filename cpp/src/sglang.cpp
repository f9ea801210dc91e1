// SGLang's startup memory, per rank: default f, baseline, KV pool, slack consumers, verdict,
// and the solver for the largest safe knobs. Rules come from model_specs/sglang.yaml.
#include "vramplan/sglang.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "json_optional.hpp"
#include "vramplan/dtype.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/kv_cache.hpp"
#include "vramplan/render.hpp"
#include "vramplan/solver.hpp"
#include "vramplan/weights.hpp"

namespace vramplan {
namespace {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;
constexpr std::int64_t kMaxContext = std::int64_t{1} << 31;

std::int64_t mib_to_bytes(double mib) {
  return static_cast<std::int64_t>(std::llround(mib * kMiB));
}

std::string format_fraction(double f) {
  std::ostringstream out;
  out.precision(3);
  out << std::fixed << f;
  return out.str();
}

// One pipeline stage's fixed terms (weights and per-token cells do not depend on the knobs
// the solver moves).
struct Stage {
  std::int32_t pipeline_rank = 0;
  std::int64_t weights_bytes = 0;
  std::int64_t full_cell_bytes = 0;  // full-attention / MLA layers, per token
  std::int64_t k_bytes_per_token = 0;
  std::int64_t swa_cell_bytes = 0;  // sliding-window layers, per token
  std::int64_t mamba_bytes_per_slot = 0;
};

struct Prepared {
  const ModelSpec* spec = nullptr;
  const GpuSpec* gpu = nullptr;
  const SglangRules* rules = nullptr;
  std::int64_t gpu_mib = 0;
  bool gpu_mib_assumed = false;
  std::int32_t kv_element_bytes = 2;
  std::int32_t served_bytes = 2;
  std::int64_t cuda_context_bytes = 0;
  std::int64_t nccl_bytes = 0;
  std::int64_t baseline_free_bytes = 0;
  std::vector<Stage> stages;
  std::vector<std::string> notes;
};

constexpr double kGiB = static_cast<double>(std::int64_t{1} << 30);

std::string gib_text(std::int64_t bytes) {
  std::ostringstream out;
  out.precision(2);
  out << std::fixed << static_cast<double>(bytes) / kGiB << " GiB";
  return out.str();
}

void check_range(const char* field, std::int64_t value, std::int64_t low, std::int64_t high) {
  if (value < low || value > high) {
    throw ConfigError(field, std::to_string(value),
                      std::to_string(low) + ".." + std::to_string(high), "out of range");
  }
}

void validate(const SglangConfig& c, const ModelSpec& spec) {
  check_range("tp_size", c.tp_size, 1, 1024);
  check_range("pp_size", c.pp_size, 1, 1024);
  check_range("dp_size", c.dp_size, 1, 1024);
  // SGLang's tensor-parallel layers split the query heads and the state-space mixers as vLLM's
  // do (its model loaders assert it); a split that does not divide them never starts.
  if (const auto unsplit = tensor_parallel_split_problem(spec, c.tp_size)) {
    throw ConfigError("tp_size", std::to_string(c.tp_size),
                      "a divisor of " + unsplit->field + " " + std::to_string(unsplit->value),
                      unsplit->why + " across the ranks");
  }
  // vLLM caches MiniCPM3's K and V per head (the spec's layers); SGLang serves it as MLA with a
  // latent cache, a layout this spec does not describe.
  if (spec.has_mla && !spec.mla.latent_kv_cache) {
    throw ConfigError("model_type", spec.model_type, "a model SGLang caches as this spec says",
                      "SGLang caches this model's MLA latent, the spec vLLM's per-head K and V");
  }
  // An encoder-decoder's cross-attention cache (Whisper): SGLang's pools for it are not modelled.
  if (std::any_of(spec.layers.begin(), spec.layers.end(), [](const LayerSpec& layer) {
        return layer.beside == AttentionKind::CrossAttention;
      })) {
    throw ConfigError("model_type", spec.model_type, "a decoder-only model",
                      "SGLang's cache of the encoder output (cross-attention) is not modelled");
  }
  if (c.pp_size > spec.num_hidden_layers) {
    throw ConfigError("pp_size", std::to_string(c.pp_size),
                      "1.." + std::to_string(spec.num_hidden_layers),
                      "more pipeline stages than layers");
  }
  if (c.mem_fraction_static && !(*c.mem_fraction_static > 0.0 && *c.mem_fraction_static < 1.0)) {
    throw ConfigError("mem_fraction_static", std::to_string(*c.mem_fraction_static), "(0, 1)",
                      "out of range");
  }
  if (c.max_running_requests)
    check_range("max_running_requests", *c.max_running_requests, 1, 1 << 24);
  if (c.context_length) check_range("context_length", *c.context_length, 1, kMaxContext);
  if (c.chunked_prefill_size && *c.chunked_prefill_size != -1) {
    check_range("chunked_prefill_size", *c.chunked_prefill_size, 1, 1 << 24);
  }
  if (c.cuda_graph_max_bs) check_range("cuda_graph_max_bs", *c.cuda_graph_max_bs, 1, 1 << 16);
  if (c.max_total_tokens)
    check_range("max_total_tokens", *c.max_total_tokens, 1, std::int64_t{1} << 40);
  check_range("max_prefill_tokens", c.max_prefill_tokens, 1, 1 << 24);
  if (c.page_size) check_range("page_size", *c.page_size, 1, 1024);
  if (c.swa_full_tokens_ratio &&
      !(*c.swa_full_tokens_ratio > 0.0 && *c.swa_full_tokens_ratio <= 1.0)) {
    throw ConfigError("swa_full_tokens_ratio", std::to_string(*c.swa_full_tokens_ratio), "(0, 1]",
                      "out of range");
  }
  if (c.mamba_full_memory_ratio &&
      !(*c.mamba_full_memory_ratio > 0.0 && *c.mamba_full_memory_ratio <= 100.0)) {
    throw ConfigError("mamba_full_memory_ratio", std::to_string(*c.mamba_full_memory_ratio),
                      "(0, 100]", "out of range");
  }
}

std::int32_t kv_element_bytes_of(const std::string& kv_cache_dtype, std::int32_t served_bytes) {
  if (kv_cache_dtype == "auto") return served_bytes;
  if (kv_cache_dtype == "bf16" || kv_cache_dtype == "bfloat16" || kv_cache_dtype == "fp16" ||
      kv_cache_dtype == "float16") {
    return 2;
  }
  if (kv_cache_dtype == "fp8_e4m3" || kv_cache_dtype == "fp8_e5m2") return 1;
  throw ConfigError("kv_cache_dtype", kv_cache_dtype, "auto, bf16, fp16, fp8_e4m3, fp8_e5m2",
                    "not a KV cache dtype vramplan models for SGLang");
}

// One cache layer's cells (a decoder layer's attention or mixer, or the cache beside it).
void add_layer_cells(const ModelSpec& spec, const LayerSpec& layer, const KvCacheOptions& options,
                     std::int32_t tp, Stage& s) {
  switch (layer.attention) {
    case AttentionKind::Full:
    case AttentionKind::ChunkedLocal:
    case AttentionKind::Mla: {
      s.full_cell_bytes += kv_layer_bytes_per_token(spec, layer, options);
      if (layer.attention == AttentionKind::Mla) {
        s.k_bytes_per_token += kv_layer_bytes_per_token(spec, layer, options);
      } else {
        const std::int64_t heads = std::max<std::int64_t>(1, layer.num_key_value_heads / tp);
        s.k_bytes_per_token += heads * layer.head_dim * options.kv_element_bytes;
      }
      break;
    }
    case AttentionKind::SlidingWindow:
      s.swa_cell_bytes += kv_layer_bytes_per_token(spec, layer, options);
      break;
    case AttentionKind::Mamba:
    case AttentionKind::LinearAttention:
      s.mamba_bytes_per_slot += mamba_state_bytes(spec, layer, options);
      break;
    case AttentionKind::CrossAttention:  // refused in validate
    case AttentionKind::None:
      break;
  }
}

Prepared prepare(const ModelSpec& spec, const GpuSpec& gpu, const SglangRules& rules,
                 const SglangConfig& config) {
  validate(config, spec);
  check_sglang_hicache_config(rules, config);
  Prepared p;
  p.spec = &spec;
  p.gpu = &gpu;
  p.rules = &rules;
  p.gpu_mib = gpu.nvidia_smi_memory_mib;
  if (p.gpu_mib == 0) {
    p.gpu_mib = gpu.total_memory_bytes / kMiB;
    p.gpu_mib_assumed = true;
    p.notes.push_back("nvidia-smi's memory total of " + gpu.id +
                      " is not in gpus.yaml: SGLang's defaults were computed from the CUDA "
                      "total, " +
                      std::to_string(p.gpu_mib) +
                      " MiB (nvidia-smi reports a few hundred MiB more)");
  }
  // SGLang serves fp32 checkpoints in bf16 (dtype "auto").
  const DType served = spec.torch_dtype == DType::F32 ? DType::BF16 : spec.torch_dtype;
  p.served_bytes = dtype_info(served).block_bytes;
  p.kv_element_bytes = kv_element_bytes_of(config.kv_cache_dtype, p.served_bytes);

  p.cuda_context_bytes = rules.cuda_context_bytes;
  if (config.tp_size * config.pp_size > 1) {
    p.nccl_bytes = gpu.pcie_only ? rules.nccl_pcie_bytes : rules.nccl_nvlink_bytes;
  }
  p.baseline_free_bytes = gpu.total_memory_bytes - p.cuda_context_bytes - p.nccl_bytes;

  KvCacheOptions options;
  options.tensor_parallel_size = config.tp_size;
  options.kv_element_bytes = p.kv_element_bytes;
  options.state_element_bytes = p.served_bytes;
  options.ssm_state_element_bytes = 4;  // --mamba-ssm-dtype default float32
  for (std::int32_t stage = 0; stage < config.pp_size; ++stage) {
    RankPlacement placement;
    placement.tensor_parallel_size = config.tp_size;
    placement.pipeline_parallel_size = config.pp_size;
    placement.pipeline_rank = stage;
    Stage s;
    s.pipeline_rank = stage;
    s.weights_bytes = weight_bytes_per_rank(spec, spec.quantization, served, placement).total();
    const LayerRange range = pipeline_layer_range(spec.num_hidden_layers, config.pp_size, stage);
    options.layers = range;
    for (std::int32_t i = range.begin; i < range.end; ++i) {
      const LayerSpec& layer = spec.layers[static_cast<std::size_t>(i)];
      add_layer_cells(spec, layer, options, config.tp_size, s);
      if (layer.beside != AttentionKind::None) {
        add_layer_cells(spec, beside_cache(layer), options, config.tp_size, s);
      }
    }
    p.stages.push_back(s);
  }
  for (const LayerSpec& layer : spec.layers) {
    if (layer.attention == AttentionKind::ChunkedLocal) {
      p.notes.push_back("chunked-local attention layers are counted as full-attention layers");
      break;
    }
  }
  return p;
}

// Activation bytes of one chunked-prefill forward (an estimate, docs/sglang.md): the residual,
// normed input, attention output and a spare of hidden size, and the MLP's gate/up output.
std::int64_t activation_estimate(const ModelSpec& spec, std::int64_t tokens, std::int32_t tp,
                                 std::int32_t served_bytes) {
  std::int64_t intermediate = spec.intermediate_size;
  if (spec.has_moe) {
    intermediate =
        static_cast<std::int64_t>(spec.moe.num_experts_per_tok) * spec.moe.moe_intermediate_size +
        static_cast<std::int64_t>(spec.moe.num_shared_experts) *
            spec.moe.shared_expert_intermediate_size;
  }
  const std::int64_t per_token =
      4 * static_cast<std::int64_t>(spec.hidden_size) + 2 * intermediate / std::max(1, tp);
  return tokens * per_token * served_bytes;
}

std::string weights_error_text(const SglangRules& rules, double f, std::int64_t free_bytes,
                               std::int64_t baseline_bytes) {
  if (rules.weights_error == SglangWeightsError::NotEnoughMemory) {
    return "Not enough memory. Please try to increase --mem-fraction-static.";
  }
  const double minimum =
      1.0 - static_cast<double>(free_bytes) / static_cast<double>(baseline_bytes);
  const double suggested = std::ceil(minimum * 1000.0) / 1000.0;
  std::ostringstream out;
  out << "Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=" << f
      << ". Raise --mem-fraction-static above " << format_fraction(suggested)
      << " (minimum viable = 1 - available/pre = ";
  out.precision(4);
  out << std::fixed << minimum << ").";
  return out.str();
}

// How many sizes sglang_ladder(ladder, max_size) captures, without building the list.
std::int64_t ladder_count(const std::vector<SglangLadderStep>& ladder,
                          std::int64_t max_size) noexcept {
  std::int64_t count = 0;
  for (const SglangLadderStep& s : ladder) {
    const std::int64_t top = std::min(s.end, max_size);
    if (top >= s.start) count += (top - s.start) / s.step + 1;
  }
  return count;
}

// evaluate_stage_numbers' steps below write into its `b` and allocate nothing; a step that
// returns false has found the stage cannot start (the caller sets the verdict).

// The GPU tier's defaults: chunked prefill size, the decode-graph batch ceiling and how many
// prefill graphs are captured.
void graph_and_chunk_defaults(const Prepared& p, const SglangConfig& c,
                              SglangBreakdown& b) noexcept {
  const SglangRules& rules = *p.rules;
  const SglangMemoryTier& tier = sglang_memory_tier(rules, p.gpu_mib);
  b.chunked_prefill_size = c.chunked_prefill_size.value_or(tier.chunked_prefill_size);
  if (c.disable_cuda_graph) {
    b.cuda_graph_max_bs = 0;
  } else if (c.cuda_graph_max_bs) {
    b.cuda_graph_max_bs = *c.cuda_graph_max_bs;
  } else {
    b.cuda_graph_max_bs =
        c.tp_size < rules.large_tp_size ? tier.graph_max_bs_small_tp : tier.graph_max_bs_large_tp;
    if (c.max_running_requests && *c.max_running_requests < b.cuda_graph_max_bs) {
      b.cuda_graph_max_bs = static_cast<std::int32_t>(*c.max_running_requests);
    }
  }
  if (rules.prefill_graphs && !c.disable_cuda_graph && b.chunked_prefill_size > 0) {
    std::int64_t max_tokens = b.chunked_prefill_size;
    if (b.mla && rules.mla_prefill_graph_max_tokens > 0) {
      max_tokens = std::min(max_tokens, rules.mla_prefill_graph_max_tokens);
    }
    b.prefill_graph_count = ladder_count(rules.prefill_graph_ladder, max_tokens);
  }
}

// f: the configured mem_fraction_static or the release's default formula.
void static_memory_fraction(const Prepared& p, const SglangConfig& c, SglangBreakdown& b) noexcept {
  if (c.mem_fraction_static) {
    b.mem_fraction_static = *c.mem_fraction_static;
    return;
  }
  SglangFractionInputs in;
  in.gpu_mib = p.gpu_mib;
  in.tp_size = c.tp_size;
  in.pp_size = c.pp_size;
  in.chunked_prefill_size = b.chunked_prefill_size;
  in.max_prefill_tokens = c.max_prefill_tokens;
  in.decode_graph_max_bs = b.cuda_graph_max_bs;
  in.decode_graphs = b.cuda_graph_max_bs > 0;
  in.prefill_graph_count = b.prefill_graph_count;
  in.mla = b.mla;
  b.mem_fraction_static = sglang_default_mem_fraction_static(*p.rules, in);
  b.mem_fraction_static_default = true;
}

// Baseline, weights and the pool's budget (slack, rest); false if the weights leave nothing.
bool pool_budget(const Prepared& p, const Stage& stage, SglangBreakdown& b) noexcept {
  b.cuda_context_bytes = p.cuda_context_bytes;
  b.nccl_bytes = p.nccl_bytes;
  b.baseline_free_bytes = p.baseline_free_bytes;
  b.weights_bytes = stage.weights_bytes;
  b.free_after_weights_bytes = b.baseline_free_bytes - b.weights_bytes;
  SglangByteTerms terms;
  terms.baseline_free_bytes = b.baseline_free_bytes;
  terms.free_after_weights_bytes = b.free_after_weights_bytes;
  terms.mem_fraction_static = b.mem_fraction_static;
  const SglangKvBudget budget = sglang_kv_budget(*p.rules, terms);
  b.slack_bytes = budget.slack_bytes;
  b.rest_bytes = budget.rest_bytes;
  b.cell_bytes = stage.full_cell_bytes;
  b.k_bytes_per_token = stage.k_bytes_per_token;
  b.v_bytes_per_token = b.mla ? 0 : stage.full_cell_bytes - stage.k_bytes_per_token;
  b.mamba_state_bytes_per_slot = stage.mamba_bytes_per_slot;
  b.free_after_pool_bytes = b.free_after_weights_bytes;
  return b.rest_bytes > 0;
}

// Hybrid Mamba / linear attention: the state pool comes out of the rest first (`kv_rest` is
// what it leaves); false if no slot fits.
bool mamba_state_pool(const Prepared& p, const Stage& stage, const SglangConfig& c,
                      SglangBreakdown& b, std::int64_t& kv_rest) noexcept {
  kv_rest = b.rest_bytes;
  if (stage.mamba_bytes_per_slot <= 0) return true;
  const double m = c.mamba_full_memory_ratio.value_or(p.rules->mamba_full_memory_ratio_default);
  const double mamba_budget = static_cast<double>(b.rest_bytes) * m / (1.0 + m);
  const double per_slot = static_cast<double>(stage.mamba_bytes_per_slot);
  b.mamba_slots = static_cast<std::int64_t>(std::floor((mamba_budget - per_slot) / per_slot));
  if (b.mamba_slots <= 0) return false;
  b.mamba_pool_bytes = (b.mamba_slots + 1) * stage.mamba_bytes_per_slot;
  kv_rest -= b.mamba_pool_bytes;
  return true;
}

// Tokens from the KV pool's bytes (full and sliding-window layers, page-aligned, under
// max_total_tokens) and the pool's size; false if no token fits.
bool kv_pool_tokens(const Prepared& p, const Stage& stage, const SglangConfig& c,
                    std::int64_t kv_rest, SglangBreakdown& b) noexcept {
  const SglangRules& rules = *p.rules;
  const std::int64_t page = b.page_size;
  if (stage.full_cell_bytes + stage.swa_cell_bytes > 0 && kv_rest > 0) {
    if (stage.swa_cell_bytes > 0) {
      const double r = c.swa_full_tokens_ratio.value_or(rules.swa_full_tokens_ratio_default);
      const double cell = static_cast<double>(stage.full_cell_bytes) +
                          r * static_cast<double>(stage.swa_cell_bytes);
      b.cell_bytes = static_cast<std::int64_t>(std::llround(cell));
      const auto full = static_cast<std::int64_t>(std::floor(static_cast<double>(kv_rest) / cell));
      b.max_total_num_tokens = full / page * page;
      b.swa_tokens =
          static_cast<std::int64_t>(std::floor(r * static_cast<double>(b.max_total_num_tokens))) /
          page * page;
    } else {
      b.max_total_num_tokens = kv_rest / stage.full_cell_bytes / page * page;
    }
  }
  if (c.max_total_tokens && *c.max_total_tokens < b.max_total_num_tokens) {
    b.max_total_num_tokens = *c.max_total_tokens / page * page;
    if (b.swa_tokens > 0) {
      const double r = c.swa_full_tokens_ratio.value_or(rules.swa_full_tokens_ratio_default);
      b.swa_tokens =
          static_cast<std::int64_t>(std::floor(r * static_cast<double>(b.max_total_num_tokens))) /
          page * page;
    }
  }
  if (b.max_total_num_tokens <= 0) {
    b.max_total_num_tokens = 0;
    return false;
  }
  const std::int64_t padding = rules.kv_padding_page ? page : 0;
  const std::int64_t full_rows = b.max_total_num_tokens + padding;
  b.k_size_bytes = full_rows * stage.k_bytes_per_token;
  b.v_size_bytes = full_rows * b.v_bytes_per_token;
  b.kv_pool_bytes = full_rows * stage.full_cell_bytes +
                    (b.swa_tokens > 0 ? (b.swa_tokens + padding) * stage.swa_cell_bytes : 0);
  return true;
}

// Running requests, the req_to_token table and what the pools leave; false if no request runs.
bool running_requests(const Prepared& p, const SglangConfig& c, SglangBreakdown& b) noexcept {
  const SglangRules& rules = *p.rules;
  const std::int64_t tokens = b.max_total_num_tokens;
  const std::int64_t estimate = std::clamp<std::int64_t>(
      static_cast<std::int64_t>(static_cast<double>(tokens) /
                                static_cast<double>(b.context_length) *
                                static_cast<double>(rules.req_pool_requests_per_context)),
      rules.req_pool_min_requests, rules.req_pool_max_requests);
  std::int64_t pool_requests = 0;
  if (rules.running_requests_rule == SglangRunningRequestsRule::HalfTokens) {
    b.max_running_requests = std::min(c.max_running_requests.value_or(estimate), tokens / 2);
    pool_requests = b.max_running_requests;
  } else {
    pool_requests = c.max_running_requests.value_or(estimate);
    b.max_running_requests =
        std::min(c.max_running_requests.value_or(tokens / 2), pool_requests + 1);
  }
  if (b.mamba_slots > 0) {
    b.max_running_requests =
        std::min(b.max_running_requests, b.mamba_slots / rules.mamba_slots_per_request);
  }
  if (b.max_running_requests <= 0) return false;
  b.req_to_token_bytes = (pool_requests + 1) *
                         (b.context_length + rules.req_to_token_extra_columns) *
                         rules.req_to_token_element_bytes;
  b.free_after_pool_bytes =
      b.free_after_weights_bytes - b.kv_pool_bytes - b.mamba_pool_bytes - b.req_to_token_bytes;
  return true;
}

// What the slack must still hold (graphs, the first prefill's activation) and the verdict.
void graphs_and_first_prefill(const Prepared& p, const SglangConfig& c,
                              SglangBreakdown& b) noexcept {
  const SglangRules& rules = *p.rules;
  const std::int32_t graph_bs = b.cuda_graph_max_bs > 0
                                    ? static_cast<std::int32_t>(std::min<std::int64_t>(
                                          b.cuda_graph_max_bs, b.max_running_requests))
                                    : 0;
  b.decode_graph_bytes = mib_to_bytes(rules.decode_graph_estimate_mib_per_bs * graph_bs);
  b.prefill_graph_bytes = mib_to_bytes(rules.prefill_graph_estimate_mib_per_size *
                                       static_cast<double>(b.prefill_graph_count));
  const std::int64_t prefill_tokens =
      b.chunked_prefill_size > 0 ? b.chunked_prefill_size : c.max_prefill_tokens;
  b.activation_bytes = activation_estimate(*p.spec, prefill_tokens, c.tp_size, p.served_bytes);
  b.free_after_graphs_bytes =
      b.free_after_pool_bytes - b.decode_graph_bytes - b.prefill_graph_bytes;
  if (b.free_after_graphs_bytes < 0) {
    b.verdict = SglangVerdict::OomGraphCapture;
  } else if (b.free_after_graphs_bytes < b.activation_bytes) {
    b.verdict = SglangVerdict::OomFirstPrefill;
  } else {
    b.verdict = SglangVerdict::Started;
  }
}

// HiCache's host pools, built after the CUDA graphs and before the first prefill (the
// scheduler's tree cache); a refusal stops the launch there.
void hicache_pools(const Prepared& p, const Stage& stage, const SglangConfig& c,
                   SglangBreakdown& b) noexcept {
  if (!c.enable_hierarchical_cache ||
      (b.verdict != SglangVerdict::Started && b.verdict != SglangVerdict::OomFirstPrefill)) {
    return;
  }
  SglangHicacheDevice d;
  d.full_tokens = b.max_total_num_tokens;
  d.full_bytes_per_token = stage.full_cell_bytes;
  d.full_pool_bytes = b.k_size_bytes + b.v_size_bytes;
  d.swa_tokens = b.swa_tokens;
  d.swa_bytes_per_token = stage.swa_cell_bytes;
  d.swa_pool_bytes = b.kv_pool_bytes - d.full_pool_bytes;
  d.mamba_slots = b.mamba_slots;
  d.mamba_bytes_per_slot = b.mamba_state_bytes_per_slot;
  d.mamba_pool_bytes = b.mamba_pool_bytes;
  d.page_size = b.page_size;
  d.ranks_per_node = std::max(c.tp_size * c.pp_size * c.dp_size / c.nnodes, 1);
  b.hicache = sglang_hicache(*p.rules, c, d);
  if (b.hicache.refusal != SglangHicacheRefusal::None) b.verdict = SglangVerdict::HicacheRefused;
}

// The numbers and the verdict of one stage into `b` (default-constructed): no text and no heap
// allocation, so that a sweep evaluates its points without allocating.
void evaluate_stage_numbers(const Prepared& p, const Stage& stage, const SglangConfig& c,
                            SglangBreakdown& b) noexcept {
  const SglangRules& rules = *p.rules;
  const ModelSpec& spec = *p.spec;
  b.tp_size = c.tp_size;
  b.pp_size = c.pp_size;
  b.dp_size = c.dp_size;
  b.pipeline_rank = stage.pipeline_rank;
  b.gpu_total_bytes = p.gpu->total_memory_bytes;
  b.gpu_mib = p.gpu_mib;
  b.gpu_mib_assumed = p.gpu_mib_assumed;
  b.mla = spec.has_mla;
  b.kv_element_bytes = p.kv_element_bytes;
  b.page_size = c.page_size.value_or(rules.page_size_default);
  b.context_length = c.context_length.value_or(spec.max_position_embeddings);
  graph_and_chunk_defaults(p, c, b);
  static_memory_fraction(p, c, b);
  if (!pool_budget(p, stage, b)) {
    b.verdict = SglangVerdict::WeightsLeaveNoMemory;
    return;
  }
  std::int64_t kv_rest = 0;
  if (!mamba_state_pool(p, stage, c, b, kv_rest) || !kv_pool_tokens(p, stage, c, kv_rest, b) ||
      !running_requests(p, c, b)) {
    b.verdict = SglangVerdict::NotEnoughMemory;
    return;
  }
  graphs_and_first_prefill(p, c, b);
  hicache_pools(p, stage, c, b);
}

// SGLang's own error text for a failing verdict.
std::string verdict_error(const Prepared& p, const SglangBreakdown& b, const SglangConfig& c) {
  const SglangRules& rules = *p.rules;
  switch (b.verdict) {
    case SglangVerdict::Started:
      return "";
    case SglangVerdict::WeightsLeaveNoMemory:
      return weights_error_text(rules, b.mem_fraction_static, b.free_after_weights_bytes,
                                b.baseline_free_bytes);
    case SglangVerdict::NotEnoughMemory:
      if (b.mamba_state_bytes_per_slot > 0 && b.mamba_slots <= 0) {
        return "Not enough GPU memory for hybrid (mamba/linear-attention) state cache.";
      }
      return rules.weights_error == SglangWeightsError::NotEnoughMemory
                 ? std::string("Not enough memory. Please try to increase --mem-fraction-static.")
                 : "Not enough memory. Please try to increase --mem-fraction-static. Current "
                   "value: " +
                       format_fraction(b.mem_fraction_static);
    case SglangVerdict::OomGraphCapture:
      return "Capture cuda graph failed: CUDA out of memory. Possible solutions: 1. set "
             "--mem-fraction-static to a smaller value (e.g., 0.8 or 0.7) 2. set "
             "--cuda-graph-max-bs to a smaller value (e.g., 16) 3. disable torch compile by not "
             "using --enable-torch-compile 4. disable CUDA graph by --disable-cuda-graph.";
    case SglangVerdict::OomFirstPrefill: {
      const std::int64_t prefill_tokens =
          b.chunked_prefill_size > 0 ? b.chunked_prefill_size : c.max_prefill_tokens;
      return "CUDA out of memory (a " + std::to_string(prefill_tokens) +
             "-token chunked prefill is estimated to need more than the slack left after the "
             "CUDA graphs)";
    }
    case SglangVerdict::HicacheRefused:
      return sglang_hicache_error(b.hicache);
  }
  return "";
}

// What the HiCache figures assume, and the host they need beyond SGLang's own check.
void hicache_notes(const SglangRules& rules, const SglangConfig& c, SglangBreakdown& b) {
  if (!c.enable_hierarchical_cache) {
    if (c.hicache_ratio || c.hicache_size_gb > 0 || !c.hicache_mem_layout.empty()) {
      b.notes.emplace_back(
          "--hicache-ratio, --hicache-size and --hicache-mem-layout have no effect without "
          "--enable-hierarchical-cache: no host pool is planned");
    }
    return;
  }
  b.hicache_mem_layout = !c.hicache_mem_layout.empty()       ? c.hicache_mem_layout
                         : rules.hicache_mem_layouts.empty() ? std::string("layer_first")
                                                             : rules.hicache_mem_layouts.front();
  const SglangHicache& h = b.hicache;
  if (!h.enabled) return;  // the launch failed before the host pools
  if (!c.host_mem_available_bytes) {
    b.notes.emplace_back(
        "host_mem_available_bytes not given: SGLang's HiCache host-memory check is not "
        "reproduced" +
        std::string(rules.hicache_host_memory_fraction_default > 0.0 && !c.hicache_ratio &&
                            c.hicache_size_gb <= 0
                        ? ", nor its auto-sizing of the default ratio (taken as given)"
                        : ""));
  } else if (h.refusal == SglangHicacheRefusal::None &&
             h.pinned_bytes_per_node >
                 *c.host_mem_available_bytes - rules.hicache_host_reserve_bytes) {
    b.notes.push_back("the " + std::to_string(h.ranks_per_node) + " ranks' HiCache pools pin " +
                      gib_text(h.pinned_bytes_per_node) +
                      " on the host, more than MemAvailable less SGLang's reserve (" +
                      gib_text(*c.host_mem_available_bytes - rules.hicache_host_reserve_bytes) +
                      "): each rank's check passes alone, together they exhaust the host");
  }
  if (h.full.pinned_bytes > h.full.bytes + (std::int64_t{1} << 20)) {
    b.notes.push_back("torch's pinned allocator rounds each HiCache pool up to a power of two: " +
                      gib_text(h.host_bytes_per_rank) + " requested, " +
                      gib_text(h.pinned_bytes_per_rank) + " pinned per rank");
  }
  if (c.pp_size > 1) {
    b.notes.emplace_back(
        "HiCache per node counts every pipeline stage's pool as the reported stage's");
  }
}

// One stage's breakdown: its numbers, then the names, SGLang's error text and the notes.
SglangBreakdown evaluate_stage(const Prepared& p, const Stage& stage, const SglangConfig& c) {
  SglangBreakdown b;
  evaluate_stage_numbers(p, stage, c, b);
  b.release = p.rules->release;
  b.model = c.model_path.empty() ? p.spec->id : c.model_path;
  b.gpu = p.gpu->id;
  b.notes = p.notes;
  b.error = verdict_error(p, b, c);
  hicache_notes(*p.rules, c, b);
  if (b.verdict == SglangVerdict::Started && b.context_length > b.max_total_num_tokens) {
    // SGLang starts, then refuses inputs past the pool ("Input length (...) exceeds the maximum
    // allowed length (N - 1 tokens)").
    b.notes.push_back("context_length " + std::to_string(b.context_length) +
                      " is longer than the KV pool (" + std::to_string(b.max_total_num_tokens) +
                      " tokens): SGLang starts but refuses inputs of more than " +
                      std::to_string(b.max_total_num_tokens - 1) + " tokens");
  }
  return b;
}

SglangBreakdown evaluate(const Prepared& p, const SglangConfig& c) {
  // PP ranks agree on the smallest pool; a stage that fails fails the launch.
  std::optional<SglangBreakdown> chosen;
  for (const Stage& stage : p.stages) {
    SglangBreakdown b = evaluate_stage(p, stage, c);
    const bool failed = b.verdict != SglangVerdict::Started;
    if (failed || !chosen || b.max_total_num_tokens < chosen->max_total_num_tokens) {
      chosen = std::move(b);
    }
    if (failed) break;
  }
  SglangBreakdown out = chosen ? std::move(*chosen) : SglangBreakdown{};
  out.terms = sglang_rank_terms(out);
  return out;
}

// The launch's numbers and verdict as evaluate() finds them (the stage it reports), without
// text: what a sweep point needs.
void evaluate_numbers(const Prepared& p, const SglangConfig& c, SglangBreakdown& out) noexcept {
  bool chosen = false;
  for (const Stage& stage : p.stages) {
    SglangBreakdown b;
    evaluate_stage_numbers(p, stage, c, b);
    if (b.verdict != SglangVerdict::Started) {
      out = b;
      return;
    }
    if (!chosen || b.max_total_num_tokens < out.max_total_num_tokens) {
      out = b;
      chosen = true;
    }
  }
}

bool started(const Prepared& p, const SglangConfig& c) {
  return evaluate(p, c).verdict == SglangVerdict::Started;
}

// Largest v in [low, high] with ok(v), assuming ok holds on a prefix of the range; nullopt if
// ok(low) fails.
template <typename Ok>
std::optional<std::int64_t> largest(std::int64_t low, std::int64_t high, Ok ok) {
  if (low > high || !ok(low)) return std::nullopt;
  while (low < high) {
    const std::int64_t mid = low + (high - low + 1) / 2;
    if (ok(mid)) {
      low = mid;
    } else {
      high = mid - 1;
    }
  }
  return low;
}

bool shell_safe(const std::string& s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return std::isalnum(c) != 0 || c == '/' || c == '.' || c == '-' || c == '_' || c == ':' ||
           c == '=' || c == '+' || c == ',' || c == '@';
  });
}

std::string shell_quote(const std::string& s) {
  if (shell_safe(s)) return s;
  std::string out = "'";
  for (char ch : s) {
    if (ch == '\'') {
      out += "'\\''";
    } else {
      out += ch;
    }
  }
  return out + "'";
}

}  // namespace

std::vector<std::int64_t> sglang_ladder(const std::vector<SglangLadderStep>& ladder,
                                        std::int64_t max_size) {
  std::vector<std::int64_t> sizes;
  for (const SglangLadderStep& s : ladder) {
    for (std::int64_t v = s.start; v <= s.end && v <= max_size; v += s.step) sizes.push_back(v);
  }
  return sizes;
}

const SglangMemoryTier& sglang_memory_tier(const SglangRules& rules,
                                           std::int64_t gpu_mib) noexcept {
  for (const SglangMemoryTier& t : rules.memory_tiers) {
    if (t.below_mib == 0 || gpu_mib < t.below_mib) return t;
  }
  return rules.memory_tiers.back();
}

double sglang_default_mem_fraction_static(const SglangRules& rules,
                                          const SglangFractionInputs& in) noexcept {
  const auto gpu = static_cast<double>(in.gpu_mib);
  if (gpu <= 0.0) return 0.0;
  if (rules.fraction_rule == SglangFractionRule::ParallelSteps) {
    double f = rules.large_gpu_fraction;
    if (in.gpu_mib <= rules.parallel_steps_max_gpu_mib) {
      const std::int64_t parallel = static_cast<std::int64_t>(in.tp_size) * in.pp_size;
      for (const SglangParallelStep& s : rules.parallel_steps) {
        if (parallel >= s.min_parallel_size) {
          f = s.fraction;
          break;
        }
      }
    }
    if (in.gpu_mib > rules.boost_above_gpu_mib) {
      f = std::min(f + static_cast<double>(rules.boost_headroom_mib) * (1.0 - f) / gpu,
                   (gpu - static_cast<double>(rules.boost_cap_reserve_mib)) / gpu);
    }
    return f;
  }
  if (rules.fraction_rule == SglangFractionRule::TieredReserve) {
    const SglangMemoryTier& tier = sglang_memory_tier(rules, in.gpu_mib);
    const double parallel = static_cast<double>(in.tp_size) * in.pp_size;
    const double reserved = (tier.reserve_gib + parallel * tier.reserve_gib_per_parallel) * 1024.0;
    return std::round((gpu - reserved) / gpu * 1000.0) / 1000.0;
  }
  const std::int64_t activation_tokens =
      in.chunked_prefill_size > 0 ? std::max(in.chunked_prefill_size, rules.min_activation_tokens)
                                  : std::max(in.max_prefill_tokens, rules.min_activation_tokens);
  double reserved = rules.reserve_base_mib;
  reserved += static_cast<double>(activation_tokens) * rules.reserve_per_activation_token_mib;
  reserved += static_cast<double>(in.tp_size) * in.pp_size * rules.reserve_per_parallel_rank_mib;
  if (in.decode_graphs) reserved += in.decode_graph_max_bs * rules.reserve_per_decode_graph_bs_mib;
  if (in.prefill_graph_count > 0) {
    reserved +=
        in.mla ? rules.reserve_mla_prefill_graphs_mib
               : static_cast<double>(in.prefill_graph_count) * rules.reserve_per_prefill_graph_mib;
  }
  if (in.gpu_mib > rules.reserve_floor_above_gpu_mib)
    reserved = std::max(reserved, rules.reserve_floor_mib);
  return std::round((gpu - reserved) / gpu * 1000.0) / 1000.0;
}

SglangKvBudget sglang_kv_budget(const SglangRules& /*rules*/,
                                const SglangByteTerms& terms) noexcept {
  SglangKvBudget budget;
  const double slack =
      static_cast<double>(terms.baseline_free_bytes) * (1.0 - terms.mem_fraction_static);
  budget.slack_bytes = static_cast<std::int64_t>(std::llround(slack));
  budget.rest_bytes = terms.free_after_weights_bytes - budget.slack_bytes - terms.reserved_bytes;
  return budget;
}

const char* sglang_verdict_name(SglangVerdict verdict) noexcept {
  switch (verdict) {
    case SglangVerdict::Started:
      return "started";
    case SglangVerdict::WeightsLeaveNoMemory:
      return "weights_leave_no_memory";
    case SglangVerdict::NotEnoughMemory:
      return "not_enough_memory";
    case SglangVerdict::OomGraphCapture:
      return "oom_cuda_graph_capture";
    case SglangVerdict::OomFirstPrefill:
      return "oom_first_prefill";
    case SglangVerdict::HicacheRefused:
      return "hicache_refused";
  }
  return "unknown";
}

std::int64_t sglang_sweep_size(const SglangSweepGrid& grid) {
  std::int64_t rows = 1;
  for (const std::size_t n : {grid.mem_fraction_static.size(), grid.context_length.size(),
                              grid.max_running_requests.size(), grid.chunked_prefill_size.size()}) {
    rows *= static_cast<std::int64_t>(std::max<std::size_t>(1, n));
    if (rows > kMaxSweepPoints) {
      throw ConfigError("sweep grid", "more than " + std::to_string(kMaxSweepPoints) + " points",
                        "<= " + std::to_string(kMaxSweepPoints) + " points",
                        "grid too large: split it into several sweeps");
    }
  }
  return rows;
}

void sglang_sweep(const ModelSpec& spec, const GpuSpec& gpu, const SglangRules& rules,
                  const SglangConfig& config, const SglangSweepGrid& grid,
                  const SglangSweepColumns& out) {
  const Prepared p = prepare(spec, gpu, rules, config);
  (void)sglang_sweep_size(grid);
  // Every listed value passes the same checks as a single knob, before any point.
  SglangConfig c = config;
  for (const double f : grid.mem_fraction_static) {
    c.mem_fraction_static = f;
    validate(c, spec);
  }
  c = config;
  for (const std::int64_t v : grid.context_length) {
    c.context_length = v;
    validate(c, spec);
  }
  c = config;
  for (const std::int64_t v : grid.max_running_requests) {
    c.max_running_requests = v;
    validate(c, spec);
  }
  c = config;
  for (const std::int64_t v : grid.chunked_prefill_size) {
    c.chunked_prefill_size = v;
    validate(c, spec);
  }
  c = config;
  // An empty list keeps the launch's own value (given or default): one pass with it unset.
  const auto count = [](std::size_t n) { return std::max<std::size_t>(1, n); };
  std::int64_t row = 0;
  SglangBreakdown b;
  for (std::size_t i = 0; i < count(grid.mem_fraction_static.size()); ++i) {
    if (!grid.mem_fraction_static.empty()) c.mem_fraction_static = grid.mem_fraction_static[i];
    for (std::size_t j = 0; j < count(grid.context_length.size()); ++j) {
      if (!grid.context_length.empty()) c.context_length = grid.context_length[j];
      for (std::size_t k = 0; k < count(grid.max_running_requests.size()); ++k) {
        if (!grid.max_running_requests.empty()) {
          c.max_running_requests = grid.max_running_requests[k];
        }
        for (std::size_t l = 0; l < count(grid.chunked_prefill_size.size()); ++l) {
          if (!grid.chunked_prefill_size.empty()) {
            c.chunked_prefill_size = grid.chunked_prefill_size[l];
          }
          b = SglangBreakdown{};
          evaluate_numbers(p, c, b);
          out.mem_fraction_static[row] = b.mem_fraction_static;
          out.context_length[row] = b.context_length;
          out.max_running_requests[row] = b.max_running_requests;
          out.chunked_prefill_size[row] = b.chunked_prefill_size;
          out.kv_pool_bytes[row] = b.kv_pool_bytes;
          out.max_total_num_tokens[row] = b.max_total_num_tokens;
          out.verdict[row] = static_cast<std::int8_t>(b.verdict);
          ++row;
        }
      }
    }
  }
}

SglangBreakdown sglang_breakdown(const ModelSpec& spec, const GpuSpec& gpu,
                                 const SglangRules& rules, const SglangConfig& config) {
  return evaluate(prepare(spec, gpu, rules, config), config);
}

std::vector<Term> sglang_rank_terms(const SglangBreakdown& b) {
  std::vector<Term> terms;
  terms.reserve(10);
  terms.push_back({"cuda_context", b.cuda_context_bytes,
                   "calibrated: CUDA context made before SGLang's free-memory baseline "
                   "(sglang.yaml cuda_context_bytes, fitted to logged startups)"});
  if (b.nccl_bytes > 0) {
    terms.push_back({"nccl", b.nccl_bytes,
                     "calibrated: NCCL communicators made before the baseline, over NVLink or "
                     "PCIe (sglang.yaml nccl_nvlink_bytes / nccl_pcie_bytes, fitted to logged "
                     "startups)"});
  }
  terms.push_back({"weights", b.weights_bytes,
                   "exact: the spec's tensors in their stored format, this rank's tensor- and "
                   "pipeline-parallel share"});
  terms.push_back({"kv_pool", b.kv_pool_bytes,
                   "exact: SGLang's pool arithmetic: tokens = (free after weights - B x (1 - f) "
                   "[- state pool]) / bytes per token, page-aligned; K and V (and sliding-window) "
                   "buffers with the padding page"});
  if (b.mamba_state_bytes_per_slot > 0) {
    terms.push_back({"mamba_pool", b.mamba_pool_bytes,
                     "exact: SGLang's hybrid split: (slots + 1) x state bytes per slot, slots "
                     "from rest x r / (1 + r), r = mamba_full_memory_ratio"});
  }
  terms.push_back({"req_to_token", b.req_to_token_bytes,
                   "exact: ReqToTokenPool, (requests + 1) x (context_length + extra columns) "
                   "int32, out of the slack"});
  terms.push_back({"decode_cudagraph", b.decode_graph_bytes,
                   "estimate: SGLang's reserve heuristic, MiB per captured decode batch size "
                   "(sglang.yaml decode_graph_estimate_mib_per_bs), out of the slack"});
  if (b.prefill_graph_count > 0) {
    terms.push_back({"prefill_cudagraph", b.prefill_graph_bytes,
                     "estimate: SGLang's reserve heuristic, MiB per captured prefill size "
                     "(sglang.yaml prefill_graph_estimate_mib_per_size), out of the slack"});
  }
  terms.push_back({"activation", b.activation_bytes,
                   "estimate: one chunked-prefill forward (residual, normed input, attention "
                   "output, a spare of hidden size, the MLP's gate/up), out of the slack"});
  // What the weights leave less what the pools and the slack's consumers take: once the graphs
  // are sized this is free_after_graphs_bytes - activation_bytes; a launch refused at its pools
  // stops before, with the terms not sized yet at 0.
  const std::int64_t free = b.free_after_weights_bytes - b.kv_pool_bytes - b.mamba_pool_bytes -
                            b.req_to_token_bytes - b.decode_graph_bytes - b.prefill_graph_bytes -
                            b.activation_bytes;
  terms.push_back({"free", free,
                   "remainder: what the slack keeps after req_to_token, the CUDA graphs and the "
                   "first prefill (the allocator's fragmentation and the estimates' error come "
                   "out of it; negative: they overrun it)"});
  return terms;
}

std::vector<std::string> sglang_launch_argv(const SglangConfig& c, const SglangRules& rules) {
  std::vector<std::string> words;
  auto add = [&words](const char* flag, const std::string& value) {
    words.emplace_back(flag);
    words.push_back(value);
  };
  if (c.tp_size != 1) add("--tp-size", std::to_string(c.tp_size));
  if (c.pp_size != 1) add("--pp-size", std::to_string(c.pp_size));
  if (c.dp_size != 1) add("--dp-size", std::to_string(c.dp_size));
  if (c.mem_fraction_static) add("--mem-fraction-static", format_fraction(*c.mem_fraction_static));
  if (c.context_length) add("--context-length", std::to_string(*c.context_length));
  if (c.max_running_requests)
    add("--max-running-requests", std::to_string(*c.max_running_requests));
  if (c.max_total_tokens) add("--max-total-tokens", std::to_string(*c.max_total_tokens));
  if (c.chunked_prefill_size)
    add("--chunked-prefill-size", std::to_string(*c.chunked_prefill_size));
  if (c.max_prefill_tokens != 16384)
    add("--max-prefill-tokens", std::to_string(c.max_prefill_tokens));
  if (c.cuda_graph_max_bs) {
    add(rules.cuda_graph_max_bs_flag.c_str(), std::to_string(*c.cuda_graph_max_bs));
  }
  if (c.page_size) add("--page-size", std::to_string(*c.page_size));
  if (c.kv_cache_dtype != "auto") add("--kv-cache-dtype", c.kv_cache_dtype);
  if (c.swa_full_tokens_ratio)
    add("--swa-full-tokens-ratio", std::to_string(*c.swa_full_tokens_ratio));
  if (c.mamba_full_memory_ratio) {
    add("--mamba-full-memory-ratio", std::to_string(*c.mamba_full_memory_ratio));
  }
  if (c.disable_cuda_graph) words.emplace_back("--disable-cuda-graph");
  if (c.enable_hierarchical_cache) words.emplace_back("--enable-hierarchical-cache");
  if (c.hicache_ratio) {
    std::ostringstream ratio;
    ratio << *c.hicache_ratio;
    add("--hicache-ratio", ratio.str());
  }
  if (c.hicache_size_gb > 0) add("--hicache-size", std::to_string(c.hicache_size_gb));
  if (!c.hicache_mem_layout.empty()) add("--hicache-mem-layout", c.hicache_mem_layout);
  if (c.nnodes != 1) add("--nnodes", std::to_string(c.nnodes));
  return words;
}

nlohmann::json sglang_engine_kwargs(const std::string& model_path,
                                    const std::vector<std::string>& words) {
  nlohmann::json j = nlohmann::json::object();
  j["model_path"] = model_path;
  for (std::size_t i = 0; i < words.size(); ++i) {
    std::string key = words[i].substr(2);
    std::replace(key.begin(), key.end(), '-', '_');
    const bool has_value = i + 1 < words.size() && words[i + 1].rfind("--", 0) != 0;
    if (!has_value) {
      j[key] = true;
      continue;
    }
    const std::string& value = words[++i];
    const nlohmann::json number = nlohmann::json::parse(value, nullptr, false);
    j[key] = number.is_number() ? number : nlohmann::json(value);
  }
  return j;
}

std::string sglang_launch_line(const SglangConfig& c, const SglangRules& rules) {
  std::string line = "python -m sglang.launch_server --model-path " + shell_quote(c.model_path);
  for (const std::string& word : sglang_launch_argv(c, rules)) {
    line += " ";
    line += word.rfind("--", 0) == 0 ? word : shell_quote(word);
  }
  return line;
}

namespace {

// What the slack keeps free once the graphs are captured and the first chunked prefill ran.
std::int64_t spare_slack(const SglangBreakdown& b) noexcept {
  return b.free_after_graphs_bytes - b.activation_bytes;
}

// The largest f in thousandths, 0.010 to 0.990, at which `ok` holds. Too low a fraction leaves
// no KV, too high one starves the slack, so the fractions that pass are an interval: find one
// from the top in steps of 0.010, then its top within the step.
template <typename Ok>
std::optional<double> largest_fraction(const SglangConfig& config, Ok ok) {
  auto at = [&config](std::int64_t thousandths) {
    SglangConfig c = config;
    c.mem_fraction_static = static_cast<double>(thousandths) / 1000.0;
    return c;
  };
  for (std::int64_t k = 990; k >= 10; k -= 10) {
    if (!ok(at(k))) continue;
    const auto best =
        largest(k, std::min<std::int64_t>(k + 9, 990), [&](std::int64_t v) { return ok(at(v)); });
    return static_cast<double>(*best) / 1000.0;
  }
  return std::nullopt;
}

// The largest value of each knob that starts, the others as written.
void largest_knobs(const Prepared& p, const SglangConfig& config, SglangPlan& plan) {
  const std::int64_t token_cap = std::max<std::int64_t>(1, plan.launch.max_total_num_tokens / 2);
  plan.max_running_requests = largest(1, token_cap, [&](std::int64_t v) {
    SglangConfig t = config;
    t.max_running_requests = v;
    return started(p, t);
  });
  const std::int64_t model_max = std::max<std::int64_t>(1, p.spec->max_position_embeddings);
  plan.max_context_length = largest(1, model_max, [&](std::int64_t v) {
    SglangConfig t = config;
    t.context_length = v;
    const SglangBreakdown b = evaluate(p, t);
    return b.verdict == SglangVerdict::Started && b.max_total_num_tokens >= v;
  });
  const std::int64_t page = plan.launch.page_size;
  const auto chunks = largest(1, (std::int64_t{1} << 20) / page, [&](std::int64_t v) {
    SglangConfig t = config;
    t.chunked_prefill_size = v * page;
    return started(p, t);
  });
  if (chunks) plan.max_chunked_prefill_size = *chunks * page;
  if (!config.disable_cuda_graph) {
    const auto bs = largest(1, 4096, [&](std::int64_t v) {
      SglangConfig t = config;
      t.cuda_graph_max_bs = static_cast<std::int32_t>(v);
      return started(p, t);
    });
    if (bs) plan.max_cuda_graph_max_bs = static_cast<std::int32_t>(*bs);
  }
}

// fits, the verdict line and the figures behind them, for the planned launch.
void judge(const SglangTargets& targets, SglangPlan& plan) {
  const SglangBreakdown& b = plan.planned;
  plan.safety_margin_bytes = targets.safety_margin_bytes;
  plan.target_context_tokens =
      targets.context_tokens > 0 ? targets.context_tokens : b.context_length;
  const std::int64_t context = std::max<std::int64_t>(1, plan.target_context_tokens);
  const bool started_ok = b.verdict == SglangVerdict::Started;
  plan.spare_slack_bytes = started_ok ? spare_slack(b) : 0;
  plan.concurrent_sequences =
      started_ok ? std::min(b.max_running_requests, b.max_total_num_tokens / context) : 0;
  const std::string f = "mem_fraction_static " + format_fraction(b.mem_fraction_static);
  if (!started_ok) {
    plan.verdict =
        "does not start at " + f + ": " + sglang_verdict_name(b.verdict) + " (" + b.error + ")";
  } else if (plan.spare_slack_bytes < plan.safety_margin_bytes) {
    plan.verdict = "starts at " + f + ", but the slack keeps " + gib_text(plan.spare_slack_bytes) +
                   " free after the CUDA graphs and the first prefill, under the " +
                   gib_text(plan.safety_margin_bytes) + " safety margin";
  } else if (b.max_total_num_tokens < context) {
    plan.verdict = "starts, but its KV pool of " + std::to_string(b.max_total_num_tokens) +
                   " tokens is shorter than one request of " + std::to_string(context) + " tokens";
  } else if (plan.concurrent_sequences < targets.concurrency) {
    plan.verdict = "starts, but its KV pool holds " + std::to_string(plan.concurrent_sequences) +
                   " of the " + std::to_string(targets.concurrency) + " sequences of " +
                   std::to_string(context) + " tokens asked for (max_running_requests " +
                   std::to_string(b.max_running_requests) + ")";
  } else {
    plan.fits = true;
    plan.verdict = "fits: " + std::to_string(b.max_total_num_tokens) + " KV tokens, " +
                   std::to_string(plan.concurrent_sequences) + " concurrent sequences of " +
                   std::to_string(context) + " tokens (max_running_requests " +
                   std::to_string(b.max_running_requests) + ") at " + f + "; the slack keeps " +
                   gib_text(plan.spare_slack_bytes) + " free (margin " +
                   gib_text(plan.safety_margin_bytes) + ")";
  }
}

struct RemedyCandidate {
  const char* kind;
  const char* knob;  // ServerArgs name
  std::string value;
  std::string before;
  SglangConfig config;
  const char* drops;  // the user's setting it does not keep ("" for none)
};

std::string knob_flag(const char* knob) {
  std::string flag = std::string("--") + knob;
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

// Changes that can make a launch that does not fit fit, cheaper first: a lower pinned
// mem_fraction_static, an fp8 KV cache, fewer captured graphs, a context the pool holds, a
// doubled tensor-parallel size.
std::vector<RemedyCandidate> remedy_candidates(const SglangConfig& config, const SglangPlan& plan) {
  std::vector<RemedyCandidate> out;
  const SglangBreakdown& b = plan.planned;
  if (config.mem_fraction_static && plan.safe_mem_fraction_static &&
      *plan.safe_mem_fraction_static != *config.mem_fraction_static) {
    SglangConfig c = config;
    c.mem_fraction_static = plan.safe_mem_fraction_static;
    out.push_back({"lower_mem_fraction_static", "mem_fraction_static",
                   format_fraction(*plan.safe_mem_fraction_static),
                   format_fraction(*config.mem_fraction_static), c, "mem_fraction_static"});
  }
  if (config.kv_cache_dtype.rfind("fp8", 0) != 0) {
    SglangConfig c = config;
    c.kv_cache_dtype = "fp8_e4m3";
    out.push_back({"fp8_kv_cache", "kv_cache_dtype", "fp8_e4m3", config.kv_cache_dtype, c, ""});
  }
  if (!config.disable_cuda_graph && b.cuda_graph_max_bs > 8) {
    SglangConfig c = config;
    c.cuda_graph_max_bs = 8;
    out.push_back({"smaller_cuda_graphs", "cuda_graph_max_bs", "8",
                   std::to_string(b.cuda_graph_max_bs), c, ""});
  }
  const std::int64_t concurrency = std::max<std::int64_t>(1, plan.concurrent_sequences);
  if (b.verdict == SglangVerdict::Started && b.context_length > 1) {
    const std::int64_t held = b.max_total_num_tokens / concurrency;
    if (held > 0 && held < b.context_length) {
      SglangConfig c = config;
      c.context_length = held;
      out.push_back({"shorter_context", "context_length", std::to_string(held),
                     std::to_string(b.context_length), c, "context_length"});
    }
  }
  if (config.tp_size <= 4) {
    SglangConfig c = config;
    c.tp_size = config.tp_size * 2;
    out.push_back({"tensor_parallel", "tp_size", std::to_string(c.tp_size),
                   std::to_string(config.tp_size), c, "tp_size"});
  }
  return out;
}

std::vector<Remedy> sglang_remedies(const ModelSpec& spec, const GpuSpec& gpu,
                                    const SglangRules& rules, const SglangConfig& config,
                                    const SglangTargets& targets, const SglangPlan& plan) {
  SglangTargets replay = targets;
  replay.remedies = false;
  std::vector<Remedy> out;
  for (const RemedyCandidate& candidate : remedy_candidates(config, plan)) {
    SglangPlan remedied;
    try {
      remedied = sglang_plan(spec, gpu, rules, candidate.config, replay);
    } catch (const ConfigError&) {
      continue;  // e.g. a tensor-parallel size that does not divide the attention heads
    }
    Remedy r;
    r.kind = candidate.kind;
    const std::string flag = std::string(candidate.knob) == "cuda_graph_max_bs"
                                 ? rules.cuda_graph_max_bs_flag
                                 : knob_flag(candidate.knob);
    r.change = flag + " " + candidate.value;
    r.changes.push_back({candidate.knob, candidate.value, candidate.before, ""});
    if (*candidate.drops != '\0') r.drops.emplace_back(candidate.drops);
    r.fits = remedied.fits;
    r.detail = remedied.verdict;
    for (const std::string& word : remedied.launch_argv) {
      r.flags += (r.flags.empty() ? "" : " ") + shell_quote(word);
    }
    out.push_back(std::move(r));
  }
  // The ones that fit first, in the order above.
  std::stable_partition(out.begin(), out.end(), [](const Remedy& r) { return r.fits; });
  return out;
}

}  // namespace

SglangPlan sglang_plan(const ModelSpec& spec, const GpuSpec& gpu, const SglangRules& rules,
                       const SglangConfig& config, const SglangTargets& targets) {
  SglangConfig written = config;
  // A target context sets context_length where the user did not.
  if (targets.context_tokens > 0 && !written.context_length) {
    written.context_length = targets.context_tokens;
  }
  const Prepared p = prepare(spec, gpu, rules, written);
  SglangPlan plan;
  plan.launch = evaluate(p, written);
  plan.max_mem_fraction_static =
      largest_fraction(written, [&](const SglangConfig& c) { return started(p, c); });
  plan.safe_mem_fraction_static = largest_fraction(written, [&](const SglangConfig& c) {
    SglangBreakdown b;
    evaluate_numbers(p, c, b);
    return b.verdict == SglangVerdict::Started && spare_slack(b) >= targets.safety_margin_bytes;
  });
  SglangConfig planned = written;
  if (!planned.mem_fraction_static && plan.safe_mem_fraction_static) {
    planned.mem_fraction_static = plan.safe_mem_fraction_static;
  }
  plan.planned = evaluate(p, planned);
  if (plan.safe_mem_fraction_static && !config.mem_fraction_static) {
    // The slack consumers are estimates that no release measures before sizing; measured
    // captures exceeded the graph estimate (docs/sglang.md, accuracy table).
    plan.planned.notes.push_back(
        "mem_fraction_static " + format_fraction(*plan.safe_mem_fraction_static) +
        " leaves the slack SGLang's own CUDA-graph reserve (" +
        gib_text(plan.planned.decode_graph_bytes + plan.planned.prefill_graph_bytes) +
        " here), an activation estimate and the " + gib_text(targets.safety_margin_bytes) +
        " margin; measured graph captures took 1.4x to 20x that reserve, so leave headroom "
        "below it");
  }
  largest_knobs(p, written, plan);
  judge(targets, plan);
  plan.error_band = sglang_error_band(sglang_table().accuracy);
  plan.launch_line = sglang_launch_line(planned, rules);
  plan.launch_argv = sglang_launch_argv(planned, rules);
  plan.planned_config = std::move(planned);
  if (!plan.fits && targets.remedies) {
    plan.remedies = sglang_remedies(spec, gpu, rules, written, targets, plan);
  }
  return plan;
}

namespace {

nlohmann::json hicache_pool_json(const SglangHicachePool& pool) {
  return {{"tokens", pool.tokens},
          {"bytes_per_token", pool.bytes_per_token},
          {"bytes", pool.bytes},
          {"pinned_bytes", pool.pinned_bytes}};
}

// The HiCache host pools; null without --enable-hierarchical-cache.
nlohmann::json hicache_json(const SglangBreakdown& b) {
  const SglangHicache& h = b.hicache;
  if (!h.enabled) return nullptr;
  nlohmann::json j;
  j["ratio"] = h.ratio;
  j["ratio_auto_sized"] = h.auto_sized;
  j["size_gb"] = h.size_gb;
  j["mem_layout"] = b.hicache_mem_layout;
  j["full_pool"] = hicache_pool_json(h.full);
  j["swa_pool"] = h.swa.tokens > 0 ? hicache_pool_json(h.swa) : nlohmann::json(nullptr);
  j["mamba_pool"] = h.mamba.tokens > 0 ? hicache_pool_json(h.mamba) : nlohmann::json(nullptr);
  j["host_bytes_per_rank"] = h.host_bytes_per_rank;
  j["pinned_bytes_per_rank"] = h.pinned_bytes_per_rank;
  j["ranks_per_node"] = h.ranks_per_node;
  j["pinned_bytes_per_node"] = h.pinned_bytes_per_node;
  j["budget_bytes"] = h.budget_bytes >= 0 ? nlohmann::json(h.budget_bytes) : nullptr;
  return j;
}

}  // namespace

nlohmann::json to_json(const SglangBreakdown& b) {
  nlohmann::json j;
  j["engine"] = "sglang";
  j["release"] = b.release;
  j["model"] = b.model;
  j["gpu"] = b.gpu;
  j["tp_size"] = b.tp_size;
  j["pp_size"] = b.pp_size;
  j["dp_size"] = b.dp_size;
  j["gpu_total_bytes"] = b.gpu_total_bytes;
  j["gpu_mib"] = b.gpu_mib;
  j["gpu_mib_assumed"] = b.gpu_mib_assumed;
  j["mem_fraction_static"] = b.mem_fraction_static;
  j["mem_fraction_static_default"] = b.mem_fraction_static_default;
  j["chunked_prefill_size"] = b.chunked_prefill_size;
  j["cuda_graph_max_bs"] = b.cuda_graph_max_bs;
  j["prefill_graph_count"] = b.prefill_graph_count;
  j["context_length"] = b.context_length;
  j["page_size"] = b.page_size;
  j["kv_element_bytes"] = b.kv_element_bytes;
  j["cuda_context_bytes"] = b.cuda_context_bytes;
  j["nccl_bytes"] = b.nccl_bytes;
  j["baseline_free_bytes"] = b.baseline_free_bytes;
  j["weights_bytes"] = b.weights_bytes;
  j["free_after_weights_bytes"] = b.free_after_weights_bytes;
  j["slack_bytes"] = b.slack_bytes;
  j["rest_bytes"] = b.rest_bytes;
  j["mamba_state_bytes_per_slot"] = b.mamba_state_bytes_per_slot;
  j["mamba_slots"] = b.mamba_slots;
  j["mamba_pool_bytes"] = b.mamba_pool_bytes;
  j["cell_bytes"] = b.cell_bytes;
  j["k_bytes_per_token"] = b.k_bytes_per_token;
  j["v_bytes_per_token"] = b.v_bytes_per_token;
  j["mla"] = b.mla;
  j["max_total_num_tokens"] = b.max_total_num_tokens;
  j["swa_tokens"] = b.swa_tokens;
  j["kv_pool_bytes"] = b.kv_pool_bytes;
  j["k_size_bytes"] = b.k_size_bytes;
  j["v_size_bytes"] = b.v_size_bytes;
  j["max_running_requests"] = b.max_running_requests;
  j["req_to_token_bytes"] = b.req_to_token_bytes;
  j["free_after_pool_bytes"] = b.free_after_pool_bytes;
  j["decode_graph_bytes"] = b.decode_graph_bytes;
  j["prefill_graph_bytes"] = b.prefill_graph_bytes;
  j["activation_bytes"] = b.activation_bytes;
  j["free_after_graphs_bytes"] = b.free_after_graphs_bytes;
  j["hicache"] = hicache_json(b);
  j["verdict"] = sglang_verdict_name(b.verdict);
  j["error"] = b.error;
  j["notes"] = b.notes;
  // The reported rank as a vLLM breakdown's ranks list theirs: its terms stacked over the GPU's
  // total, its budget the weights and pools' share (the GPU less the slack B x (1 - f)).
  j["ranks"] =
      nlohmann::json::array({{{"pipeline_rank", b.pipeline_rank},
                              {"total_memory_bytes", b.gpu_total_bytes},
                              {"requested_memory_bytes", b.gpu_total_bytes - b.slack_bytes},
                              {"terms", terms_json(b.terms)}}});
  return j;
}

nlohmann::json to_json(const SglangPlan& plan) {
  nlohmann::json j;
  j["launch"] = to_json(plan.launch);
  j["max_mem_fraction_static"] = optional_json(plan.max_mem_fraction_static);
  j["max_running_requests"] = optional_json(plan.max_running_requests);
  j["max_context_length"] = optional_json(plan.max_context_length);
  j["max_chunked_prefill_size"] = optional_json(plan.max_chunked_prefill_size);
  j["max_cuda_graph_max_bs"] = optional_json(plan.max_cuda_graph_max_bs);
  j["safe_mem_fraction_static"] = optional_json(plan.safe_mem_fraction_static);
  j["planned"] = to_json(plan.planned);
  j["launch_line"] = plan.launch_line;
  j["fits"] = plan.fits;
  j["verdict"] = plan.verdict;
  j["safety_margin_bytes"] = plan.safety_margin_bytes;
  j["target_context_tokens"] = plan.target_context_tokens;
  j["concurrent_sequences"] = plan.concurrent_sequences;
  j["spare_slack_bytes"] = plan.spare_slack_bytes;
  j["remedies"] = to_json(plan.remedies);
  j["error_band"] = plan.error_band;
  return j;
}

}  // namespace vramplan
