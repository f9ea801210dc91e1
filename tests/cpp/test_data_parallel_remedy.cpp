// The tensor-parallel remedy of a data-parallel launch: every replica takes the wider TP group,
// so the remedy needs TP x PP x DP GPUs (vramplan fit plans every DP split and met this).
#include <gtest/gtest.h>

#include "test_support.hpp"
#include "vramplan/solver.hpp"

namespace vramplan {
namespace {

using vramplan_test::kLlama31_8B;
using vramplan_test::spec_from_yaml;

TEST(DataParallelRemedy, TensorParallelRemedyCountsEveryReplica) {
  const ModelSpec s = spec_from_yaml(kLlama31_8B);
  // 16 GiB cards: Llama-3.1-8B's 16,060,522,496 B (14.96 GiB) of bf16 weights leave no room for
  // a KV cache on one card, so each DP=2 replica on one card does not fit; at TP=2 each rank
  // holds 7.48 GiB. Two replicas of TP=2 need 2 x 2 x 1 = 4 GPUs.
  SolveRequest req;
  req.hardware.gpu.id = "card-16GiB";
  req.hardware.gpu.name = "a 16 GiB card";
  req.hardware.gpu.vendor = "nvidia";
  req.hardware.gpu.total_memory_bytes = std::int64_t{16} << 30;
  req.hardware.gpu.compute_capability = 8.9;
  req.hardware.num_gpus = 2;
  req.pinned.data_parallel_size = 2;
  req.pinned.max_model_len = 8192;
  Plan plan;
  ASSERT_NO_THROW(plan = solve(s, req));
  EXPECT_FALSE(plan.fits);
  const Remedy* tensor_parallel = nullptr;
  for (const Remedy& remedy : plan.remedies) {
    if (remedy.kind == "tensor_parallel") tensor_parallel = &remedy;
  }
  ASSERT_NE(tensor_parallel, nullptr);
  EXPECT_EQ(tensor_parallel->change, "--tensor-parallel-size 2");
  EXPECT_NE(tensor_parallel->detail.find("(4 GPUs)"), std::string::npos) << tensor_parallel->detail;
  EXPECT_TRUE(tensor_parallel->fits) << tensor_parallel->detail;
}

}  // namespace
}  // namespace vramplan
