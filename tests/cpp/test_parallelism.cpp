// Data and expert parallelism: replicas, experts spread whole over TP x DP ranks, host RAM
// per node. Hand derivations from Qwen3-30B-A3B's config (hidden 2048, 48 layers, 128
// experts of moe_intermediate 768, bf16).
#include <gtest/gtest.h>

#include "test_support.hpp"
#include "vramplan/engine.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/spec_db.hpp"

using namespace vramplan;

namespace {

const ModelSpec& qwen3_moe() {
  static const SpecDatabase db = SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  static const ModelSpec spec = db.model("Qwen/Qwen3-30B-A3B");
  return spec;
}

Breakdown launch(std::int32_t tp, std::int32_t dp, bool ep) {
  HardwareConfig hw;
  hw.gpu = vramplan_test::h100();
  hw.num_gpus = tp * dp;
  EngineConfig c;
  c.engine_version = "0.19.0";
  c.tensor_parallel_size = tp;
  c.data_parallel_size = dp;
  c.enable_expert_parallel = ep;
  c.max_model_len = 8192;
  return compute_breakdown(qwen3_moe(), hw, c);
}

// One expert in bf16: gate_up 2 x 768 x 2048 + down 2048 x 768, x 2 B = 9,437,184 B.
constexpr std::int64_t kExpertBytes = 3LL * 768 * 2048 * 2;

}  // namespace

TEST(Parallelism, ExpertParallelSpreadsWholeExperts) {
  // DP=2 alone: vLLM's fused-MoE layers flatten TP across DP, so each of the 128 experts is
  // split over the 2 GPUs (moe_intermediate 768 -> 384): half of every expert's bytes go.
  const std::int64_t single = launch(1, 1, false).ranks[0].weights_bytes;
  const Breakdown replica = launch(1, 2, false);
  EXPECT_EQ(single - replica.ranks[0].weights_bytes, 128 * (kExpertBytes / 2) * 48);
  // DP=2 with EP: 64 of the 128 experts per GPU, in each of 48 layers: the same bytes as 128
  // half experts, since 768 splits evenly.
  const Breakdown spread = launch(1, 2, true);
  EXPECT_EQ(single - spread.ranks[0].weights_bytes, 64 * kExpertBytes * 48);
  // TP=2 with EP splits experts over the same 2 ranks as TP=2 splits each expert: equal
  // bytes, since 768 and 128 both divide by 2.
  EXPECT_EQ(launch(2, 1, true).ranks[0].weights_bytes, launch(2, 1, false).ranks[0].weights_bytes);
  // TP=2 x DP=2 with EP: 32 experts per GPU, attention split over TP=2.
  const Breakdown four = launch(2, 2, true);
  EXPECT_EQ(launch(2, 1, false).ranks[0].weights_bytes - four.ranks[0].weights_bytes,
            32 * kExpertBytes * 48);
}

TEST(Parallelism, DataParallelNeedsItsGpusAndMultipliesHostProcesses) {
  HardwareConfig hw;
  hw.gpu = vramplan_test::h100();
  hw.num_gpus = 2;
  EngineConfig c;
  c.data_parallel_size = 4;
  EXPECT_THROW(compute_breakdown(qwen3_moe(), hw, c), ConfigError);
  // Host: API server 1.5 GiB + 2 engine cores x 1.5 GiB + 2 workers x 3 GiB = 10.5 GiB.
  const Breakdown b = launch(1, 2, true);
  EXPECT_EQ(b.host.process_baseline_bytes, 21 * (std::int64_t{1} << 29));
  // Two replicas talk over NCCL: the communicators' 256 MiB (engines.yaml
  // nccl_communicator_bytes) join the CUDA context that one lone GPU has.
  EXPECT_EQ(b.ranks[0].cuda_context_bytes - launch(1, 1, false).ranks[0].cuda_context_bytes,
            256 * (std::int64_t{1} << 20));
}
