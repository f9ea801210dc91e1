// LoRA slots preallocated by --enable-lora, derived by hand for Llama-3.1-8B.
#include <gtest/gtest.h>

#include "test_support.hpp"
#include "vramplan/engine.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/weights.hpp"

using namespace vramplan;
using vramplan_test::spec_from_yaml;

TEST(Lora, SlotsOfLlama31_8B) {
  const ModelSpec spec = spec_from_yaml(vramplan_test::kLlama31_8B);
  // Per layer and rank-1 unit, A columns + B rows over the adapted slices (h 4096, KV 1024,
  // I 14336): q 4096 + 4096; k, v 2 x 4096 + 2048; o 4096 + 4096; gate, up 2 x 4096 + 28672;
  // down 14336 + 4096. Sum 81,920; x rank 16 x 2 B x 32 layers x 4 slots = 335,544,320 B.
  EXPECT_EQ(lora_bytes_per_rank(spec, 4, 16, DType::BF16, RankPlacement{1, 1, 0}), 335'544'320);
  // TP=2 halves the split side: q B 2048, kv B 1024, o A 2048, gate_up B 14336, down A 7168:
  // 4096 + 2048 + 8192 + 1024 + 2048 + 4096 + 8192 + 14336 + 7168 + 4096 = 55,296 per unit.
  EXPECT_EQ(lora_bytes_per_rank(spec, 4, 16, DType::BF16, RankPlacement{2, 1, 0}),
            std::int64_t{55'296} * 16 * 2 * 32 * 4);
  // PP=2: each stage adapts its 16 layers.
  EXPECT_EQ(lora_bytes_per_rank(spec, 4, 16, DType::BF16, RankPlacement{1, 2, 1}), 335'544'320 / 2);
  EXPECT_EQ(lora_bytes_per_rank(spec, 0, 16, DType::BF16, RankPlacement{1, 1, 0}), 0);
}

TEST(Lora, AddsToTheWeightsTermAndChecksTheRank) {
  HardwareConfig hw;
  hw.gpu = vramplan_test::h100();
  EngineConfig config;
  config.max_model_len = 8192;
  const ModelSpec spec = spec_from_yaml(vramplan_test::kLlama31_8B);
  const std::int64_t plain = compute_breakdown(spec, hw, config).ranks[0].weights_bytes;
  config.max_loras = 4;
  EXPECT_EQ(compute_breakdown(spec, hw, config).ranks[0].weights_bytes - plain, 335'544'320);
  config.max_lora_rank = 24;
  EXPECT_THROW(compute_breakdown(spec, hw, config), ConfigError);
}
