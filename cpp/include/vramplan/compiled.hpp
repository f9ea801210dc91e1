// A launch compiled once, evaluated many times. Everything that depends only on the model, the
// GPU, parallelism, dtype/quantization, speculation, LoRA, offload and the engine version is
// worked out when the launch is compiled: weight bytes per rank, KV geometry per rank, the
// activation and CUDA-graph coefficients, the host-RAM terms. The knobs a planner varies
// (gpu_memory_utilization, max_model_len, max_num_seqs, max_num_batched_tokens, block_size,
// KV element width) are then evaluated in closed form, without heap allocation.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "vramplan/engine.hpp"
#include "vramplan/engine_rules.hpp"
#include "vramplan/knobs.hpp"

namespace vramplan {

// The knobs evaluated per point. Unset = the engine default for this version and GPU.
struct LaunchKnobs {
  std::optional<double> gpu_memory_utilization;
  std::optional<std::int64_t> max_model_len;
  std::optional<std::int64_t> max_num_seqs;
  std::optional<std::int64_t> max_num_batched_tokens;
  std::optional<std::int32_t> block_size;
  std::int32_t kv_element_bytes = 0;  // 0: "auto", the served dtype's width
};
// The evaluated knobs of `config` (kv_cache_dtype read as an element width). Throws ConfigError.
LaunchKnobs launch_knobs(const EngineConfig& config);

// Why a set of knobs is refused before any memory is counted.
enum class KnobProblem : std::uint8_t {
  None,
  MaxModelLenBeyondModel,      // > max_position_embeddings
  BatchedTokensBelowModelLen,  // no chunked prefill: a whole prompt must fit in one step
  BatchedTokensBelowNumSeqs,   // vLLM: max_num_batched_tokens >= max_num_seqs
  NotPositive,                 // a knob <= 0 (C++ callers; the registry refuses it earlier)
};

// CUDA-graph capture sizes as a version builds them: how many, and the largest.
struct CaptureSizes {
  std::int32_t count = 0;
  std::int32_t largest = 0;
};
// The ladder's part at every limit 0..capture_max_size, compiled once a launch: entry L holds
// how many ladder sizes are <= L and the largest of them, so a size S is on the ladder when
// entry S's largest is S.
std::vector<CaptureSizes> capture_ladder_prefix(const EngineProfile& profile);
// `ladder_prefix` (capture_ladder_prefix of `profile`, or null) replaces the walks of the ladder.
CaptureSizes cudagraph_capture_sizes(
    const EngineProfile& profile, std::int64_t max_num_seqs, std::int64_t max_num_batched_tokens,
    std::int32_t num_speculative_tokens,
    const std::vector<CaptureSizes>* ladder_prefix = nullptr) noexcept;

// The profile run's activation peak on one rank: a per-token forward (dense MLP and hidden
// buffers), the fused-MoE workspace, and on the last stage the sampler on fp32 logits.
struct ActivationModel {
  std::int64_t forward_bytes_per_token = 0;
  std::int64_t moe_bytes_per_token = 0;
  bool sampler = false;  // last pipeline stage
  // Data parallelism with the naive / allgather_reducescatter exchange: each MoE layer gathers
  // the tokens of all `dispatch_replicas` DP ranks. Per local batched token: the gathered hidden
  // states and router logits and the wider expert output; and the fused-MoE workspace grows
  // from T to min(replicas x T, moe_chunk_tokens) tokens (0 = unchunked).
  std::int32_t dispatch_replicas = 1;
  std::int64_t dispatch_bytes_per_token = 0;
  std::int64_t moe_chunk_tokens = 0;
};
// The sampler: requests x vocab logits (fp32 logits, probabilities, sort buffers) plus the
// forward's output still alive; part of the profile peak, and allocated again by the warm-up.
struct SamplerModel {
  double bytes_per_logit = 0.0;  // fitted per version + the served dtype's width
  // Below `full_sort_below_rows` requests (and from 2) the sort of all rows at once:
  // full_sort_bytes_per_logit (+ the served dtype's width) instead.
  std::int64_t full_sort_below_rows = 0;
  double full_sort_bytes_per_logit = 0.0;
  double padded_vocab = 0.0;
  std::int64_t bytes_per_batched_token = 0;  // hidden x activation bytes
};
std::int64_t sampler_peak_bytes(const SamplerModel& sampler, std::int64_t requests,
                                std::int64_t batched_tokens) noexcept;
std::int64_t activation_peak_bytes(const ActivationModel& model, const SamplerModel& sampler,
                                   std::int64_t batched_tokens, std::int64_t requests) noexcept;
// The MoE all-to-all's share of the activation peak: 0 without data parallelism.
std::int64_t all2all_dispatch_bytes(const ActivationModel& model,
                                    std::int64_t batched_tokens) noexcept;

// The multimodal encoder in vLLM's profile_run (V1): the encoder runs on items_per_batch dummy
// images of the processor's largest size and its outputs stay in the encoder cache while the
// language model's dummy run executes, so the torch peak is the larger of the encoder forward
// and (encoder cache + the language model's peak), with the pixel inputs alive throughout.
// tokens_per_item 0: no encoder profile (text-only, every modality limited to 0, or unknown).
struct EncoderProfileModel {
  std::int64_t tokens_per_item = 0;         // LM embeddings of one largest image
  std::int64_t limit_per_prompt = 0;        // limit_mm_per_prompt for images (vLLM default 999)
  std::int64_t cache_bytes_per_item = 0;    // tokens_per_item x LM hidden x activation bytes
  std::int64_t input_bytes_per_item = 0;    // pixel values in the activation dtype
  std::int64_t forward_bytes_per_item = 0;  // encoder forward: MLP width + hidden buffers / token
};
// vLLM's compute_mm_encoder_budget and MultiModalBudget._get_max_items for the image modality:
// budget = max(max_num_batched_tokens, tokens_per_item); items = max(1, min(budget //
// tokens_per_item, requests x max(1, min(limit, max_model_len // tokens_per_item)))), where
// requests is max_num_seqs (bounded by budget // tokens_per_item without chunked prefill).
struct EncoderBudget {
  std::int64_t budget_tokens = 0;  // "Encoder cache will be initialized with a budget of N"
  std::int64_t items = 0;          // "... and profiled with K image items"
};
EncoderBudget encoder_budget(const EncoderProfileModel& encoder,
                             std::int64_t max_num_batched_tokens, std::int64_t max_num_seqs,
                             std::int64_t max_model_len, bool chunked_prefill) noexcept;
// The profile run's torch peak with the encoder profile, given the language model's own peak.
std::int64_t multimodal_activation_peak_bytes(const EncoderProfileModel& encoder,
                                              std::int64_t items,
                                              std::int64_t text_peak_bytes) noexcept;

// DeepEP low latency's RDMA buffer, linear in the tokens per rank (get_low_latency_rdma_size_hint).
struct DeepEpLowLatencyLayout {
  std::int64_t bytes_per_token = 0;  // a send and the experts' receive slots, per token
  std::int64_t signal_bytes = 0;
};
// The buffer for `tokens` per rank: odd and even copies, rounded past the next 128 bytes
// (saturating); 0 for an empty layout.
std::int64_t deepep_low_latency_rdma_bytes(const DeepEpLowLatencyLayout& layout,
                                           std::int64_t tokens) noexcept;

// One pipeline stage (TP ranks are symmetric), compiled.
struct CompiledRank {
  std::int32_t pipeline_rank = 0;
  bool last_stage = false;
  std::int64_t weights_bytes = 0;  // after CPU offload, with LoRA slots and a drafter
  std::int64_t lora_bytes = 0;
  // Host bytes this rank pins for --cpu-offload-gb (each parameter rounded up to a power of 2)
  std::int64_t cpu_offload_pinned_bytes = 0;
  // Host bytes this rank's sleep-mode backup takes while asleep (0 without --enable-sleep-mode)
  std::int64_t sleep_backup_bytes = 0;
  std::int64_t non_torch_bytes = 0;
  // DeepEP buffers made after load (prepare_communication_buffer_for_model): part of
  // non_torch_bytes, as vLLM's profiler sees them.
  std::int64_t all2all_buffer_bytes = 0;
  // 0.20+: the low-latency RDMA buffer sized for max_num_batched_tokens, added per point to
  // non_torch and the all2all buffers.
  DeepEpLowLatencyLayout batch_sized_rdma;
  ActivationModel activation;
  std::optional<ActivationModel> draft_activation;  // a separate drafter's dummy forward
  double cudagraph_bytes_per_size = 0.0;            // the rank's pieces at one capture size
  double draft_cudagraph_bytes_per_size = 0.0;      // the drafter's pieces (pool base shared)
  // FA3 split-KV accumulators per token of the largest FULL graph (0: none)
  std::int64_t attention_split_bytes_per_token = 0;
  EncoderProfileModel encoder;  // every stage profiles the encoder
  KvGeometry kv;
  // The page at the launch's default block size and KV element width, compiled (rank_page).
  KvPage default_page;
  std::int32_t default_page_block_size = 0;
  std::int32_t default_page_element_bytes = 0;
};

// The rank's KV page at these knobs: the compiled one at the launch's defaults.
inline KvPage rank_page(const CompiledRank& rank, std::int32_t block_size,
                        std::int32_t kv_element_bytes) noexcept {
  if (block_size == rank.default_page_block_size &&
      kv_element_bytes == rank.default_page_element_bytes) {
    return rank.default_page;
  }
  return kv_page(rank.kv, block_size, kv_element_bytes);
}

// One rank evaluated at resolved knobs.
struct RankEvaluation {
  std::int64_t requested_memory_bytes = 0;
  std::int64_t activation_peak_bytes = 0;
  std::int64_t mm_encoder_bytes = 0;  // part of activation_peak_bytes
  std::int64_t cudagraph_bytes = 0;
  std::int64_t kv_cache_bytes = 0;
  std::int64_t num_blocks = 0;
  std::int64_t headroom_bytes = 0;
  std::int64_t post_allocation_bytes = 0;
  std::int64_t persistent_buffers_bytes = 0;  // MRV2 sampler state (0 on the V1 runner)
  std::int64_t non_torch_bytes = 0;           // with the all2all buffers at these knobs
  std::int64_t all2all_buffer_bytes = 0;
  KvPage page;
};

// The launch evaluated at resolved knobs: what the startup reports and how it ends.
struct Evaluation {
  ResolvedKnobs knobs;
  Outcome outcome = Outcome::Started;
  std::int64_t num_blocks = 0;   // min over ranks
  std::int64_t kv_tokens = 0;    // "GPU KV cache size: N tokens" as this version reports
  double max_concurrency = 0.0;  // "Maximum concurrency for max_model_len tokens"
  std::int64_t min_kv_cache_bytes = 0;
  std::int64_t request_kv_bytes = 0;  // one max_model_len request, worst rank
  std::int64_t max_weights_bytes = 0;
  std::int64_t max_non_torch_bytes = 0;
  std::int64_t max_post_allocation_bytes = 0;
  std::int64_t max_graph_profiling_bytes = 0;  // weights + workspaces + minimal KV + graphs
  std::int64_t host_required_bytes = 0;
  std::int32_t worst_rank = 0;     // whose KV layout reports tokens
  std::int32_t tightest_rank = 0;  // least headroom after the KV allocation
  bool kv_empty = false;           // a rank with no KV-holding layer
};

// One rank at resolved knobs, without the utilization: what the KV budget subtracts, the page,
// and the need after the KV allocation (CompiledLaunch::prepare_rank).
struct PreparedRank {
  BudgetTerms terms;
  std::int64_t mm_encoder_bytes = 0;       // part of terms.activation_peak_bytes
  std::int64_t post_allocation_bytes = 0;  // no term of it depends on the utilization
  std::int64_t kv_reserved_bytes = 0;      // what the KV budget takes before the cache
  KvPage page;
};

// What the utilization decides at a prepared point (CompiledLaunch::finish_point).
struct FinishedPoint {
  std::int64_t min_kv_cache_bytes = 0;
  std::int64_t num_blocks = 0;
  std::int64_t kv_tokens = 0;
  double max_concurrency = 0.0;
  Outcome outcome = Outcome::Started;
};

// The startup verdict as a function of the requested bytes, fixed by prepare(): every check
// the utilization can change compares the requested share, the KV bytes it leaves or the
// blocks they buy with one bound, so a sweep row is a few comparisons.
struct VerdictBounds {
  // The first check that fails at every utilization (host RAM, the load, graph profiling, a
  // fixed KV size that does not fit); Started when none does.
  Outcome fixed = Outcome::Started;
  std::int64_t startup_free_limit_bytes = 0;     // requested above it: StartupFreeMemory
  std::int64_t min_kv_cache_bytes = 0;           // KV below it: NoKvMemory
  std::int64_t request_kv_bytes = 0;             // KV below it: InsufficientKvForMaxModelLen
  std::int64_t min_num_blocks = 0;               // blocks below it: StateBlocksBelowMaxNumSeqs
  std::int64_t post_allocation_limit_bytes = 0;  // requested above it: an OOM after the KV
  std::int64_t capture_limit_bytes = 0;          // ... and above this one, in the graph capture

