// The CUDA-graph pool's FlashAttention 3 split accumulators and the models that set their own
// capture list. Each expectation is derived by hand in its comment from vLLM's code
// (v1/attention/backends/flash_attn.py, model_executor/models/config.py) and checked against
// the first FULL capture the 0.19 logs print ("Estimated FULL CUDA graph memory: X MiB
// first-capture", tests/data/measured/dev.jsonl records), not read back from the planner.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "test_support.hpp"
#include "vramplan/engine.hpp"
#include "vramplan/spec_db.hpp"

using namespace vramplan;

namespace {

const SpecDatabase& database() { return vramplan_test::shipped_database(); }

constexpr std::int64_t kMiB = std::int64_t{1} << 20;

Breakdown run(const char* model, const char* gpu, const char* version, std::int32_t tp,
              const std::string& dtype = "auto") {
  HardwareConfig hardware;
  hardware.gpu = database().gpu(gpu);
  hardware.num_gpus = tp;
  EngineConfig config;
  config.engine_version = version;
  config.tensor_parallel_size = tp;
  config.max_num_seqs = 256;  // the same capture sizes on every GPU
  config.max_model_len = 8192;
  config.dtype = dtype;
  return compute_breakdown(database().model(model), hardware, config);
}

// The pool on the H100 (FA3) minus the same launch on the A100 (FA2, no split bound): the
// accumulators alone, as both capture the same sizes.
std::int64_t accumulators(const char* model, const char* version, std::int32_t tp,
                          const std::string& dtype = "auto") {
  const Breakdown hopper = run(model, "H100-80GB", version, tp, dtype);
  const Breakdown ampere = run(model, "A100-80GB", version, tp, dtype);
  EXPECT_EQ(hopper.config.num_cudagraph_sizes, ampere.config.num_cudagraph_sizes);
  return hopper.ranks.front().cudagraph_bytes - ampere.ranks.front().cudagraph_bytes;
}

}  // namespace

TEST(CudagraphPool, Fa3SplitAccumulatorsFollowHeadsPerRank) {
  // Llama-3.1-8B: 32 splits x 32/TP heads x (128 + 1) x 4 B x 512 tokens of the largest graph.
  // The 0.19 logs' first FULL capture: 260, 132, 70 MiB at TP=1/2/4 (dev-021/025/026).
  EXPECT_EQ(accumulators("meta-llama/Llama-3.1-8B-Instruct", "0.19.0", 1), 270532608);  // 258 MiB
  EXPECT_EQ(accumulators("meta-llama/Llama-3.1-8B-Instruct", "0.19.0", 2), 135266304);
  EXPECT_EQ(accumulators("meta-llama/Llama-3.1-8B-Instruct", "0.19.0", 4), 67633152);
  // Qwen2.5-7B, 28 heads: 32 x 28 x 129 x 4 x 512 = 236,716,032 B = 225.75 MiB (log: 228).
  EXPECT_EQ(accumulators("Qwen/Qwen2.5-7B-Instruct", "0.19.0", 1), 236716032);
  // DeepSeek-V2-Lite decodes over its 512-wide latent: 32 x 16 x 513 x 4 x 512 = 537,919,488 B
  // = 513 MiB (log: 522).
  EXPECT_EQ(accumulators("deepseek-ai/DeepSeek-V2-Lite-Chat", "0.19.0", 1), 537919488);
  // gemma-2-9b-it, 16 heads of 256: 32 x 16 x 257 x 4 x 512 = 269,484,032 B (log: 262 MiB).
  EXPECT_EQ(accumulators("google/gemma-2-9b-it", "0.19.0", 1), 269484032);
  EXPECT_NEAR(static_cast<double>(269484032) / kMiB, 262.0, 6.0);
}

TEST(CudagraphPool, NoAccumulatorsWithoutFullGraphsOnFa3) {
  // 0.10 captures PIECEWISE graphs only: nothing before 0.11.
  EXPECT_EQ(accumulators("meta-llama/Llama-3.1-8B-Instruct", "0.10.1", 1), 0);
  EXPECT_GT(accumulators("meta-llama/Llama-3.1-8B-Instruct", "0.11.0", 1), 0);
  // fp32 takes the Triton backend (dev-018's first FULL capture: 4 MiB).
  EXPECT_EQ(accumulators("meta-llama/Llama-3.1-8B-Instruct", "0.19.0", 1, "float32"), 0);
  // gemma3 is a prefix LM from 0.13: Triton (dev-013: 4 MiB); 0.12 still runs FA3, 16 heads of
  // 256 as gemma-2.
  EXPECT_EQ(accumulators("google/gemma-3-12b-it", "0.19.0", 1), 0);
  EXPECT_EQ(accumulators("google/gemma-3-12b-it", "0.12.0", 1), 269484032);
  // Attention sinks (gpt-oss: 6-8 MiB, dev-032/033) and chunked local attention (Llama-4 Scout
  // captures PIECEWISE only, dev-029).
  EXPECT_EQ(accumulators("openai/gpt-oss-20b", "0.19.0", 1), 0);
  EXPECT_EQ(accumulators("meta-llama/Llama-4-Scout-17B-16E-Instruct", "0.19.0", 8), 0);
}

TEST(CudagraphPool, GptOssCapturesUpTo1024WhateverMaxNumSeqs) {
  // GptOssForCausalLMConfig: 1, 2, 4, 8..248 step 8 (31), 256..1024 step 16 (49) = 83 sizes,
  // as dev-032's "PIECEWISE=83 (largest=1024)", also at max_num_seqs 256 (others: 2 x 256).
  const Breakdown oss = run("openai/gpt-oss-20b", "H100-80GB", "0.19.0", 1);
  EXPECT_EQ(oss.config.num_cudagraph_sizes, 83);
  EXPECT_EQ(oss.config.max_cudagraph_capture_size, 1024);
  const Breakdown llama = run("meta-llama/Llama-3.1-8B-Instruct", "H100-80GB", "0.19.0", 1);
  EXPECT_EQ(llama.config.num_cudagraph_sizes, 51);
  EXPECT_EQ(llama.config.max_cudagraph_capture_size, 512);
  // Before 0.10.1 gpt-oss is not special (0.10.0's ladder: 1, 2, 4, 8..512 step 8 = 67).
  EXPECT_EQ(run("openai/gpt-oss-20b", "H100-80GB", "0.10.0", 1).config.num_cudagraph_sizes, 67);
}
