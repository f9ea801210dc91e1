// The engine seam, rules half: what one serving engine's release decides about memory, as a
// row of data, and the KV budget computed from it. Shared, engine-neutral code (weights, KV
// geometry, activations) produces the BudgetTerms; the engine's rule turns them into the KV
// cache bytes. docs/engines.md says how a second engine plugs in.
#pragma once

#include <cstdint>
#include <optional>
#include <variant>

#include "vramplan/engine.hpp"

namespace vramplan {

// One engine release's accounting rules. vLLM's row keeps its name, EngineProfile (the
// engines.yaml row, calibration overrides and the bindings' class all use it); a second engine
// adds its own row type as another alternative.
using EngineRules = std::variant<EngineProfile>;

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

// The KV budget of one rank under `rules` at `memory_fraction` (vLLM's gpu_memory_utilization);
// a fixed KV size (vLLM's --kv-cache-memory-bytes) replaces the computed one. Allocation-free.
KvBudget kv_budget(const EngineRules& rules, const BudgetTerms& terms, double memory_fraction,
                   const std::optional<std::int64_t>& fixed_kv_cache_bytes) noexcept;

// vLLM's rule (Worker.determine_available_memory): requested = ceil(total x utilization);
// KV = requested - weights - activation peak - non-torch - [graph estimate, 0.21+] - [the
// profile's freed blocks, where the version counts them as non-torch] - [buffers made since the
// init snapshot, 0.27+ "consumed" formula].
KvBudget kv_budget(const EngineProfile& vllm, const BudgetTerms& terms, double memory_fraction,
                   const std::optional<std::int64_t>& fixed_kv_cache_bytes) noexcept;

}  // namespace vramplan
