// The full report of a compiled launch: every term per rank with its provenance, the verdict
// and what vLLM prints for it.
#include <algorithm>
#include <array>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "launch_internal.hpp"
#include "vramplan/calibration.hpp"
#include "vramplan/compiled.hpp"

namespace vramplan {
namespace {

std::string gib_text(std::int64_t bytes) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(2);
  out << static_cast<double>(bytes) / static_cast<double>(calibration::kGiB);
  return out.str();
}

// A rank's terms by name, in the order reports list them; a term is listed only where the
// launch has it (the encoder for multimodal models, the MRV2 sampler state, the all-to-all).
enum class RankTermId : std::uint8_t {
  Weights,
  ActivationPeak,
  MmEncoder,
  Mrv2PersistentBuffers,
  All2allDispatch,
  NonTorch,
  All2allBuffers,
  Cudagraph,
  KvCache,
  CudaContext,
};
constexpr std::size_t kRankTermCount = 10;
constexpr std::array<std::string_view, kRankTermCount> kRankTermNames = {
    "weights",          "activation_peak", "mm_encoder",      "mrv2_persistent_buffers",
    "all2all_dispatch", "non_torch",       "all2all_buffers", "cudagraph",
    "kv_cache",         "cuda_context",
};

class RankTerms {
 public:
  void set(RankTermId id, std::int64_t bytes, std::string_view provenance) noexcept {
    const auto i = static_cast<std::size_t>(id);
    terms_[i] = Term{kRankTermNames[i], bytes, provenance};
    listed_[i] = true;
  }
  std::vector<Term> listed() const {
    std::vector<Term> out;
    out.reserve(kRankTermCount);
    for (std::size_t i = 0; i < kRankTermCount; ++i) {
      if (listed_[i]) out.push_back(terms_[i]);
    }
    return out;
  }

