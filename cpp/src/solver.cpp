#include "vramplan/solver.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>

#include "decimal_text.hpp"
#include "vramplan/calibration.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/knobs.hpp"

namespace vramplan {
namespace {

using calibration::kGiB;

std::string gib(std::int64_t bytes) {
  std::string out;
  append_fixed2(out, static_cast<double>(bytes) / static_cast<double>(kGiB));
  out += " GiB";
  return out;
}

struct Targets {
  std::int64_t context = 0;
  std::int64_t concurrency = 0;
  std::int64_t safety_margin_bytes = 0;
  std::int64_t runtime_headroom_bytes = -1;  // -1: runtime_headroom_bytes() of the launch
  const Workload* workload = nullptr;        // none: max_num_seqs is not sized from traffic
};

// The largest value in [lo, hi] that passes, for a test that holds at lo and stops holding
// once it fails (bisection).
template <typename Test>
std::int64_t largest_passing(std::int64_t lo, std::int64_t hi, const Test& passes) {
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo + 1) / 2;
    if (passes(mid)) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

// Sequences of `context` tokens the KV pool holds at once.
std::int64_t capacity_at(const CompiledLaunch& launch, const Evaluation& e, std::int64_t context) {
  const std::int64_t per_request = launch.blocks_per_request(e.knobs, context);
  return per_request > 0 ? e.num_blocks / per_request : 0;
}

Evaluation evaluate(const CompiledLaunch& launch, const LaunchKnobs& knobs) {
  return launch.evaluate(launch.resolve(knobs));
}

// The workload in this launch's KV blocks at `k`: one request of P prompt and O output tokens
// holds, at its peak, the blocks of min(P + O - 1 + 2 x speculative tokens, max_model_len)
// tokens (the last sampled token is never fed back; draft slots and their lookahead stay
// allocated until the request ends), block rounding and sliding windows as vLLM allocates them.
// A shared prefix's full blocks are held once, where every layer keeps full attention.
BlockDistribution request_blocks(const CompiledLaunch& launch, const ResolvedKnobs& k,
                                 const Workload& w) noexcept {
  BlockDistribution d;
  const KvGeometry& kv = launch.ranks().front().kv;
  const std::int64_t lookahead = 2 * std::int64_t{kv.num_speculative_tokens};
  const bool full_attention_only =
      !kv.groups.empty() && std::all_of(kv.groups.begin(), kv.groups.end(), [](const KvGroup& g) {
        return g.kind == AttentionKind::Full || g.kind == AttentionKind::Mla;
      });
  if (w.prefix_tokens > 0 && full_attention_only) {
    const std::int64_t block = kv_page(kv, k.block_size, k.kv_element_bytes).block_size;
    const std::int64_t full_blocks = std::min(w.prefix_tokens, k.max_model_len) / block;
    d.shared_blocks = full_blocks * static_cast<std::int64_t>(kv.groups.size());
  }
  for (const RequestShape& shape : w.shapes) {
    if (d.count == d.blocks.size()) break;
    const std::int64_t tokens = std::min(
        k.max_model_len,
        std::max<std::int64_t>(1, shape.prompt_tokens + shape.output_tokens - 1 + lookahead));
    d.blocks[d.count] =
        std::max<std::int64_t>(0, launch.blocks_per_request(k, tokens) - d.shared_blocks);
    d.probability[d.count] = shape.probability;
    ++d.count;
  }
  return d;
}

// Largest utilization (0.01 steps) passing the startup free-memory check with the margin,
// and leaving room for what must fit after the KV allocation (graphs captured outside the
// budget, the sampler warm-up): the same quantity the evaluation checks.
double max_utilization(const CompiledLaunch& launch, const Evaluation& probe, const Targets& t,
                       std::string& binding) {
  const std::int64_t total = launch.hardware().gpu.total_memory_bytes;
  const std::int64_t headroom = t.runtime_headroom_bytes >= 0
                                    ? t.runtime_headroom_bytes
                                    : runtime_headroom_bytes(launch, probe.knobs.max_num_seqs);
  const std::int64_t free = launch.startup_free_bytes() - t.safety_margin_bytes - headroom;
  const bool post_allocation = probe.max_post_allocation_bytes > 0;
  const std::int64_t allowed = post_allocation ? free - probe.max_post_allocation_bytes : free;
  double u = std::floor(static_cast<double>(allowed) / static_cast<double>(total) * 100.0) / 100.0;
  u = std::min(u, 0.99);
  // The check that binds, its text built once.
  if (u >= 0.99) {
    binding = "cap: 0.99 (vLLM needs a little memory outside the budget)";
  } else if (post_allocation) {
    binding = launch.profile().cudagraph_in_budget
                  ? "sampler warm-up after the KV cache allocation needs headroom"
                  : "CUDA graphs and the sampler warm-up after the KV allocation need headroom "
                    "(this vLLM version)";
  } else {
    binding = "startup free-memory check: total - CUDA context - other processes - safety margin";
    if (headroom > 0) binding += " - runtime headroom (" + gib(headroom) + ")";
  }
  return std::max(u, 0.01);
}

void set_chosen(EngineConfig& config, const ResolvedKnobs& k) {
  config.gpu_memory_utilization = k.gpu_memory_utilization;
  config.max_model_len = k.max_model_len;
  config.max_num_seqs = k.max_num_seqs;
  config.max_num_batched_tokens = k.max_num_batched_tokens;
}

// Overflow probability of `seqs` busy slots at `base` with that many sequences (1 when the
// launch does not start there).
// `blocks`: the workload at base's context, block size and batched tokens, which neither the
// sequences nor the utilization change.
double preemption_at(const CompiledLaunch& launch, const BlockDistribution& blocks,
                     LaunchKnobs base, std::int64_t seqs) noexcept {
  base.max_num_seqs = seqs;
  ResolvedKnobs r;
  if (launch.try_resolve(base, r) != KnobProblem::None) return 1.0;
  const Evaluation e = launch.evaluate(r);
  if (e.outcome != Outcome::Started) return 1.0;
  return overflow_probability(blocks, seqs, e.num_blocks - 1);
}

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2g%%", fraction * 100.0);
  return text;
}

// A workload sizes max_num_seqs from traffic: the most busy slots whose requests, drawn from it
// at their peak, overflow the KV cache (vLLM then preempts) with at most the target
// probability. When the cap already meets it, the utilization stops at what the workload needs
// (never below the release default), leaving the rest free for what runs after startup.
void size_for_workload(const CompiledLaunch& launch, const Workload& w, LaunchKnobs& knobs,
                       Evaluation& e, Plan& plan, bool pinned_seqs) {
  const double target = w.preemption_target;
  const std::int64_t cap = e.knobs.max_num_seqs;
  const BlockDistribution blocks = request_blocks(launch, e.knobs, w);
  auto meets = [&](std::int64_t seqs) {
    return preemption_at(launch, blocks, knobs, seqs) <= target;
  };
  if (!pinned_seqs && !meets(cap)) {
    knobs.max_num_seqs = meets(1) ? largest_passing(1, cap, meets) : 1;
    plan.binding_max_num_seqs =
        "the workload: the most busy slots whose requests overflow the "
        "KV cache (preemption) with probability <= " +
        percent(target);
    e = evaluate(launch, knobs);
    return;
  }
  if (plan.binding_gpu_memory_utilization == "pinned by the user") return;
  LaunchKnobs unset = knobs;
  unset.gpu_memory_utilization.reset();
  ResolvedKnobs defaults;
  if (launch.try_resolve(unset, defaults) != KnobProblem::None) return;
  const auto hundredths = [](double u) { return static_cast<std::int64_t>(std::llround(u * 100)); };
  const std::int64_t lowest = hundredths(defaults.gpu_memory_utilization);
  const std::int64_t current = hundredths(e.knobs.gpu_memory_utilization);
  auto enough = [&](std::int64_t u) {
    LaunchKnobs trial = knobs;
    trial.gpu_memory_utilization = static_cast<double>(u) / 100.0;
    return preemption_at(launch, blocks, trial, e.knobs.max_num_seqs) <= target;
  };
  if (lowest >= current || !enough(current)) return;
  // The smallest passing utilization: the largest failing one, plus one step.
  std::int64_t u = lowest;
  if (!enough(lowest)) {
    u = largest_passing(lowest, current - 1, [&](std::int64_t x) { return !enough(x); }) + 1;
  }
  if (u >= current) return;
  knobs.gpu_memory_utilization = static_cast<double>(u) / 100.0;
  plan.binding_gpu_memory_utilization =
      "what the workload needs: max_num_seqs " + std::to_string(e.knobs.max_num_seqs) +
      " busy slots overflow the KV cache with probability <= " + percent(target) +
      " from here (never below the release default); the rest stays free for the running server";
  e = evaluate(launch, knobs);
}

WorkloadReport workload_report(const CompiledLaunch& launch, const Workload& w, const Evaluation& e,
                               const Breakdown& b) {
  WorkloadReport r;
  r.present = true;
  r.description = w.description;
  const BlockDistribution d = request_blocks(launch, e.knobs, w);
  r.pool_blocks = std::max<std::int64_t>(0, e.num_blocks - 1);
  r.shared_prefix_blocks = d.shared_blocks;
  r.blocks_p50 = block_quantile(d, 0.5);
  r.blocks_p99 = block_quantile(d, 0.99);
  const std::int64_t room = std::max<std::int64_t>(0, r.pool_blocks - d.shared_blocks);
  r.requests_held_p50 = r.blocks_p50 > 0 ? room / r.blocks_p50 : 0;
  r.requests_held_p99 = r.blocks_p99 > 0 ? room / r.blocks_p99 : 0;
  r.preemption_target = w.preemption_target;
  r.preemption_probability = overflow_probability(d, e.knobs.max_num_seqs, r.pool_blocks);
  r.max_num_seqs_for_target = 0;
  for (std::int64_t seqs = 1; seqs <= e.knobs.max_num_seqs; seqs *= 2) {
    if (overflow_probability(d, seqs, r.pool_blocks) > w.preemption_target) break;
    r.max_num_seqs_for_target = seqs;
  }
  if (r.max_num_seqs_for_target > 0) {
    r.max_num_seqs_for_target =
        largest_passing(r.max_num_seqs_for_target, e.knobs.max_num_seqs, [&](std::int64_t seqs) {
          return overflow_probability(d, seqs, r.pool_blocks) <= w.preemption_target;
        });
  }
  r.request_seconds = w.request_seconds;
  if (w.request_seconds > 0.0) {
    const std::int64_t resident = std::min(e.knobs.max_num_seqs, r.requests_held_p50);
    r.requests_per_second_bound = static_cast<double>(resident) / w.request_seconds;
  }
  for (const RankBreakdown& rank : b.ranks) {
    r.activation_peak_bytes = std::max(r.activation_peak_bytes, rank.activation_peak_bytes);
    if (rank.kv_bytes_per_token > 0) {
      r.activation_kv_tokens =
          std::max(r.activation_kv_tokens, rank.activation_peak_bytes / rank.kv_bytes_per_token);
    }
  }
  // Prompt percentiles: the shapes' prompts as a distribution, through the same quantile rule.
  BlockDistribution prompts;
  for (const RequestShape& shape : w.shapes) {
    if (prompts.count == prompts.blocks.size()) break;
    prompts.blocks[prompts.count] = shape.prompt_tokens;
    prompts.probability[prompts.count] = shape.probability;
    ++prompts.count;
  }
  const std::int64_t prompt_p50 = block_quantile(prompts, 0.5);
  const std::int64_t prompt_p99 = block_quantile(prompts, 0.99);
  const std::int64_t step = std::max<std::int64_t>(1, e.knobs.max_num_batched_tokens);
  r.prefill_steps_p50 = (prompt_p50 + step - 1) / step;
  r.prefill_steps_p99 = (prompt_p99 + step - 1) / step;
  return r;
}

// max_num_seqs is a scheduler cap that vLLM meets by making requests wait or preempting them,
// not a memory wall: it stays at the release default (or the user's value) unless the launch
// would not start. Only a concurrency target asks for C requests of the target context to stay
// resident in the KV cache; then fewer sequences first (the sampler, CUDA graphs and MRV2
// buffers shrink with them), and fewer batched tokens (slower prefill) only when C sequences
// alone do not hold the target.
void hold_target_concurrency(const CompiledLaunch& launch, const Targets& t, std::int64_t context,
                             bool pinned_seqs, LaunchKnobs& knobs, Evaluation& e, Plan& plan) {
  auto holds_target = [&](const LaunchKnobs& trial) {
    ResolvedKnobs r;
    if (launch.try_resolve(trial, r) != KnobProblem::None) return false;
    const Evaluation te = launch.evaluate(r);
    return te.outcome == Outcome::Started && capacity_at(launch, te, context) >= t.concurrency;
  };
  if (holds_target(knobs)) return;
  const std::string target_text =
      std::to_string(t.concurrency) + " sequences of " + std::to_string(context) + " tokens";
  const std::string seqs_text =
      "the largest that keeps KV room for " + target_text + " (the target concurrency)";
  // Fewer sequences first; when even C of them do not hold the target, fewer batched tokens at
  // C sequences. When neither does, the launch keeps its knobs and the verdict says what fits.
  LaunchKnobs base = knobs;
  if (!pinned_seqs && e.knobs.max_num_seqs > t.concurrency) {
    auto meets = [&](std::int64_t seqs) {
      LaunchKnobs trial = knobs;
      trial.max_num_seqs = seqs;
      return holds_target(trial);
    };
    if (meets(t.concurrency)) {
      knobs.max_num_seqs = largest_passing(t.concurrency, e.knobs.max_num_seqs, meets);
      plan.binding_max_num_seqs = seqs_text;
      e = evaluate(launch, knobs);
      return;
    }
    base.max_num_seqs = t.concurrency;
  }
  if (knobs.max_num_batched_tokens) return;
  ResolvedKnobs at_base;
  if (launch.try_resolve(base, at_base) != KnobProblem::None) return;
  std::int64_t lo = std::max(t.concurrency, at_base.max_num_seqs);
  if (!at_base.chunked_prefill) lo = std::max(lo, at_base.max_model_len);
  const std::int64_t hi = at_base.max_num_batched_tokens;
  auto meets = [&](std::int64_t tokens) {
    LaunchKnobs trial = base;
    trial.max_num_batched_tokens = tokens;
    return holds_target(trial);
  };
  if (lo < hi && meets(lo)) {
    if (base.max_num_seqs != knobs.max_num_seqs) plan.binding_max_num_seqs = seqs_text;
    knobs = base;
    knobs.max_num_batched_tokens = largest_passing(lo, hi, meets);
    plan.binding_max_num_batched_tokens =
        "below the release default (slower prefill): the largest activation peak that leaves KV "
        "room for " +
        target_text + " even at max_num_seqs " + std::to_string(at_base.max_num_seqs);
    e = evaluate(launch, knobs);
  }
}

// An evaluated launch against the targets at `context` (the target context, or what fits).
struct Judgement {
  bool fits = false;
  std::int64_t concurrent_sequences = 0;  // of `context` tokens, up to max_num_seqs
  bool host_ok = false;
  bool context_ok = false;
  bool concurrency_ok = false;
};

Judgement judge(const CompiledLaunch& launch, const Evaluation& e, const Targets& t,
                std::int64_t context) noexcept {
  Judgement j;
  j.concurrent_sequences = std::min(capacity_at(launch, e, context), e.knobs.max_num_seqs);
  const std::int64_t host_ram = launch.hardware().host_ram_bytes;
  j.host_ok = host_ram <= 0 || e.host_required_bytes <= host_ram;
  j.context_ok = t.context <= 0 || e.knobs.max_model_len >= t.context;
  j.concurrency_ok = t.concurrency <= 0 || j.concurrent_sequences >= t.concurrency;
  j.fits = e.outcome == Outcome::Started && j.host_ok && j.context_ok && j.concurrency_ok;
  return j;
}

// The one-line verdict, in the order the checks bind; `messages`: the breakdown's (what vLLM
// prints), read only for a launch that does not start.
std::string verdict_text(const CompiledLaunch& launch, const Evaluation& e, const Judgement& j,
                         const Targets& t, std::int64_t context,
                         const std::vector<std::string>& messages) {
  const ResolvedKnobs& k = e.knobs;
  if (e.outcome != Outcome::Started) {
    return std::string("does not fit: ") + outcome_name(e.outcome) +
           (messages.empty() ? "" : " - " + messages.front());
  }
  if (!j.host_ok) {
    return "does not fit: host RAM - needs " + gib(e.host_required_bytes) + ", node has " +
           gib(launch.hardware().host_ram_bytes) +
           " (the loader would be OOM-killed: a silent `Killed`, visible in dmesg)";
  }
  if (!j.context_ok) {
    return "does not fit: the target context of " + std::to_string(t.context) +
           " tokens leaves no KV room (" + std::to_string(k.max_model_len) + " tokens fit)";
  }
  if (!j.concurrency_ok) {
    return "does not fit: " + std::to_string(t.concurrency) + " sequences of " +
           std::to_string(context) + " tokens need more KV cache; " +
           std::to_string(j.concurrent_sequences) + " fit";
  }
  // With vLLM's own capacity line, beside the max_num_seqs cap it does not bound; one buffer.
  TextBuffer text;
  text << "fits: ";
  text.integer(e.kv_tokens) << " KV tokens, ";
  text.integer(j.concurrent_sequences) << " concurrent sequences of ";
  text.integer(context) << " tokens (Maximum concurrency for ";
  text.integer(k.max_model_len) << " tokens per request: ";
  text.fixed2(e.max_concurrency) << "x; max_num_seqs ";
  text.integer(k.max_num_seqs) << ")";
  return std::move(text).str();
}

// Why max_num_seqs sits below the release default: the check it lets the launch pass.
std::string lowered_seqs_binding(Outcome failing) {
  switch (failing) {
    case Outcome::CudagraphProfilingOom:
      return "the largest that starts: CUDA-graph profiling's minimal KV cache of "
             "max_cudagraph_capture_size blocks must fit beside the weights";
    case Outcome::InsufficientKvForMaxModelLen:
      return "the largest that starts: KV room for one request of max_model_len (fewer "
             "sequences profile a smaller sampler and capture fewer CUDA graphs)";
    case Outcome::StateBlocksBelowMaxNumSeqs:
      return "the largest that starts: one Mamba / linear-attention state block per decode "
             "sequence (vLLM refuses max_num_seqs above the KV pool's blocks with FULL CUDA "
             "graphs)";
    default:
      return std::string("the largest that starts: ") + outcome_name(failing) +
             " (the sampler and CUDA graphs grow with max_num_seqs)";
  }
}

// The solve at fixed compile-time knobs: utilization, context, batched tokens, sequences.
Plan plan_once(const CompiledLaunch& launch, LaunchKnobs knobs, const EngineConfig& config,
               const Targets& t) {
  Plan plan;
  plan.safety_margin_bytes = t.safety_margin_bytes;
  const std::int64_t model_max = launch.spec().max_position_embeddings;
  const bool pinned_len = knobs.max_model_len.has_value();
  const bool pinned_seqs = knobs.max_num_seqs.has_value();
  std::string seqs_binding;  // empty: the release default
  // Context: pinned, else the target, else the model's maximum; shortened to what fits.
  if (pinned_len) {
    plan.binding_max_model_len = "pinned by the user";
  } else if (t.context > 0) {
    knobs.max_model_len = t.context;
    plan.binding_max_model_len = "target context";
  } else {
    knobs.max_model_len = model_max;
    plan.binding_max_model_len = "model max_position_embeddings";
  }
  if (knobs.gpu_memory_utilization) {
    plan.binding_gpu_memory_utilization = "pinned by the user";
  } else {
    LaunchKnobs probe = knobs;
    probe.gpu_memory_utilization = 0.5;
    knobs.gpu_memory_utilization =
        max_utilization(launch, evaluate(launch, probe), t, plan.binding_gpu_memory_utilization);
  }
  Evaluation e = evaluate(launch, knobs);
  // Fewer sequences capture fewer CUDA graphs (and graph profiling's minimal KV cache of
  // max_cudagraph_capture_size blocks follows max_num_seqs): when graph profiling fails, or one
  // request of max_model_len finds no KV room, the largest sequence count that passes.
  // `must_start`: only a sequence count at which the launch starts (not merely fails later).
  auto lower_seqs_for = [&](Outcome failing, bool must_start) {
    // Once chosen here, the sequences are lowered again only for the state blocks (a count a
    // lowering for another check can leave above the pool).
    const bool chosen_again = !pinned_seqs && failing == Outcome::StateBlocksBelowMaxNumSeqs;
    if (e.outcome != failing || (knobs.max_num_seqs && !chosen_again)) return;
    auto passes = [&](std::int64_t seqs) {
      LaunchKnobs trial = knobs;
      trial.max_num_seqs = seqs;
      ResolvedKnobs r;
      if (launch.try_resolve(trial, r) != KnobProblem::None) return false;
      const Outcome outcome = launch.evaluate(r).outcome;
      return must_start ? outcome == Outcome::Started : outcome != failing;
    };
    if (!passes(1)) return;
    knobs.max_num_seqs = largest_passing(1, e.knobs.max_num_seqs, passes);
    seqs_binding = lowered_seqs_binding(failing);
    e = evaluate(launch, knobs);
  };
  // Graph profiling (its minimal KV cache follows max_num_seqs, not the context) fails before
  // the KV checks: settle the sequences first, so that the context is shortened and searched
  // from a launch that passes it.
  lower_seqs_for(Outcome::CudagraphProfilingOom, false);
  // What a pinned utilization leaves after the KV allocation, or a budget the sampler's
  // profile fills: fewer sequences profile and warm up a smaller sampler, capture fewer graphs.
  for (const Outcome failing :
       {Outcome::NoKvMemory, Outcome::SamplerWarmupOom, Outcome::CudagraphCaptureOom,
        Outcome::StateBlocksBelowMaxNumSeqs}) {
    lower_seqs_for(failing, true);
  }
  // Only for a context the user asked for: the model's own maximum is shortened instead.
  if (pinned_len || t.context > 0) lower_seqs_for(Outcome::InsufficientKvForMaxModelLen, false);
  if (e.outcome == Outcome::InsufficientKvForMaxModelLen && !pinned_len) {
    const std::int64_t estimate = launch.estimated_max_model_len(e);
    if (estimate > 0) {
      // Keep a block multiple so the estimate survives vLLM's own rounding.
      const std::int64_t block =
          kv_page(launch.ranks().front().kv, e.knobs.block_size, e.knobs.kv_element_bytes)
              .block_size;
      knobs.max_model_len = std::max<std::int64_t>(block, estimate / block * block);
      plan.binding_max_model_len = "KV cache capacity for one request";
      e = evaluate(launch, knobs);
    }
  }
  // A shorter context can leave the state-block check failing (it comes after the KV room).
  lower_seqs_for(Outcome::StateBlocksBelowMaxNumSeqs, true);
  if (t.context == 0 && !pinned_len && t.concurrency > 0 && e.outcome == Outcome::Started &&
      capacity_at(launch, e, e.knobs.max_model_len) < t.concurrency) {
    // No target context: the longest context (a block multiple) that holds the target
    // concurrency, so more memory never turns a fitting plan into a failing one.
    const std::int64_t block =
        kv_page(launch.ranks().front().kv, e.knobs.block_size, e.knobs.kv_element_bytes).block_size;
    // Measured at max_num_seqs = the target where the solver may lower it (below), so the
    // context found is the one an explicit target context would also reach.
    auto holds = [&](std::int64_t blocks) {
      LaunchKnobs trial = knobs;
      trial.max_model_len = blocks * block;
      if (!pinned_seqs) trial.max_num_seqs = std::min(e.knobs.max_num_seqs, t.concurrency);
      ResolvedKnobs r;
      if (launch.try_resolve(trial, r) != KnobProblem::None) return false;
      const Evaluation te = launch.evaluate(r);
      return te.outcome == Outcome::Started &&
             capacity_at(launch, te, blocks * block) >= t.concurrency;
    };
    std::int64_t lo = 1;
    std::int64_t hi = e.knobs.max_model_len / block;
    if (hi >= 1 && holds(lo)) {
      lo = largest_passing(lo, hi, holds);
      knobs.max_model_len = lo * block;
      plan.binding_max_model_len = "KV cache capacity for the target concurrency";
      e = evaluate(launch, knobs);
    }
  }
  const std::int64_t context =
      t.context > 0 ? std::min(t.context, e.knobs.max_model_len) : e.knobs.max_model_len;
  if (pinned_seqs) {
    plan.binding_max_num_seqs = "pinned by the user";
  } else if (seqs_binding.empty()) {
    plan.binding_max_num_seqs =
        "release default for this GPU and entry point: a scheduler cap (requests beyond the KV "
        "cache wait or are preempted), not a memory limit";
  } else {
    plan.binding_max_num_seqs = std::move(seqs_binding);
  }
  plan.binding_max_num_batched_tokens = knobs.max_num_batched_tokens
                                            ? "pinned by the user"
                                            : "engine default (activation peak inside the budget)";
  if (t.concurrency > 0 && e.outcome == Outcome::Started) {
    hold_target_concurrency(launch, t, context, pinned_seqs, knobs, e, plan);
  }
  if (t.workload != nullptr && e.outcome == Outcome::Started) {
    size_for_workload(launch, *t.workload, knobs, e, plan, pinned_seqs);
  }
  const ResolvedKnobs& k = e.knobs;
  plan.gpu_memory_utilization = k.gpu_memory_utilization;
  plan.max_model_len = k.max_model_len;
  plan.max_num_seqs = k.max_num_seqs;
  plan.max_num_batched_tokens = k.max_num_batched_tokens;
  plan.config = config;
  set_chosen(plan.config, k);

  const Judgement j = judge(launch, e, t, context);
  plan.concurrent_sequences = j.concurrent_sequences;
  plan.max_concurrency = e.max_concurrency;
  plan.fits = j.fits;
  plan.breakdown = launch.breakdown(knobs);
  const Breakdown& b = plan.breakdown;
  plan.runtime_headroom_bytes = t.runtime_headroom_bytes >= 0
                                    ? t.runtime_headroom_bytes
                                    : runtime_headroom_bytes(launch, k.max_num_seqs);
  if (t.workload != nullptr && e.outcome == Outcome::Started) {
    plan.workload = workload_report(launch, *t.workload, e, b);
  }
  plan.verdict = verdict_text(launch, e, j, t, context, b.messages);
  return plan;
}

std::string remedy_detail(const Plan& p) {
  const RankBreakdown& r = p.breakdown.ranks.front();
  // A budget below zero is a shortfall, not a KV cache.
  const std::string kv = r.kv_cache_bytes >= 0
                             ? "KV " + gib(r.kv_cache_bytes) + "/rank"
                             : "no KV room (" + gib(-r.kv_cache_bytes) + " short per rank)";
  std::string concurrency;
  append_fixed2(concurrency, p.max_concurrency);
  return "weights " + gib(r.weights_bytes) + "/rank, " + kv + ", " +
         std::to_string(p.breakdown.kv_tokens) + " KV tokens, max_model_len " +
         std::to_string(p.max_model_len) + ", max_num_seqs " + std::to_string(p.max_num_seqs) +
         ", max_num_batched_tokens " + std::to_string(p.max_num_batched_tokens) +
         ", Maximum concurrency " + concurrency + "x";
}

Plan plan_for(const CompiledLaunch& launch, const EngineConfig& pinned, const Targets& t) {
  return plan_once(launch, launch_knobs(pinned), pinned, t);
}

// The same launch recompiled with changed knobs (weights format, TP, offload, eager).
Plan plan_changed(const CompiledLaunch& launch, const EngineConfig& config, HardwareConfig hardware,
                  const Targets& t) {
  const CompiledLaunch changed(launch.spec_ptr(), std::move(hardware), config);
  return plan_for(changed, config, t);
}

std::string utilization_text(double u) {
  std::string out;
  append_fixed2(out, u);
  return out;
}

// The launch as written, judged: what the plan reports of it.
struct Written {
  bool fits = false;
  std::string verdict;
  Outcome outcome = Outcome::Started;
  LaunchKnobs knobs;  // each evaluated knob: the user's, or the default vLLM resolves it to
};

// The launch exactly as written: the user's knobs, every other one at the default vLLM
// resolves it to, nothing chosen. Its verdict is the user's question: whether it starts and
// holds the targets (the workload sizes nothing here); no breakdown unless the verdict quotes
// vLLM's message.
Written as_written(const CompiledLaunch& launch, const EngineConfig& pinned, const Targets& t) {
  LaunchKnobs knobs = launch_knobs(pinned);
  ResolvedKnobs defaults;
  Written w;
  if (launch.try_resolve(knobs, defaults) != KnobProblem::None) {
    // Knobs vLLM refuses as they stand: judged by the plan that keeps them and fills the rest.
    Targets judged = t;
    judged.workload = nullptr;
    Plan p = plan_once(launch, knobs, pinned, judged);
    w.fits = p.fits;
    w.verdict = std::move(p.verdict);
    w.outcome = p.breakdown.outcome;
    w.knobs = launch_knobs(p.config);
    return w;
  }
  knobs.gpu_memory_utilization = defaults.gpu_memory_utilization;
  knobs.max_model_len = defaults.max_model_len;
  knobs.max_num_seqs = defaults.max_num_seqs;
  knobs.max_num_batched_tokens = defaults.max_num_batched_tokens;
  // Every knob set: plan_once would search nothing, only evaluate and judge.
  const Evaluation e = evaluate(launch, knobs);
  const std::int64_t context =
      t.context > 0 ? std::min(t.context, e.knobs.max_model_len) : e.knobs.max_model_len;
  const Judgement j = judge(launch, e, t, context);
  w.fits = j.fits;
  w.outcome = e.outcome;
  w.knobs = knobs;
  w.verdict = verdict_text(launch, e, j, t, context,
                           e.outcome == Outcome::Started ? std::vector<std::string>{}
                                                         : launch.breakdown(knobs).messages);
  return w;
}

// vLLM's "Try increasing `gpu_memory_utilization`" is advice only where a larger one would
// fit: when even the largest safe utilization leaves no KV room, the verdict says so instead.
void judge_utilization_hint(const CompiledLaunch& launch, const Plan& solved, std::string& verdict,
                            const Targets& t) {
  static const std::string kHint = " Try increasing `gpu_memory_utilization`.";
  // Only a failing verdict quotes vLLM's message.
  if (verdict.rfind("does not fit", 0) != 0) return;
  const std::size_t at = verdict.find(kHint);
  if (at == std::string::npos) return;
  verdict.erase(at, kHint.size());
  std::string binding;
  LaunchKnobs probe = launch_knobs(solved.config);
  probe.gpu_memory_utilization = 0.5;
  const double largest = max_utilization(launch, evaluate(launch, probe), t, binding);
  LaunchKnobs at_largest = launch_knobs(solved.config);
  at_largest.gpu_memory_utilization = largest;
  ResolvedKnobs r;
  if (launch.try_resolve(at_largest, r) == KnobProblem::None &&
      launch.evaluate(r).outcome == Outcome::Started) {
    verdict += " A larger --gpu-memory-utilization (up to " + utilization_text(largest) +
               ") leaves KV room.";
  } else {
    verdict += " No --gpu-memory-utilization fits: even the largest safe value, " +
               utilization_text(largest) + ", leaves no KV room.";
  }
}

// CUDA-graph profiling sizes its minimal KV cache by max_num_seqs and runs before the KV budget
// exists: when the launch fails it at the largest safe utilization and at a small one alike,
// the verdict says the utilization is not the lever.
// `judged`: the launch's knobs, each set; `outcome`: its outcome there.
void judge_graph_profiling(const CompiledLaunch& launch, Outcome outcome, const LaunchKnobs& judged,
                           std::string& verdict, const Targets& t) {
  if (outcome != Outcome::CudagraphProfilingOom) return;
  std::string binding;
  LaunchKnobs probe = judged;
  probe.gpu_memory_utilization = 0.5;
  const double largest = max_utilization(launch, evaluate(launch, probe), t, binding);
  for (const double u : {0.1, largest}) {
    LaunchKnobs trial = judged;
    trial.gpu_memory_utilization = u;
    ResolvedKnobs r;
    if (launch.try_resolve(trial, r) != KnobProblem::None ||
        launch.evaluate(r).outcome != Outcome::CudagraphProfilingOom) {
      return;
    }
  }
  verdict +=
      " Changing --gpu-memory-utilization cannot help: graph profiling's minimal KV cache "
      "follows max_num_seqs, not the budget; fewer --max-num-seqs or --enforce-eager do.";
}

// One change a remedy may make, alone or with one other: applied to the launch's knobs,
// hardware and targets, then replayed through the engine.
struct Candidate {
  std::string kind;
  std::string change;  // `vllm serve` text; "" = filled from the replayed plan
  std::vector<KnobChange> changes;
  std::vector<std::string> drops;
  std::string note;  // appended to the detail (the cost of the change)
  std::function<void(EngineConfig&, HardwareConfig&, Targets&)> apply;
};

Remedy replay(const CompiledLaunch& launch, const EngineConfig& pinned, const Targets& t,
              const std::vector<const Candidate*>& parts) {
  EngineConfig config = pinned;
  HardwareConfig hardware = launch.hardware();
  Targets targets = t;
  Remedy out;
  for (const Candidate* c : parts) c->apply(config, hardware, targets);
  const Plan p = plan_changed(launch, config, hardware, targets);
  for (const Candidate* c : parts) {
    out.kind += (out.kind.empty() ? "" : "+") + c->kind;
    std::string change = c->change;
    std::vector<KnobChange> changes = c->changes;
    if (change.empty()) {  // the context the replay chose
      change = "--max-model-len " + std::to_string(p.max_model_len);
      changes = {{"max_model_len", std::to_string(p.max_model_len),
                  pinned.max_model_len ? std::to_string(*pinned.max_model_len) : "", ""}};
    }
    out.change += (out.change.empty() ? "" : " ") + change;
    out.changes.insert(out.changes.end(), changes.begin(), changes.end());
    out.drops.insert(out.drops.end(), c->drops.begin(), c->drops.end());
  }
  out.fits = p.fits;
  out.detail = remedy_detail(p);
  for (const Candidate* c : parts) out.detail += c->note;
  out.flags = to_vllm_args(p);
  return out;
}

// A "shorter context" whose replay is not shorter than the user's (the model's maximum
// started once the pin was lifted): not a remedy.
bool lengthens_context(const Remedy& r) {
  for (const KnobChange& c : r.changes) {
    if (c.knob == "max_model_len" && !c.before.empty() &&
        std::stoll(c.value) >= std::stoll(c.before)) {
      return true;
    }
  }
  return false;
}

// The changes worth trying for a failed plan, cheapest first (the order of the checklist:
// KV precision, graphs, context, weight precision, more GPUs, offload).
std::vector<Candidate> candidates(const CompiledLaunch& launch, const EngineConfig& pinned,
                                  const Plan& failed, const Targets& t) {
  const ModelSpec& spec = launch.spec();
  std::vector<Candidate> out;
  const Outcome outcome = failed.breakdown.outcome;
  // A pinned utilization the GPU's free memory cannot give (a desktop card, a second tenant):
  // the largest that passes vLLM's startup check, before anything else.
  if (pinned.gpu_memory_utilization && outcome == Outcome::StartupFreeMemory) {
    std::string binding;
    LaunchKnobs probe = launch_knobs(pinned);
    probe.gpu_memory_utilization = 0.5;
    const double largest = max_utilization(launch, evaluate(launch, probe), t, binding);
    if (largest < *pinned.gpu_memory_utilization) {
      const std::string text = utilization_text(largest);
      out.push_back(
          {"lower_utilization",
           "--gpu-memory-utilization " + text,
           {{"gpu_memory_utilization", text, utilization_text(*pinned.gpu_memory_utilization), ""}},
           {"gpu_memory_utilization"},
           " (what the free memory allows: a smaller KV cache)",
           [largest](EngineConfig& c, HardwareConfig&, Targets&) {
             c.gpu_memory_utilization = largest;
           }});
    }
  }
  if (pinned.kv_cache_dtype.empty() || pinned.kv_cache_dtype == "auto") {
    out.push_back({"fp8_kv_cache",
                   "--kv-cache-dtype fp8",
                   {{"kv_cache_dtype", "fp8", "", ""}},
                   {},
                   "",
                   [](EngineConfig& c, HardwareConfig&, Targets&) { c.kv_cache_dtype = "fp8"; }});
  }
  if (!pinned.enforce_eager &&
      (outcome == Outcome::CudagraphProfilingOom || outcome == Outcome::CudagraphCaptureOom)) {
    out.push_back({"enforce_eager",
                   "--enforce-eager",
                   {{"enforce_eager", "true", "", ""}},
                   {},
                   " (no CUDA graphs: slower decode)",
                   [](EngineConfig& c, HardwareConfig&, Targets&) { c.enforce_eager = true; }});
  }
  if (pinned.max_model_len && t.context == 0) {
    out.push_back({"shorter_context",
                   "",
                   {},
                   {"max_model_len"},
                   "",
                   [](EngineConfig& c, HardwareConfig&, Targets& targets) {
                     c.max_model_len.reset();
                     targets.context = 0;
                   }});
  }
  if (spec.quantization.method == QuantMethod::None && pinned.quantization.empty()) {
    out.push_back({"quantized_weights",
                   "--quantization fp8",
                   {{"quantization", "fp8", "", ""}},
                   {},
                   " (or an fp8/AWQ checkpoint of the same model)",
                   [](EngineConfig& c, HardwareConfig&, Targets&) { c.quantization = "fp8"; }});
  }
  const std::int32_t tp = pinned.tensor_parallel_size * 2;
  if (tp <= 8 && !tensor_parallel_split_problem(spec, tp)) {
    // Every data-parallel replica takes the wider TP group: the GPUs needed are TP x PP x DP.
    const std::int32_t gpus = tp * pinned.pipeline_parallel_size * pinned.data_parallel_size;
    std::vector<std::string> drops;
    if (pinned.tensor_parallel_size > 1) drops.push_back("tensor_parallel_size");
    out.push_back({"tensor_parallel",
                   "--tensor-parallel-size " + std::to_string(tp),
                   {{"tensor_parallel_size", std::to_string(tp),
                     std::to_string(pinned.tensor_parallel_size), ""}},
                   drops,
                   " (" + std::to_string(gpus) + " GPUs)",
                   [tp, gpus](EngineConfig& c, HardwareConfig& h, Targets&) {
                     c.tensor_parallel_size = tp;
                     h.num_gpus = std::max(h.num_gpus, gpus);
                   }});
  }
  // Offload the weight bytes that do not fit, rounded up to whole GiB.
  const RankBreakdown& r0 = failed.breakdown.ranks.front();
  const std::int64_t deficit =
      outcome == Outcome::OomAtLoad
          ? r0.weights_bytes - failed.breakdown.startup_free_bytes + r0.requested_memory_bytes / 4
          : failed.breakdown.request_kv_bytes - r0.kv_cache_bytes;
  if (deficit > 0 && deficit < r0.weights_bytes) {
    const std::int64_t gib_needed = (deficit + kGiB - 1) / kGiB;
    const std::int64_t offload = pinned.cpu_offload_bytes + gib_needed * kGiB;
    out.push_back(
        {"cpu_offload",
         "--cpu-offload-gb " + std::to_string(offload / kGiB),
         {{"cpu_offload_gb", std::to_string(offload / kGiB),
           pinned.cpu_offload_bytes > 0 ? std::to_string(pinned.cpu_offload_bytes / kGiB) : "",
           ""}},
         {},
         " (slower: weights stream over PCIe each step)",
         [offload](EngineConfig& c, HardwareConfig&, Targets&) { c.cpu_offload_bytes = offload; }});
  }
  return out;
}

// The knobs the solver set that the user did not: each against the default vLLM would have
// used, with the constraint that chose it.
std::vector<KnobChange> solver_changes(const LaunchKnobs& written, const Plan& solved,
                                       const EngineConfig& pinned) {
  std::vector<KnobChange> out;
  out.reserve(4);  // one growth, not two
  auto add = [&](const char* knob, bool user_set, std::string before, std::string after,
                 const std::string& reason) {
    if (!user_set && before != after)
      out.push_back({knob, std::move(after), std::move(before), reason});
  };
  // Integers differ exactly where their texts do: compared before they are written.
  auto add_integer = [&](const char* knob, bool user_set, std::int64_t before, std::int64_t after,
                         const std::string& reason) {
    if (!user_set && before != after) {
      add(knob, false, std::to_string(before), std::to_string(after), reason);
    }
  };
  if (!pinned.gpu_memory_utilization) {
    add("gpu_memory_utilization", false,
        utilization_text(written.gpu_memory_utilization.value_or(0.0)),
        utilization_text(solved.gpu_memory_utilization), solved.binding_gpu_memory_utilization);
  }
  add_integer("max_model_len", pinned.max_model_len.has_value(), written.max_model_len.value_or(0),
              solved.max_model_len, solved.binding_max_model_len);
  add_integer("max_num_seqs", pinned.max_num_seqs.has_value(), written.max_num_seqs.value_or(0),
              solved.max_num_seqs, solved.binding_max_num_seqs);
  add_integer("max_num_batched_tokens", pinned.max_num_batched_tokens.has_value(),
              written.max_num_batched_tokens.value_or(0), solved.max_num_batched_tokens,
              solved.binding_max_num_batched_tokens);
  return out;
}

// Whether two configs set the same evaluated knobs (a plan from Python passes the launch's own,
// unset, as a config of its own).
bool same_evaluated_knobs(const EngineConfig& a, const EngineConfig& b) {
  for (const KnobSpec& knob : knob_specs()) {
    if (knob.evaluated && knob.get(a) != knob.get(b)) return false;
  }
  return true;
}

// The evaluated knobs of `config` checked as set_knob would; the launch's compile checked the
// others (validate_knobs), which with_evaluated_knobs takes from its config unchanged.
void check_evaluated_knobs(const EngineConfig& config) {
  for (const KnobSpec& knob : knob_specs()) {
    if (!knob.evaluated) continue;
    if (const auto value = knob.get(config)) check_knob(knob, *value);
  }
}

}  // namespace

