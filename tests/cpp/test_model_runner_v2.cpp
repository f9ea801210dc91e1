// Model Runner V2 (vLLM 0.22+, shared/reference/vllm-0.27-0.33.md, read from the released
// wheels): which runner a launch uses, the 0.27 budget formula with MRV2's sampler state, and
// MRV2's graph estimate from 0.29. Each expectation is derived by hand in its comment from
// vLLM's rule, not read back from the planner.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>

#include "test_support.hpp"
#include "vramplan/compiled.hpp"
#include "vramplan/engine.hpp"
#include "vramplan/spec_db.hpp"

using namespace vramplan;

namespace {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;

using Launch = vramplan_test::ReleaseLaunch;

Launch launch(const char* model, const char* gpu, const char* version) {
  return vramplan_test::release_launch(model, gpu, version);
}

Breakdown breakdown(const Launch& l) { return vramplan_test::breakdown_of(l); }

bool runs_v2(const Launch& l) {
  return CompiledLaunch(l.spec, l.hardware, l.config).model_runner_v2();
}

// Llama-3.1-8B's graph pool at 51 capture sizes on one H100 rank (engines.yaml
// cudagraph_pool_mib, fitted on 0.19): 107 MiB + 51 x 32 layers x 0.36 MiB = 694.52 MiB, plus
// FA3's split accumulators for the largest FULL graph, 32 splits x 32 heads x (128 + 1) x 4 B x
// 512 tokens = 270,532,608 B = 258 MiB (the 0.19 logs: 260 MiB first FULL capture): 952.52 MiB.
constexpr double kLlamaGraphMiB = 107.0 + 51.0 * 32.0 * 0.36 + 258.0;

}  // namespace

TEST(ModelRunnerV2, RoutingAt026DenseOnMrv2GraphsOutsideTheBudget) {
  // 0.26 (_is_default_v2_model_runner_model): Llama-3.1-8B is dense, not hybrid, not MoE ->
  // Model Runner V2, whose profile_cudagraph_memory returns 0 before 0.29: the graphs are
  // captured after the KV allocation, outside the budget. Qwen3-30B-A3B is MoE and not on the
  // whitelist -> the V1 runner, graphs estimated inside the budget as since 0.21.
  const Launch llama = launch("meta-llama/Llama-3.1-8B-Instruct", "H100-80GB", "0.26.0");
  const Launch qwen_moe = launch("Qwen/Qwen3-30B-A3B", "H100-80GB", "0.26.0");
  EXPECT_TRUE(runs_v2(llama));
  EXPECT_FALSE(runs_v2(qwen_moe));
  const Breakdown mrv2 = breakdown(llama);
  EXPECT_FALSE(mrv2.profile().cudagraph_in_budget);
  EXPECT_TRUE(breakdown(qwen_moe).profile().cudagraph_in_budget);
  // The same Llama launch forced onto the V1 runner (VLLM_USE_V2_MODEL_RUNNER=0) has the graphs
  // inside: its KV cache is smaller by exactly the graph pool.
  Launch v1 = llama;
  v1.config.vllm_use_v2_model_runner = "0";
  EXPECT_FALSE(runs_v2(v1));
  const Breakdown forced = breakdown(v1);
  const RankBreakdown& a = mrv2.ranks.front();
  const RankBreakdown& b = forced.ranks.front();
  EXPECT_NEAR(static_cast<double>(a.cudagraph_bytes), kLlamaGraphMiB * kMiB, 2.0);
  EXPECT_EQ(a.kv_cache_bytes - b.kv_cache_bytes, a.cudagraph_bytes);
  // 0.22: only unquantized Qwen3ForCausalLM defaults to MRV2; Llama stays on V1.
  EXPECT_FALSE(runs_v2(launch("meta-llama/Llama-3.1-8B-Instruct", "H100-80GB", "0.22.0")));
  EXPECT_TRUE(runs_v2(launch("Qwen/Qwen3-8B", "H100-80GB", "0.22.0")));
  EXPECT_FALSE(runs_v2(launch("Qwen/Qwen3-32B-FP8", "H100-80GB", "0.22.0")));
  // Hybrids keep V1 at 0.26-0.28, MRV2 from 0.29 (every model).
  EXPECT_FALSE(runs_v2(launch("Qwen/Qwen3-Next-80B-A3B-Thinking", "H200", "0.28.0")));
  EXPECT_TRUE(runs_v2(launch("Qwen/Qwen3-Next-80B-A3B-Thinking", "H200", "0.29.0")));
  EXPECT_TRUE(runs_v2(launch("Qwen/Qwen3-30B-A3B", "H100-80GB", "0.29.0")));
}

