// SGLang's memory model: the default mem_fraction_static (shared/reference/sglang-memory.md
// section 3 worked table, derived by hand below), the KV pool of a dense, an MLA, a sliding-window
// and a Mamba-hybrid model derived by hand, the verdicts, the solver, the launch line, and
// hostile sglang.yaml rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>

#include "vramplan/errors.hpp"
#include "vramplan/kv_cache.hpp"
#include "vramplan/sglang.hpp"
#include "vramplan/spec_db.hpp"
#include "vramplan/weights.hpp"

namespace {

using namespace vramplan;

const SpecDatabase& db() {
  static const SpecDatabase database = SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  return database;
}

const SglangRules& rules_0523() { return sglang_rules(sglang_table(), "0.5.23"); }
const SglangRules& rules_046() { return sglang_rules(sglang_table(), "0.4.6.post5"); }

double default_f(const SglangRules& rules, const std::string& gpu, std::int32_t tp,
                 bool mla = false) {
  SglangConfig config;
  config.tp_size = tp;
  // Any model: the default f has no model term except MLA. DeepSeek-V3 is MLA.
  const ModelSpec& spec = db().model(mla ? "deepseek-ai/DeepSeek-V3" : "Qwen/Qwen3-8B");
  return sglang_breakdown(spec, db().gpu(gpu), rules, config).mem_fraction_static;
}

// ---- the default f, 0.5.23 (memory_hook.py:handle_gpu_memory_settings) ---------------------
// H100 (nvidia-smi 81 559 MiB): tier < 92 160 -> chunk 8192, decode max_bs 256 (TP<4) / 512.
// Prefill graphs up to 8192 tokens: 4..32/4 (8) + 48..256/16 (14) + 288..512/32 (8)
// + 576..1024/64 (8) + 1280..4096/256 (12) + 4608..8192/512 (8) = 58 sizes -> 464 MiB.
// reserve = 512 + 1.5 x 8192 + 1024 x TP/8 + 2 x max_bs + 464:
//   TP=1: 512 + 12288 + 128 + 512 + 464 = 13904 -> (81559 - 13904)/81559 = 0.82952 -> 0.830
//   TP=2: 512 + 12288 + 256 + 512 + 464 = 14032 -> 0.82795 -> 0.828 (the value reported for
//         Qwen3-32B on H100 TP=2 in sgl-project/sglang#29092)
//   TP=4: 512 + 12288 + 512 + 1024 + 464 = 14800 -> 0.81854 -> 0.819
//   TP=8: 512 + 12288 + 1024 + 1024 + 464 = 15312 -> 0.81226 -> 0.812
//   MLA TP=1: prefill graphs cost a flat 1536: 512 + 12288 + 128 + 512 + 1536 = 14976 -> 0.816
TEST(SglangDefaultFraction, H100WorkedTable) {
  EXPECT_DOUBLE_EQ(default_f(rules_0523(), "H100-80GB", 1), 0.830);
  EXPECT_DOUBLE_EQ(default_f(rules_0523(), "H100-80GB", 2), 0.828);
  EXPECT_DOUBLE_EQ(default_f(rules_0523(), "H100-80GB", 4), 0.819);
  EXPECT_DOUBLE_EQ(default_f(rules_0523(), "H100-80GB", 8), 0.812);
  EXPECT_DOUBLE_EQ(default_f(rules_0523(), "H100-80GB", 1, true), 0.816);
}

// RTX 4090 (24 564 MiB): tier < 35 840 -> chunk 4096, max_bs 48; prefill sizes up to 4096 = 50
// (400 MiB); reserve = 512 + 6144 + 128 + 96 + 400 = 7280, no 10 GiB floor (<= 61 440 MiB):
// (24564 - 7280)/24564 = 0.70363 -> 0.704.
// L40S (46 068): chunk 4096, max_bs 32: 512 + 6144 + 128 + 64 + 400 = 7248 -> 0.84267 -> 0.843.
// A100-80GB (81 920): as H100 TP=1, 13904 -> 0.83027 -> 0.830.
// H200 (143 771): 13904 -> 0.90329 -> 0.903.
// B200 (183 359): chunk 16384, max_bs 512; prefill sizes up to 16384 = 58 + 16 (8704..16384/512)
// = 74 (592 MiB); 512 + 24576 + 128 + 1024 + 592 = 26832 -> 0.85366 -> 0.854.
TEST(SglangDefaultFraction, OtherGpusAtTp1) {
  EXPECT_DOUBLE_EQ(default_f(rules_0523(), "RTX-4090", 1), 0.704);
  EXPECT_DOUBLE_EQ(default_f(rules_0523(), "L40S", 1), 0.843);
  EXPECT_DOUBLE_EQ(default_f(rules_0523(), "A100-80GB", 1), 0.830);
  EXPECT_DOUBLE_EQ(default_f(rules_0523(), "H200", 1), 0.903);
  EXPECT_DOUBLE_EQ(default_f(rules_0523(), "B200", 1), 0.854);
}

// 0.4.6.post5 (server_args.py:__post_init__): <= 81 920 MiB by TP x PP: 0.88 / 0.87 (2) /
// 0.85 (4) / 0.81 (8); above: 0.88, and above 96 GiB min(f + 48 GiB x (1 - f)/gpu,
// (gpu - 18 GiB)/gpu): H200 min(0.88 + 49152 x 0.12/143771, (143771 - 18432)/143771)
// = min(0.92103, 0.87180) = 0.87180.
TEST(SglangDefaultFraction, Release046StepTable) {
  EXPECT_DOUBLE_EQ(default_f(rules_046(), "H100-80GB", 1), 0.88);
  EXPECT_DOUBLE_EQ(default_f(rules_046(), "H100-80GB", 2), 0.87);
  EXPECT_DOUBLE_EQ(default_f(rules_046(), "H100-80GB", 4), 0.85);
  EXPECT_DOUBLE_EQ(default_f(rules_046(), "H100-80GB", 8), 0.81);
  EXPECT_NEAR(default_f(rules_046(), "H200", 1), (143771.0 - 18432.0) / 143771.0, 1e-12);
}

const SglangRules& rules_0410() { return sglang_rules(sglang_table(), "0.4.10.post2"); }

// 0.4.8-0.5.x (server_args.py:__post_init__ of 0.4.10.post2): reserve = (tier + TP x PP x
// per-rank) GiB, f = round((gpu - reserve)/gpu, 3).
//   H100 TP=1: (9.5 + 0.5) x 1024 = 10240 -> (81559 - 10240)/81559 = 0.87445 -> 0.874
//   H100 TP=8: (9.5 + 4) x 1024 = 13824 -> 0.83050 -> 0.831
//   H200 TP=1: (12 + 0.5) x 1024 = 12800 -> 0.91097 -> 0.911
//   RTX 4090 TP=1: (2.8 + 0.1) x 1024 = 2969.6 -> 0.87911 -> 0.879
TEST(SglangDefaultFraction, Release0410TieredReserve) {
  EXPECT_DOUBLE_EQ(default_f(rules_0410(), "H100-80GB", 1), 0.874);
  EXPECT_DOUBLE_EQ(default_f(rules_0410(), "H100-80GB", 8), 0.831);
  EXPECT_DOUBLE_EQ(default_f(rules_0410(), "H200", 1), 0.911);
  EXPECT_DOUBLE_EQ(default_f(rules_0410(), "RTX-4090", 1), 0.879);
}

// A GPU nvidia-smi's total is not recorded for: the CUDA total stands in, and a note says so.
TEST(SglangDefaultFraction, UnknownNvidiaSmiTotalIsSaid) {
  SglangConfig config;
  const SglangBreakdown b =
      sglang_breakdown(db().model("Qwen/Qwen3-8B"), db().gpu("H20"), rules_0523(), config);
  EXPECT_TRUE(b.gpu_mib_assumed);
  EXPECT_EQ(b.gpu_mib, db().gpu("H20").total_memory_bytes >> 20);
  ASSERT_FALSE(b.notes.empty());
  EXPECT_NE(b.notes[0].find("nvidia-smi"), std::string::npos);
}

// ---- the KV pool ------------------------------------------------------------------------

// Dense: Llama-3.1-8B, 1x H100, f = 0.90 (given), 0.5.23.
// B = 85 030 076 416 (CUDA total) - 311 385 129 (context, no NCCL at TP=1) = 84 718 691 287.
// slack = 0.1 B; rest = B - W - slack; cell = 8 KV heads x (128 + 128) x 2 B x 32 layers
// = 131 072 B; tokens = floor(rest / cell) (page 1); K size = (tokens + 1) x 8 x 128 x 2 x 32.
// R = min(clamp(floor(tokens / 131072 x 512), 2048, 4096), tokens / 2);
// req_to_token = (R + 1) x (131072 + 4) x 4 B.
TEST(SglangKvPool, DenseLlama8BOnH100) {
  const ModelSpec& spec = db().model("meta-llama/Llama-3.1-8B");
  SglangConfig config;
  config.mem_fraction_static = 0.90;
  const SglangBreakdown b = sglang_breakdown(spec, db().gpu("H100-80GB"), rules_0523(), config);
  const std::int64_t baseline = 85030076416 - 311385129;
  EXPECT_EQ(b.baseline_free_bytes, baseline);
  const std::int64_t weights =
      weight_bytes_per_rank(spec, spec.quantization, DType::BF16, RankPlacement{}).total();
  EXPECT_EQ(b.weights_bytes, weights);
  const std::int64_t slack = std::llround(static_cast<double>(baseline) * (1.0 - 0.90));
  EXPECT_EQ(b.slack_bytes, slack);
  const std::int64_t rest = baseline - weights - slack;
  EXPECT_EQ(b.cell_bytes, 131072);
  EXPECT_EQ(b.max_total_num_tokens, rest / 131072);
  EXPECT_EQ(b.k_size_bytes, (rest / 131072 + 1) * 65536);
  EXPECT_EQ(b.v_size_bytes, b.k_size_bytes);
  const std::int64_t tokens = rest / 131072;
  const std::int64_t requests = std::min<std::int64_t>(
      std::clamp<std::int64_t>(tokens * 512 / 131072, 2048, 4096), tokens / 2);
  EXPECT_EQ(b.max_running_requests, requests);
  EXPECT_EQ(b.req_to_token_bytes, (requests + 1) * (131072 + 4) * 4);
  EXPECT_EQ(b.verdict, SglangVerdict::Started);
  // Scale check: ~ 0.9 x 78.5 GiB - 15 GiB of weights = 55.6 GiB of KV, 455 k tokens.
  EXPECT_NEAR(static_cast<double>(b.max_total_num_tokens), 455000.0, 5000.0);
}

// The "K size" figure of a real log: Qwen3-235B-A22B-FP8, TP=4 on H100, f = 0.93, logged
// "#tokens: 367404, K size: 8.23 GB" (vllm-project/vllm#21348). 4 KV heads / TP 4 = 1 head,
// KV dtype auto = bf16 (2 B), 94 layers: K per token = 1 x 128 x 2 x 94 = 24 064 B;
// (367 404 + 1) x 24 064 / 2^30 = 8.234 -> "8.23". The token count is pinned through
// max_total_tokens: this checks the cell and the padding page, not the budget.
TEST(SglangKvPool, KSizeOfARealLog) {
  SglangConfig config;
  config.tp_size = 4;
  config.mem_fraction_static = 0.93;
  config.max_total_tokens = 367404;
  const SglangBreakdown b = sglang_breakdown(db().model("Qwen/Qwen3-235B-A22B-FP8"),
                                             db().gpu("H100-80GB"), rules_0523(), config);
  EXPECT_EQ(b.max_total_num_tokens, 367404);
  EXPECT_EQ(b.k_bytes_per_token, 24064);
  EXPECT_EQ(std::llround(static_cast<double>(b.k_size_bytes) / 1073741824.0 * 100.0), 823);
}

// MLA: DeepSeek-V3 at TP=8 on H200, f = 0.90. One latent per token and layer:
// (512 + 64) x 2 B x 61 layers = 70 272 B, the same on every rank (not split by TP);
// "KV size" = (tokens + 1) x 70 272; no V.
TEST(SglangKvPool, MlaDeepSeekV3) {
  const ModelSpec& spec = db().model("deepseek-ai/DeepSeek-V3");
  SglangConfig config;
  config.tp_size = 8;
  config.mem_fraction_static = 0.90;
  const SglangBreakdown b = sglang_breakdown(spec, db().gpu("H200"), rules_0523(), config);
  EXPECT_TRUE(b.mla);
  EXPECT_EQ(b.cell_bytes, 70272);
  EXPECT_EQ(b.v_bytes_per_token, 0);
  // B = 150 022 914 048 - 311 385 129 - 1 224 065 679 (NCCL over NVLink, TP=8).
  const std::int64_t baseline = 150022914048 - 311385129 - 1224065679;
  EXPECT_EQ(b.baseline_free_bytes, baseline);
  const std::int64_t rest = baseline - b.weights_bytes - std::llround(baseline * 0.1);
  EXPECT_EQ(b.max_total_num_tokens, rest / 70272);
  EXPECT_EQ(b.k_size_bytes, (rest / 70272 + 1) * 70272);
  EXPECT_EQ(b.verdict, SglangVerdict::Started);
}

// Sliding window: Gemma-2-9B on 1x H100, f = 0.85, 21 full + 21 SWA layers (alternating),
// 8 KV heads x (256 + 256) x 2 B = 8192 B per layer and token. cell = 21 x 8192 + 0.8 x 21
// x 8192 = 309 657.6 B; full tokens = floor(rest / cell); SWA tokens = floor(0.8 x full).
TEST(SglangKvPool, SlidingWindowGemma2) {
  SglangConfig config;
  config.mem_fraction_static = 0.85;
  const SglangBreakdown b = sglang_breakdown(db().model("google/gemma-2-9b-it"),
                                             db().gpu("H100-80GB"), rules_0523(), config);
  EXPECT_EQ(b.cell_bytes, std::llround(21 * 8192 + 0.8 * 21 * 8192));
  const double cell = 21 * 8192 + 0.8 * 21 * 8192;
  const auto full = static_cast<std::int64_t>(std::floor(static_cast<double>(b.rest_bytes) / cell));
  EXPECT_EQ(b.max_total_num_tokens, full);
  EXPECT_EQ(b.swa_tokens, static_cast<std::int64_t>(std::floor(0.8 * static_cast<double>(full))));
  EXPECT_EQ(b.kv_pool_bytes, (full + 1) * 21 * 8192 + (b.swa_tokens + 1) * 21 * 8192);
}

// Mamba hybrid: Nemotron-Nano-9B-v2 on 1x H100, f = 0.88. The state pool takes
// rest x 0.9 / 1.9 first: slots = floor((budget - s)/s), pool = (slots + 1) x s, with s the
// per-request state of the 27 Mamba layers (conv in bf16, SSM in fp32, sglang's
// --mamba-ssm-dtype default); the 4 attention layers (8 KV heads x (128 + 128) x 2 B each)
// take what is left. R <= slots / 3.
TEST(SglangKvPool, MambaHybridNemotronNano) {
  const ModelSpec& spec = db().model("nvidia/NVIDIA-Nemotron-Nano-9B-v2");
  SglangConfig config;
  config.mem_fraction_static = 0.88;
  const SglangBreakdown b = sglang_breakdown(spec, db().gpu("H100-80GB"), rules_0523(), config);
  KvCacheOptions options;
  options.state_element_bytes = 2;
  options.ssm_state_element_bytes = 4;
  std::int64_t per_slot = 0;
  std::int64_t cell = 0;
  int mamba_layers = 0;
  for (const LayerSpec& layer : spec.layers) {
    if (layer.attention == AttentionKind::Mamba) {
      per_slot += mamba_state_bytes(spec, layer, options);
      ++mamba_layers;
    }
    if (layer.attention == AttentionKind::Full)
      cell += 2LL * layer.num_key_value_heads * layer.head_dim * 2;
  }
  EXPECT_EQ(mamba_layers, 27);
  // Mamba2 state per layer: conv (128 heads x 80 + 2 x 8 groups x 128) x (4 - 1) x 2 B
  // = 12 288 x 3 x 2 = 73 728; SSM 128 x 80 x 128 x 4 B = 5 242 880.
  EXPECT_EQ(per_slot, 27 * (73728 + 5242880));
  EXPECT_EQ(b.mamba_state_bytes_per_slot, per_slot);
  const double budget = static_cast<double>(b.rest_bytes) * 0.9 / 1.9;
  const auto slots = static_cast<std::int64_t>(std::floor((budget - per_slot) / per_slot));
  EXPECT_EQ(b.mamba_slots, slots);
  EXPECT_EQ(b.mamba_pool_bytes, (slots + 1) * per_slot);
  EXPECT_EQ(b.cell_bytes, cell);
  EXPECT_EQ(b.max_total_num_tokens, (b.rest_bytes - (slots + 1) * per_slot) / cell);
  EXPECT_LE(b.max_running_requests, slots / 3);
}

// ---- verdicts -----------------------------------------------------------------------------

// Llama-3.1-70B in bf16 (~131 GiB) on one H100: the weights do not fit under f x B.
TEST(SglangVerdict, WeightsLeaveNoMemoryIn0523Words) {
  SglangConfig config;
  const SglangBreakdown b = sglang_breakdown(db().model("meta-llama/Llama-3.1-70B"),
                                             db().gpu("H100-80GB"), rules_0523(), config);
  EXPECT_EQ(b.verdict, SglangVerdict::WeightsLeaveNoMemory);
  EXPECT_EQ(b.error.rfind("Loaded weights leave no GPU memory for the KV cache", 0), 0U);
  const SglangBreakdown old = sglang_breakdown(db().model("meta-llama/Llama-3.1-70B"),
                                               db().gpu("H100-80GB"), rules_046(), config);
  EXPECT_EQ(old.error, "Not enough memory. Please try to increase --mem-fraction-static.");
}

// f = 0.999 leaves a slack of 0.08 GiB: the decode graphs (2 MiB x 256) cannot be captured.
TEST(SglangVerdict, TinySlackFailsAtGraphCapture) {
  SglangConfig config;
  config.mem_fraction_static = 0.999;
  config.context_length = 8192;
  const SglangBreakdown b =
      sglang_breakdown(db().model("Qwen/Qwen3-8B"), db().gpu("H100-80GB"), rules_0523(), config);
  EXPECT_EQ(b.verdict, SglangVerdict::OomGraphCapture);
  EXPECT_NE(b.error.find("Capture cuda graph failed"), std::string::npos);
}

// DeepSeek-V3 at its full 163 840-token context on 8x H200 at f = 0.62: ~79 GiB of FP8 weights
// per rank under f x B ~ 85.7 GiB leave ~6.4 GiB, ~98 k tokens of 70 272 B, so a full-length
// request cannot fit; SGLang still starts, and the breakdown says what it will refuse.
TEST(SglangVerdict, ContextLongerThanThePoolIsSaid) {
  SglangConfig config;
  config.tp_size = 8;
  config.mem_fraction_static = 0.62;
  const SglangBreakdown b = sglang_breakdown(db().model("deepseek-ai/DeepSeek-V3"),
                                             db().gpu("H200"), rules_0523(), config);
  ASSERT_EQ(b.verdict, SglangVerdict::Started);
  ASSERT_LT(b.max_total_num_tokens, b.context_length);
  ASSERT_FALSE(b.notes.empty());
  EXPECT_NE(b.notes.back().find("refuses inputs of more than " +
                                std::to_string(b.max_total_num_tokens - 1)),
            std::string::npos);
}

// Pipeline stages agree on the smallest pool: PP = 2 gives each stage half the layers, so the
// pool holds about twice the tokens of PP = 1 on the same GPU budget per rank, never a mix.
TEST(SglangVerdict, PipelineStagesTakeTheSmallestPool) {
  SglangConfig one;
  one.mem_fraction_static = 0.9;
  one.context_length = 8192;
  SglangConfig two = one;
  two.pp_size = 2;
  const ModelSpec& spec = db().model("meta-llama/Llama-3.1-8B");
  const SglangBreakdown a = sglang_breakdown(spec, db().gpu("H100-80GB"), rules_0523(), one);
  const SglangBreakdown b = sglang_breakdown(spec, db().gpu("H100-80GB"), rules_0523(), two);
  EXPECT_EQ(b.cell_bytes * 2, a.cell_bytes);                      // 16 of 32 layers per stage
  EXPECT_GT(b.max_total_num_tokens, 2 * a.max_total_num_tokens);  // and fewer weights per rank
  EXPECT_EQ(b.nccl_bytes, 1224065679);                            // PP = 2 opens NCCL communicators
}

TEST(SglangVerdict, KnobsOutOfRangeAreNamed) {
  SglangConfig config;
  config.mem_fraction_static = 1.5;
  try {
    sglang_breakdown(db().model("Qwen/Qwen3-8B"), db().gpu("H100-80GB"), rules_0523(), config);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "mem_fraction_static");
  }
  SglangConfig bad_dtype;
  bad_dtype.kv_cache_dtype = "int3";
  EXPECT_THROW(
      sglang_breakdown(db().model("Qwen/Qwen3-8B"), db().gpu("H100-80GB"), rules_0523(), bad_dtype),
      ConfigError);
}

