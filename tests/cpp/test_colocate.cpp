// resident_bytes: what a started instance holds for the startup checks of later instances,
// checked against sums written out by hand.
#include <gtest/gtest.h>

#include <memory>

#include "vramplan/colocate.hpp"
#include "vramplan/errors.hpp"

namespace vramplan {
namespace {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;

Breakdown one_rank(bool graphs_in_budget, std::int64_t post_allocation_bytes) {
  Breakdown b;
  b.model_id = "hand-built";
  b.outcome = Outcome::Started;
  auto rules = std::make_shared<EngineProfile>();
  rules->cudagraph_in_budget = graphs_in_budget;
  b.rules = rules;
  RankBreakdown r;
  r.cuda_context_bytes = 500 * kMiB;
  r.weights_bytes = 15 * kGiB;
  r.non_torch_bytes = 300 * kMiB;
  r.activation_peak_bytes = 2 * kGiB;
  r.cudagraph_bytes = 700 * kMiB;
  r.kv_cache_bytes = 40 * kGiB;
  r.post_allocation_bytes = post_allocation_bytes;
  b.ranks.push_back(r);
  return b;
}

TEST(Colocate, ResidentCountsTheActivationPeakAgainWhenNothingExceedsIt) {
  // Graphs outside the budget (<= 0.20), capture + warm-up 1.5 GiB below the freed 2 GiB peak:
  // 500 MiB + 15 GiB + 300 MiB + 40 GiB + 2 GiB = 57 GiB + 800 MiB.
  EXPECT_EQ(resident_bytes(one_rank(false, -(kGiB / 2))), 57 * kGiB + 800 * kMiB);
}

TEST(Colocate, ResidentAddsWhatCaptureNeedsBeyondThePeak) {
  // Post-allocation need of 256 MiB beyond the freed peak: 57 GiB + 800 MiB + 256 MiB.
  EXPECT_EQ(resident_bytes(one_rank(false, 256 * kMiB)), 57 * kGiB + 1056 * kMiB);
}

TEST(Colocate, ResidentAddsTheInBudgetGraphEstimate) {
  // >= 0.21: the 700 MiB graph estimate is reserved inside the budget beside the peak:
  // 57 GiB + 800 MiB + 700 MiB.
  EXPECT_EQ(resident_bytes(one_rank(true, 0)), 57 * kGiB + 1500 * kMiB);
}

TEST(Colocate, ResidentIsTheFullestPipelineStage) {
  Breakdown b = one_rank(false, 0);
  RankBreakdown last = b.ranks.front();
  last.pipeline_rank = 1;
  last.weights_bytes = 16 * kGiB;  // 1 GiB more: the lm_head stage
  b.ranks.push_back(last);
  EXPECT_EQ(resident_bytes(b), 58 * kGiB + 800 * kMiB);
}

TEST(Colocate, AnInstanceThatDoesNotStartHoldsNothingToCount) {
  Breakdown b = one_rank(false, 0);
  b.outcome = Outcome::StartupFreeMemory;
  EXPECT_THROW((void)resident_bytes(b), ConfigError);
}

}  // namespace
}  // namespace vramplan