EngineConfig with_evaluated_knobs(EngineConfig base, const EngineConfig& from) {
  for (const KnobSpec& knob : knob_specs()) {
    if (knob.evaluated) knob.set(base, knob.get(from));
  }
  return base;
}

Plan solve(const CompiledLaunch& launch, std::int64_t target_context_tokens,
           std::int64_t target_concurrency, std::int64_t safety_margin_bytes) {
  return solve(launch, launch.config(), target_context_tokens, target_concurrency,
               safety_margin_bytes);
}

double preemption_probability(const CompiledLaunch& launch, const EngineConfig& evaluated,
                              const Workload& workload, std::int64_t max_num_seqs) {
  if (max_num_seqs < 1) {
    throw ConfigError("max_num_seqs", std::to_string(max_num_seqs), ">= 1", "out of range");
  }
  const LaunchKnobs knobs = launch_knobs(with_evaluated_knobs(launch.config(), evaluated));
  ResolvedKnobs r;
  if (launch.try_resolve(knobs, r) != KnobProblem::None) return 1.0;
  return preemption_at(launch, request_blocks(launch, r, workload), knobs, max_num_seqs);
}

std::int64_t runtime_headroom_bytes(const CompiledLaunch& launch,
                                    std::int64_t max_num_seqs) noexcept {
  if (launch.model_runner_v2() || max_num_seqs <= 0) return 0;
  const std::int64_t vocab = launch.spec().vocab_size;
  constexpr std::int64_t kLogprobBytes = 4;                  // fp32 log-softmax of the raw logits
  const std::int64_t bitmask_bytes = (vocab + 31) / 32 * 4;  // int32 per 32 tokens
  return max_num_seqs * (vocab * kLogprobBytes + bitmask_bytes);
}