TEST(ModelRunnerV2, SamplerStateAndTheConsumedFormula) {
  // MRV2's PenaltiesState: output_bin_counts int32 [max_num_seqs, vocab] + prompt_bin_mask int32
  // [max_num_seqs, ceil(vocab / 32)]. Llama-3.1-8B on H100: 1024 sequences, vocab 128,256:
  // 1024 x (128,256 + 4,008) x 4 B = 541,753,344 B (0.50 GiB).
  const Launch at026 = launch("meta-llama/Llama-3.1-8B-Instruct", "H100-80GB", "0.26.0");
  const Launch at027 = launch("meta-llama/Llama-3.1-8B-Instruct", "H100-80GB", "0.27.0");
  const Breakdown before = breakdown(at026);
  const Breakdown after = breakdown(at027);
  ASSERT_EQ(before.config.max_num_seqs, 1024);
  EXPECT_EQ(before.ranks.front().persistent_buffers_bytes, 541753344);
  EXPECT_EQ(after.ranks.front().persistent_buffers_bytes, 541753344);
  // 0.26: held but counted nowhere (it comes out of the post-allocation headroom); 0.27 counts
  // free-memory consumed since the init snapshot, so the KV cache is that much smaller.
  EXPECT_EQ(before.ranks.front().kv_cache_bytes - after.ranks.front().kv_cache_bytes, 541753344);
  EXPECT_EQ(after.ranks.front().post_allocation_bytes - before.ranks.front().post_allocation_bytes,
            -541753344);
  // On the V1 runner nothing of the kind is made.
  Launch v1 = at027;
  v1.config.vllm_use_v2_model_runner = "0";
  EXPECT_EQ(breakdown(v1).ranks.front().persistent_buffers_bytes, 0);
}

TEST(ModelRunnerV2, Mrv2GraphEstimateFrom029) {
  // 0.29: MRV2 implements profile_cudagraph_memory; the estimate (the calibrated pool,
  // 931.43 MiB at 51 sizes) is charged inside the budget, so 0.29's KV cache is 0.28's less the
  // pool. Its minimal KV cache is min(max_num_seqs 1024, 512) = 512 blocks.
  const Launch at028 = launch("meta-llama/Llama-3.1-8B-Instruct", "H100-80GB", "0.28.0");
  const Launch at029 = launch("meta-llama/Llama-3.1-8B-Instruct", "H100-80GB", "0.29.0");
  const Breakdown b28 = breakdown(at028);
  const Breakdown b29 = breakdown(at029);
  EXPECT_FALSE(b28.profile().cudagraph_in_budget);
  EXPECT_TRUE(b29.profile().cudagraph_in_budget);
  EXPECT_NEAR(static_cast<double>(b29.ranks.front().cudagraph_bytes), kLlamaGraphMiB * kMiB, 2.0);
  EXPECT_EQ(b28.ranks.front().kv_cache_bytes - b29.ranks.front().kv_cache_bytes,
            b29.ranks.front().cudagraph_bytes);
  const CompiledLaunch compiled(at029.spec, at029.hardware, at029.config);
  EXPECT_EQ(compiled.graph_profiling_blocks(compiled.resolve(launch_knobs(at029.config))), 512);
  // 256 sequences: min(256, 512) = 256 blocks (0.27+); 0.26 took the largest capture size.
  Launch fewer = at029;
  fewer.config.max_num_seqs = 256;
  const CompiledLaunch c256(fewer.spec, fewer.hardware, fewer.config);
  EXPECT_EQ(c256.graph_profiling_blocks(c256.resolve(launch_knobs(fewer.config))), 256);
  fewer.config.engine_version = "0.21.0";
  const CompiledLaunch c021(fewer.spec, fewer.hardware, fewer.config);
  EXPECT_EQ(c021.graph_profiling_blocks(c021.resolve(launch_knobs(fewer.config))), 512);
}

TEST(ModelRunnerV2, SpeculativeMethodsThatKeepV1) {
  // ngram keeps the V1 runner in 0.27-0.32 (_get_v2_model_runner_unsupported_features) and runs
  // on MRV2 in 0.33, whose list has only suffix / custom_class left.
  Launch l = launch("meta-llama/Llama-3.1-8B-Instruct", "H100-80GB", "0.29.0");
  l.config.num_speculative_tokens = 3;
  l.config.speculative_method = "ngram";
  EXPECT_FALSE(runs_v2(l));
  l.config.engine_version = "0.33.0";
  EXPECT_TRUE(runs_v2(l));
  l.config.speculative_method = "suffix";
  EXPECT_FALSE(runs_v2(l));
  l.config.vllm_use_v2_model_runner = "1";  // the environment variable wins
  EXPECT_TRUE(runs_v2(l));
}
