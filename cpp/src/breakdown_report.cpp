// The full report of a compiled launch: every term per rank with its provenance, the verdict
// and what vLLM prints for it.
#include <algorithm>
#include <array>
#include <sstream>

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
  b.profile = profile();
  b.model_runner_v2 = model_runner_v2_;
  ResolvedConfig& c = b.config;
  static_cast<ResolvedKnobs&>(c) = k;
  c.served_dtype = served_dtype_;
  c.quantization = quantization_;
  c.tensor_parallel_size = config_.tensor_parallel_size;
  c.pipeline_parallel_size = config_.pipeline_parallel_size;
  c.enforce_eager = config_.enforce_eager;
  const std::int64_t total = hardware_.gpu.total_memory_bytes;
  b.startup_free_bytes = startup_free_bytes_;
  b.num_blocks = e.num_blocks;
  b.kv_tokens = e.kv_tokens;
  b.max_concurrency = e.max_concurrency;
  b.request_kv_bytes = e.request_kv_bytes;
  b.outcome = e.outcome;
  b.host = host(k);
  const char* graph_note =
      profile().cudagraph_in_budget
          ? "calibrated: base + per captured layer piece x capture sizes (inside the budget)"
      : model_runner_v2_
          ? "calibrated: base + per captured layer piece x capture sizes (Model Runner V2 before "
            "0.29 estimates no graphs: captured after KV allocation, outside the budget)"
          : "calibrated: base + per captured layer piece x capture sizes (captured after KV "
            "allocation, outside the budget)";
  const bool persistent_in_budget = model_runner_v2_ && profile().consumed_budget_formula;
  const char* kv_note =
      profile().cudagraph_in_budget
          ? (persistent_in_budget ? "budget: requested - weights - activation - non_torch - "
                                    "mrv2_persistent_buffers - cudagraph"
                                  : "budget: requested - weights - activation - non_torch - "
                                    "cudagraph")
          : (persistent_in_budget
                 ? "budget: requested - weights - activation - non_torch - mrv2_persistent_buffers"
                 : "budget: requested - weights - activation - non_torch");
  // At TP >= 2 the charge depends on the interconnect, which the GPU's name may not settle (an
  // A100 or H100 board with or without NVLink): the text says which was charged.
  const char* non_torch_note =
      config_.tensor_parallel_size < 2
          ? "calibrated: cuBLAS/attention workspaces"
          : (hardware_.gpu.pcie_only
                 ? "calibrated: cuBLAS/attention workspaces; NCCL buffers over PCIe at TP>=2 "
                   "(interconnect 'pcie': the largest figure logged over PCIe)"
                 : "calibrated: cuBLAS/attention workspaces; NCCL (+ custom all-reduce) buffers "
                   "over NVLink at TP>=2 (the largest figure logged over NVLink; interconnect "
                   "'pcie' for GPUs that talk over PCIe only)");
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
    // Shown apart: the encoder's and the all-to-all's shares come out of activation_peak (and
    // the DeepEP / pplx buffers out of non_torch) so the stacked terms still add up.
    const std::int64_t mm_encoder = spec_->vision.num_parameters > 0 ? rank.mm_encoder_bytes : 0;
    RankTerms terms;
    terms.set(RankTermId::Weights, rank.weights_bytes,
              "exact: the spec's tensors in their stored format + rotary cos/sin cache (+ LoRA "
              "slots, drafter; less CPU offload)");
    terms.set(RankTermId::ActivationPeak, rank.activation_peak_bytes - dispatch - mm_encoder,
              "formula + calibrated: forward of max_num_batched_tokens, fused-MoE workspace, "
              "sampler on requests x vocab logits");
    if (spec_->vision.num_parameters > 0) {
      terms.set(RankTermId::MmEncoder, mm_encoder,
                "formula: profile run's multimodal encoder: max(encoder forward, encoder cache "
                "(items x tokens per image x hidden) + the text peak) + pixel inputs, less the "
                "text peak; items from the encoder budget (0: every modality limited to 0)");
    }
    if (model_runner_v2_) {
      terms.set(RankTermId::Mrv2PersistentBuffers, rank.persistent_buffers_bytes,
                profile().consumed_budget_formula
                    ? "formula: Model Runner V2 sampler state, max_num_seqs x (vocab + vocab/32) "
                      "x 4 B (inside the budget: 0.27+ counts memory consumed since the init "
                      "snapshot)"
                    : "formula: Model Runner V2 sampler state, max_num_seqs x (vocab + vocab/32) "
                      "x 4 B (held but outside the budget before 0.27: it comes out of the "
                      "headroom)");
    }
    if (all2all_exchange_) {
      terms.set(RankTermId::All2allDispatch, dispatch,
                "formula (activation peak): DP dispatch gathers dp x T tokens into each MoE "
                "layer: hidden states, router logits, expert output, fused-MoE workspace");
      terms.set(RankTermId::All2allBuffers, compiled.all2all_buffer_bytes,
                "formula (non-torch): DeepEP NVLink buffer (VLLM_DEEPEP_BUFFER_SIZE_MB) + 32 MiB "
                "workspace [+ low-latency RDMA size hint], or pplx intranode buffers, made after "
                "load");
    }
    terms.set(RankTermId::NonTorch, rank.non_torch_bytes - compiled.all2all_buffer_bytes,
              non_torch_note);
    terms.set(RankTermId::Cudagraph, rank.cudagraph_bytes, graph_note);
    terms.set(RankTermId::KvCache, rank.kv_cache_bytes, kv_note);
    terms.set(RankTermId::CudaContext, cuda_context_bytes_,
              "calibrated: CUDA context (+ NCCL), outside the budget");
    rank.terms = terms.listed();
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