  // The checks in the order vLLM meets them.
  Outcome at(std::int64_t requested_bytes, std::int64_t kv_cache_bytes,
             std::int64_t num_blocks) const noexcept {
    if (requested_bytes > startup_free_limit_bytes) return Outcome::StartupFreeMemory;
    if (fixed != Outcome::Started) return fixed;
    if (kv_cache_bytes < min_kv_cache_bytes) return Outcome::NoKvMemory;
    if (kv_cache_bytes < request_kv_bytes) return Outcome::InsufficientKvForMaxModelLen;
    if (num_blocks < min_num_blocks) return Outcome::StateBlocksBelowMaxNumSeqs;
    if (requested_bytes > post_allocation_limit_bytes) {
      return requested_bytes > capture_limit_bytes ? Outcome::CudagraphCaptureOom
                                                   : Outcome::SamplerWarmupOom;
    }
    return Outcome::Started;
  }
};

// What finish() needs of the rank choices prepare() makes. Every rank requests the same
// ceil(total x utilization), so the choices are fixed by prepare(): the worst rank maximizes
// request need - KV bytes = need - requested + reserved, and the tightest maximizes
// post-allocation need - headroom = need - (total - others - context) + requested; the
// requested bytes cancel from every comparison.
struct PreparedChoices {
  // Blocks one request needs on the worst rank, held as the concurrency's divisor: infinity
  // when it needs none, so that the concurrency is 0.
  double worst_blocks = std::numeric_limits<double>::infinity();
  std::int64_t worst_groups = 1;       // the worst rank's KV groups (at least 1)
  std::int32_t worst_block_size = 16;  // the worst rank's page block size
  // The tightest rank: its post-allocation need, graphs, activation peak and the graph bytes
  // its budget already reserved.
  std::int64_t tightest_post_allocation_bytes = 0;
  std::int64_t tightest_cudagraph_bytes = 0;
  std::int64_t tightest_activation_peak_bytes = 0;
  std::int64_t tightest_graph_in_budget_bytes = 0;
  VerdictBounds verdict;
  double max_model_len = 0.0;            // the point's, as tokens from concurrency use it
  bool tokens_from_concurrency = false;  // the release's way of reporting KV tokens

