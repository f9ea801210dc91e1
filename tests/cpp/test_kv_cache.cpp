// KV-cache figures against hand derivations and real vLLM log lines.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "test_support.hpp"
#include "vramplan/engine.hpp"
#include "vramplan/kv_cache.hpp"

using namespace vramplan;
using vramplan_test::kGiB;
using vramplan_test::spec_from_yaml;

TEST(KvCache, Llama31_8B_BytesPerTokenBf16) {
  const ModelSpec s = spec_from_yaml(vramplan_test::kLlama31_8B);
  KvCacheOptions o;
  // 2 (K and V) * 32 layers * 8 KV heads * 128 dims * 2 bytes.
  EXPECT_EQ(kv_bytes_per_token(s, o), 2 * 32 * 8 * 128 * 2);
  EXPECT_EQ(kv_bytes_per_token(s, o), 131072);
  o.kv_element_bytes = 1;  // fp8 KV cache
  EXPECT_EQ(kv_bytes_per_token(s, o), 65536);
}

TEST(KvCache, GqaBeyondKvHeadsReplicates) {
  const ModelSpec s = spec_from_yaml(vramplan_test::kLlama31_8B);
  KvCacheOptions o;
  o.tensor_parallel_size = 4;  // 8 heads / 4 = 2 per rank
  EXPECT_EQ(kv_bytes_per_token(s, o), 2 * 32 * 2 * 128 * 2);
  o.tensor_parallel_size = 16;  // 8 heads < 16 ranks: every rank keeps one head, not half
  EXPECT_EQ(kv_bytes_per_token(s, o), 2 * 32 * 1 * 128 * 2);
  o.tensor_parallel_size = 32;
  EXPECT_EQ(kv_bytes_per_token(s, o), 2 * 32 * 1 * 128 * 2);
}

TEST(KvCache, DeepSeekV3MlaIsNotDividedByTp) {
  const ModelSpec s = spec_from_yaml(R"(
id: test/dsv3
model_type: deepseek_v3
hidden_size: 7168
num_hidden_layers: 61
num_attention_heads: 128
intermediate_size: 18432
vocab_size: 129280
max_position_embeddings: 163840
torch_dtype: bfloat16
mla: {q_lora_rank: 1536, kv_lora_rank: 512, qk_nope_head_dim: 128, qk_rope_head_dim: 64, v_head_dim: 128}
)");
  for (int tp : {1, 2, 8, 16}) {
    KvCacheOptions o;
    o.tensor_parallel_size = tp;
    EXPECT_EQ(kv_bytes_per_token(s, o), 61 * (512 + 64) * 2) << "tp=" << tp;  // 70,272
  }
}

// Gemma-2-9B: 42 layers alternating sliding (4096) and full; 8 KV heads of 256.
static const char* kGemma2 = R"(
id: test/gemma-2-9b
model_type: gemma2
hidden_size: 3584
num_hidden_layers: 42
num_attention_heads: 16
num_key_value_heads: 8
head_dim: 256
intermediate_size: 14336
vocab_size: 256000
max_position_embeddings: 8192
tie_word_embeddings: true
torch_dtype: bfloat16
norms_per_layer: 4
sliding_window: 4096
layer_pattern: [sliding_attention, full_attention]
)";

TEST(KvCache, SlidingWindowRequestNeedAt8kAnd128k) {
  const ModelSpec s = spec_from_yaml(kGemma2);
  KvCacheOptions o;
  const KvLayout layout = kv_layout(s, o);
  ASSERT_EQ(layout.groups.size(), 2u);
  EXPECT_EQ(layout.group_size, 21);
  const std::int64_t page = 16LL * 8 * 512 * 2;  // block * heads * (K+V dims) * bytes
  EXPECT_EQ(layout.page_bytes, page);
  // 8k context, 2048 batched tokens: full group cdiv(8192,16)=512 blocks; SWA group
  // cdiv(min(4095+2048, 8192),16)+1 = 385 blocks; each block costs page * 21 layers.
  EXPECT_EQ(kv_request_bytes(layout, 8192, 2048), (512 + 385) * page * 21);
  // 128k: full grows to 8192 blocks, SWA stays capped at 385.
  EXPECT_EQ(kv_request_bytes(layout, 131072, 2048), (8192 + 385) * page * 21);
}