Plan solve(const CompiledLaunch& launch, const EngineConfig& evaluated,
           std::int64_t target_context_tokens, std::int64_t target_concurrency,
           std::int64_t safety_margin_bytes) {
  SolveTargets targets;
  targets.context_tokens = target_context_tokens;
  targets.concurrency = target_concurrency;
  targets.safety_margin_bytes = safety_margin_bytes;
  return solve(launch, evaluated, targets);
}

namespace {

// The targets checked against the launch (ConfigError naming the field), as the solver keeps
// them; the workload is `targets`' own.
Targets checked_targets(const CompiledLaunch& launch, const SolveTargets& targets) {
  const std::int64_t target_context_tokens = targets.context_tokens;
  const std::int64_t target_concurrency = targets.concurrency;
  const std::int64_t safety_margin_bytes = targets.safety_margin_bytes;
  const ModelSpec& spec = launch.spec();
  // The target context is a max_model_len: the knob table's bounds for this model.
  static const KnobSpec& context_knob = knob_spec("max_model_len");
  const KnobBounds context_bounds = knob_bounds(context_knob, spec);
  if (target_context_tokens < 0 ||
      static_cast<double>(target_context_tokens) > context_bounds.maximum) {
    throw ConfigError("context", std::to_string(target_context_tokens),
                      "1 .. " + std::to_string(static_cast<std::int64_t>(context_bounds.maximum)) +
                          " (the model's max_position_embeddings), or 0 for the maximum",
                      "target context out of range");
  }
  if (target_concurrency < 0) {
    throw ConfigError("concurrency", std::to_string(target_concurrency), ">= 1, or 0 for none",
                      "negative target concurrency");
  }
  if (safety_margin_bytes < 0 || safety_margin_bytes >= launch.hardware().gpu.total_memory_bytes) {
    throw ConfigError("safety_margin_bytes", std::to_string(safety_margin_bytes),
                      "0 .. the GPU's total memory", "out of range");
  }
  if (targets.runtime_headroom_bytes < -1 ||
      targets.runtime_headroom_bytes >= launch.hardware().gpu.total_memory_bytes) {
    throw ConfigError("runtime_headroom_bytes", std::to_string(targets.runtime_headroom_bytes),
                      "0 .. the GPU's total memory, or -1 for the launch's own", "out of range");
  }
  const double preemption_target = targets.workload.preemption_target;
  if (!targets.workload.empty() && !(preemption_target > 0.0 && preemption_target < 1.0)) {
    throw ConfigError("preemption_target", std::to_string(preemption_target), "(0, 1)",
                      "out of range");
  }
  return Targets{target_context_tokens, target_concurrency, safety_margin_bytes,
                 targets.runtime_headroom_bytes,
                 targets.workload.empty() ? nullptr : &targets.workload};
}

// The launch's knobs with `evaluated`'s evaluated ones, checked, kept in `storage`; the
// launch's own knobs (a plain plan) were checked when it compiled, and are not copied.
const EngineConfig& pinned_knobs(const CompiledLaunch& launch, const EngineConfig& evaluated,
                                 std::optional<EngineConfig>& storage) {
  if (&evaluated == &launch.config() || same_evaluated_knobs(evaluated, launch.config())) {
    return launch.config();
  }
  storage = with_evaluated_knobs(launch.config(), evaluated);
  check_evaluated_knobs(*storage);
  return *storage;
}

}  // namespace