  // The point at a requested share, given the KV bytes and blocks it leaves (min over ranks):
  // blocks, tokens, concurrency and the verdict.
  FinishedPoint finish(std::int64_t requested_bytes, std::int64_t min_kv_cache_bytes,
                       std::int64_t num_blocks) const noexcept {
    FinishedPoint out = figures(min_kv_cache_bytes, num_blocks);
    out.outcome = verdict.at(requested_bytes, min_kv_cache_bytes, out.num_blocks);
    return out;
  }
  // finish() without the verdict.
  FinishedPoint figures(std::int64_t min_kv_cache_bytes, std::int64_t num_blocks) const noexcept {
    FinishedPoint out;
    out.min_kv_cache_bytes = min_kv_cache_bytes;
    out.num_blocks = std::max<std::int64_t>(0, num_blocks);
    out.max_concurrency = static_cast<double>(out.num_blocks) / worst_blocks;
    if (tokens_from_concurrency) {
      out.kv_tokens = static_cast<std::int64_t>(out.max_concurrency * max_model_len);
    } else {
      out.kv_tokens = (out.num_blocks / worst_groups) * worst_block_size;
    }
    return out;
  }
};

// A prepared point of a one-rank launch as a function of the requested bytes alone (sweep rows):
// kv_budget's rule with its reserved part fixed, the blocks it buys, and the point's close.
// Every check of the verdict is monotone in the requested bytes, so the launch starts on one
// interval of them, worked out once; a row outside it takes the checks in order.
struct SingleRankPoint {
  std::int64_t kv_reserved_bytes = 0;
  std::optional<std::int64_t> fixed_kv_cache_bytes;  // --kv-cache-memory-bytes
  std::int64_t block_bytes = 0;                      // kv_block_bytes
  std::int64_t started_from_bytes = 0;               // requested in [from, to]: Started
  std::int64_t started_to_bytes = -1;
  PreparedChoices choices;

