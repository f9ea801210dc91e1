// Batch defaults and CUDA-graph capture sizes by release (vLLM 0.27+,
// shared/reference/vllm-0.27-0.33.md, read from the released wheels): the >= 160 GiB tier, the
// Blackwell capture ceiling, the speculative and off-ladder capture sizes, and the releases
// that change no default launch. Each expectation is derived by hand in its comment from
// vLLM's rule, not read back from the planner.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "test_support.hpp"
#include "vramplan/compiled.hpp"
#include "vramplan/engine.hpp"
#include "vramplan/spec_db.hpp"

using namespace vramplan;

namespace {

using Launch = vramplan_test::ReleaseLaunch;

Launch launch(const char* model, const char* gpu, const char* version) {
  return vramplan_test::release_launch(model, gpu, version);
}

Breakdown breakdown(const Launch& l) { return vramplan_test::breakdown_of(l); }

}  // namespace

TEST(CaptureSizesByRelease, TiersFrom028AndGb10From033) {
  // get_batch_defaults 0.28: >= 160 GiB -> 16384 tokens for `vllm serve` too. B200 (178.35 GiB)
  // and MI300X (191.98 GiB): 8192 at 0.27, 16384 at 0.28; H200 (139.72 GiB) stays 8192.
  for (const char* gpu : {"B200", "MI300X"}) {
    SCOPED_TRACE(gpu);
    EXPECT_EQ(breakdown(launch("meta-llama/Llama-3.1-8B-Instruct", gpu, "0.27.0"))
                  .config.max_num_batched_tokens,
              8192);
    const Breakdown b = breakdown(launch("meta-llama/Llama-3.1-8B-Instruct", gpu, "0.28.0"));
    EXPECT_EQ(b.config.max_num_batched_tokens, 16384);
    EXPECT_EQ(b.config.max_num_seqs, 1024);
  }
  EXPECT_EQ(breakdown(launch("meta-llama/Llama-3.1-8B-Instruct", "H200", "0.28.0"))
                .config.max_num_batched_tokens,
            8192);
  // 0.33: GB10 (DGX Spark, 119.7 GiB unified) is kept on the small tier: 256 sequences.
  GpuSpec gb10;
  gb10.id = "GB10";
  gb10.name = "NVIDIA GB10";
  gb10.total_memory_bytes = std::int64_t{119} << 30;
  EXPECT_TRUE(uses_large_batch_defaults(engine_profile("0.32.0"), gb10));
  EXPECT_FALSE(uses_large_batch_defaults(engine_profile("0.33.0"), gb10));
}

TEST(CaptureSizesByRelease, CaptureSizes) {
  // 0.28, data-centre Blackwell: ceiling 1024. B200 at 0.28 with 1024 sequences and 16384
  // tokens: min(2 x 1024, 1024, 16384) = 1024 -> 1, 2, 4 (3) + 8..248 (31) + 256..1024 step 16
  // (49) = 83 sizes; at 0.27 the ceiling is 512: 3 + 31 + 17 = 51.
  const Breakdown b27 = breakdown(launch("meta-llama/Llama-3.1-8B-Instruct", "B200", "0.27.0"));
  const Breakdown b28 = breakdown(launch("meta-llama/Llama-3.1-8B-Instruct", "B200", "0.28.0"));
  EXPECT_EQ(b27.config.num_cudagraph_sizes, 51);
  EXPECT_EQ(b28.config.num_cudagraph_sizes, 83);
  EXPECT_EQ(b28.config.max_cudagraph_capture_size, 1024);
  // Hopper keeps 512.
  EXPECT_EQ(breakdown(launch("meta-llama/Llama-3.1-8B-Instruct", "H100-80GB", "0.28.0"))
                .config.max_cudagraph_capture_size,
            512);
  // 0.29, speculation: the ladder cut at min(2 x 10 x 3, 512, 8192) = 60 gives 1, 2, 4, 8..56
  // (10 sizes); the request grid n x 3 for n in 1, 2, 4, 8 and max 10 adds 3, 6, 12, 30 (24 is
  // on the ladder): 14. Before 0.29: 10.
  EXPECT_EQ(cudagraph_capture_sizes(engine_profile("0.28.0"), 10, 8192, 2).count, 10);
  const CaptureSizes grid = cudagraph_capture_sizes(engine_profile("0.29.0"), 10, 8192, 2);
  EXPECT_EQ(grid.count, 14);
  EXPECT_EQ(grid.largest, 56);
  // 0.31, no speculation: max_num_seqs itself when off the ladder. 300 sequences, 8192 tokens:
  // ladder to 512 (51 sizes) + 300 (not 256 + 16k) = 52; 100 sequences: ladder to 200 (3 + 25
  // = 28) + 100 = 29; 256 is on the ladder: 51.
  const EngineProfile v030 = engine_profile("0.30.0");
  const EngineProfile v031 = engine_profile("0.31.0");
  EXPECT_EQ(cudagraph_capture_sizes(v030, 300, 8192, 0).count, 51);
  EXPECT_EQ(cudagraph_capture_sizes(v031, 300, 8192, 0).count, 52);
  EXPECT_EQ(cudagraph_capture_sizes(v031, 100, 8192, 0).count, 29);
  EXPECT_EQ(cudagraph_capture_sizes(v031, 256, 8192, 0).count, 51);
  // ... and not when max_num_batched_tokens is below it (300 > 256 tokens).
  EXPECT_EQ(cudagraph_capture_sizes(v031, 300, 256, 0).count, 3 + 31 + 1);
}

