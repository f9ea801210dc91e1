// The expert-parallel all-to-all under data parallelism: the activations the naive /
// allgather_reducescatter dispatch adds to the profile run, and the DeepEP buffers made after
// load. Every expected value is derived by hand below from the model's config.json numbers, the
// tensor shapes in vLLM's FusedMoE.forward_impl / fused_experts_impl, and DeepEP's
// get_low_latency_rdma_size_hint (csrc/config.hpp).
#include <gtest/gtest.h>

#include <string_view>

#include "test_support.hpp"
#include "vramplan/engine.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/knobs.hpp"
#include "vramplan/spec_db.hpp"

using namespace vramplan;

namespace {

const SpecDatabase& database() {
  static const SpecDatabase db = SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  return db;
}

// Qwen3-30B-A3B (bf16): hidden 2048, 48 layers all MoE, 128 experts, top-8, moe_intermediate
// 768. On an H100 vLLM serves 8192 batched tokens per step (0.8 and later).
Breakdown qwen(std::int32_t dp, const std::string& version, const std::string& backend = "",
               bool expert_parallel = true) {
  HardwareConfig hw;
  hw.gpu = vramplan_test::h100();
  hw.num_gpus = 8;
  EngineConfig c;
  c.engine_version = version;
  c.data_parallel_size = dp;
  c.enable_expert_parallel = expert_parallel;
  c.all2all_backend = backend;
  c.max_model_len = 8192;
  return compute_breakdown(database().model("Qwen/Qwen3-30B-A3B"), hw, c);
}

std::int64_t term(const RankBreakdown& rank, std::string_view name) {
  for (const Term& t : rank.terms) {
    if (t.name == name) return t.bytes;
  }
  ADD_FAILURE() << "no term " << name;
  return -1;
}

bool has_term(const RankBreakdown& rank, std::string_view name) {
  for (const Term& t : rank.terms) {
    if (t.name == name) return true;
  }
  return false;
}

}  // namespace

// allgather_reducescatter (0.19's default) at DP=8: every MoE layer runs on 8 x 8192 = 65,536
// gathered tokens. Per local token (T = 8192):
//   gathered hidden + router logits: 8 x (2048 + 128) x 2 B          = 34,816 B
//   expert output for 7 more replicas: 7 x 2048 x 2 B                 = 28,672 B
//                                                                       63,488 B x 8192 =
//                                                                       520,093,696
//   fused-MoE workspace per token: 8 x (3 x 768 + 2048) x 2 B = 69,632 B (cache1 [M, 8, 1536],
//   cache2 [8M, 768], cache3 [M, 8, 2048]); unchunked since vllm#34086 it grows by
//   (65,536 - 8,192) x 69,632 = 3,992,977,408
//   total 4,513,071,104 B = 4.20 GiB.
TEST(ExpertParallel, AllgatherDispatchGrowsTheMoeActivation) {
  const Breakdown one = qwen(1, "0.19.0");
  const Breakdown eight = qwen(8, "0.19.0");
  const RankBreakdown& r = eight.ranks[0];
  EXPECT_EQ(term(r, "all2all_dispatch"), 4513071104);
  // The rest of the activation peak is the one-replica launch's.
  EXPECT_EQ(term(r, "activation_peak"), one.ranks[0].activation_peak_bytes);
  EXPECT_EQ(r.activation_peak_bytes, one.ranks[0].activation_peak_bytes + 4513071104);
  // No persistent buffer with the gathering backends.
  EXPECT_EQ(term(r, "all2all_buffers"), 0);
  EXPECT_EQ(r.non_torch_bytes, one.ranks[0].non_torch_bytes);
  // The KV budget pays it, against the experts EP spreads over 8 ranks.
  EXPECT_EQ(r.kv_cache_bytes - one.ranks[0].kv_cache_bytes,
            one.ranks[0].weights_bytes - r.weights_bytes - 4513071104);
  // One replica exchanges nothing: no all-to-all terms.
  EXPECT_FALSE(has_term(one.ranks[0], "all2all_dispatch"));
}

