// MiMo-V2-Flash (mimo_v2_flash) and MiMo-V2 (mimo_v2) as vLLM 0.33's mimo_v2.py builds them:
// hybrid_layer_pattern 1 marks a sliding layer (sliding_window_size tokens,
// swa_num_key_value_heads, a sink per query head under add_swa_attention_sink_bias), 0 a full
// layer (num_key_value_heads); K heads of head_dim, V heads of v_head_dim; moe_layer_freq 1
// marks an MoE layer (n_routed_experts behind a router with e_score_correction_bias), 0 a gated
// MLP of intermediate_size. Two RMSNorms a layer; lm_head untied.
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "test_support.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/kv_cache.hpp"
#include "vramplan/model_spec.hpp"

using namespace vramplan;
using vramplan_test::bf16_kv_options;
using vramplan_test::config_json;
using vramplan_test::config_path;

namespace {

constexpr const char* kFlash = "published_values/XiaomiMiMo__MiMo-V2-Flash.json";
constexpr const char* kPro = "published_values/XiaomiMiMo__MiMo-V2.6-Pro.json";

}  // namespace

// MiMo-V2-Flash: full attention on layers 0, 5, 11, ..., 47 (9), 39 sliding over 128 tokens.
// A full layer caches 4 KV heads of K 192 + V 128: 4 x 320 x 2 B = 2,560 B a token; a sliding
// layer 8 heads: 5,120 B. 9 x 2,560 + 39 x 5,120 = 222,720 B a token.
TEST(MiMoV2, FlashLayersAndKvBytesByHand) {
  const ModelSpec spec = load_hf_config(config_path(kFlash));
  EXPECT_EQ(spec.model_type, "mimo_v2_flash");
  ASSERT_EQ(spec.layers.size(), 48U);
  EXPECT_EQ(spec.layers[0].attention, AttentionKind::Full);
  EXPECT_EQ(spec.layers[0].num_key_value_heads, 4);
  EXPECT_EQ(spec.layers[5].attention, AttentionKind::Full);
  EXPECT_EQ(spec.layers[1].attention, AttentionKind::SlidingWindow);
  EXPECT_EQ(spec.layers[1].num_key_value_heads, 8);
  EXPECT_EQ(spec.layers[1].sliding_window, 128);
  EXPECT_EQ(spec.layers[1].head_dim, 192);
  EXPECT_EQ(spec.layers[1].head_dim_v, 128);
  EXPECT_FALSE(spec.layers[0].moe);
  EXPECT_TRUE(spec.layers[1].moe);
  EXPECT_EQ(spec.rotary_dim, 64);  // int(192 x 0.334)
  EXPECT_EQ(kv_bytes_per_token(spec, bf16_kv_options()), 222720);
}

// Parameters (h 4,096, V 152,576 untied): embed_tokens and lm_head 2 x 152,576 x 4,096 =
// 1,249,902,592; final norm 4,096. Every layer: q 64 x 192 x 4,096 = 50,331,648; o 4,096 x 64 x
// 128 = 33,554,432; two norms 8,192. Full layers' k and v 4 x (192 + 128) x 4,096 = 5,242,880;
// sliding layers' 8 x 320 x 4,096 = 10,485,760 and 64 sinks. Layer 0's MLP 3 x 16,384 x 4,096
// = 201,326,592. Each of the 47 MoE layers: router 256 x 4,096 = 1,048,576, its bias 256, experts
// 256 x 3 x 2,048 x 4,096 = 6,442,450,944. vLLM builds 308,778,780,864 in all, the published
// 309 B; the spec counts the sinks on the 9 full layers too: 9 x 64 = 576 more.
TEST(MiMoV2, FlashParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path(kFlash));
  EXPECT_FALSE(spec.tie_word_embeddings);
  EXPECT_EQ(parameter_count(spec), std::int64_t{308778780864} + std::int64_t{9} * 64);
}

// MiMo-V2.6-Pro (mimo_v2, MiMoV2ForCausalLM): 70 layers, full attention on 10 of them, 8 KV
// heads on both kinds: 8 x 320 x 2 B = 5,120 B a layer, 358,400 B a token. Parameters (h 6,144,
// V 152,576 untied): 1,874,853,888 for the two tables + 6,144; per layer q 128 x 192 x 6,144 =
// 150,994,944, k and v 8 x 320 x 6,144 = 15,728,640, o 6,144 x 128 x 128 = 100,663,296, norms
// 12,288 (sliding: + 128 sinks); layer 0's MLP 3 x 16,384 x 6,144 = 301,989,888; 69 MoE layers
// of 384 x 6,144 + 384 + 384 x 3 x 2,048 x 6,144: 14,497,874,304 each. 1,021,248,126,336 as vLLM
// builds it, + 10 x 128 sinks counted on the full layers.
TEST(MiMoV2, ProKvBytesAndParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path(kPro));
  EXPECT_EQ(spec.model_type, "mimo_v2");
  EXPECT_EQ(kv_bytes_per_token(spec, bf16_kv_options()), 358400);
  EXPECT_EQ(parameter_count(spec), std::int64_t{1021248126336} + std::int64_t{10} * 128);
}

// hybrid_layer_pattern is required and of 0 / 1 flags; sliding heads unlike the full layers'
// are refused.
TEST(MiMoV2, PatternAndHeadRefusals) {
  const std::pair<const char*, nlohmann::json> cases[] = {
      {"hybrid_layer_pattern", nullptr},
      {"hybrid_layer_pattern", nlohmann::json::array({0, 2})},
      {"swa_head_dim", 128},
  };
  for (const auto& [key, value] : cases) {
    nlohmann::json config = config_json(kFlash);
    if (value.is_null()) {
      config.erase(key);
    } else {
      config[key] = value;
    }
    try {
      (void)model_spec_from_hf_config(config, nullptr, "mimo.json");
      ADD_FAILURE() << "expected a refusal of " << key;
    } catch (const SpecError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
}