// ---- solver and launch line ----------------------------------------------------------------

TEST(SglangPlan, LargestFractionStartsAndTheNextDoesNot) {
  const ModelSpec& spec = db().model("Qwen/Qwen3-32B");
  SglangConfig config;
  config.model_path = "Qwen/Qwen3-32B";
  config.tp_size = 2;
  config.context_length = 32768;
  const SglangPlan plan = sglang_plan(spec, db().gpu("H100-80GB"), rules_0523(), config);
  ASSERT_TRUE(plan.max_mem_fraction_static);
  const double f = *plan.max_mem_fraction_static;
  EXPECT_EQ(plan.planned.verdict, SglangVerdict::Started);
  SglangConfig above = config;
  above.mem_fraction_static = f + 0.001;
  EXPECT_NE(sglang_breakdown(spec, db().gpu("H100-80GB"), rules_0523(), above).verdict,
            SglangVerdict::Started);
  EXPECT_GT(f, plan.launch.mem_fraction_static);  // the default keeps headroom
  ASSERT_FALSE(plan.planned.notes.empty());
  EXPECT_NE(plan.planned.notes.back().find("leave headroom"), std::string::npos);
  ASSERT_TRUE(plan.max_running_requests);
  ASSERT_TRUE(plan.max_context_length);
  EXPECT_LE(*plan.max_context_length, spec.max_position_embeddings);
  EXPECT_NE(plan.launch_line.find("--mem-fraction-static"), std::string::npos);
  EXPECT_EQ(plan.launch_line.rfind(
                "python -m sglang.launch_server --model-path Qwen/Qwen3-32B --tp-size 2", 0),
            0U);
}

