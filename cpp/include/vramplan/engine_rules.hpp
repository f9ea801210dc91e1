// The engine seam, rules half: what one serving engine's release decides about memory, as a
// row of data, and the KV budget computed from it. Shared, engine-neutral code (weights, KV
// geometry, activations) produces the BudgetTerms; the engine's rule turns them into the KV
// cache bytes. docs/engines.md says how a second engine plugs in.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <variant>

#include "vramplan/engine.hpp"
#include "vramplan/sglang.hpp"

namespace vramplan {

// One engine release's accounting rules. vLLM's row keeps its name, EngineProfile (the
// engines.yaml row, calibration overrides and the bindings' class all use it); SGLang's is
// SglangRules (a model_specs/sglang.yaml row).
using EngineRules = std::variant<EngineProfile, SglangRules>;

// The non-KV terms of one rank at one point, as the shared model computes them.
struct BudgetTerms {
  std::int64_t total_memory_bytes = 0;
  std::int64_t weights_bytes = 0;
  std::int64_t activation_peak_bytes = 0;
  std::int64_t non_torch_bytes = 0;
  std::int64_t cudagraph_bytes = 0;
  std::int64_t persistent_buffers_bytes = 0;  // buffers made after the init snapshot (MRV2)
};

// What the budget rule decides for one rank.
struct KvBudget {
  std::int64_t requested_memory_bytes = 0;  // the engine's share of the GPU
  std::int64_t kv_cache_bytes = 0;
  // The parts of the graph estimate and the persistent buffers the budget already reserved
  // (what is not reserved must fit in the headroom after the KV allocation).
  std::int64_t cudagraph_in_budget_bytes = 0;
  std::int64_t persistent_in_budget_bytes = 0;
};

// vLLM's share of the GPU (Worker.determine_available_memory): ceil(total x utilization).
inline std::int64_t requested_memory_bytes(std::int64_t total_memory_bytes,
                                           double memory_fraction) noexcept {
  return static_cast<std::int64_t>(
      std::ceil(static_cast<double>(total_memory_bytes) * memory_fraction));
}

// The graph estimate vLLM's budget reserves (0.21+), and the buffers made after the init
// snapshot it counts (0.27+ "consumed" formula; before, they were held but counted nowhere, so
// they come out of the headroom instead).
inline std::int64_t cudagraph_in_budget_bytes(const EngineProfile& vllm,
                                              const BudgetTerms& terms) noexcept {
  return vllm.cudagraph_in_budget ? terms.cudagraph_bytes : 0;
}
inline std::int64_t persistent_in_budget_bytes(const EngineProfile& vllm,
                                               const BudgetTerms& terms) noexcept {
  return vllm.consumed_budget_formula ? terms.persistent_buffers_bytes : 0;
}

// What vLLM's rule takes from the requested share before the KV cache, none of it depending on
// the utilization: weights + activation peak + non-torch + the reserved graph estimate + [the
// profile's freed blocks, where the version counts them as non-torch] + the counted buffers.
inline std::int64_t kv_reserved_bytes(const EngineProfile& vllm,
                                      const BudgetTerms& terms) noexcept {
  return terms.weights_bytes + terms.activation_peak_bytes + terms.non_torch_bytes +
         cudagraph_in_budget_bytes(vllm, terms) +
         (vllm.non_torch_counts_cached_activations ? terms.activation_peak_bytes : 0) +
         persistent_in_budget_bytes(vllm, terms);
}

// The KV cache bytes at a requested share: what the rule leaves, or --kv-cache-memory-bytes as
// asked.
inline std::int64_t kv_cache_bytes_at(
    std::int64_t requested_memory_bytes, std::int64_t reserved_bytes,
    const std::optional<std::int64_t>& fixed_kv_cache_bytes) noexcept {
  return fixed_kv_cache_bytes ? *fixed_kv_cache_bytes : requested_memory_bytes - reserved_bytes;
}

// vLLM's rule: KV = requested - kv_reserved_bytes(...), or the fixed size.
inline KvBudget kv_budget(const EngineProfile& vllm, const BudgetTerms& terms,
                          double memory_fraction,
                          const std::optional<std::int64_t>& fixed_kv_cache_bytes) noexcept {
  KvBudget budget;
  budget.requested_memory_bytes = requested_memory_bytes(terms.total_memory_bytes, memory_fraction);
  budget.cudagraph_in_budget_bytes = cudagraph_in_budget_bytes(vllm, terms);
  budget.persistent_in_budget_bytes = persistent_in_budget_bytes(vllm, terms);
  budget.kv_cache_bytes = kv_cache_bytes_at(budget.requested_memory_bytes,
                                            kv_reserved_bytes(vllm, terms), fixed_kv_cache_bytes);
  return budget;
}

// SGLang's rule (sglang_kv_budget): no profiled forward pass. `total_memory_bytes` is the
// baseline B (free after distributed init), `memory_fraction` is --mem-fraction-static, and the
// pools get (B - weights) - B x (1 - f); the slack B x (1 - f) must then hold the graphs and
// activations, so none of the other terms is subtracted here. A fixed size
// (--max-total-tokens, in bytes) caps the budget rather than replacing it.
inline KvBudget kv_budget(const SglangRules& sglang, const BudgetTerms& terms,
                          double memory_fraction,
                          const std::optional<std::int64_t>& fixed_kv_cache_bytes) noexcept {
  SglangByteTerms byte_terms;
  byte_terms.baseline_free_bytes = terms.total_memory_bytes;
  byte_terms.free_after_weights_bytes = terms.total_memory_bytes - terms.weights_bytes;
  byte_terms.mem_fraction_static = memory_fraction;
  const SglangKvBudget pools = sglang_kv_budget(sglang, byte_terms);
  KvBudget budget;
  budget.requested_memory_bytes = terms.total_memory_bytes - pools.slack_bytes;
  budget.kv_cache_bytes =
      fixed_kv_cache_bytes ? std::min(*fixed_kv_cache_bytes, pools.rest_bytes) : pools.rest_bytes;
  return budget;
}

// The KV budget of one rank under `rules` at `memory_fraction` (vLLM's gpu_memory_utilization);
// a fixed KV size (vLLM's --kv-cache-memory-bytes) replaces the computed one. Allocation-free.
// Inline with the rule rows: it runs per rank per sweep point. Dispatched on the alternative's
// index, not std::visit: libstdc++'s visit went through a call table here and cost a fifth of a
// sweep point (BM_Sweep 46 ms against 38 ms). A new alternative fails the static_assert until it
// gets its case.
inline KvBudget kv_budget(const EngineRules& rules, const BudgetTerms& terms,
                          double memory_fraction,
                          const std::optional<std::int64_t>& fixed_kv_cache_bytes) noexcept {
  static_assert(std::variant_size_v<EngineRules> == 2, "kv_budget: one case per engine");
  if (const EngineProfile* vllm = std::get_if<EngineProfile>(&rules)) {
    return kv_budget(*vllm, terms, memory_fraction, fixed_kv_cache_bytes);
  }
  return kv_budget(*std::get_if<SglangRules>(&rules), terms, memory_fraction, fixed_kv_cache_bytes);
}

}  // namespace vramplan