TEST(CaptureSizesByRelease, CompiledLadderAnswersAsTheWalk) {
  // The table a launch compiles (entry L: the ladder sizes <= L) gives the hand-derived counts
  // above, and the walk's answer at every limit, sequence count and speculation depth tried.
  const EngineProfile v031 = engine_profile("0.31.0");
  const std::vector<CaptureSizes> table31 = capture_ladder_prefix(v031);
  ASSERT_EQ(table31.size(), 513U);  // 0..512, the 0.31 ceiling on Hopper
  EXPECT_EQ(table31[512].count, 51);
  EXPECT_EQ(table31[200].count, 3 + 25);  // 1, 2, 4, 8..200
  EXPECT_EQ(table31[200].largest, 200);
  EXPECT_EQ(table31[207].largest, 200);  // off the ladder
  EXPECT_EQ(cudagraph_capture_sizes(v031, 300, 8192, 0, &table31).count, 52);
  EXPECT_EQ(cudagraph_capture_sizes(v031, 256, 8192, 0, &table31).count, 51);
  for (const char* version : {"0.27.0", "0.28.0", "0.29.0", "0.31.0", "0.33.0"}) {
    SCOPED_TRACE(version);
    const EngineProfile profile = engine_profile(version);
    const std::vector<CaptureSizes> table = capture_ladder_prefix(profile);
    for (std::int64_t seqs : {1, 3, 8, 10, 100, 255, 256, 300, 511, 512, 1024}) {
      for (std::int64_t tokens : {1, 64, 256, 2048, 8192}) {
        for (std::int32_t speculative : {0, 1, 2, 5}) {
          const CaptureSizes walked = cudagraph_capture_sizes(profile, seqs, tokens, speculative);
          const CaptureSizes tabled =
              cudagraph_capture_sizes(profile, seqs, tokens, speculative, &table);
          EXPECT_EQ(walked.count, tabled.count) << seqs << " " << tokens << " " << speculative;
          EXPECT_EQ(walked.largest, tabled.largest) << seqs << " " << tokens << " " << speculative;
        }
      }
    }
  }
}

TEST(CaptureSizesByRelease, ReleasesThatMoveNothing) {
  // 0.30 (MRV2 kernel warm-up moved before capture: still after the KV allocation) and 0.32
  // (opt-in sequence parallelism removed) change no default launch: the same bytes as the
  // release before, here for Llama-3.1-8B with 300 sequences on an H100.
  for (const auto& [before, after] : {std::pair{"0.29.0", "0.30.0"}, {"0.31.0", "0.32.0"}}) {
    SCOPED_TRACE(after);
    Launch a = launch("meta-llama/Llama-3.1-8B-Instruct", "H100-80GB", before);
    Launch b = launch("meta-llama/Llama-3.1-8B-Instruct", "H100-80GB", after);
    a.config.max_num_seqs = 300;
    b.config.max_num_seqs = 300;
    const Breakdown x = breakdown(a);
    const Breakdown y = breakdown(b);
    EXPECT_EQ(x.ranks.front().kv_cache_bytes, y.ranks.front().kv_cache_bytes);
    EXPECT_EQ(x.config.num_cudagraph_sizes, y.config.num_cudagraph_sizes);
    EXPECT_EQ(x.kv_tokens, y.kv_tokens);
  }
  // ... while 0.31 itself captures the off-ladder 300 (fact 36): one size more than 0.30.
  Launch at030 = launch("meta-llama/Llama-3.1-8B-Instruct", "H100-80GB", "0.30.0");
  Launch at031 = launch("meta-llama/Llama-3.1-8B-Instruct", "H100-80GB", "0.31.0");
  at030.config.max_num_seqs = 300;
  at031.config.max_num_seqs = 300;
  EXPECT_EQ(breakdown(at031).config.num_cudagraph_sizes,
            breakdown(at030).config.num_cudagraph_sizes + 1);
}