// A given mem_fraction_static is the user's: the plan keeps it and reports the largest beside it.
TEST(SglangPlan, GivenFractionIsKept) {
  SglangConfig config;
  config.model_path = "Qwen/Qwen3-8B";
  config.mem_fraction_static = 0.7;
  const SglangPlan plan =
      sglang_plan(db().model("Qwen/Qwen3-8B"), db().gpu("L40S"), rules_0523(), config);
  EXPECT_DOUBLE_EQ(plan.planned.mem_fraction_static, 0.7);
  EXPECT_NE(plan.launch_line.find("--mem-fraction-static 0.700"), std::string::npos);
  ASSERT_TRUE(plan.safe_mem_fraction_static);
  EXPECT_GT(*plan.safe_mem_fraction_static, 0.7);
  EXPECT_TRUE(plan.fits) << plan.verdict;
  EXPECT_TRUE(plan.remedies.empty());
}

// The margin m is kept in the slack: spare(f) = B(1 - f) - req_to_token - graphs - activation
// falls by B/1000 per thousandth of f, so the safe f is the largest with spare >= m, and it sits
// m/B below the largest f that starts (spare >= 0), give or take one thousandth each.
TEST(SglangPlan, SafeFractionLeavesTheMargin) {
  const ModelSpec& spec = db().model("Qwen/Qwen3-32B");
  SglangConfig config;
  config.model_path = "Qwen/Qwen3-32B";
  config.tp_size = 2;
  config.context_length = 32768;
  const GpuSpec& gpu = db().gpu("H100-80GB");
  const SglangPlan plan = sglang_plan(spec, gpu, rules_0523(), config);
  ASSERT_TRUE(plan.safe_mem_fraction_static && plan.max_mem_fraction_static);
  const std::int64_t margin = std::int64_t{512} << 20;
  EXPECT_EQ(plan.safety_margin_bytes, margin);
  auto spare_at = [&](double f) {
    SglangConfig c = config;
    c.mem_fraction_static = f;
    const SglangBreakdown b = sglang_breakdown(spec, gpu, rules_0523(), c);
    EXPECT_EQ(b.verdict, SglangVerdict::Started);
    return b.free_after_graphs_bytes - b.activation_bytes;
  };
  const double safe = *plan.safe_mem_fraction_static;
  EXPECT_GE(spare_at(safe), margin);
  EXPECT_LT(spare_at(safe + 0.001), margin);
  EXPECT_DOUBLE_EQ(plan.planned.mem_fraction_static, safe);
  const double baseline = static_cast<double>(plan.planned.baseline_free_bytes);
  EXPECT_NEAR(*plan.max_mem_fraction_static - safe, static_cast<double>(margin) / baseline, 0.002);
  EXPECT_TRUE(plan.fits) << plan.verdict;
  EXPECT_EQ(plan.verdict.rfind("fits: ", 0), 0U) << plan.verdict;
}