 private:
  std::array<Term, kRankTermCount> terms_{};
  std::array<bool, kRankTermCount> listed_{};
};

// How a launch lists and explains its ranks' terms (the same for every rank).
struct TermListing {
  bool mm_encoder = false;       // a multimodal model: the encoder's share apart
  bool model_runner_v2 = false;  // the MRV2 sampler state apart
  bool consumed_budget = false;  // ... inside the budget (0.27+ counts memory consumed)
  bool all2all = false;          // the all-to-all's shares apart
  const char* graph_note = "";
  const char* kv_note = "";
  const char* non_torch_note = "";
};

TermListing term_listing(const EngineProfile& profile, bool model_runner_v2, bool mm_encoder,
                         bool all2all, std::int32_t tensor_parallel_size, bool pcie_only) {
  TermListing l;
  l.mm_encoder = mm_encoder;
  l.model_runner_v2 = model_runner_v2;
  l.consumed_budget = profile.consumed_budget_formula;
  l.all2all = all2all;
  l.graph_note =
      profile.cudagraph_in_budget
          ? "calibrated: base + per captured layer piece x capture sizes (inside the budget)"
      : model_runner_v2
          ? "calibrated: base + per captured layer piece x capture sizes (Model Runner V2 before "
            "0.29 estimates no graphs: captured after KV allocation, outside the budget)"
          : "calibrated: base + per captured layer piece x capture sizes (captured after KV "
            "allocation, outside the budget)";
  const bool persistent_in_budget = model_runner_v2 && profile.consumed_budget_formula;
  l.kv_note =
      profile.cudagraph_in_budget
          ? (persistent_in_budget ? "budget: requested - weights - activation - non_torch - "
                                    "mrv2_persistent_buffers - cudagraph"
                                  : "budget: requested - weights - activation - non_torch - "
                                    "cudagraph")
          : (persistent_in_budget
                 ? "budget: requested - weights - activation - non_torch - mrv2_persistent_buffers"
                 : "budget: requested - weights - activation - non_torch");
  // At TP >= 2 the charge depends on the interconnect, which the GPU's name may not settle (an
  // A100 or H100 board with or without NVLink): the text says which was charged.
  l.non_torch_note =
      tensor_parallel_size < 2
          ? "calibrated: cuBLAS/attention workspaces"
          : (pcie_only
                 ? "calibrated: cuBLAS/attention workspaces; NCCL buffers over PCIe at TP>=2 "
                   "(interconnect 'pcie': the largest figure logged over PCIe)"
                 : "calibrated: cuBLAS/attention workspaces; NCCL (+ custom all-reduce) buffers "
                   "over NVLink at TP>=2 (the largest figure logged over NVLink; interconnect "
                   "'pcie' for GPUs that talk over PCIe only)");
  return l;
}

// A rank's figures at resolved knobs; `cached_activation_bytes` is what non-torch memory
// counts of the activation peak.
RankBreakdown rank_figures(const CompiledRank& compiled, const RankEvaluation& r,
                           std::int64_t total_memory_bytes, std::int64_t cuda_context_bytes,
                           std::int64_t cached_activation_bytes) {
  RankBreakdown rank;
  rank.pipeline_rank = compiled.pipeline_rank;
  rank.total_memory_bytes = total_memory_bytes;
  rank.requested_memory_bytes = r.requested_memory_bytes;
  rank.weights_bytes = compiled.weights_bytes;
  rank.lora_bytes = compiled.lora_bytes;
  rank.activation_peak_bytes = r.activation_peak_bytes;
  rank.mm_encoder_bytes = r.mm_encoder_bytes;
  rank.non_torch_bytes = r.non_torch_bytes + cached_activation_bytes;
  rank.cudagraph_bytes = r.cudagraph_bytes;
  rank.cuda_context_bytes = cuda_context_bytes;
  rank.kv_cache_bytes = r.kv_cache_bytes;
  rank.kv_layout = kv_layout(compiled.kv, r.page);
  rank.kv_bytes_per_token = r.page.bytes_per_token;
  rank.num_blocks = r.num_blocks;
  rank.headroom_bytes = r.headroom_bytes;
  rank.post_allocation_bytes = r.post_allocation_bytes;
  rank.persistent_buffers_bytes = r.persistent_buffers_bytes;
  return rank;
}

// The all-to-all's share of the activation peak: the peak less the peak with the dispatch
// gathering nothing from other replicas.
std::int64_t all2all_dispatch_bytes(const CompiledRank& compiled, const SamplerModel& sampler,
                                    const ResolvedKnobs& k, std::int64_t activation_peak) {
  const std::int64_t requests = std::min(k.max_num_seqs, k.max_num_batched_tokens);
  ActivationModel gathered_apart = compiled.activation;
  gathered_apart.dispatch_replicas = 1;
  std::int64_t without =
      activation_peak_bytes(gathered_apart, sampler, k.max_num_batched_tokens, requests);
  if (compiled.draft_activation) {
    without = std::max(without, activation_peak_bytes(*compiled.draft_activation, sampler,
                                                      k.max_num_batched_tokens, requests));
  }
  return activation_peak - without;
}

// A rank's terms with their provenance. The encoder's and the all-to-all's shares come out of
// activation_peak (and the DeepEP / pplx buffers out of non_torch) so the stacked terms still
// add up.
std::vector<Term> rank_terms(const RankBreakdown& rank, std::int64_t all2all_buffer_bytes,
                             std::int64_t dispatch, const TermListing& listing) {
  const std::int64_t mm_encoder = listing.mm_encoder ? rank.mm_encoder_bytes : 0;
  RankTerms terms;
  terms.set(RankTermId::Weights, rank.weights_bytes,
            "exact: the spec's tensors in their stored format + rotary cos/sin cache (+ LoRA "
            "slots, drafter; less CPU offload)");
  terms.set(RankTermId::ActivationPeak, rank.activation_peak_bytes - dispatch - mm_encoder,
            "formula + calibrated: forward of max_num_batched_tokens, fused-MoE workspace, "
            "sampler on requests x vocab logits");
  if (listing.mm_encoder) {
    terms.set(RankTermId::MmEncoder, mm_encoder,
              "formula: profile run's multimodal encoder: max(encoder forward, encoder cache "
              "(items x tokens per image x hidden) + the text peak) + pixel inputs, less the "
              "text peak; items from the encoder budget (0: every modality limited to 0)");
  }
  if (listing.model_runner_v2) {
    terms.set(RankTermId::Mrv2PersistentBuffers, rank.persistent_buffers_bytes,
              listing.consumed_budget
                  ? "formula: Model Runner V2 sampler state, max_num_seqs x (vocab + vocab/32) "
                    "x 4 B (inside the budget: 0.27+ counts memory consumed since the init "
                    "snapshot)"
                  : "formula: Model Runner V2 sampler state, max_num_seqs x (vocab + vocab/32) "
                    "x 4 B (held but outside the budget before 0.27: it comes out of the "
                    "headroom)");
  }
  if (listing.all2all) {
    terms.set(RankTermId::All2allDispatch, dispatch,
              "formula (activation peak): DP dispatch gathers dp x T tokens into each MoE "
              "layer: hidden states, router logits, expert output, fused-MoE workspace");
    terms.set(RankTermId::All2allBuffers, all2all_buffer_bytes,
              "formula (non-torch): DeepEP NVLink buffer (VLLM_DEEPEP_BUFFER_SIZE_MB) + 32 MiB "
              "workspace [+ low-latency RDMA size hint], or pplx intranode buffers, made after "
              "load");
  }
  terms.set(RankTermId::NonTorch, rank.non_torch_bytes - all2all_buffer_bytes,
            listing.non_torch_note);
  terms.set(RankTermId::Cudagraph, rank.cudagraph_bytes, listing.graph_note);
  terms.set(RankTermId::KvCache, rank.kv_cache_bytes, listing.kv_note);
  terms.set(RankTermId::CudaContext, rank.cuda_context_bytes,
            "calibrated: CUDA context (+ NCCL), outside the budget");
  return terms.listed();
}

// What vLLM prints for a launch that fails before serving (startup, load, graph profiling, no
// KV memory); nullopt for any other outcome. `graph_profiling_blocks` is read for that outcome.
std::optional<std::string> startup_failure_message(
    const Breakdown& b, const Evaluation& e, const ResolvedKnobs& k, const HardwareConfig& hardware,
    std::optional<std::int64_t> kv_cache_memory_bytes, std::int64_t graph_profiling_blocks) {
  const std::int64_t requested = b.ranks.front().requested_memory_bytes;
  const std::int64_t total = hardware.gpu.total_memory_bytes;
  const std::int64_t free = b.startup_free_bytes;
  switch (e.outcome) {
    case Outcome::StartupFreeMemory:
      return "Free memory on device (" + gib_text(free) + "/" + gib_text(total) +
             " GiB) on startup is less than desired GPU memory utilization (" +
             std::to_string(k.gpu_memory_utilization) + ", " + gib_text(requested) + " GiB).";
    case Outcome::HostOomKilled:
      return "Host RAM exhausted while loading: " + gib_text(e.host_required_bytes) +
             " GiB of anonymous and pinned memory needed, " + gib_text(hardware.host_ram_bytes) +
             " GiB on the host. The kernel OOM killer ends the process (`Killed`, visible in "
             "dmesg).";
    case Outcome::OomAtLoad:
      return "CUDA out of memory while loading weights: " + gib_text(e.max_weights_bytes) +
             " GiB per rank, " + gib_text(free) + " GiB free.";
    case Outcome::CudagraphProfilingOom: {
      const RankBreakdown& first = b.ranks.front();
      const std::int64_t blocks = graph_profiling_blocks;
      const std::int64_t minimal_kv =
          blocks * first.kv_layout.page_bytes * first.kv_layout.group_size;
      return "CUDA out of memory profiling CUDA graphs (profile_cudagraph_memory -> "
             "_init_minimal_kv_cache_for_profiling): a minimal KV cache of " +
             std::to_string(blocks) + " blocks of " + std::to_string(first.kv_layout.block_size) +
             " tokens (" + gib_text(minimal_kv) + " GiB) beside " + gib_text(e.max_weights_bytes) +
             " GiB of weights and " + gib_text(first.cudagraph_bytes) + " GiB of graphs; " +
             gib_text(free) +
             " GiB free. This happens before the KV budget: lowering gpu_memory_utilization "
             "cannot help. Lower max_num_seqs (fewer capture sizes), fewer speculative tokens, "
             "or --enforce-eager.";
    }
    case Outcome::NoKvMemory:
      if (kv_cache_memory_bytes && e.min_kv_cache_bytes > 0) {
        return "CUDA out of memory allocating the KV cache: kv_cache_memory_bytes " +
               gib_text(*kv_cache_memory_bytes) + " GiB beside " + gib_text(e.max_weights_bytes) +
               " GiB of weights, " + gib_text(free) + " GiB free.";
      }
      return "No available memory for the cache blocks (" + gib_text(e.min_kv_cache_bytes) +
             " GiB). Try increasing `gpu_memory_utilization`.";
    default:
      return std::nullopt;
  }
}

// What vLLM prints for a launch that starts but cannot serve as configured (max_model_len does
// not fit, graph capture or the sampler warm-up runs out of memory); nullopt otherwise.
std::optional<std::string> serving_failure_message(const Breakdown& b, const Evaluation& e,
                                                   const ResolvedKnobs& k) {
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
    return msg;
  }
  if (e.outcome == Outcome::StateBlocksBelowMaxNumSeqs) {
    return "max_num_seqs (" + std::to_string(k.max_num_seqs) +
           ") exceeds available Mamba cache blocks (" + std::to_string(e.num_blocks) +
           "). Each decode sequence requires one Mamba cache block, so CUDA graph capture "
           "cannot proceed. Please lower max_num_seqs to at most " +
           std::to_string(e.num_blocks) + " or increase gpu_memory_utilization.";
  }
  if (e.outcome != Outcome::CudagraphCaptureOom && e.outcome != Outcome::SamplerWarmupOom) {
    return std::nullopt;
  }
  const RankBreakdown& tightest = b.ranks[static_cast<std::size_t>(e.tightest_rank)];
  if (e.outcome == Outcome::CudagraphCaptureOom) {
    return "CUDA out of memory capturing CUDA graphs: " + gib_text(tightest.cudagraph_bytes) +
           " GiB needed after the KV cache allocation.";
  }
  return "CUDA out of memory occurred when warming up sampler with " +
         std::to_string(std::min(k.max_num_seqs, k.max_num_batched_tokens)) +
         " dummy requests: " + gib_text(tightest.post_allocation_bytes - tightest.headroom_bytes) +
         " GiB short after the KV cache and graphs. Lower max_num_seqs or "
         "gpu_memory_utilization.";
}

}  // namespace

