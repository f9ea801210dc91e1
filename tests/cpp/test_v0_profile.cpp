// The V0 profile run (vLLM 0.5 - 0.7): an eager forward without torch.compile, and a sampler
// whose temporaries do not shrink with TP. Expectations are derived by hand below from
// Llama-3.1-8B's config (hidden 4096, intermediate 14336, vocab 128256, bf16) and checked
// against the "Memory profiling results" lines the records quote
// (tests/data/measured/dev.jsonl: dev-001/002 from vllm#10517, dev-003/004 from PR #10511).
#include <gtest/gtest.h>

#include <memory>
#include <optional>

#include "test_support.hpp"
#include "vramplan/engine.hpp"
#include "vramplan/spec_db.hpp"

using namespace vramplan;
using vramplan_test::kGiB;

namespace {

const SpecDatabase& database() {
  static const SpecDatabase db = SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  return db;
}

Breakdown v0_launch(const GpuSpec& gpu, std::int32_t tp, std::int64_t max_model_len,
                    const std::string& version = "0.6.4",
                    const std::optional<EngineProfile>& profile = std::nullopt) {
  static const ModelSpec llama = vramplan_test::spec_from_yaml(vramplan_test::kLlama31_8B);
  HardwareConfig hw;
  hw.gpu = gpu;
  hw.num_gpus = tp;
  EngineConfig c;
  c.engine_version = version;
  c.tensor_parallel_size = tp;
  c.gpu_memory_utilization = 0.9;
  c.max_model_len = max_model_len;
  if (profile) c.profile = std::make_shared<const EngineProfile>(*profile);
  return compute_breakdown(llama, hw, c);
}

// Without chunked prefill V0 profiles one batch of max(max_model_len, 2048) tokens. The eager
// forward keeps the MLP's gate_up output and activation (3 x 14336 wide) and three
// hidden-size buffers (residual, normed input, attention output) at its peak:
// 2 B x (3 x 14336 + 3 x 4096) = 110,592 B per token.
constexpr std::int64_t kForwardBytesPerToken = 2 * (3 * 14336 + 3 * 4096);

}  // namespace

TEST(V0Profile, ForwardPeakGrowsWithTheUnchunkedBatch) {
  const GpuSpec rtx3090 = database().gpu("RTX-3090");
  // dev-001: max_model_len 20000; log: peak_torch_memory=17.06GiB, weights 14.9888 GiB, so
  // the activation peak is 2.071 GiB.
  const Breakdown at_20k = v0_launch(rtx3090, 1, 20000);
  EXPECT_EQ(at_20k.ranks[0].activation_peak_bytes, 20000 * kForwardBytesPerToken);  // 2.060 GiB
  EXPECT_NEAR(static_cast<double>(at_20k.ranks[0].activation_peak_bytes) / kGiB, 17.06 - 14.9888,
              0.02);
  // The log's kv_cache_size=3.81GiB.
  EXPECT_NEAR(static_cast<double>(at_20k.ranks[0].kv_cache_bytes) / kGiB, 3.81, 0.03);
  EXPECT_EQ(at_20k.outcome, Outcome::Started);

  // dev-002: max_model_len 29000; peak_torch_memory=17.98GiB (activation 2.991 GiB), and the
  // start fails: "max seq len (29000) is larger than ... KV cache (23648)" = 1478 blocks x 16.
  const Breakdown at_29k = v0_launch(rtx3090, 1, 29000);
  EXPECT_EQ(at_29k.ranks[0].activation_peak_bytes, 29000 * kForwardBytesPerToken);  // 2.987 GiB
  EXPECT_NEAR(static_cast<double>(at_29k.ranks[0].activation_peak_bytes) / kGiB, 17.98 - 14.9888,
              0.02);
  EXPECT_EQ(at_29k.outcome, Outcome::InsufficientKvForMaxModelLen);
  EXPECT_NEAR(static_cast<double>(at_29k.kv_tokens), 23648.0, 0.02 * 23648.0);
}