// Qwen3-32B in bf16 holds 65.5 GB of weights (32.8 B parameters x 2 B): more than an L40S's
// 44.4 GiB at any f. Each remedy is replayed: TP 2 halves the weights per rank (about 30.5 GiB)
// and fits; an fp8 KV cache does not shrink the weights and does not.
TEST(SglangPlan, RemediesWhenTheWeightsDoNotFit) {
  SglangConfig config;
  config.model_path = "Qwen/Qwen3-32B";
  const SglangPlan plan =
      sglang_plan(db().model("Qwen/Qwen3-32B"), db().gpu("L40S"), rules_0523(), config);
  EXPECT_FALSE(plan.fits);
  EXPECT_FALSE(plan.safe_mem_fraction_static);
  EXPECT_EQ(plan.verdict.rfind("does not start", 0), 0U) << plan.verdict;
  const auto find = [&](const std::string& kind) {
    return std::find_if(plan.remedies.begin(), plan.remedies.end(),
                        [&](const Remedy& r) { return r.kind == kind; });
  };
  const auto tp = find("tensor_parallel");
  ASSERT_NE(tp, plan.remedies.end());
  EXPECT_TRUE(tp->fits) << tp->detail;
  EXPECT_EQ(tp->change, "--tp-size 2");
  EXPECT_NE(tp->flags.find("--tp-size 2"), std::string::npos);
  const auto fp8 = find("fp8_kv_cache");
  ASSERT_NE(fp8, plan.remedies.end());
  EXPECT_FALSE(fp8->fits);
  EXPECT_EQ(plan.remedies.front().kind, "tensor_parallel");  // the ones that fit come first
}

