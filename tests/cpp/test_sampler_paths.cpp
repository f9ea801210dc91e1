// The V1 profile run's sampler temporaries by top-k/top-p implementation
// (vllm/v1/sample/ops/topk_topp_sampler.py of 0.10.1.1 and 0.17.0, read from the wheels): the
// PyTorch-native full sort, FlashInfer's kernels (VLLM_USE_FLASHINFER_SAMPLER=1, or 0.8-0.12
// wherever FlashInfer is installed), and Model Runner V2, which does not read the variable.
// Each expectation is derived by hand in its comment.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "vramplan/compiled.hpp"
#include "vramplan/engine.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/spec_db.hpp"

using namespace vramplan;

namespace {

const SpecDatabase& database() {
  static const SpecDatabase db = SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  return db;
}

struct Launch {
  std::shared_ptr<const ModelSpec> spec;
  HardwareConfig hardware;
  EngineConfig config;
};

// pub-300 (tests/data/public_logs/pub-300.log): Qwen2-7B-Instruct on one A100 80GB, vLLM
// 0.10.1.1 `vllm serve --max-model-len 16384 --gpu-memory-utilization 0.25`; the engine's A100
// defaults are max_num_seqs 256 and max_num_batched_tokens 2048.
Launch qwen2_on_a100(const char* sampler) {
  Launch l;
  l.spec = std::make_shared<const ModelSpec>(database().model("Qwen/Qwen2-7B-Instruct"));
  l.hardware.gpu = database().gpu("A100-80GB");
  l.config.engine_version = "0.10.1.1";
  l.config.gpu_memory_utilization = 0.25;
  l.config.max_model_len = 16384;
  l.config.vllm_use_flashinfer_sampler = sampler;
  return l;
}

Breakdown breakdown(const Launch& l) { return compute_breakdown(*l.spec, l.hardware, l.config); }

// The sampler pass: 256 requests x 152064 vocab (already a multiple of 64) logits, plus the
// batch's last hidden states (2048 tokens x 3584 x 2 B = 14,680,064 B). The forward of 2048
// tokens, 2048 x 2 B x (3 x 18944 + 6 x 3584) = 320,864,256 B, is below both sampler figures.
constexpr double kLogits = 256.0 * 152064.0;
constexpr std::int64_t kHiddenStates = std::int64_t{2048} * 3584 * 2;

}  // namespace

TEST(SamplerPaths, FlashInferSamplerAtTwelveBytesPerLogitMatchesPub300) {
  // FlashInfer: bf16 logits (2 B) + fp32 logits, top-k masked copy, probabilities (3 x 4 B):
  // 38,928,384 x 14 = 544,997,376 B, + 14,680,064 = 559,677,440 B (0.521 GiB). The log's KV is
  // 5.01 GiB: 0.25 x 79.15 GiB - 14.19 weights - 0.52 - 0.07 non-torch = 5.00 GiB.
  const Breakdown flashinfer = breakdown(qwen2_on_a100("1"));
  EXPECT_EQ(flashinfer.ranks.front().activation_peak_bytes,
            static_cast<std::int64_t>(kLogits * 14.0) + kHiddenStates);
  EXPECT_NEAR(static_cast<double>(flashinfer.ranks.front().kv_cache_bytes) / (1 << 30), 5.01, 0.02);
}

TEST(SamplerPaths, NativeSortIsTheDefaultAndCostsTheSortBuffers) {
  // auto and 0: the PyTorch-native sort path, 36.9 B + 2 B per logit (engines.yaml 0.8.0 row):
  // 38,928,384 x 38.9 = 1,514,314,137.6 B, + 14,680,064. The two KV figures differ by exactly
  // the activation difference, 24.9 B per logit.
  const Breakdown native = breakdown(qwen2_on_a100("auto"));
  const Breakdown off = breakdown(qwen2_on_a100("0"));
  const Breakdown flashinfer = breakdown(qwen2_on_a100("1"));
  EXPECT_EQ(native.ranks.front().activation_peak_bytes,
            static_cast<std::int64_t>(kLogits * 38.9) + kHiddenStates);
  EXPECT_EQ(off.ranks.front().activation_peak_bytes, native.ranks.front().activation_peak_bytes);
  EXPECT_NEAR(static_cast<double>(flashinfer.ranks.front().kv_cache_bytes -
                                  native.ranks.front().kv_cache_bytes),
              kLogits * 24.9, 2.0);
}