Breakdown CompiledLaunch::breakdown(const LaunchKnobs& knobs) const {
  Breakdown b = startup_breakdown(knobs);
  b.messages.insert(b.messages.end(), launch_notes_.begin(), launch_notes_.end());
  return b;
}

Breakdown CompiledLaunch::startup_breakdown(const LaunchKnobs& knobs) const {
  const ResolvedKnobs k = resolve(knobs);
  const Evaluation e = evaluate(k);
  Breakdown b;
  b.model_id = spec_->id;
  b.gpu_id = hardware_.gpu.id;
  b.rules = profile_ptr();
  b.model_runner_v2 = model_runner_v2_;
  ResolvedConfig& c = b.config;
  static_cast<ResolvedKnobs&>(c) = k;
  c.served_dtype = served_dtype_;
  c.quantization = quantization_;
  c.tensor_parallel_size = config_.tensor_parallel_size;
  c.pipeline_parallel_size = config_.pipeline_parallel_size;
  c.enforce_eager = config_.enforce_eager;
  b.startup_free_bytes = startup_free_bytes_;
  b.num_blocks = e.num_blocks;
  b.kv_tokens = e.kv_tokens;
  b.max_concurrency = e.max_concurrency;
  b.request_kv_bytes = e.request_kv_bytes;
  b.outcome = e.outcome;
  b.host = host(k);
  const TermListing listing =
      term_listing(profile(), model_runner_v2_, spec_->vision.num_parameters > 0, all2all_exchange_,
                   config_.tensor_parallel_size, hardware_.gpu.pcie_only);
  b.ranks.reserve(ranks_.size());
  for (std::size_t i = 0; i < ranks_.size(); ++i) {
    const CompiledRank& compiled = ranks_[i];
    const RankEvaluation r = evaluate_rank(i, k);
    RankBreakdown rank =
        rank_figures(compiled, r, hardware_.gpu.total_memory_bytes, cuda_context_bytes_,
                     cached_activation_bytes(r.activation_peak_bytes));
    const std::int64_t dispatch =
        all2all_exchange_
            ? all2all_dispatch_bytes(compiled, sampler_, k, rank.activation_peak_bytes)
            : 0;
    rank.terms = rank_terms(rank, r.all2all_buffer_bytes, dispatch, listing);
    b.ranks.push_back(std::move(rank));
  }
  const std::int64_t profiling_blocks =
      e.outcome == Outcome::CudagraphProfilingOom ? graph_profiling_blocks(k) : 0;
  if (auto message = startup_failure_message(b, e, k, hardware_, config_.kv_cache_memory_bytes,
                                             profiling_blocks)) {
    b.messages.push_back(std::move(*message));
    if (e.outcome == Outcome::StartupFreeMemory) {
      std::string note =
          unified_startup_note(hardware_.gpu, profile(), config_, cuda_context_bytes_,
                               b.ranks.front().requested_memory_bytes);
      if (!note.empty()) b.messages.push_back(std::move(note));
    }
    return b;
  }
  b.estimated_max_model_len = estimated_max_model_len(e);
  if (auto message = serving_failure_message(b, e, k)) b.messages.push_back(std::move(*message));
  return b;
}

Breakdown compute_breakdown(const ModelSpec& spec, const HardwareConfig& hardware,
                            const EngineConfig& config) {
  const CompiledLaunch launch(std::make_shared<const ModelSpec>(spec), hardware, config);
  return launch.breakdown(launch_knobs(config));
}

}  // namespace vramplan
