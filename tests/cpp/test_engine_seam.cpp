// The engine seam: vLLM's KV budget rule as a free function over the shared terms, and the
// engine descriptor. Expected values are derived by hand in the comments.
#include <gtest/gtest.h>

#include "vramplan/engine_descriptor.hpp"
#include "vramplan/engine_rules.hpp"
#include "vramplan/errors.hpp"

namespace vramplan {
namespace {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;

// An 80 GiB GPU; 16 GiB of weights, 2 GiB activation peak, 1 GiB non-torch, 512 MiB of graphs,
// 256 MiB of persistent (MRV2) buffers.
BudgetTerms h100_terms() {
  return BudgetTerms{80 * kGiB, 16 * kGiB, 2 * kGiB, 1 * kGiB, 512 * kMiB, 256 * kMiB};
}

EngineProfile rule(bool graph_in_budget, bool consumed, bool cached_activations) {
  EngineProfile row;
  row.cudagraph_in_budget = graph_in_budget;
  row.consumed_budget_formula = consumed;
  row.non_torch_counts_cached_activations = cached_activations;
  return row;
}

TEST(EngineSeam, VllmBudgetGraphEstimateInside) {
  // 0.21+: ceil(80 GiB x 0.9) = 72 GiB requested; 72 - 16 - 2 - 1 - 0.5 = 52.5 GiB.
  const KvBudget b = kv_budget(EngineRules{rule(true, false, false)}, h100_terms(), 0.9, {});
  EXPECT_EQ(b.requested_memory_bytes, 72 * kGiB);
  EXPECT_EQ(b.kv_cache_bytes, 52 * kGiB + 512 * kMiB);
  EXPECT_EQ(b.cudagraph_in_budget_bytes, 512 * kMiB);
  EXPECT_EQ(b.persistent_in_budget_bytes, 0);
}

TEST(EngineSeam, VllmBudgetGraphsOutsideAndConsumedFormula) {
  // Graphs outside (<= 0.20, MRV2 before 0.29), consumed formula on: 72 - 16 - 2 - 1 - 0.25.
  const KvBudget b = kv_budget(EngineRules{rule(false, true, false)}, h100_terms(), 0.9, {});
  EXPECT_EQ(b.kv_cache_bytes, 52 * kGiB + 768 * kMiB);
  EXPECT_EQ(b.cudagraph_in_budget_bytes, 0);
  EXPECT_EQ(b.persistent_in_budget_bytes, 256 * kMiB);
}

TEST(EngineSeam, VllmBudgetCountsCachedActivationsTwice) {
  // PR #10511 era: the freed activation blocks count as non-torch too: 72 - 16 - 2 - 1 - 2.
  const KvBudget b = kv_budget(EngineRules{rule(false, false, true)}, h100_terms(), 0.9, {});
  EXPECT_EQ(b.kv_cache_bytes, 51 * kGiB);
}

TEST(EngineSeam, FixedKvCacheReplacesTheBudget) {
  // --kv-cache-memory-bytes: the KV cache is what was asked, whatever the utilization says.
  const KvBudget b = kv_budget(EngineRules{rule(true, false, false)}, h100_terms(), 0.5,
                               std::optional<std::int64_t>{10 * kGiB});
  EXPECT_EQ(b.kv_cache_bytes, 10 * kGiB);
  EXPECT_EQ(b.requested_memory_bytes, 40 * kGiB);
}

TEST(EngineSeam, RequestedMemoryRoundsUp) {
  // 1001 B x 0.5 = 500.5 B: vLLM takes math.ceil.
  BudgetTerms terms;
  terms.total_memory_bytes = 1001;
  const KvBudget b = kv_budget(EngineRules{rule(true, false, false)}, terms, 0.5, {});
  EXPECT_EQ(b.requested_memory_bytes, 501);
}

TEST(EngineSeam, DescriptorNamesVllmAndItsSurface) {
  const EngineDescriptor& vllm = engine_descriptor("vllm");
  EXPECT_EQ(vllm.display_name, "vLLM");
  EXPECT_EQ(vllm.serve_command, "vllm serve");
  EXPECT_EQ(vllm.log_vocabulary, LogVocabulary::Vllm);
  EXPECT_EQ(&vllm.knobs(), &knob_specs());
  EXPECT_EQ(vllm.newest_known_version(), newest_known_vllm_version());
  EXPECT_EQ(engine_descriptors().size(), 1u);
}

TEST(EngineSeam, UnknownEngineIsAConfigErrorListingTheEngines) {
  try {
    (void)engine_descriptor("tgi");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "engine");
    EXPECT_EQ(e.value(), "'tgi'");
    EXPECT_EQ(e.allowed(), "vllm");
  }
}

}  // namespace
}  // namespace vramplan