  FinishedPoint at(std::int64_t requested_bytes) const noexcept {
    const std::int64_t kv =
        kv_cache_bytes_at(requested_bytes, kv_reserved_bytes, fixed_kv_cache_bytes);
    FinishedPoint out = choices.figures(kv, kv_blocks_in_budget(block_bytes, kv));
    out.outcome = requested_bytes >= started_from_bytes && requested_bytes <= started_to_bytes
                      ? Outcome::Started
                      : choices.verdict.at(requested_bytes, kv, out.num_blocks);
    return out;
  }
};

// A point prepared for every utilization (CompiledLaunch::prepare): the evaluation's fields
// that do not depend on gpu_memory_utilization, and what finish() needs for those that do.
struct PreparedEvaluation {
  // Ranks kept inline; a launch with more pipeline stages prepares the rest again in finish().
  static constexpr std::size_t kInlineRanks = 4;
  Evaluation base;  // num_blocks, kv_tokens, concurrency, min KV, outcome unset
  PreparedChoices choices;
  std::array<PreparedRank, kInlineRanks> ranks;
};

class CompiledLaunch {
 public:
  // Validates every knob of `config` (knob registry), resolves the drafter, the engine profile
  // and the effective weight format, and compiles each pipeline stage. Throws ConfigError.
  CompiledLaunch(std::shared_ptr<const ModelSpec> spec, HardwareConfig hardware,
                 EngineConfig config);