TEST(SamplerPaths, FewerThan128RequestsSortAllRowsAtOnce) {
  // At 64 requests torch sorts the 64 rows together (by value, then by segment; SortStable.cu
  // segmented_sort_pairs_by_full_sort): 48 B + 2 B per logit (engines.yaml first row). 64 x
  // 152064 = 9,732,096 logits x 50 = 486,604,800 B, + 14,680,064 = 501,284,864 B, above the
  // forward's 320,864,256. At 128 requests the per-row sort's 36.9 + 2 B: 19,464,192 x 38.9 =
  // 757,157,068.8 B, + 14,680,064.
  Launch few = qwen2_on_a100("auto");
  few.config.max_num_seqs = 64;
  EXPECT_EQ(breakdown(few).ranks.front().activation_peak_bytes,
            std::int64_t{9732096} * 50 + kHiddenStates);
  Launch at_128 = qwen2_on_a100("auto");
  at_128.config.max_num_seqs = 128;
  EXPECT_EQ(breakdown(at_128).ranks.front().activation_peak_bytes,
            static_cast<std::int64_t>(19464192.0 * 38.9) + kHiddenStates);
  // FlashInfer's kernels do not sort: 9,732,096 x 14 = 136,249,344 B + 14,680,064 is below the
  // forward, which is the peak.
  Launch flashinfer = few;
  flashinfer.config.vllm_use_flashinfer_sampler = "1";
  EXPECT_EQ(breakdown(flashinfer).ranks.front().activation_peak_bytes,
            std::int64_t{2048} * 2 * (3 * 18944 + 6 * 3584));
  // 0.17's Triton top-k/top-p (from 8 rows) does not sort either: 13.2 + 2 B per logit,
  // 147,927,859.2 + 14,680,064 B, again below the forward.
  Launch triton = few;
  triton.config.engine_version = "0.17.0";
  EXPECT_LT(breakdown(triton).ranks.front().activation_peak_bytes,
            std::int64_t{9732096} * 50 + kHiddenStates);
}

TEST(SamplerPaths, ModelRunnerV2IgnoresTheVariable) {
  // 0.33 routes every model to Model Runner V2, whose sampler does not read
  // VLLM_USE_FLASHINFER_SAMPLER: the same launch with and without it has the same activation.
  Launch on = qwen2_on_a100("1");
  Launch off = qwen2_on_a100("auto");
  on.config.engine_version = off.config.engine_version = "0.33.0";
  EXPECT_EQ(breakdown(on).ranks.front().activation_peak_bytes,
            breakdown(off).ranks.front().activation_peak_bytes);
  // Forced onto the V1 runner, the variable applies again (0.17+: Triton 13.2 B -> 12.0 B).
  on.config.vllm_use_v2_model_runner = off.config.vllm_use_v2_model_runner = "0";
  EXPECT_LT(breakdown(on).ranks.front().activation_peak_bytes,
            breakdown(off).ranks.front().activation_peak_bytes);
}

TEST(SamplerPaths, V0FlashInferSamplingIsRefusedNotGuessed) {
  Launch v0 = qwen2_on_a100("1");
  v0.config.engine_version = "0.6.4";
  try {
    breakdown(v0);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "vllm_use_flashinfer_sampler");
    EXPECT_NE(std::string(e.what()).find("V0"), std::string::npos) << e.what();
  }
}