// Before vllm#34086 the fused-MoE kernel ran at most VLLM_FUSED_MOE_CHUNK_SIZE = 32768 tokens at
// once: the workspace grows by (32,768 - 8,192) x 69,632 = 1,711,276,032; with the gathered
// tensors (520,093,696) 2,231,369,728 B. 0.10 defaults to the naive backend, whose gathered
// shapes are the same as allgather_reducescatter's.
TEST(ExpertParallel, ChunkedFusedMoeCapsTheWorkspace) {
  EXPECT_EQ(term(qwen(8, "0.11.0").ranks[0], "all2all_dispatch"), 2231369728);
  EXPECT_EQ(term(qwen(8, "0.10.1").ranks[0], "all2all_dispatch"), 2231369728);
  // Two replicas gather 16,384 tokens, under the chunk:
  //   8192 x (2 x 2176 x 2 + 1 x 2048 x 2) + 8192 x 69,632 = 8192 x 82,432 = 675,282,944.
  EXPECT_EQ(term(qwen(2, "0.11.0").ranks[0], "all2all_dispatch"), 675282944);
  // Without expert parallelism the DP dispatch still gathers (dp_size > 1 is the condition),
  // and each expert is split over the 2 ranks (TP flattened across DP): moe_intermediate 384,
  // workspace 8 x (3 x 384 + 2048) x 2 B = 51,200 B per token:
  //   8192 x 12,800 (gathered rows, as above) + (16,384 - 8,192) x 51,200 = 524,288,000.
  EXPECT_EQ(term(qwen(2, "0.11.0", "", false).ranks[0], "all2all_dispatch"), 524288000);
}

// DeepEP low latency for Qwen3-30B-A3B (hidden 2048, 128 experts), 256 tokens per rank
// (VLLM_MOE_DP_CHUNK_SIZE): 16 scales; dispatch message 16 + max(4096, 2048 + 64) = 4112 B;
// combine message 16 x 4 + 4096 = 4160 B.
//   send    max(256 x 4112, 128 x 256 x 4160) = 136,314,880, twice   = 272,629,760
//   receive 128 x 256 x max(4112, 4160)       = 136,314,880, twice   = 272,629,760
//   signal  128 x 4 = 512 (128-aligned), twice                       =       1,024
//   total 545,260,544; the hint rounds past the next 128 B:            545,260,672
// plus the NVLink buffer (VLLM_DEEPEP_BUFFER_SIZE_MB = 1024 MiB) and DeepEP's 32 MiB workspace:
// 1,073,741,824 + 33,554,432 + 545,260,672 = 1,652,556,928 B of non-torch memory.
TEST(ExpertParallel, DeepEpLowLatencyBuffersFromTheSizeHint) {
  const Breakdown agrs = qwen(8, "0.19.0");
  const Breakdown ll = qwen(8, "0.19.0", "deepep_low_latency");
  const RankBreakdown& r = ll.ranks[0];
  EXPECT_EQ(term(r, "all2all_buffers"), 1652556928);
  EXPECT_EQ(r.non_torch_bytes - qwen(1, "0.19.0").ranks[0].non_torch_bytes, 1652556928);
  // DeepEP dispatches through its buffers: no gathered activations.
  EXPECT_EQ(term(r, "all2all_dispatch"), 0);
  EXPECT_EQ(r.activation_peak_bytes, qwen(1, "0.19.0").ranks[0].activation_peak_bytes);
  EXPECT_EQ(r.kv_cache_bytes - agrs.ranks[0].kv_cache_bytes, 4513071104 - 1652556928);
}

// DeepSeek-V3 (hidden 7168, 256 experts), DP=8 EP on H200: 56 scales; dispatch message
// 16 + max(14336, 7168 + 224) = 14,352 B; combine 56 x 4 + 14336 = 14,560 B.
//   send    max(256 x 14,352, 256 x 256 x 14,560) = 954,204,160, twice = 1,908,408,320
//   receive 256 x 256 x 14,560                    = 954,204,160, twice = 1,908,408,320
//   signal  256 x 4 = 1024, twice                                       =         2,048
//   total 3,816,818,688 -> hint 3,816,818,816 (3.55 GiB)
// + 1 GiB NVLink + 32 MiB workspace = 4,924,115,072 B. High throughput on one node has no RDMA
// buffer: 1,107,296,256 B.
namespace {

// DeepSeek-V3 on 8 H200s, DP 8 with expert parallelism, 8k context.
struct DeepSeekV3Ep {
  HardwareConfig hw;
  EngineConfig c;
  const ModelSpec& v3 = database().model("deepseek-ai/DeepSeek-V3");
  DeepSeekV3Ep(const std::string& version, const std::string& backend) {
    hw.gpu = database().gpu("H200");
    hw.num_gpus = 8;
    c.engine_version = version;
    c.data_parallel_size = 8;
    c.enable_expert_parallel = true;
    c.max_model_len = 8192;
    c.all2all_backend = backend;
  }
};

}  // namespace