  const ModelSpec& spec() const noexcept { return *spec_; }
  const std::shared_ptr<const ModelSpec>& spec_ptr() const noexcept { return spec_; }
  const HardwareConfig& hardware() const noexcept { return hardware_; }
  // The knobs compiled in; its evaluated knobs are the defaults evaluate() starts from.
  const EngineConfig& config() const noexcept { return config_; }
  // vLLM's rules for this launch (a calibrated or version row, adjusted for the runner); shared
  // with every breakdown of the launch, which names the release it was planned under.
  const EngineProfile& profile() const noexcept { return *profile_; }
  const std::shared_ptr<const EngineProfile>& profile_ptr() const noexcept { return profile_; }
  const std::vector<CompiledRank>& ranks() const noexcept { return ranks_; }
  const QuantSpec& quantization() const noexcept { return quantization_; }
  DType served_dtype() const noexcept { return served_dtype_; }
  std::int64_t startup_free_bytes() const noexcept { return startup_free_bytes_; }
  std::int64_t cuda_context_bytes() const noexcept { return cuda_context_bytes_; }
  // Whether the launch runs on Model Runner V2 (routing of its vLLM release, or the env knob).
  bool model_runner_v2() const noexcept { return model_runner_v2_; }
  // MRV2's persistent sampler state at `max_num_seqs` (PenaltiesState: int32 output bin counts
  // [seqs, vocab] + packed prompt masks [seqs, ceil(vocab / 32)]); 0 on the V1 runner.
  std::int64_t persistent_buffers_bytes(std::int64_t max_num_seqs) const noexcept {
    return max_num_seqs * persistent_bytes_per_sequence_;
  }
  // The workers' InputBatch on the host: token_ids_cpu (int32) and is_token_ids (bool), 5 bytes
  // a token of [max_num_seqs, max_model_len] in each (gpu_input_batch.py).
  std::int64_t input_batch_bytes(const ResolvedKnobs& knobs) const noexcept {
    return input_batch_bytes_per_token_ * knobs.max_num_seqs * knobs.max_model_len;
  }
  // Blocks of the minimal KV cache graph profiling allocates (num_gpu_blocks_override).
  std::int64_t graph_profiling_blocks(const ResolvedKnobs& knobs) const noexcept;