// A target of C sequences of L tokens: the pool holds min(max_running_requests, tokens / L).
TEST(SglangPlan, ConcurrencyTargetIsJudgedOnThePool) {
  SglangConfig config;
  config.model_path = "Qwen/Qwen3-8B";
  SglangTargets targets;
  targets.context_tokens = 32768;
  targets.concurrency = 1000;
  const SglangPlan plan =
      sglang_plan(db().model("Qwen/Qwen3-8B"), db().gpu("L40S"), rules_0523(), config, targets);
  EXPECT_EQ(plan.planned.context_length, 32768);
  const std::int64_t held =
      std::min(plan.planned.max_running_requests, plan.planned.max_total_num_tokens / 32768);
  EXPECT_EQ(plan.concurrent_sequences, held);
  EXPECT_LT(held, 1000);
  EXPECT_FALSE(plan.fits);
  EXPECT_NE(plan.verdict.find("holds " + std::to_string(held) + " of the 1000 sequences"),
            std::string::npos)
      << plan.verdict;
  targets.concurrency = held;
  EXPECT_TRUE(
      sglang_plan(db().model("Qwen/Qwen3-8B"), db().gpu("L40S"), rules_0523(), config, targets)
          .fits);
}

// The band states docs/sglang.md's accuracy table: sgl-r01's 50 729 predicted against 46 611
// logged tokens (+8.8%) and sgl-r07's 0.31 GiB graph reserve against 6.19 GiB captured (-95%).
TEST(SglangPlan, ErrorBandStatesTheLoggedRecords) {
  SglangConfig config;
  config.model_path = "Qwen/Qwen3-8B";
  const SglangPlan plan =
      sglang_plan(db().model("Qwen/Qwen3-8B"), db().gpu("L40S"), rules_0523(), config);
  EXPECT_NE(plan.error_band.find("over-predicted by up to 8.8% (2 records)"), std::string::npos)
      << plan.error_band;
  EXPECT_NE(plan.error_band.find("by up to 95% (3 records)"), std::string::npos) << plan.error_band;
  EXPECT_NE(plan.error_band.find("on 8 logged pools"), std::string::npos) << plan.error_band;
}