Plan solve_knobs(const CompiledLaunch& launch, const EngineConfig& evaluated,
                 const SolveTargets& targets) {
  const Targets t = checked_targets(launch, targets);
  std::optional<EngineConfig> pinned_storage;
  const EngineConfig& pinned = pinned_knobs(launch, evaluated, pinned_storage);
  Plan plan = plan_for(launch, pinned, t);
  judge_utilization_hint(launch, plan, plan.verdict, t);
  if (plan.breakdown.outcome == Outcome::CudagraphProfilingOom) {
    judge_graph_profiling(launch, plan.breakdown.outcome, launch_knobs(plan.config), plan.verdict,
                          t);
  }
  return plan;
}

Plan solve(const CompiledLaunch& launch, const EngineConfig& evaluated,
           const SolveTargets& targets) {
  const ModelSpec& spec = launch.spec();
  const Targets t = checked_targets(launch, targets);
  std::optional<EngineConfig> pinned_storage;
  const EngineConfig& pinned = pinned_knobs(launch, evaluated, pinned_storage);
  Written written = as_written(launch, pinned, t);
  Plan plan = plan_for(launch, pinned, t);
  plan.as_written_fits = written.fits;
  plan.as_written_verdict = std::move(written.verdict);
  plan.as_written_outcome = written.outcome;
  plan.changed = solver_changes(written.knobs, plan, pinned);
  judge_utilization_hint(launch, plan, plan.as_written_verdict, t);
  judge_utilization_hint(launch, plan, plan.verdict, t);
  judge_graph_profiling(launch, written.outcome, written.knobs, plan.as_written_verdict, t);
  if (plan.breakdown.outcome == Outcome::CudagraphProfilingOom) {
    judge_graph_profiling(launch, plan.breakdown.outcome, launch_knobs(plan.config), plan.verdict,
                          t);
  }
  if (plan.fits) return plan;
  // Remedies cheapest first, each replayed through the engine with its full flag set; the
  // tensor-parallel single is the smallest split that fits. When no single change fits, pairs
  // of changes, cheapest pair first.
  const std::vector<Candidate> singles = candidates(launch, pinned, plan, t);
  bool any_fits = false;
  for (const Candidate& c : singles) {
    if (c.kind == "tensor_parallel") {
      for (std::int32_t tp = std::max(2, pinned.tensor_parallel_size * 2); tp <= 8; tp *= 2) {
        if (tensor_parallel_split_problem(spec, tp)) break;
        // Every data-parallel replica takes the wider TP group: the GPUs needed are TP x PP x DP.
        const std::int32_t gpus = tp * pinned.pipeline_parallel_size * pinned.data_parallel_size;
        Candidate wider = c;
        wider.change = "--tensor-parallel-size " + std::to_string(tp);
        wider.changes.front().value = std::to_string(tp);
        wider.note = " (" + std::to_string(gpus) + " GPUs)";
        wider.apply = [tp, gpus](EngineConfig& config, HardwareConfig& h, Targets&) {
          config.tensor_parallel_size = tp;
          h.num_gpus = std::max(h.num_gpus, gpus);
        };
        Remedy r = replay(launch, pinned, t, {&wider});
        if (r.fits || tp == 8 || tensor_parallel_split_problem(spec, tp * 2)) {
          any_fits = any_fits || (r.fits && r.drops.empty());
          plan.remedies.push_back(std::move(r));
          break;
        }
      }
      continue;
    }
    Remedy r = replay(launch, pinned, t, {&c});
    if (lengthens_context(r)) continue;
    // A utilization the free memory cannot give is no setting to keep: its lowering that fits
    // is the answer, not a reason to try pairs.
    any_fits = any_fits || (r.fits && (r.drops.empty() || r.kind == "lower_utilization"));
    plan.remedies.push_back(std::move(r));
  }
  // Pairs are tried unless a single change fits that keeps every setting the user gave.
  if (any_fits) return plan;
  // Every fitting pair, cheapest first; those that keep all the user's settings before those
  // that drop one.
  std::vector<Remedy> pairs;
  const std::size_t n = singles.size();
  for (std::size_t sum = 1; sum + 2 < 2 * n; ++sum) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t j = sum - std::min(sum, i);
      if (j <= i || j >= n) continue;
      Remedy r = replay(launch, pinned, t, {&singles[i], &singles[j]});
      if (r.fits && !lengthens_context(r)) pairs.push_back(std::move(r));
    }
  }
  std::stable_sort(pairs.begin(), pairs.end(), [](const Remedy& a, const Remedy& b) {
    return a.drops.size() < b.drops.size();
  });
  constexpr std::size_t kMaxPairs = 3;
  for (std::size_t i = 0; i < pairs.size() && i < kMaxPairs; ++i) {
    plan.remedies.push_back(std::move(pairs[i]));
  }
  return plan;
}