// A Gemma-3-12B-shaped model: 48 layers, five sliding (1024) to one full, split over five
// pipeline stages as vLLM's get_pp_indices does (9, 10, 10, 10, 9 layers).
static const char* kGemma3Shape = R"(
id: test/gemma-3-shape
model_type: gemma3_text
hidden_size: 3840
num_hidden_layers: 48
num_attention_heads: 16
num_key_value_heads: 8
head_dim: 256
intermediate_size: 15360
vocab_size: 262208
max_position_embeddings: 131072
tie_word_embeddings: true
torch_dtype: bfloat16
norms_per_layer: 4
sliding_window: 1024
layer_pattern: [sliding_attention, sliding_attention, sliding_attention, sliding_attention,
                sliding_attention, full_attention]
)";

TEST(KvCache, PipelineStageKeepsTheWholeModelsGroups) {
  // vLLM groups the layers of all stages together: 40 sliding and 8 full layers give a group
  // size of 8, so 5 sliding groups and 1 full group, each spec's layers dealt round-robin
  // (group i holds layers[i::5]). Stage 1 holds layers 9-18: full layers 11 and 17 (full
  // ordinals 1, 2) and 8 sliding layers (sliding ordinals 8-15, in groups 3,4,0,1,2,3,4,0).
  // Every group is kept on the stage; its fullest groups hold 2 layers, so its pool has 2
  // tensors, and one request takes a block in all 6 groups (a per-stage grouping would give 4
  // sliding groups and 1 full group).
  const ModelSpec s = spec_from_yaml(kGemma3Shape);
  KvCacheOptions o;
  o.layers = LayerRange{9, 19};
  const KvLayout stage = kv_layout(s, o);
  ASSERT_EQ(stage.groups.size(), 6u);
  EXPECT_EQ(stage.group_size, 2);
  std::int32_t layers = 0;
  for (const KvGroup& g : stage.groups) layers += g.num_layers;
  EXPECT_EQ(layers, 10);
  const std::int64_t page = 16LL * 8 * 512 * 2;  // block * KV heads * (K+V dims) * bf16
  // 8k context, 2048 batched tokens: full cdiv(8192,16) = 512 blocks; each sliding group
  // cdiv(min(1023+2048, 8192),16)+1 = 193; every block costs a page in each of 2 tensors.
  EXPECT_EQ(kv_request_bytes(stage, 8192, 2048), (512 + 5 * 193) * page * 2);
  // The whole model (one stage): 8 tensors, the same 6 groups.
  const KvLayout whole = kv_layout(s, KvCacheOptions{});
  EXPECT_EQ(whole.group_size, 8);
  EXPECT_EQ(whole.groups.size(), 6u);
}

// 14 sliding and 10 full layers: the group size is the smaller count (10) up to 0.11.1, the
// larger (14) when it is under 1.25 x the smaller from 0.12.0 (14 >= 12.5: still 10), and under
// 1.5 x from 0.18.0 (14 < 15: 14). At 10: 2 sliding groups (10 + 4, 6 padding layers) and 1
// full group; at 14: 1 sliding group and 1 full group (4 padding layers).
TEST(KvCache, HybridGroupSizeFollowsTheReleasesRatio) {
  std::string pattern;
  for (int i = 0; i < 24; ++i) pattern += i < 14 ? "sliding_attention, " : "full_attention, ";
  std::string yaml = kGemma3Shape;
  yaml.replace(yaml.find("num_hidden_layers: 48"), 21, "num_hidden_layers: 24");
  yaml = yaml.substr(0, yaml.find("layer_pattern:")) + "layer_pattern: [" +
         pattern.substr(0, pattern.size() - 2) + "]\n";
  const ModelSpec s = spec_from_yaml(yaml);
  HardwareConfig hw;
  hw.gpu = vramplan_test::shipped_database().gpu("H100");
  for (const auto& [version, group_size, groups, padding] :
       std::vector<std::tuple<std::string, int, std::size_t, int>>{{"0.11.1", 10, 3, 6},
                                                                   {"0.12.0", 10, 3, 6},
                                                                   {"0.17.0", 10, 3, 6},
                                                                   {"0.18.0", 14, 2, 4}}) {
    EngineConfig c;
    c.engine_version = version;
    c.max_model_len = 8192;
    const KvLayout layout = compute_breakdown(s, hw, c).ranks[0].kv_layout;
    EXPECT_EQ(layout.group_size, group_size) << version;
    EXPECT_EQ(layout.groups.size(), groups) << version;
    EXPECT_EQ(layout.padding_layers, padding) << version;
  }
  // The ratio itself: 13 full beside 12 sliding (gpt-oss-20b with an EAGLE drafter) is close
  // from 0.12.0 (13 < 15) and not before.
  KvCacheOptions o;
  std::string close = kGemma3Shape;
  close.replace(close.find("num_hidden_layers: 48"), 21, "num_hidden_layers: 25");
  pattern.clear();
  for (int i = 0; i < 25; ++i) pattern += i < 12 ? "sliding_attention, " : "full_attention, ";
  close = close.substr(0, close.find("layer_pattern:")) + "layer_pattern: [" +
          pattern.substr(0, pattern.size() - 2) + "]\n";
  const ModelSpec s2 = spec_from_yaml(close);
  o.group_size_close_ratio = 0;
  EXPECT_EQ(kv_layout(s2, o).group_size, 12);
  o.group_size_close_ratio = 1.25;
  EXPECT_EQ(kv_layout(s2, o).group_size, 13);
}