TEST(V0Profile, SamplerPeakDoesNotShrinkWithTensorParallelism) {
  // dev-003/004: an 80 GB card (79.22 GiB), max_model_len 8192, TP=1 and TP=2 both log
  // "PyTorch activation peak memory takes 1.26GiB". The sampler dominates: 256 requests x
  // 128256 vocab entries x (37.2 B of fp32 logits, probabilities, log-probabilities and sort
  // buffers + 2 B of bf16 logits) + the 8192-token hidden output (8192 x 4096 x 2 B) =
  // 1,287,074,611 + 67,108,864 = 1,354,183,475 B = 1.261 GiB; the TP=1 forward is only
  // 8192 x 110,592 B = 0.844 GiB.
  GpuSpec gpu = vramplan_test::h100();
  gpu.total_memory_bytes = static_cast<std::int64_t>(79.22 * kGiB);
  const double expected =
      (37.2 + 2.0) * 256.0 * 128256.0 + 8192.0 * 4096.0 * 2.0;  // bytes, 1.261 GiB
  for (const std::int32_t tp : {1, 2}) {
    const Breakdown b = v0_launch(gpu, tp, 8192);
    EXPECT_NEAR(static_cast<double>(b.ranks[0].activation_peak_bytes), expected, 1.0e3) << tp;
    EXPECT_NEAR(static_cast<double>(b.ranks[0].activation_peak_bytes) / kGiB, 1.26, 0.01) << tp;
  }
}

TEST(V0Profile, CachedActivationsCountAsNonTorchOnlyInPr10511sBuild) {
  // dev-003 (PR #10511's pre-merge build, Meta-Llama-3-8B, TP=1, 80 GB card):
  // "non_torch_memory 1.79GiB", "available_kv_cache_memory 53.29GiB" out of 71.29 GiB. Device
  // use minus torch-allocated bytes after the profile run keeps the freed 1.26 GiB of
  // activations: 0.35 GiB of workspaces (375,390,208 B) + the 1.261 GiB peak = 1.61 GiB; the
  // remaining 0.18 GiB (allocator rounding, loading leftovers) is not modelled. KV: 71.29 -
  // 14.96 - 1.26 - 1.61 = 53.46 GiB. No release row sets the flag (the 0.6.5 wheel empties the
  // cache before measuring); a profile describing that build does.
  GpuSpec gpu = vramplan_test::h100();
  gpu.total_memory_bytes = static_cast<std::int64_t>(79.22 * kGiB);
  for (const char* version : {"0.6.4", "0.6.5", "0.6.6"}) {
    EXPECT_FALSE(engine_profile(version).non_torch_counts_cached_activations) << version;
  }
  EngineProfile build = engine_profile("0.6.4");
  build.non_torch_counts_cached_activations = true;
  const Breakdown pr10511 = v0_launch(gpu, 1, 8192, "0.6.4", build);
  const RankBreakdown& r = pr10511.ranks[0];
  EXPECT_EQ(r.non_torch_bytes, 375390208 + r.activation_peak_bytes);
  EXPECT_NEAR(static_cast<double>(r.non_torch_bytes) / kGiB, 1.79, 0.2);
  EXPECT_NEAR(static_cast<double>(r.kv_cache_bytes) / kGiB, 53.29, 0.2);
  // The releases (dev-001's 0.6.4: non_torch_memory=0.35GiB) count the activations once.
  const Breakdown v064 = v0_launch(gpu, 1, 8192, "0.6.4");
  EXPECT_EQ(v064.ranks[0].non_torch_bytes, 375390208);
  EXPECT_EQ(v064.ranks[0].kv_cache_bytes - r.kv_cache_bytes, r.activation_peak_bytes);
  // 0.7.0 measures against memory_reserved() (PR #11809), and every V0 log from 0.7 on shows
  // 0.02-0.11 GiB (pub-314's 0.11 GiB, rounded up: 113 MiB = 118,489,088 B), so the KV gains
  // the activations and the 0.35 - 0.11 GiB of 0.6's workspaces.
  const Breakdown v070 = v0_launch(gpu, 1, 8192, "0.7.0");
  EXPECT_EQ(v070.ranks[0].non_torch_bytes, 118489088);
  EXPECT_EQ(v070.ranks[0].kv_cache_bytes - r.kv_cache_bytes,
            r.activation_peak_bytes + (375390208 - 118489088));
}
