#include "vramplan/solver.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "vramplan/calibration.hpp"
#include "vramplan/errors.hpp"

namespace vramplan {
namespace {

using calibration::kGiB;

std::string gib(std::int64_t bytes) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(2);
  out << static_cast<double>(bytes) / static_cast<double>(kGiB) << " GiB";
  return out.str();
}

// Sequences of `context` tokens the KV pool holds at once.
std::int64_t capacity_at(const Breakdown& b, std::int64_t context) {
  std::int64_t worst = 0;
  for (const auto& rank : b.ranks) {
    worst = std::max(
        worst, kv_blocks_per_request(rank.kv_layout, context, b.config.max_num_batched_tokens));
  }
  return worst > 0 ? b.num_blocks / worst : 0;
}

struct Choice {
  Plan plan;
  bool ok = false;
};

// Largest utilization (0.01 steps) passing the startup free-memory check with the margin,
// and, where graphs are captured outside the budget, leaving them room.
double max_utilization(const ModelSpec& spec, const SolveRequest& req, EngineConfig config,
                       std::string& binding) {
  const std::int64_t total = req.hardware.gpu.total_memory_bytes;
  config.gpu_memory_utilization = 0.5;
  const Breakdown probe = compute_breakdown(spec, req.hardware, config);
  const std::int64_t free = probe.startup_free_bytes - req.safety_margin_bytes;
  std::int64_t allowed = free;
  binding = "startup free-memory check: total - CUDA context - other processes - safety margin";
  // After the KV allocation, graphs outside the budget and the sampler warm-up need room
  // beyond what the profile activations free (the same quantity the breakdown checks).
  std::int64_t post_allocation = 0;
  for (const auto& rank : probe.ranks) {
    post_allocation = std::max(post_allocation, rank.post_allocation_bytes);
  }
  if (post_allocation > 0) {
    allowed = free - post_allocation;
    binding = probe.profile.cudagraph_in_budget
                  ? "sampler warm-up after the KV cache allocation needs headroom"
                  : "CUDA graphs and the sampler warm-up after the KV allocation need headroom "
                    "(this vLLM version)";
  }
  double u = std::floor(static_cast<double>(allowed) / static_cast<double>(total) * 100.0) / 100.0;
  u = std::min(u, 0.99);
  if (u >= 0.99) binding = "cap: 0.99 (vLLM needs a little memory outside the budget)";
  return std::max(u, 0.01);
}

Plan plan_once(const ModelSpec& spec, const SolveRequest& req) {
  Plan plan;
  plan.safety_margin_bytes = req.safety_margin_bytes;
  EngineConfig config = req.pinned;
  if (config.gpu_memory_utilization > 0) {
    plan.binding_gpu_memory_utilization = "pinned by the user";
  } else {
    config.gpu_memory_utilization =
        max_utilization(spec, req, config, plan.binding_gpu_memory_utilization);
  }
  // Context: pinned, else the target, else the model's maximum; shortened to what fits.
  const std::int64_t model_max = spec.max_position_embeddings;
  if (config.max_model_len > 0) {
    plan.binding_max_model_len = "pinned by the user";
  } else if (req.target_context_tokens > 0) {
    config.max_model_len = std::min(req.target_context_tokens, model_max);
    plan.binding_max_model_len =
        req.target_context_tokens > model_max ? "model max_position_embeddings" : "target context";
  } else {
    config.max_model_len = model_max;
    plan.binding_max_model_len = "model max_position_embeddings";
  }
  Breakdown b = compute_breakdown(spec, req.hardware, config);
  if (b.outcome == Outcome::InsufficientKvForMaxModelLen && req.pinned.max_model_len <= 0 &&
      b.estimated_max_model_len > 0) {
    // Keep a block multiple so the estimate survives vLLM's own rounding.
    const std::int64_t block = b.ranks.front().kv_layout.block_size;
    config.max_model_len = std::max<std::int64_t>(block, b.estimated_max_model_len / block * block);
    plan.binding_max_model_len = "KV cache capacity for one request";
    b = compute_breakdown(spec, req.hardware, config);
  }
  // Sequences: the engine default, lowered to what the KV pool holds at the target context.
  // Fewer sequences shrink the sampler and graph terms, so iterate to a fixed point.
  const std::int64_t context = req.target_context_tokens > 0
                                   ? std::min(req.target_context_tokens, b.config.max_model_len)
                                   : b.config.max_model_len;
  if (config.max_num_seqs > 0) {
    plan.binding_max_num_seqs = "pinned by the user";
  } else {
    plan.binding_max_num_seqs = "engine default for this GPU";
    for (int iteration = 0; iteration < 4 && b.outcome == Outcome::Started; ++iteration) {
      const std::int64_t capacity = std::max<std::int64_t>(1, capacity_at(b, context));
      if (capacity >= b.config.max_num_seqs) break;
      config.max_num_seqs = capacity;
      plan.binding_max_num_seqs = "KV cache capacity at " + std::to_string(context) + " tokens";
      b = compute_breakdown(spec, req.hardware, config);
    }
  }
  plan.binding_max_num_batched_tokens = config.max_num_batched_tokens > 0
                                            ? "pinned by the user"
                                            : "engine default (activation peak inside the budget)";
  plan.gpu_memory_utilization = b.config.gpu_memory_utilization;
  plan.max_model_len = b.config.max_model_len;
  plan.max_num_seqs = b.config.max_num_seqs;
  plan.max_num_batched_tokens = b.config.max_num_batched_tokens;
  config.max_num_seqs = plan.max_num_seqs;
  config.max_num_batched_tokens = plan.max_num_batched_tokens;
  config.max_model_len = plan.max_model_len;
  plan.config = config;

  const std::int64_t capacity = capacity_at(b, context);
  const bool host_ok =
      req.hardware.host_ram_bytes <= 0 || b.host.required_bytes <= req.hardware.host_ram_bytes;
  const bool context_ok = req.target_context_tokens <= 0 ||
                          plan.max_model_len >= std::min(req.target_context_tokens, model_max);
  const bool concurrency_ok = req.target_concurrency <= 0 || capacity >= req.target_concurrency;
  plan.fits = b.outcome == Outcome::Started && host_ok && context_ok && concurrency_ok;
  if (b.outcome != Outcome::Started) {
    plan.verdict = std::string("does not fit: ") + outcome_name(b.outcome) +
                   (b.messages.empty() ? "" : " - " + b.messages.front());
  } else if (!host_ok) {
    plan.verdict = "does not fit: host RAM - needs " + gib(b.host.required_bytes) + ", node has " +
                   gib(req.hardware.host_ram_bytes) +
                   " (the loader would be OOM-killed: a silent `Killed`, visible in dmesg)";
  } else if (!context_ok) {
    plan.verdict = "does not fit: the target context of " +
                   std::to_string(req.target_context_tokens) + " tokens leaves no KV room (" +
                   std::to_string(plan.max_model_len) + " tokens fit)";
  } else if (!concurrency_ok) {
    plan.verdict = "does not fit: " + std::to_string(req.target_concurrency) + " sequences of " +
                   std::to_string(context) + " tokens need more KV cache; " +
                   std::to_string(capacity) + " fit";
  } else {
    plan.verdict = "fits: " + std::to_string(b.kv_tokens) + " KV tokens, " +
                   std::to_string(capacity) + " concurrent sequences of " +
                   std::to_string(context) + " tokens";
  }
  plan.breakdown = std::move(b);
  return plan;
}

std::string remedy_detail(const Plan& p) {
  const RankBreakdown& r = p.breakdown.ranks.front();
  return "weights " + gib(r.weights_bytes) + "/rank, KV " + gib(r.kv_cache_bytes) + "/rank, " +
         std::to_string(p.breakdown.kv_tokens) + " KV tokens, max_model_len " +
         std::to_string(p.max_model_len) + ", max_num_seqs " + std::to_string(p.max_num_seqs);
}

}  // namespace