TEST(KvCache, Gemma2TokensAndConcurrencyMatchVllmLog) {
  // dev-012 (vLLM 0.19, H100): "Available KV cache memory: 54.12 GiB", "GPU KV cache size:
  // 168,880 tokens", "Maximum concurrency for 8,192 tokens per request: 20.60x".
  const ModelSpec s = spec_from_yaml(kGemma2);
  const KvLayout layout = kv_layout(s, KvCacheOptions{});
  const auto kv_bytes = static_cast<std::int64_t>(54.12 * kGiB);
  const std::int64_t blocks = kv_num_blocks(layout, kv_bytes);
  // 0.10-0.20 token formula: (num_blocks // num_groups) * block_size.
  const std::int64_t tokens = blocks / 2 * 16;  // floor division, as vLLM's
  EXPECT_NEAR(static_cast<double>(tokens), 168880.0, 16 * 2);
  const double concurrency =
      static_cast<double>(blocks) / static_cast<double>(kv_blocks_per_request(layout, 8192, 8192));
  EXPECT_NEAR(concurrency, 20.60, 0.01);
}

TEST(KvCache, Llama31_8B_H100TokensFromMeasuredKvGib) {
  // dev.jsonl Llama-3.1-8B H100 records: "Available KV cache memory: X GiB" -> tokens.
  // blocks = floor(X GiB / (16 tokens * 128 KiB)); tokens = blocks * 16. The log rounds X to
  // 0.01 GiB, i.e. +-0.005 GiB = +-2,560 blocks*16 tokens... so allow that rounding.
  const ModelSpec s = spec_from_yaml(vramplan_test::kLlama31_8B);
  struct Case {
    double kv_gib;
    int kv_element_bytes;
    int tp;
    std::int64_t tokens;
  };
  const Case cases[] = {
      {58.11, 2, 1, 476016},   // dev-021
      {58.11, 1, 1, 952032},   // dev-014 (fp8 KV)
      {64.61, 2, 1, 529248},   // dev-016 (fp8 weights)
      {63.76, 2, 2, 1044688},  // dev-025 (TP=2)
      {67.44, 2, 4, 2209792},  // dev-026 (TP=4)
  };
  for (const auto& c : cases) {
    KvCacheOptions o;
    o.kv_element_bytes = c.kv_element_bytes;
    o.tensor_parallel_size = c.tp;
    const KvLayout layout = kv_layout(s, o);
    const auto kv = static_cast<std::int64_t>(c.kv_gib * kGiB);
    const std::int64_t tokens = kv_num_blocks(layout, kv) * 16;
    const double tokens_per_gib = kGiB / static_cast<double>(kv_bytes_per_token(s, o));
    EXPECT_NEAR(static_cast<double>(tokens), static_cast<double>(c.tokens),
                0.005 * tokens_per_gib + 16)
        << c.kv_gib;
  }
}

TEST(KvCache, EstimatedMaxModelLenIsLargestFit) {
  const ModelSpec s = spec_from_yaml(vramplan_test::kLlama31_8B);
  const KvGeometry geometry = kv_geometry(s, KvCacheOptions{});
  const KvPage page = kv_page(geometry, 16, 2);
  // 1 GiB holds 8192 tokens of 128 KiB: exactly 512 blocks.
  EXPECT_EQ(kv_max_model_len_that_fits(geometry, page, 1LL << 30, 131072, 2048), 8192);
  EXPECT_EQ(kv_max_model_len_that_fits(geometry, page, (1LL << 30) - 1, 131072, 2048), 8176);
  EXPECT_EQ(kv_max_model_len_that_fits(geometry, page, 100, 131072, 2048), 0);
  // Capped at the length asked: 1 GiB holds 8192 tokens, 4000 are asked (250 blocks fit it).
  EXPECT_EQ(kv_max_model_len_that_fits(geometry, page, 1LL << 30, 4000, 2048), 4000);
  EXPECT_EQ(kv_max_model_len_that_fits(geometry, page, 1LL << 30, 8192, 2048), 8192);
  EXPECT_EQ(kv_max_model_len_that_fits(geometry, page, (1LL << 30) - 1, 8192, 2048), 8176);
}