  // vLLM's defaulting of the evaluated knobs; the problem when vLLM would refuse them.
  KnobProblem try_resolve(const LaunchKnobs& knobs, ResolvedKnobs& out) const noexcept;
  ResolvedKnobs resolve(const LaunchKnobs& knobs) const;  // throws ConfigError naming the knob
  // The startup at `knobs`: finish(prepare(knobs), knobs.gpu_memory_utilization), in one pass
  // over the ranks (the same steps, each rank's budget shared by both).
  Evaluation evaluate(const ResolvedKnobs& knobs) const noexcept;
  // The startup split along the utilization: prepare() once per (max_model_len, max_num_seqs,
  // max_num_batched_tokens, ...), then finish() per utilization in (0, 1] (sweeps).
  PreparedEvaluation prepare(const ResolvedKnobs& knobs) const noexcept;
  // The same into `out` (a sweep's tile): the ranks past this launch's keep what they held.
  void prepare(const ResolvedKnobs& knobs, PreparedEvaluation& out) const noexcept;
  Evaluation finish(const PreparedEvaluation& prepared,
                    double gpu_memory_utilization) const noexcept;
  // finish()'s fields that depend on the utilization, without copying the rest (sweep rows).
  FinishedPoint finish_point(const PreparedEvaluation& prepared,
                             double gpu_memory_utilization) const noexcept;
  // The same at the requested bytes the utilization gives (requested_memory_bytes): a sweep
  // works them out once per utilization.
  FinishedPoint finish_requested(const PreparedEvaluation& prepared,
                                 std::int64_t requested_memory_bytes) const noexcept;
  // A one-rank launch's prepared point as a function of the requested bytes (ranks().size() == 1).
  SingleRankPoint single_rank_point(const PreparedEvaluation& prepared) const noexcept;
  // One rank: finish_rank(i, prepare_rank(i, knobs), knobs.gpu_memory_utilization).
  RankEvaluation evaluate_rank(std::size_t rank, const ResolvedKnobs& knobs) const noexcept;
  PreparedRank prepare_rank(std::size_t rank, const ResolvedKnobs& knobs) const noexcept;
  RankEvaluation finish_rank(std::size_t rank, const PreparedRank& prepared,
                             double gpu_memory_utilization) const noexcept;
  // The profile run's freed blocks that the version counts as non-torch memory as well.
  std::int64_t cached_activation_bytes(std::int64_t activation_peak_bytes) const noexcept {
    return profile().non_torch_counts_cached_activations ? activation_peak_bytes : 0;
  }
  // Largest max_model_len whose one request fits the worst rank's KV cache (vLLM's estimate).
  std::int64_t estimated_max_model_len(const Evaluation& evaluation) const noexcept;
  // Blocks one request of `context` tokens needs on the rank that needs most.
  std::int64_t blocks_per_request(const ResolvedKnobs& knobs, std::int64_t context) const noexcept;
  // Host RAM at these knobs, with its terms.
  HostBreakdown host(const ResolvedKnobs& knobs) const;
  // The full report: every term per rank with provenance, the verdict and vLLM's messages.
  Breakdown breakdown(const LaunchKnobs& knobs) const;