TEST(SglangRulesTable, AccuracyFiguresAreChecked) {
  const std::string rows = std::string(R"(sglang:
  - from_version: "0.4.0"
)");
  const std::string bad =
      "accuracy:\n  kv_pool_records: 8\n  kv_tokens_records: 2\n"
      "  kv_tokens_over_prediction_max: 1.5\n  graph_records: 3\n"
      "  graph_under_estimate_max: 0.95\n";
  try {
    parse_sglang_yaml(bad + rows, "s.yaml");
    FAIL() << "a fraction over 1 was taken";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("accuracy.kv_tokens_over_prediction_max"),
              std::string::npos)
        << e.what();
  }
}

TEST(SglangPlan, LaunchLineIsShellSafe) {
  SglangConfig config;
  config.model_path = "/models/my model's dir";
  config.mem_fraction_static = 0.85;
  config.chunked_prefill_size = -1;
  EXPECT_EQ(sglang_launch_line(config, rules_0523()),
            "python -m sglang.launch_server --model-path '/models/my model'\\''s dir' "
            "--mem-fraction-static 0.850 --chunked-prefill-size -1");
}

// 0.5.23 has no --cuda-graph-max-bs: its decode and prefill graphs take one flag each
// (arg_groups/fields/exec_.py), and argparse refuses the shared prefix as ambiguous. 0.4.x
// takes --cuda-graph-max-bs (server_args.py).
TEST(SglangPlan, GraphBatchFlagIsTheReleases) {
  SglangConfig config;
  config.model_path = "m";
  config.cuda_graph_max_bs = 16;
  EXPECT_EQ(sglang_launch_line(config, rules_0523()),
            "python -m sglang.launch_server --model-path m --cuda-graph-max-bs-decode 16");
  EXPECT_EQ(sglang_launch_line(config, rules_046()),
            "python -m sglang.launch_server --model-path m --cuda-graph-max-bs 16");
  const nlohmann::json kwargs = sglang_engine_kwargs("m", sglang_launch_argv(config, rules_0523()));
  EXPECT_EQ(kwargs.at("cuda_graph_max_bs_decode"), 16);
}

