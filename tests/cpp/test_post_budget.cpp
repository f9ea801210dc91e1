// Failures outside gpu_memory_utilization: CUDA-graph profiling's minimal KV cache (>= 0.21),
// graph capture and the sampler warm-up after the KV allocation; the solver avoids each.
#include <gtest/gtest.h>

#include <string>

#include "test_support.hpp"
#include "vramplan/compiled.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/solver.hpp"
#include "vramplan/spec_db.hpp"

using namespace vramplan;

namespace {

// The case, reconstructed: a Qwen3.6-27B-class hybrid (Qwen3.5-27B's config: 48 Gated
// DeltaNet + 16 full-attention layers, 1 MTP layer) as AWQ int4, MTP with 2 speculative
// tokens, fp8 KV, --max-model-len 16384, --gpu-memory-utilization 0.8, on a 32 GB RTX 5090.
struct HybridCase {
  ModelSpec spec;
  HardwareConfig hardware;
  EngineConfig config;
};

HybridCase hybrid_case() {
  HybridCase c;
  c.spec = load_hf_config(std::string(VRAMPLAN_TEST_DATA_DIR) + "/configs/Qwen__Qwen3.5-27B.json");
  c.spec.quantization.method = QuantMethod::Awq;
  c.spec.quantization.bits = 4;
  c.spec.quantization.group_size = 128;
  c.spec.quantization.sym = false;
  const SpecDatabase db = SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  c.hardware.gpu = db.gpu("RTX-5090");
  c.config.engine_version = "0.21.0";
  c.config.kv_cache_dtype = "fp8";
  c.config.max_model_len = 16384;
  c.config.gpu_memory_utilization = 0.8;
  c.config.num_speculative_tokens = 2;
  return c;
}

}  // namespace

TEST(PostBudget, HybridMinimalKvCacheForGraphProfilingDoesNotFit) {
  const HybridCase c = hybrid_case();
  const Breakdown b = compute_breakdown(c.spec, c.hardware, c.config);
  // By hand. GDN state per layer: conv (2 x 16 x 128 + 48 x 128) = 10240 channels x (kernel
  // 4 - 1 + 2 speculative) x 2 B (bf16) = 102,400 B; recurrent 48 x 128 x 128 x 4 B = 3,145,728 B
  // (float32: the config's mamba_ssm_dtype); 3,248,128 B in all. Full attention at fp8: 4 KV
  // heads x (256 + 256) x 1 B = 2,048 B per token. The block grows to hold a state: 16 x
  // ceil(3,248,128 / (16 x 2,048)) = 1600 tokens; page 1600 x 2,048 = 3,276,800 B. Groups: 16 + 1
  // MTP full-attention layers and 48 GDN layers -> group size 17. Capture sizes: min(256 seqs x
  // (1 + 2) x 2, 512, 2048 tokens) = 512 -> the minimal cache is 512 blocks x 3,276,800 B x 17 =
  // 28,521,267,200 B (test_hybrid_state_dtypes.cpp checks these against seed 002's log).
  const RankBreakdown& r = b.ranks.front();
  EXPECT_EQ(r.kv_layout.block_size, 1600);
  EXPECT_EQ(r.kv_layout.page_bytes, 3276800);
  EXPECT_EQ(r.kv_layout.group_size, 17);
  EXPECT_EQ(b.config.max_cudagraph_capture_size, 512);
  const std::int64_t minimal_kv = 28521267200;
  EXPECT_EQ(std::int64_t{512} * r.kv_layout.page_bytes * r.kv_layout.group_size, minimal_kv);
  EXPECT_GT(r.weights_bytes + r.non_torch_bytes + minimal_kv + r.cudagraph_bytes,
            b.startup_free_bytes);
  ASSERT_EQ(b.outcome, Outcome::CudagraphProfilingOom) << outcome_name(b.outcome);
  EXPECT_NE(b.messages.front().find("512 blocks of 1600 tokens"), std::string::npos)
      << b.messages.front();
  // Before the budget: a lower utilization does not help ...
  EngineConfig lower = c.config;
  lower.gpu_memory_utilization = 0.5;
  EXPECT_EQ(compute_breakdown(c.spec, c.hardware, lower).outcome, Outcome::CudagraphProfilingOom);
  // ... fewer sequences (fewer capture sizes, fewer minimal blocks) or eager mode do.
  EngineConfig eager = c.config;
  eager.enforce_eager = true;
  EXPECT_NE(compute_breakdown(c.spec, c.hardware, eager).outcome, Outcome::CudagraphProfilingOom);
  // 0.19 profiles no graph memory before the budget: the same launch meets no such check.
  EngineConfig older = c.config;
  older.engine_version = "0.19.0";
  EXPECT_NE(compute_breakdown(c.spec, c.hardware, older).outcome, Outcome::CudagraphProfilingOom);
}

TEST(PostBudget, SolverAvoidsGraphProfilingOomAndItsFlagsStart) {
  const HybridCase c = hybrid_case();
  SolveRequest request;
  request.pinned = c.config;
  request.pinned.gpu_memory_utilization.reset();
  request.pinned.max_model_len.reset();
  request.hardware = c.hardware;
  request.target_context_tokens = 16384;
  const Plan plan = solve(c.spec, request);
  ASSERT_TRUE(plan.fits) << plan.verdict;
  EXPECT_LT(plan.max_num_seqs, 256);  // fewer sequences: fewer capture sizes and blocks
  // The printed flags, replayed, start.
  EXPECT_EQ(compute_breakdown(c.spec, c.hardware, plan.config).outcome, Outcome::Started);

  // With the sequences pinned at the default the solver cannot lower them: eager mode is
  // offered, with its full flag line, and it starts.
  request.pinned.max_num_seqs = 256;
  const Plan pinned = solve(c.spec, request);
  EXPECT_FALSE(pinned.fits);
  bool offered = false;
  for (const Remedy& remedy : pinned.remedies) {
    if (remedy.kind != "enforce_eager") continue;
    offered = true;
    EXPECT_TRUE(remedy.fits) << remedy.detail;
    EXPECT_NE(remedy.flags.find("--enforce-eager"), std::string::npos);
  }
  EXPECT_TRUE(offered);
}