TEST(ExpertParallel, DeepSeekV3DeepEpBuffers) {
  DeepSeekV3Ep launch("0.19.0", "deepep_low_latency");
  const HardwareConfig& hw = launch.hw;
  EngineConfig& c = launch.c;
  const ModelSpec& v3 = launch.v3;
  EXPECT_EQ(term(compute_breakdown(v3, hw, c).ranks[0], "all2all_buffers"), 4924115072);
  c.all2all_backend = "deepep_high_throughput";
  EXPECT_EQ(term(compute_breakdown(v3, hw, c).ranks[0], "all2all_buffers"), 1107296256);
}

// The same launch at 0.33 with EPLB and 32 redundant experts: DeepEP sizes its low-latency
// buffer over the 288 physical experts.
//   send    max(256 x 14,352, 288 x 256 x 14,560) = 1,073,479,680, twice = 2,146,959,360
//   receive 288 x 256 x 14,560                    = 1,073,479,680, twice = 2,146,959,360
//   signal  288 x 4 = 1152, twice                                        =         2,304
//   total 4,293,921,024 -> hint 4,293,921,152
// + 1 GiB NVLink + 32 MiB workspace = 5,401,217,408 B.
// The weights: 288 / 8 = 36 experts per rank instead of 32. One fp8 expert with 128 x 128
// block scales (fp32) is w13 2 x 2048 x 7168 B + 32 x 56 x 4 B and w2 7168 x 2048 B + 56 x 16 x
// 4 B = 44,050,944 B; 4 more on each of the 58 MoE layers = 10,219,819,008 B. EPLB's state
// (EplbState.add_model): the int32 load window 1000 x 58 layers x 288 experts x 4 B =
// 66,816,000 B and expert_buffer, one layer's 36 local experts = 1,585,833,984 B.
TEST(ExpertParallel, EplbRedundantExpertsGrowTheDeepEpBufferAndTheWeights) {
  DeepSeekV3Ep launch("0.33.0", "deepep_low_latency");
  const HardwareConfig& hw = launch.hw;
  EngineConfig& c = launch.c;
  const ModelSpec& v3 = launch.v3;
  const Breakdown plain = compute_breakdown(v3, hw, c);
  EXPECT_EQ(term(plain.ranks[0], "all2all_buffers"), 4924115072);
  c.enable_eplb = true;
  c.num_redundant_experts = 32;
  const Breakdown eplb = compute_breakdown(v3, hw, c);
  EXPECT_EQ(term(eplb.ranks[0], "all2all_buffers"), 5401217408);
  EXPECT_EQ(eplb.ranks[0].weights_bytes - plain.ranks[0].weights_bytes,
            std::int64_t{10219819008} + 66816000 + 1585833984);
  // vLLM's refusals: experts + redundant must split over the 8 EP ranks; redundant experts
  // need EPLB; EPLB needs expert parallelism.
  c.num_redundant_experts = 30;
  EXPECT_THROW(compute_breakdown(v3, hw, c), ConfigError);
  c.num_redundant_experts = 32;
  c.enable_eplb = false;
  EXPECT_THROW(compute_breakdown(v3, hw, c), ConfigError);
  c.enable_eplb = true;
  c.enable_expert_parallel = false;
  c.all2all_backend = "allgather_reducescatter";
  EXPECT_THROW(compute_breakdown(v3, hw, c), ConfigError);
}