// ---- versions and hostile rows -------------------------------------------------------------

TEST(SglangRulesTable, VersionLookup) {
  EXPECT_EQ(sglang_rules(sglang_table(), "0.4.6.post5").release, "0.4.6.post5");
  EXPECT_EQ(sglang_rules(sglang_table(), "v0.4.3.post2").release, "0.4.6.post5");
  EXPECT_EQ(sglang_rules(sglang_table(), "0.4.9.post4").release, "0.4.10.post2");
  EXPECT_EQ(sglang_rules(sglang_table(), "0.5.3").release, "0.4.10.post2");
  EXPECT_EQ(sglang_rules(sglang_table(), "0.5.10").release, "0.5.23");
  EXPECT_EQ(sglang_rules(sglang_table(), "0.5.23").release, "0.5.23");
  EXPECT_EQ(sglang_rules(sglang_table(), "").release,
            sglang_table().rows.back().release);  // newest
  EXPECT_THROW(sglang_rules(sglang_table(), "0.3.6"), ConfigError);
  EXPECT_THROW(sglang_rules(sglang_table(), "latest"), ConfigError);
  EXPECT_EQ(sglang_version_note(sglang_table(), "0.5.23"), "");
  EXPECT_EQ(sglang_version_note(sglang_table(), "0.4.6.post5"), "");
  EXPECT_NE(sglang_version_note(sglang_table(), "0.5.10").find("0.5.23 wheel are assumed"),
            std::string::npos);
  EXPECT_NE(sglang_version_note(sglang_table(), "0.6.1").find("assumed"), std::string::npos);
}