 private:
  // resolve()'s ConfigError naming the knob try_resolve refused.
  [[noreturn, gnu::cold, gnu::noinline]] void throw_knob_problem(
      KnobProblem problem, const LaunchKnobs& knobs, const ResolvedKnobs& resolved) const;
  // The encoder profile from limit_mm_per_prompt / language_model_only and the tower's facts;
  // notes in launch_notes_ what it cannot model. Throws ConfigError naming the knob.
  EncoderProfileModel multimodal_profile(std::int64_t act_bytes);
  std::int64_t mm_limit(const std::string& modality) const;  // vLLM default 999
  bool multimodal_enabled() const;
  void audio_profile_unmodelled();  // an audio tower's profile: a note, or refused when asked
  std::int64_t loaded_tower_parameters()
      const;  // the tower parameters vLLM builds  //
              // the model has a tower and some modality's limit is > 0
  Breakdown startup_breakdown(const LaunchKnobs& knobs) const;  // without the notes
  // One pass over the ranks: prepare()'s running choices and finish()'s running minimum. Both
  // passes and evaluate()'s single pass (prepare and finish at one utilization, sharing each
  // rank's budget) are built from the steps below, so each formula is written once.
  struct RankPass {
    std::int64_t worst_request_bytes = 0;
    std::int64_t tightest_margin_bytes = 0;  // post-allocation need beyond the headroom
    std::int64_t min_kv_cache_bytes = 0;
    std::int64_t requested_memory_bytes = 0;  // the same on every rank
    std::int64_t num_blocks = -1;             // min over ranks; -1 before the first
  };
  // Every pass: the rank's KV bytes into the minimum.
  static void pass_kv(std::size_t index, std::int64_t kv_cache_bytes, RankPass& pass) noexcept {
    pass.min_kv_cache_bytes =
        index == 0 ? kv_cache_bytes : std::min(pass.min_kv_cache_bytes, kv_cache_bytes);
  }
  // prepare()'s step: the fixed fields and the worst and tightest ranks (after pass_kv).
  void choose_rank(std::size_t index, const ResolvedKnobs& knobs, const PreparedRank& rank,
                   std::int64_t requested, std::int64_t kv_cache_bytes, Evaluation& out,
                   PreparedChoices& choices, RankPass& pass) const noexcept;
  // prepare()'s close: what follows from the choices and the host.
  void close_choices(const ResolvedKnobs& knobs, Evaluation& out, PreparedChoices& choices,
                     const RankPass& pass) const noexcept;
  // close_choices' last step: the verdict's bounds at this point.
  VerdictBounds verdict_bounds(const ResolvedKnobs& knobs, const Evaluation& evaluation,
                               const PreparedChoices& choices) const noexcept;
  // finish()'s step: the rank's blocks into the minimum.
  void count_blocks(std::size_t index, const PreparedRank& rank, std::int64_t kv_cache_bytes,
                    RankPass& pass) const noexcept;
  // What the GPU has left beside the engine's requested share (the same for every rank).
  std::int64_t headroom_bytes(std::int64_t requested_memory_bytes) const noexcept {
    return startup_free_bytes_ - requested_memory_bytes;
  }

  std::shared_ptr<const ModelSpec> spec_;
  HardwareConfig hardware_;
  EngineConfig config_;
  std::shared_ptr<const EngineProfile> profile_;
  QuantSpec quantization_;
  DType served_dtype_ = DType::BF16;
  SamplerModel sampler_;
  std::vector<CompiledRank> ranks_;
  std::vector<CaptureSizes> capture_ladder_prefix_;  // capture_ladder_prefix(profile())
  std::int64_t default_max_num_seqs_ = 0;
  std::int64_t default_max_num_batched_tokens_ = 0;
  // V0's long-context chunked prefill: max_model_len above which it applies to this launch
  // (0: never).
  std::int64_t long_context_chunked_prefill_above_ = 0;
  std::int32_t default_block_size_ = 16;
  std::int64_t cuda_context_bytes_ = 0;
  std::int64_t startup_free_bytes_ = 0;
  std::int64_t cudagraph_base_bytes_ = 0;
  std::int64_t unusable_after_repack_bytes_ = 0;
  std::int32_t num_speculative_tokens_ = 0;
  bool model_runner_v2_ = false;
  std::int64_t persistent_bytes_per_sequence_ = 0;  // persistent_buffers_bytes per sequence
  std::int64_t input_batch_bytes_per_token_ = 0;    // input_batch_bytes per token, all workers
  // 0.20+, FULL decode graphs, a rank with Mamba / linear-attention state: max_num_seqs must
  // not pass the KV pool's blocks (Outcome::StateBlocksBelowMaxNumSeqs).
  bool state_blocks_bound_max_num_seqs_ = false;
  bool all2all_exchange_ = false;         // an MoE model under DP: the breakdown names the terms
  HostBreakdown host_;                    // without the per-knob input-batch term
  std::vector<ModalityLimit> mm_limits_;  // limit_mm_per_prompt as given
  // Why the encoder profile is missing or partial for a multimodal model (plan warnings).
  std::vector<std::string> launch_notes_;  // what the plan assumed or cannot model, as messages
};

}  // namespace vramplan