Plan solve(const ModelSpec& spec, const SolveRequest& request) {
  const CompiledLaunch launch(std::make_shared<const ModelSpec>(spec), request.hardware,
                              request.pinned);
  return solve(launch, request.target_context_tokens, request.target_concurrency,
               request.safety_margin_bytes);
}

std::int64_t sweep_size(const SweepGrid& grid) {
  std::int64_t rows = 1;
  for (const std::size_t n : {grid.gpu_memory_utilization.size(), grid.max_model_len.size(),
                              grid.max_num_seqs.size(), grid.max_num_batched_tokens.size()}) {
    rows *= std::max<std::int64_t>(1, static_cast<std::int64_t>(n));
    if (rows > kMaxSweepPoints) {
      throw ConfigError("sweep grid", "more than " + std::to_string(kMaxSweepPoints) + " points",
                        "<= " + std::to_string(kMaxSweepPoints) + " points",
                        "grid too large: split it into several sweeps");
    }
  }
  return rows;
}

namespace {

// One axis of the grid: its listed values, or the launch's own (possibly unset) value.
template <typename T>
struct Axis {
  const std::vector<T>& values;
  std::optional<T> fixed;
  std::size_t size() const { return values.empty() ? 1 : values.size(); }
  std::optional<T> at(std::size_t i) const {
    if (values.empty()) return fixed;
    return values[i];
  }
};

// Points prepared together, then finished for each utilization: each utilization writes a run
// of kTile consecutive rows per column rather than one row every (lengths x sequences x
// tokens) rows, which kept ~800 write streams open and left BM_Sweep bound on them (16 points:
// 26 M points/s, 64: 66 M). A tile keeps its points as columns, so that a utilization's knob
// columns are block copies.
template <std::size_t kTile>
struct SweepTile {
  // The knobs the rows show, as resolved (an unset knob shows its default).
  std::array<double, kTile> default_utilization;
  std::array<std::int64_t, kTile> max_model_len;
  std::array<std::int64_t, kTile> max_num_seqs;
  std::array<std::int64_t, kTile> max_num_batched_tokens;
  std::array<bool, kTile> refused;
};
constexpr std::size_t kSweepTile = 64;
// A one-rank launch's tile holds each point's rows (SingleRankPoint, ~180 B), not its whole
// preparation: 256 points are about 55 KiB of stack.
constexpr std::size_t kSingleRankSweepTile = 256;

bool valid_utilization(double utilization) { return utilization > 0.0 && utilization <= 1.0; }

// One utilization's rows of a tile, from `row` on: the knob columns copied, then the figures.
// A listed utilization (kListed) is checked and turned into requested bytes once for the tile,
// else each point's default is; `finish(j, requested)` finishes point j.
template <bool kListed, std::size_t kTile, typename Finish>
void finish_rows(const SweepTile<kTile>& tile, std::size_t count, double listed,
                 std::int64_t total_memory_bytes, const SweepColumns out, std::size_t row,
                 const Finish& finish) noexcept {
  if (kListed) {
    std::fill_n(out.gpu_memory_utilization + row, count, listed);
  } else {
    std::copy_n(tile.default_utilization.data(), count, out.gpu_memory_utilization + row);
  }
  std::copy_n(tile.max_model_len.data(), count, out.max_model_len + row);
  std::copy_n(tile.max_num_seqs.data(), count, out.max_num_seqs + row);
  std::copy_n(tile.max_num_batched_tokens.data(), count, out.max_num_batched_tokens + row);
  const bool listed_valid = valid_utilization(listed);
  const std::int64_t listed_requested =
      kListed && listed_valid ? requested_memory_bytes(total_memory_bytes, listed) : 0;
  for (std::size_t j = 0; j < count; ++j) {
    const std::size_t i = row + j;
    const double utilization = kListed ? listed : tile.default_utilization[j];
    if (tile.refused[j] || !(kListed ? listed_valid : valid_utilization(utilization))) {
      out.kv_cache_bytes[i] = 0;
      out.kv_tokens[i] = 0;
      out.max_concurrency[i] = 0.0;
      out.outcome[i] = -1;
      continue;
    }
    const FinishedPoint e = finish(
        j, kListed ? listed_requested : requested_memory_bytes(total_memory_bytes, utilization));
    out.kv_cache_bytes[i] = e.min_kv_cache_bytes;
    out.kv_tokens[i] = e.kv_tokens;
    out.max_concurrency[i] = e.max_concurrency;
    out.outcome[i] = static_cast<std::int8_t>(e.outcome);
  }
}

struct SweepAxes {
  Axis<double> utils;
  Axis<std::int64_t> lens, seqs, tokens;
};

// The sweep's points [begin, end), kTile at a time: each point is resolved and prepared once,
// then every utilization writes the tile's run of rows. A one-rank launch keeps only what its
// rows read (one scratch preparation serves every point), so its tiles are long: a
// utilization's run of 256 rows per column rather than 64 keeps the stores streaming.
// `columns` is a copy: the int8 outcome stores cannot alias it.
template <bool kSingleRank, std::size_t kTile>
void sweep_tiles(const CompiledLaunch& launch, LaunchKnobs knobs, const SweepAxes& axes,
                 std::size_t begin, std::size_t end, const SweepColumns columns) noexcept {
  const std::int64_t total = launch.hardware().gpu.total_memory_bytes;
  const std::size_t points = axes.lens.size() * axes.seqs.size() * axes.tokens.size();
  SweepTile<kTile> tile;
  // A one-rank launch's rows read only these; other launches keep each point's preparation.
  std::array<SingleRankPoint, kSingleRank ? kTile : 1> single;
  std::array<PreparedEvaluation, kSingleRank ? 1 : kTile> prepared;
  // Kept across points: a refused point shows what try_resolve left (as before the split).
  ResolvedKnobs resolved;
  for (std::size_t first = begin; first < end; first += kTile) {
    const std::size_t count = std::min(kTile, end - first);
    for (std::size_t j = 0; j < count; ++j) {
      const std::size_t point = first + j;
      const std::size_t b = point % axes.tokens.size();
      const std::size_t s = point / axes.tokens.size() % axes.seqs.size();
      const std::size_t l = point / axes.tokens.size() / axes.seqs.size();
      knobs.max_model_len = axes.lens.at(l);
      knobs.max_num_seqs = axes.seqs.at(s);
      knobs.max_num_batched_tokens = axes.tokens.at(b);
      tile.refused[j] = launch.try_resolve(knobs, resolved) != KnobProblem::None;
      tile.default_utilization[j] = resolved.gpu_memory_utilization;
      tile.max_model_len[j] = knobs.max_model_len.value_or(resolved.max_model_len);
      tile.max_num_seqs[j] = knobs.max_num_seqs.value_or(resolved.max_num_seqs);
      tile.max_num_batched_tokens[j] =
          knobs.max_num_batched_tokens.value_or(resolved.max_num_batched_tokens);
      if (tile.refused[j]) continue;
      PreparedEvaluation& scratch = prepared[kSingleRank ? 0 : j];
      launch.prepare(resolved, scratch);
      if constexpr (kSingleRank) single[j] = launch.single_rank_point(scratch);
    }
    for (std::size_t u = 0; u < axes.utils.size(); ++u) {
      const std::size_t row = u * points + first;
      const std::optional<double> listed = axes.utils.at(u);
      const auto finish = [&](std::size_t j, std::int64_t requested) {
        if constexpr (kSingleRank) {
          return single[j].at(requested);
        } else {
          return launch.finish_requested(prepared[j], requested);
        }
      };
      if (listed) {
        finish_rows<true>(tile, count, *listed, total, columns, row, finish);
      } else {
        finish_rows<false>(tile, count, 0.0, total, columns, row, finish);
      }
    }
  }
}

}  // namespace

void sweep(const CompiledLaunch& launch, const LaunchKnobs& base, const SweepGrid& grid,
           const SweepColumns& out, SweepPointRange range) noexcept {
  LaunchKnobs knobs = base;
  const SweepAxes axes{{grid.gpu_memory_utilization, knobs.gpu_memory_utilization},
                       {grid.max_model_len, knobs.max_model_len},
                       {grid.max_num_seqs, knobs.max_num_seqs},
                       {grid.max_num_batched_tokens, knobs.max_num_batched_tokens}};
  knobs.gpu_memory_utilization.reset();  // resolved to the default, replaced per row
  // Rows keep utilization outermost; the points (length, sequences, tokens) are prepared once
  // each, a tile at a time, and only the utilization's share is finished per row.
  const std::size_t points = axes.lens.size() * axes.seqs.size() * axes.tokens.size();
  const std::size_t end = std::min(range.end, points);
  if (launch.ranks().size() == 1) {
    sweep_tiles<true, kSingleRankSweepTile>(launch, knobs, axes, range.begin, end, out);
  } else {
    sweep_tiles<false, kSweepTile>(launch, knobs, axes, range.begin, end, out);
  }
}

}  // namespace vramplan
