// The per-point closed form of a compiled launch: vLLM's defaulting of the evaluated knobs,
// each rank's startup at them and the verdict. No heap allocation on these paths.
#include <algorithm>
#include <cstdlib>
#include <limits>

#include "launch_internal.hpp"
#include "vramplan/compiled.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/knobs.hpp"
#include "vramplan/saturating.hpp"

namespace vramplan {

// CUDA-graph capture sizes at a point: they follow max_num_seqs and max_num_batched_tokens.
namespace {

// The ladder's sizes up to `limit`: how many, and the largest.
CaptureSizes ladder_sizes(const EngineProfile& profile, const std::vector<CaptureSizes>* prefix,
                          std::int64_t limit) noexcept {
  if (prefix != nullptr && limit >= 0 && limit < static_cast<std::int64_t>(prefix->size())) {
    return (*prefix)[static_cast<std::size_t>(limit)];
  }
  CaptureSizes sizes;
  for (std::int32_t i = 0; i < profile.capture_ladder_segments; ++i) {
    const CaptureSegment& seg = profile.capture_ladder[static_cast<std::size_t>(i)];
    if (limit < seg.start) break;
    const std::int64_t last = std::min<std::int64_t>(seg.end, limit);
    const std::int64_t steps = (last - seg.start) / seg.step;
    sizes.count += static_cast<std::int32_t>(steps + 1);
    sizes.largest = static_cast<std::int32_t>(seg.start + steps * seg.step);
  }
  return sizes;
}

// Whether `size` is on the profile's capture ladder.
bool on_capture_ladder(const EngineProfile& profile, const std::vector<CaptureSizes>* prefix,
                       std::int64_t size) noexcept {
  if (prefix != nullptr && size >= 0 && size < static_cast<std::int64_t>(prefix->size())) {
    return (*prefix)[static_cast<std::size_t>(size)].largest == size;
  }
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

std::vector<CaptureSizes> capture_ladder_prefix(const EngineProfile& profile) {
  // Past this a launch walks the ladder (64 KiB of table; vLLM's own ceiling is 512 to 1024).
  constexpr std::int32_t kLargestTabled = 8192;
  if (profile.capture_max_size > kLargestTabled) return {};
  const std::size_t size = static_cast<std::size_t>(profile.capture_max_size) + 1;
  std::vector<CaptureSizes> prefix(size);
  // The ladder's sizes in ascending order (ladder_sizes' order): each entry up to the next size
  // holds the sizes counted so far.
  CaptureSizes counted;
  std::size_t next = 0;  // the first entry not yet written
  const auto write_below = [&](std::size_t end) {
    for (; next < end && next < size; ++next) prefix[next] = counted;
  };
  for (std::int32_t i = 0; i < profile.capture_ladder_segments; ++i) {
    const CaptureSegment& seg = profile.capture_ladder[static_cast<std::size_t>(i)];
    for (std::int64_t value = seg.start;
         value <= seg.end && value < static_cast<std::int64_t>(size); value += seg.step) {
      write_below(static_cast<std::size_t>(value));
      counted.count += 1;
      counted.largest = static_cast<std::int32_t>(value);
    }
  }
  write_below(size);
  return prefix;
}

CaptureSizes cudagraph_capture_sizes(const EngineProfile& profile, std::int64_t max_num_seqs,
                                     std::int64_t max_num_batched_tokens,
                                     std::int32_t num_speculative_tokens,
                                     const std::vector<CaptureSizes>* ladder_prefix) noexcept {
  std::int64_t limit = profile.capture_max_size;
  if (profile.capture_bounded_by_max_num_seqs) {
    std::int64_t by_seqs = max_num_seqs * profile.capture_seq_multiplier;
    if (profile.capture_counts_speculative_tokens) by_seqs *= 1 + num_speculative_tokens;
    limit = std::min(limit, by_seqs);
  }
  if (profile.capture_bounded_by_batched_tokens) limit = std::min(limit, max_num_batched_tokens);
  CaptureSizes sizes = ladder_sizes(profile, ladder_prefix, limit);
  // Uniform-decode sizes appended off the ladder (they need not land on its stride).
  auto add = [&](std::int64_t size) {
    if (size < 1 || size > limit || on_capture_ladder(profile, ladder_prefix, size)) return;
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

// The activation peak at a point (activation.cpp compiles its per-token coefficients).
std::int64_t sampler_peak_bytes(const SamplerModel& sampler, std::int64_t requests,
                                std::int64_t batched_tokens) noexcept {
  const double per_logit = requests < sampler.full_sort_below_rows && requests >= 2
                               ? sampler.full_sort_bytes_per_logit
                               : sampler.bytes_per_logit;
  return static_cast<std::int64_t>(per_logit * static_cast<double>(requests) *
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

// The encoder profile at a point (multimodal.cpp compiles its per-item facts).
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

[[gnu::flatten]] KnobProblem CompiledLaunch::try_resolve(const LaunchKnobs& k,
                                                         ResolvedKnobs& r) const noexcept {
  const ModelSpec& s = *spec_;
  if ((k.max_model_len && *k.max_model_len <= 0) || (k.max_num_seqs && *k.max_num_seqs <= 0) ||
      (k.max_num_batched_tokens && *k.max_num_batched_tokens <= 0) ||
      (k.block_size && *k.block_size <= 0) || k.kv_element_bytes < 0 ||
      (k.gpu_memory_utilization &&
       !(*k.gpu_memory_utilization > 0.0 && *k.gpu_memory_utilization <= 1.0))) {
    return KnobProblem::NotPositive;
  }
  // vLLM refuses a longer context unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (then quality is not
  // guaranteed); a config without a context key takes any length.
  if (k.max_model_len && *k.max_model_len > s.max_position_embeddings &&
      !s.max_position_embeddings_assumed) {
    return KnobProblem::MaxModelLenBeyondModel;
  }
  r.gpu_memory_utilization =
      k.gpu_memory_utilization.value_or(profile().default_gpu_memory_utilization);
  r.max_model_len = k.max_model_len.value_or(s.max_position_embeddings);
  r.block_size = k.block_size.value_or(default_block_size_);
  r.kv_element_bytes =
      k.kv_element_bytes > 0 ? k.kv_element_bytes : dtype_info(served_dtype_).block_bytes;
  // Batch defaults (EngineArgs.get_batch_defaults), then the scheduler's own clamps.
  r.max_num_seqs = k.max_num_seqs.value_or(default_max_num_seqs_);
  r.chunked_prefill =
      profile().chunked_prefill_default || (long_context_chunked_prefill_above_ > 0 &&
                                            r.max_model_len > long_context_chunked_prefill_above_);
  if (config_.enable_chunked_prefill && profile().chunked_prefill_flag_honored) {
    r.chunked_prefill = *config_.enable_chunked_prefill;
  }
  if (k.max_num_batched_tokens) {
    r.max_num_batched_tokens = *k.max_num_batched_tokens;
  } else {
    // Chunked: the release's table, or V0's SchedulerConfig figure (512 on 0.5-0.6, 2048 on
    // 0.7). Unchunked: at least a whole prompt, max(max_model_len, the table's figure).
    std::int64_t tokens = default_max_num_batched_tokens_;
    if (!r.chunked_prefill) {
      tokens = std::max(tokens, r.max_model_len);
    } else if (!profile().chunked_prefill_default) {
      tokens = profile().long_context_batched_tokens;
    }
    r.max_num_batched_tokens = std::min(r.max_num_seqs * r.max_model_len, tokens);
  }
  if (!k.max_num_seqs) r.max_num_seqs = std::min(r.max_num_seqs, r.max_num_batched_tokens);
  if (!r.chunked_prefill && r.max_num_batched_tokens < r.max_model_len) {
    return KnobProblem::BatchedTokensBelowModelLen;
  }
  if (r.max_num_batched_tokens < r.max_num_seqs) return KnobProblem::BatchedTokensBelowNumSeqs;
  r.num_cudagraph_sizes = 0;
  r.max_cudagraph_capture_size = 0;
  if (!config_.enforce_eager) {
    const CaptureSizes sizes =
        cudagraph_capture_sizes(profile(), r.max_num_seqs, r.max_num_batched_tokens,
                                num_speculative_tokens_, &capture_ladder_prefix_);
    r.num_cudagraph_sizes = sizes.count;
    r.max_cudagraph_capture_size = sizes.largest;
  }
  return KnobProblem::None;
}

[[gnu::flatten]] ResolvedKnobs CompiledLaunch::resolve(const LaunchKnobs& k) const {
  ResolvedKnobs r;
  const KnobProblem problem = try_resolve(k, r);
  if (problem != KnobProblem::None) throw_knob_problem(problem, k, r);
  return r;
}

// Out of resolve's line: the errors' texts are built only when one is thrown.
void CompiledLaunch::throw_knob_problem(KnobProblem problem, const LaunchKnobs& k,
                                        const ResolvedKnobs& r) const {
  switch (problem) {
    case KnobProblem::None:
      break;
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
  std::abort();  // only a problem is thrown
}

PreparedRank CompiledLaunch::prepare_rank(std::size_t index,
                                          const ResolvedKnobs& k) const noexcept {
  const CompiledRank& rank = ranks_[index];
  PreparedRank p;
  const std::int64_t tokens = k.max_num_batched_tokens;
  const std::int64_t requests = std::min(k.max_num_seqs, tokens);
  std::int64_t activation = activation_peak_bytes(rank.activation, sampler_, tokens, requests);
  if (rank.draft_activation) {
    activation = std::max(
        activation, activation_peak_bytes(*rank.draft_activation, sampler_, tokens, requests));
  }
  if (rank.encoder.tokens_per_item > 0) {
    const EncoderBudget budget =
        encoder_budget(rank.encoder, tokens, k.max_num_seqs, k.max_model_len, k.chunked_prefill);
    const std::int64_t text_peak = activation;
    activation = multimodal_activation_peak_bytes(rank.encoder, budget.items, text_peak);
    p.mm_encoder_bytes = activation - text_peak;
  }
  std::int64_t cudagraph = 0;
  if (k.num_cudagraph_sizes > 0) {
    const double sizes = static_cast<double>(k.num_cudagraph_sizes);
    cudagraph = cudagraph_base_bytes_ +
                static_cast<std::int64_t>(rank.cudagraph_bytes_per_size * sizes) +
                rank.attention_split_bytes_per_token * k.max_cudagraph_capture_size;
    if (rank.draft_activation) {
      cudagraph += static_cast<std::int64_t>(rank.draft_cudagraph_bytes_per_size * sizes);
    }
  }
  p.terms = BudgetTerms{hardware_.gpu.total_memory_bytes,
                        rank.weights_bytes,
                        activation,
                        saturating_add(rank.non_torch_bytes, deepep_low_latency_rdma_bytes(
                                                                 rank.batch_sized_rdma, tokens)),
                        cudagraph,
                        persistent_buffers_bytes(k.max_num_seqs)};
  p.page = rank_page(rank, k.block_size, k.kv_element_bytes);
  if (profile().post_allocation_check) {
    // After the KV cache is allocated the profile activations (and the graph estimate the
    // budget reserved) are free again; graph capture outside the budget and then the
    // sampler warm-up on max_num_seqs dummy requests need their room, and weights repacked
    // at load leave segments the allocator cannot reuse for those large blocks. The reserved
    // parts do not depend on the utilization (kv_budget).
    const std::int64_t sampler =
        rank.last_stage ? sampler_peak_bytes(sampler_, requests, tokens) : 0;
    p.post_allocation_bytes =
        cudagraph + sampler + unusable_after_repack_bytes_ +
        (p.terms.persistent_buffers_bytes - persistent_in_budget_bytes(*profile_, p.terms)) -
        (activation + cudagraph_in_budget_bytes(*profile_, p.terms));
  }
  p.kv_reserved_bytes = kv_reserved_bytes(*profile_, p.terms);
  return p;
}

RankEvaluation CompiledLaunch::finish_rank(std::size_t index, const PreparedRank& p,
                                           double gpu_memory_utilization) const noexcept {
  RankEvaluation e;
  const KvBudget budget =
      kv_budget(*profile_, p.terms, gpu_memory_utilization, config_.kv_cache_memory_bytes);
  e.requested_memory_bytes = budget.requested_memory_bytes;
  e.activation_peak_bytes = p.terms.activation_peak_bytes;
  e.mm_encoder_bytes = p.mm_encoder_bytes;
  e.cudagraph_bytes = p.terms.cudagraph_bytes;
  e.persistent_buffers_bytes = p.terms.persistent_buffers_bytes;
  e.non_torch_bytes = p.terms.non_torch_bytes;
  e.all2all_buffer_bytes =
      ranks_[index].all2all_buffer_bytes + p.terms.non_torch_bytes - ranks_[index].non_torch_bytes;
  e.kv_cache_bytes = budget.kv_cache_bytes;
  e.page = p.page;
  e.num_blocks = kv_num_blocks(ranks_[index].kv, p.page, e.kv_cache_bytes);
  e.headroom_bytes = headroom_bytes(e.requested_memory_bytes);
  e.post_allocation_bytes = p.post_allocation_bytes;
  return e;
}

RankEvaluation CompiledLaunch::evaluate_rank(std::size_t index,
                                             const ResolvedKnobs& k) const noexcept {
  return finish_rank(index, prepare_rank(index, k), k.gpu_memory_utilization);
}

void CompiledLaunch::choose_rank(std::size_t i, const ResolvedKnobs& k,
                                 const PreparedRank& prepared, std::int64_t requested,
                                 std::int64_t kv_cache_bytes, Evaluation& out,
                                 PreparedChoices& choices, RankPass& pass) const noexcept {
  const CompiledRank& rank = ranks_[i];
  out.kv_empty |= rank.kv.groups.empty();
  out.max_weights_bytes = std::max(out.max_weights_bytes, rank.weights_bytes);
  out.max_non_torch_bytes = std::max(out.max_non_torch_bytes, prepared.terms.non_torch_bytes);
  out.max_post_allocation_bytes =
      std::max(out.max_post_allocation_bytes, prepared.post_allocation_bytes);
  if (profile().graph_profiling_minimal_kv_cache && k.num_cudagraph_sizes > 0) {
    // Graph profiling holds the weights, the workspaces, a minimal KV cache and the graphs.
    const std::int64_t minimal_kv =
        kv_blocks_bytes(rank.kv, prepared.page, graph_profiling_blocks(k));
    out.max_graph_profiling_bytes = std::max(
        out.max_graph_profiling_bytes, rank.weights_bytes + prepared.terms.non_torch_bytes +
                                           prepared.terms.persistent_buffers_bytes + minimal_kv +
                                           prepared.terms.cudagraph_bytes);
  }
  // The worst rank: the largest shortfall of one request against its KV cache.
  const std::int64_t blocks =
      kv_blocks_per_request(rank.kv, prepared.page, k.max_model_len, k.max_num_batched_tokens);
  const std::int64_t need = kv_blocks_bytes(rank.kv, prepared.page, blocks);
  if (need - kv_cache_bytes >= pass.worst_request_bytes - pass.min_kv_cache_bytes) {
    pass.worst_request_bytes = need;
    out.worst_rank = static_cast<std::int32_t>(i);
    choices.worst_block_size = prepared.page.block_size;
    choices.worst_blocks =
        blocks > 0 ? static_cast<double>(blocks) : std::numeric_limits<double>::infinity();
  }
  const std::int64_t margin = prepared.post_allocation_bytes - headroom_bytes(requested);
  if (i == 0 || margin > pass.tightest_margin_bytes) {
    pass.tightest_margin_bytes = margin;
    out.tightest_rank = static_cast<std::int32_t>(i);
    choices.tightest_post_allocation_bytes = prepared.post_allocation_bytes;
    choices.tightest_cudagraph_bytes = prepared.terms.cudagraph_bytes;
    choices.tightest_activation_peak_bytes = prepared.terms.activation_peak_bytes;
    choices.tightest_graph_in_budget_bytes =
        profile().cudagraph_in_budget ? prepared.terms.cudagraph_bytes : 0;
  }
}

void CompiledLaunch::close_choices(const ResolvedKnobs& k, Evaluation& out,
                                   PreparedChoices& choices, const RankPass& pass) const noexcept {
  out.request_kv_bytes = pass.worst_request_bytes;
  choices.worst_groups = std::max<std::int64_t>(
      1,
      static_cast<std::int64_t>(ranks_[static_cast<std::size_t>(out.worst_rank)].kv.groups.size()));
  out.host_required_bytes = host_.required_bytes + input_batch_bytes(k);
  choices.verdict = verdict_bounds(k, out, choices);
  choices.max_model_len = static_cast<double>(k.max_model_len);
  choices.tokens_from_concurrency = profile().tokens_from_concurrency;
}

// The startup checks in vLLM's order (VerdictBounds::at), each written as a bound on the
// requested bytes, the KV bytes or the blocks: those that depend on the utilization compare
// the requested share with what prepare() fixed (headroom = startup free - requested).
VerdictBounds CompiledLaunch::verdict_bounds(const ResolvedKnobs& k, const Evaluation& e,
                                             const PreparedChoices& p) const noexcept {
  constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t kAlways = std::numeric_limits<std::int64_t>::min();
  const std::int64_t free = startup_free_bytes_;
  const std::int64_t kv_fixed = config_.kv_cache_memory_bytes.value_or(0);
  VerdictBounds v;
  v.startup_free_limit_bytes = profile().startup_free_memory_check ? free : kNever;
  if (hardware_.host_ram_bytes > 0 && e.host_required_bytes > hardware_.host_ram_bytes) {
    v.fixed = Outcome::HostOomKilled;
  } else if (e.max_weights_bytes > free) {
    v.fixed = Outcome::OomAtLoad;
  } else if (e.max_graph_profiling_bytes > free) {
    v.fixed = Outcome::CudagraphProfilingOom;
  } else if (kv_fixed > 0 && e.max_weights_bytes + e.max_non_torch_bytes + kv_fixed > free) {
    // A fixed --kv-cache-memory-bytes is allocated as asked: it must fit beside the weights.
    v.fixed = Outcome::NoKvMemory;
  }
  v.min_kv_cache_bytes = e.kv_empty ? kAlways : 1;  // a rank without KV layers needs none
  v.request_kv_bytes = e.request_kv_bytes;
  v.min_num_blocks = state_blocks_bound_max_num_seqs_ ? k.max_num_seqs : kAlways;
  // Graphs captured after the allocation come first; then the sampler warm-up.
  v.post_allocation_limit_bytes = free - p.tightest_post_allocation_bytes;
  v.capture_limit_bytes = free - (p.tightest_cudagraph_bytes - p.tightest_activation_peak_bytes -
                                  p.tightest_graph_in_budget_bytes);
  return v;
}

inline void CompiledLaunch::count_blocks(std::size_t i, const PreparedRank& rank,
                                         std::int64_t kv_cache_bytes,
                                         RankPass& pass) const noexcept {
  const std::int64_t blocks = kv_num_blocks(ranks_[i].kv, rank.page, kv_cache_bytes);
  if (pass.num_blocks < 0 || blocks < pass.num_blocks) pass.num_blocks = blocks;
}

PreparedEvaluation CompiledLaunch::prepare(const ResolvedKnobs& k) const noexcept {
  PreparedEvaluation p;
  prepare(k, p);
  return p;
}

void CompiledLaunch::prepare(const ResolvedKnobs& k, PreparedEvaluation& p) const noexcept {
  p.base = Evaluation{};
  p.base.knobs = k;
  p.choices = PreparedChoices{};
  // Every rank requests the same share; the choices do not depend on it (PreparedChoices).
  const std::int64_t requested =
      requested_memory_bytes(hardware_.gpu.total_memory_bytes, k.gpu_memory_utilization);
  RankPass pass;
  for (std::size_t i = 0; i < ranks_.size(); ++i) {
    const PreparedRank prepared = prepare_rank(i, k);
    if (i < PreparedEvaluation::kInlineRanks) p.ranks[i] = prepared;
    const std::int64_t kv =
        kv_cache_bytes_at(requested, prepared.kv_reserved_bytes, config_.kv_cache_memory_bytes);
    pass_kv(i, kv, pass);
    choose_rank(i, k, prepared, requested, kv, p.base, p.choices, pass);
  }
  close_choices(k, p.base, p.choices, pass);
}

FinishedPoint CompiledLaunch::finish_point(const PreparedEvaluation& p,
                                           double gpu_memory_utilization) const noexcept {
  return finish_requested(
      p, requested_memory_bytes(hardware_.gpu.total_memory_bytes, gpu_memory_utilization));
}

FinishedPoint CompiledLaunch::finish_requested(const PreparedEvaluation& p,
                                               std::int64_t requested) const noexcept {
  RankPass pass;
  pass.requested_memory_bytes = requested;
  // The rank's KV bytes and blocks (kv_budget's rule with its reserved part prepared).
  const auto add_rank = [&](std::size_t i, const PreparedRank& rank) {
    const std::int64_t kv =
        kv_cache_bytes_at(requested, rank.kv_reserved_bytes, config_.kv_cache_memory_bytes);
    pass_kv(i, kv, pass);
    count_blocks(i, rank, kv, pass);
  };
  if (ranks_.size() == 1) return single_rank_point(p).at(requested);  // any TP, no PP
  for (std::size_t i = 0; i < ranks_.size(); ++i) {
    if (i < PreparedEvaluation::kInlineRanks) {
      add_rank(i, p.ranks[i]);
    } else {
      // A rank past the inline ones, prepared again (its reserved bytes do not depend on the
      // utilization). Built only here: zeroing a PreparedRank on every point took 60% of
      // BM_Sweep.
      add_rank(i, prepare_rank(i, p.base.knobs));
    }
  }
  return p.choices.finish(requested, pass.min_kv_cache_bytes, pass.num_blocks);
}

SingleRankPoint CompiledLaunch::single_rank_point(const PreparedEvaluation& p) const noexcept {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  SingleRankPoint point;
  point.kv_reserved_bytes = p.ranks[0].kv_reserved_bytes;
  point.fixed_kv_cache_bytes = config_.kv_cache_memory_bytes;
  point.block_bytes = kv_block_bytes(p.ranks[0].page.page_bytes, ranks_[0].kv.group_size);
  point.choices = p.choices;
  // Where VerdictBounds::at says Started: below both limits on the requested bytes, with KV
  // bytes at least every KV bound (blocks >= m needs m x block bytes) and no fixed failure.
  const VerdictBounds& v = p.choices.verdict;
  std::int64_t min_kv = std::max(v.min_kv_cache_bytes, v.request_kv_bytes);  // >= 0
  if (v.min_num_blocks > 0) {
    // A layout without blocks has the largest block bytes: the product saturates to never.
    min_kv = std::max(min_kv, saturating_mul(v.min_num_blocks, point.block_bytes));
  }
  point.started_to_bytes = std::min(v.startup_free_limit_bytes, v.post_allocation_limit_bytes);
  if (v.fixed != Outcome::Started || min_kv == kMax) {
    point.started_from_bytes = kMax;  // never
  } else if (point.fixed_kv_cache_bytes) {
    point.started_from_bytes =
        *point.fixed_kv_cache_bytes >= min_kv ? std::numeric_limits<std::int64_t>::min() : kMax;
  } else {
    point.started_from_bytes = saturating_add(point.kv_reserved_bytes, min_kv);
  }
  return point;
}

namespace {

// The evaluation's fields that depend on the utilization, as finish_point() worked them out.
void apply(const FinishedPoint& f, Evaluation& out) noexcept {
  out.min_kv_cache_bytes = f.min_kv_cache_bytes;
  out.num_blocks = f.num_blocks;
  out.kv_tokens = f.kv_tokens;
  out.max_concurrency = f.max_concurrency;
  out.outcome = f.outcome;
}

}  // namespace

Evaluation CompiledLaunch::finish(const PreparedEvaluation& p,
                                  double gpu_memory_utilization) const noexcept {
  Evaluation out = p.base;
  out.knobs.gpu_memory_utilization = gpu_memory_utilization;
  apply(finish_point(p, gpu_memory_utilization), out);
  return out;
}

// prepare() and finish() in one pass over the ranks at the resolved utilization: each rank's
// budget serves both, and no rank is stored (zeroing and copying a PreparedEvaluation made
// BM_Evaluate 41 -> 56 ns). The steps are prepare()'s and finish_point()'s own.
[[gnu::flatten]] Evaluation CompiledLaunch::evaluate(const ResolvedKnobs& k) const noexcept {
  Evaluation out{k};
  PreparedChoices choices;
  const std::int64_t requested =
      requested_memory_bytes(hardware_.gpu.total_memory_bytes, k.gpu_memory_utilization);
  RankPass pass;
  pass.requested_memory_bytes = requested;
  const auto add_rank = [&](std::size_t i) {
    const PreparedRank prepared = prepare_rank(i, k);
    const std::int64_t kv =
        kv_cache_bytes_at(requested, prepared.kv_reserved_bytes, config_.kv_cache_memory_bytes);
    pass_kv(i, kv, pass);
    choose_rank(i, k, prepared, requested, kv, out, choices, pass);
    count_blocks(i, prepared, kv, pass);
  };
  // The first rank (a launch compiles pipeline_parallel_size >= 1 stages; without pipeline
  // parallelism it is the only one) outside the loop: the loop's hoisted invariants cost a
  // one-rank launch more than they save.
  add_rank(0);
  for (std::size_t i = 1; i < ranks_.size(); ++i) add_rank(i);
  close_choices(k, out, choices, pass);
  apply(choices.finish(pass.requested_memory_bytes, pass.min_kv_cache_bytes, pass.num_blocks), out);
  return out;
}

std::int64_t CompiledLaunch::graph_profiling_blocks(const ResolvedKnobs& k) const noexcept {
  const std::int64_t blocks =
      profile().graph_profiling_blocks_bounded_by_max_num_seqs
          ? std::min<std::int64_t>(k.max_num_seqs, k.max_cudagraph_capture_size)
          : k.max_cudagraph_capture_size;
  return std::max<std::int64_t>(1, blocks);
}

std::int64_t CompiledLaunch::estimated_max_model_len(const Evaluation& e) const noexcept {
  const ResolvedKnobs& k = e.knobs;
  const std::size_t worst = static_cast<std::size_t>(e.worst_rank);
  const KvPage page = rank_page(ranks_[worst], k.block_size, k.kv_element_bytes);
  return kv_max_model_len_that_fits(ranks_[worst].kv, page, e.min_kv_cache_bytes, k.max_model_len,
                                    k.max_num_batched_tokens);
}

std::int64_t CompiledLaunch::blocks_per_request(const ResolvedKnobs& k,
                                                std::int64_t context) const noexcept {
  std::int64_t worst = 0;
  for (const CompiledRank& rank : ranks_) {
    const KvPage page = rank_page(rank, k.block_size, k.kv_element_bytes);
    worst =
        std::max(worst, kv_blocks_per_request(rank.kv, page, context, k.max_num_batched_tokens));
  }
  return worst;
}

}  // namespace vramplan