std::string compiled_yaml_text() {
  std::ifstream in(std::string(VRAMPLAN_MODEL_SPECS_DIR) + "/sglang.yaml");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

void expect_spec_error(const std::string& yaml, const std::string& field_part) {
  try {
    parse_sglang_yaml(yaml, "sglang.yaml");
    FAIL() << "expected SpecError naming " << field_part;
  } catch (const SpecError& e) {
    EXPECT_EQ(e.file(), "sglang.yaml");
    EXPECT_NE(e.field_path().find(field_part), std::string::npos) << e.what();
  }
}

TEST(SglangRulesTable, FileParsesAndHostileRowsAreNamed) {
  const std::string good = compiled_yaml_text();
  ASSERT_FALSE(good.empty());
  EXPECT_EQ(parse_sglang_yaml(good, "sglang.yaml").rows.size(), 3U);
  expect_spec_error(
      replace_once(good, "    large_tp_size: 4\n", "    large_tp_size: 4\n    surprise: 1\n"),
      "sglang[0].surprise");
  expect_spec_error(replace_once(good, "    page_size_default: 1\n", ""),
                    "sglang[0].page_size_default");
  expect_spec_error(
      replace_once(good, "    default_fraction_rule: reserve", "    default_fraction_rule: magic"),
      "sglang[2].default_fraction_rule");
  expect_spec_error(replace_once(good, "reserve_base_mib: 512", "reserve_base_mib: lots"),
                    "sglang[2].reserve_base_mib");
  expect_spec_error(
      replace_once(good, "req_to_token_element_bytes: 4", "req_to_token_element_bytes: 400"),
      "req_to_token_element_bytes");
  expect_spec_error(replace_once(good, "from_version: \"0.5.4\"", "from_version: \"0.3.0\""),
                    "sglang[2].from_version");
  expect_spec_error(replace_once(good, ", reserve_gib: 12, reserve_gib_per_parallel: 0.5}", "}"),
                    "memory_tiers[2].reserve_gib");
  expect_spec_error(replace_once(good, "{below_mib: 25000,", "{below_mib: 0,"),
                    "memory_tiers[0].below_mib");
  expect_spec_error(replace_once(good, "kv_padding_page: true", "kv_padding_page: yes please"),
                    "kv_padding_page");
  expect_spec_error("sglang: []\n", "sglang");
  // nvidia-smi totals live in gpus.yaml now: the old table is an unknown field here.
  expect_spec_error(good + "nvidia_smi_memory_mib: {H200: 143771}\n", "nvidia_smi_memory_mib");
  EXPECT_THROW(parse_sglang_yaml("sglang: [\n", "sglang.yaml"), SpecError);
}

// SGLang's tensor-parallel attention splits the query heads evenly: Qwen3-8B has 32 (its
// config.json), so tp_size 3 never starts and is refused naming tp_size; 4 and 8 divide them.
TEST(SglangLaunch, TpSizeMustDivideTheQueryHeads) {
  const ModelSpec& spec = db().model("Qwen/Qwen3-8B");
  SglangConfig config;
  config.tp_size = 3;
  try {
    (void)sglang_breakdown(spec, db().gpu("L4"), rules_0523(), config);
    FAIL() << "tp_size 3 accepted for 32 query heads";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("tp_size"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("32"), std::string::npos) << e.what();
  }
  config.tp_size = 4;
  EXPECT_NO_THROW((void)sglang_breakdown(spec, db().gpu("L4"), rules_0523(), config));
  config.tp_size = 8;
  EXPECT_NO_THROW((void)sglang_breakdown(spec, db().gpu("L4"), rules_0523(), config));
}

}  // namespace
