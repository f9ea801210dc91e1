#include "vramplan/engine_rules.hpp"

#include <cmath>

namespace vramplan {

KvBudget kv_budget(const EngineProfile& vllm, const BudgetTerms& terms, double memory_fraction,
                   const std::optional<std::int64_t>& fixed_kv_cache_bytes) noexcept {
  KvBudget budget;
  budget.requested_memory_bytes = static_cast<std::int64_t>(
      std::ceil(static_cast<double>(terms.total_memory_bytes) * memory_fraction));
  budget.cudagraph_in_budget_bytes = vllm.cudagraph_in_budget ? terms.cudagraph_bytes : 0;
  // The consumed formula (0.27+) sees buffers made after the init snapshot; before, they were
  // held but counted nowhere, so they come out of the headroom instead.
  budget.persistent_in_budget_bytes =
      vllm.consumed_budget_formula ? terms.persistent_buffers_bytes : 0;
  const std::int64_t cached_activation =
      vllm.non_torch_counts_cached_activations ? terms.activation_peak_bytes : 0;
  budget.kv_cache_bytes = fixed_kv_cache_bytes
                              ? *fixed_kv_cache_bytes
                              : budget.requested_memory_bytes - terms.weights_bytes -
                                    terms.activation_peak_bytes - terms.non_torch_bytes -
                                    budget.cudagraph_in_budget_bytes - cached_activation -
                                    budget.persistent_in_budget_bytes;
  return budget;
}

KvBudget kv_budget(const EngineRules& rules, const BudgetTerms& terms, double memory_fraction,
                   const std::optional<std::int64_t>& fixed_kv_cache_bytes) noexcept {
  return std::visit(
      [&](const auto& row) { return kv_budget(row, terms, memory_fraction, fixed_kv_cache_bytes); },
      rules);
}

}  // namespace vramplan