Plan solve(const ModelSpec& spec, const SolveRequest& request) {
  Plan plan = plan_once(spec, request);
  if (plan.fits) return plan;
  // Remedies in a fixed, documented order: cheapest change first.
  const std::string kv = request.pinned.kv_cache_dtype;
  if (kv.empty() || kv == "auto") {
    SolveRequest r = request;
    r.pinned.kv_cache_dtype = "fp8";
    const Plan p = plan_once(spec, r);
    plan.remedies.push_back({"fp8_kv_cache", "--kv-cache-dtype fp8", p.fits, remedy_detail(p)});
  }
  if (request.target_context_tokens > 0 || request.pinned.max_model_len > 0) {
    SolveRequest r = request;
    r.target_context_tokens = 0;
    r.pinned.max_model_len = -1;
    r.target_concurrency = 0;
    const Plan p = plan_once(spec, r);
    if (p.breakdown.outcome == Outcome::Started) {
      plan.remedies.push_back({"shorter_context",
                               "--max-model-len " + std::to_string(p.max_model_len), true,
                               remedy_detail(p)});
    }
  }
  if (spec.quantization.method == QuantMethod::None && request.pinned.quantization.empty()) {
    SolveRequest r = request;
    r.pinned.quantization = "fp8";
    const Plan p = plan_once(spec, r);
    plan.remedies.push_back({"quantized_weights",
                             "--quantization fp8 (or an fp8/AWQ checkpoint of the same model)",
                             p.fits, remedy_detail(p)});
  }
  const std::int32_t pp = std::max(1, request.pinned.pipeline_parallel_size);
  for (std::int32_t tp = std::max(2, request.pinned.tensor_parallel_size * 2); tp <= 8; tp *= 2) {
    if (spec.num_attention_heads % tp != 0) break;
    SolveRequest r = request;
    r.pinned.tensor_parallel_size = tp;
    r.hardware.num_gpus = std::max(r.hardware.num_gpus, tp * pp);
    const Plan p = plan_once(spec, r);
    if (p.fits || tp == 8) {
      plan.remedies.push_back({"tensor_parallel",
                               "--tensor-parallel-size " + std::to_string(tp) + " (" +
                                   std::to_string(tp * pp) + " GPUs)",
                               p.fits, remedy_detail(p)});
      break;
    }
  }
  {
    // Offload the weight bytes that do not fit, rounded up to whole GiB.
    const RankBreakdown& r0 = plan.breakdown.ranks.front();
    std::int64_t deficit = 0;
    if (plan.breakdown.outcome == Outcome::OomAtLoad) {
      deficit =
          r0.weights_bytes - plan.breakdown.startup_free_bytes + r0.requested_memory_bytes / 4;
    } else {
      deficit = plan.breakdown.request_kv_bytes - r0.kv_cache_bytes;
    }
    if (deficit > 0 && deficit < r0.weights_bytes) {
      const std::int64_t gib_needed = (deficit + kGiB - 1) / kGiB;
      SolveRequest r = request;
      r.pinned.cpu_offload_bytes = gib_needed * kGiB;
      const Plan p = plan_once(spec, r);
      plan.remedies.push_back({"cpu_offload", "--cpu-offload-gb " + std::to_string(gib_needed),
                               p.fits,
                               remedy_detail(p) + " (slower: weights stream over PCIe each step)"});
    }
  }
  return plan;
}