// From 0.20 the low-latency buffer is sized for max_num_batched_tokens (FusedMoEConfig.
// max_num_tokens), whose default under batched DP (low latency, EP, DP > 1) is 256: the same
// 4,924,115,072 B as above. At --max-num-batched-tokens 8192 (32 x 256 tokens):
//   send 2 x 8192 x 256 x 14,560 = 61,069,066,240; receive the same; signal 2,048
//   total 122,138,134,528 -> hint 122,138,134,656; + 1 GiB + 32 MiB = 123,245,430,912 B,
// more than an H200 holds: the launch fails where 0.19 (256 tokens whatever the batch) starts.
TEST(ExpertParallel, DeepEpLowLatencyBufferFollowsTheBatchFrom020) {
  DeepSeekV3Ep launch("0.20.0", "deepep_low_latency");
  const HardwareConfig& hw = launch.hw;
  EngineConfig& c = launch.c;
  const ModelSpec& v3 = launch.v3;
  const Breakdown by_default = compute_breakdown(v3, hw, c);
  EXPECT_EQ(by_default.config.max_num_batched_tokens, 256);
  EXPECT_EQ(term(by_default.ranks[0], "all2all_buffers"), 4924115072);
  c.max_num_batched_tokens = 8192;
  const Breakdown large_batch = compute_breakdown(v3, hw, c);
  EXPECT_EQ(term(large_batch.ranks[0], "all2all_buffers"), 123245430912);
  EXPECT_NE(large_batch.outcome, Outcome::Started);
  c.engine_version = "0.19.0";
  const Breakdown chunked = compute_breakdown(v3, hw, c);
  EXPECT_EQ(term(chunked.ranks[0], "all2all_buffers"), 4924115072);
  // High throughput keeps no RDMA buffer on one node, and the usual batch default.
  c.engine_version = "0.20.0";
  c.max_num_batched_tokens.reset();
  c.all2all_backend = "deepep_high_throughput";
  const Breakdown high_throughput = compute_breakdown(v3, hw, c);
  EXPECT_EQ(term(high_throughput.ranks[0], "all2all_buffers"), 1107296256);
  EXPECT_GT(high_throughput.config.max_num_batched_tokens, 256);
}

// pplx on one node (AllToAllIntraNode) for Qwen3-30B-A3B, DP=8 EP: 8 ranks, 128 / 8 = 16 local
// experts, 256 tokens (VLLM_MOE_DP_CHUNK_SIZE). Combine token 2048 x 4 = 8192 B.
//   per-peer buffer 16 + 16 x 4 (64) + 256 x 16 x 8192 = 33,554,512, x 8 peers = 268,436,096
//   pointer arrays 3 x 8 x 8 = 192; receive counts 256 x 4 = 1024; expert counters 128 x 4 =
//   512; tokens per rank 16 x 8 x 4 = 512; token index 4
//   tracking 6 arrays x 16 x 256 x 8 x 4 B = 786,432
//   total 269,224,772 B.
TEST(ExpertParallel, PplxIntranodeBuffers) {
  const RankBreakdown r = qwen(8, "0.10.1", "pplx").ranks[0];
  EXPECT_EQ(term(r, "all2all_buffers"), 269224772);
  EXPECT_EQ(term(r, "all2all_dispatch"), 0);
}

TEST(ExpertParallel, UnmodelledBackendsAreNamedErrors) {
  try {
    qwen(8, "0.19.0", "flashinfer_nvlink_one_sided");
    FAIL() << "an unmodelled backend under DP must be refused";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "all2all_backend");
    EXPECT_NE(std::string(e.what()).find("not modelled"), std::string::npos) << e.what();
  }
  EXPECT_THROW(qwen(8, "0.19.0", "flashinfer_all2allv"), ConfigError);
  // DeepEP needs expert parallelism; without it the launch is refused, not zeroed.
  EXPECT_THROW(qwen(8, "0.19.0", "deepep_low_latency", false), ConfigError);
  // One replica exchanges nothing, whatever the backend: nothing to model.
  EXPECT_FALSE(has_term(qwen(1, "0.19.0", "nixl_ep").ranks[0], "all2all_buffers"));
  EXPECT_THROW(qwen(8, "0.19.0", "pplx", false), ConfigError);
  // Not a name vLLM accepts.
  EngineConfig c;
  EXPECT_THROW(set_knob(c, "all2all_backend", KnobValue{std::string("bogus")}), ConfigError);
}

// The default per version (engines.yaml) and how the backend is given: the environment
// variable until `--all2all-backend` exists (0.12).
TEST(ExpertParallel, DefaultAndFlagPerVersion) {
  EXPECT_EQ(engine_profile("0.10.1").all2all_backend_default, "naive");
  EXPECT_EQ(engine_profile("0.11.0").all2all_backend_default, "allgather_reducescatter");
  EXPECT_EQ(engine_profile("0.19.0").all2all_backend_default, "allgather_reducescatter");
  EXPECT_FALSE(engine_profile("0.11.0").all2all_backend_flag);
  EXPECT_TRUE(engine_profile("0.12.0").all2all_backend_flag);
  EXPECT_TRUE(engine_profile("").all2all_backend_flag);
  EXPECT_EQ(engine_profile("0.11.0").fused_moe_chunk_tokens, 32768);
  EXPECT_EQ(engine_profile("0.19.0").fused_moe_chunk_tokens, 0);
}