std::vector<SweepPoint> sweep(const ModelSpec& spec, const HardwareConfig& hardware,
                              const EngineConfig& base, const SweepGrid& grid) {
  const std::vector<double> utils = grid.gpu_memory_utilization.empty()
                                        ? std::vector<double>{base.gpu_memory_utilization}
                                        : grid.gpu_memory_utilization;
  const std::vector<std::int64_t> lens = grid.max_model_len.empty()
                                             ? std::vector<std::int64_t>{base.max_model_len}
                                             : grid.max_model_len;
  const std::vector<std::int64_t> seqs =
      grid.max_num_seqs.empty() ? std::vector<std::int64_t>{base.max_num_seqs} : grid.max_num_seqs;
  std::vector<SweepPoint> out;
  out.reserve(utils.size() * lens.size() * seqs.size());
  EngineConfig config = base;
  for (const double u : utils) {
    for (const std::int64_t len : lens) {
      for (const std::int64_t n : seqs) {
        config.gpu_memory_utilization = u;
        config.max_model_len = len;
        config.max_num_seqs = n;
        SweepPoint point;
        point.gpu_memory_utilization = u;
        point.max_model_len = len;
        point.max_num_seqs = n;
        try {
          const Breakdown b = compute_breakdown(spec, hardware, config);
          point.kv_cache_bytes = b.ranks.front().kv_cache_bytes;
          for (const auto& rank : b.ranks) {
            point.kv_cache_bytes = std::min(point.kv_cache_bytes, rank.kv_cache_bytes);
          }
          point.kv_tokens = b.kv_tokens;
          point.max_concurrency = b.max_concurrency;
          point.outcome = static_cast<int>(b.outcome);
        } catch (const ConfigError&) {
          point.outcome = -1;  // e.g. max_model_len beyond the model
        }
        out.push_back(point);
      }
    }
  }
  return out;
}

}  // namespace vramplan
