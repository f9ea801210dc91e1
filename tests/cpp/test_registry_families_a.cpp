// More of vLLM 0.33's registry (issue 36, helper a), each family as its model file builds it:
// Sarvam MLA (sarvam.py's SarvamMLAForCausalLM). KV bytes per token and parameters derived by
// hand from those files and checked against the published counts.
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "test_support.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/kv_cache.hpp"
#include "vramplan/model_spec.hpp"

using namespace vramplan;
using vramplan_test::config_json;
using vramplan_test::config_path;
using vramplan_test::kv_bf16;

// Sarvam-105B: sarvam.py's SarvamMLAAttention hands MultiHeadLatentAttentionWrapper an
// MLAAttention layer, whose cache spec is one latent of kv_lora_rank + qk_rope_head_dim = 512 +
// 64 = 576 elements a token (num_kv_heads 1), whatever the model_type: 32 x 576 x 2 B = 36,864 B
// a token, the same on every TP rank (the latent is not split over heads).
TEST(RegistryFamiliesA, SarvamMlaKvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path("sarvamai__sarvam-105b.json"));
  EXPECT_EQ(spec.model_type, "sarvam_mla");
  EXPECT_TRUE(spec.has_mla);
  EXPECT_EQ(spec.layers[0].attention, AttentionKind::Mla);
  EXPECT_FALSE(spec.layers[0].moe);  // first_k_dense_replace 1
  EXPECT_TRUE(spec.layers[1].moe);
  EXPECT_TRUE(spec.layers[31].moe);
  EXPECT_EQ(kv_bf16(spec), 36864);
  EXPECT_EQ(kv_bf16(spec, 8), 36864);
}

// Parameters (h 4,096, V 262,144 untied): embed + lm_head 2 x 1,073,741,824 = 2,147,483,648.
// MLA a layer (q_lora_rank null: a plain q_proj): q_proj 4,096 x 64 x 192 = 50,331,648,
// kv_a_proj_with_mqa 4,096 x 576 = 2,359,296, kv_a_layernorm 512, kv_b_proj 512 x 64 x (128 +
// 128) = 8,388,608, o_proj 64 x 128 x 4,096 = 33,554,432: 94,634,496; two RMSNorms 8,192:
// 94,642,688. Layer 0's dense MLP 3 x 4,096 x 16,384 = 201,326,592. Layers 1-31: 128 experts x
// 3 x 4,096 x 2,048 = 3,221,225,472, one shared MLP 3 x 4,096 x 2,048 = 25,165,824, router 128 x
// 4,096 = 524,288 and its fp32 bias 128: 3,246,915,712. 2,147,483,648 + 32 x 94,642,688 +
// 201,326,592 + 31 x 3,246,915,712 + final norm 4,096 = 106,031,767,424: the published 106.0 B.
// Active: 120 idle experts x 25,165,824 x 31 layers = 93,616,865,280 fewer, 12,414,902,144;
// without the two embedding tables 10,267,418,496, the published 10.3 B active.
TEST(RegistryFamiliesA, SarvamMlaParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path("sarvamai__sarvam-105b.json"));
  EXPECT_FALSE(spec.tie_word_embeddings);
  EXPECT_EQ(spec.mla.q_lora_rank, 0);
  EXPECT_EQ(spec.mla.kv_lora_rank, 512);
  EXPECT_EQ(spec.moe.num_experts, 128);
  EXPECT_EQ(spec.moe.num_shared_experts, 1);
  EXPECT_EQ(spec.moe.shared_expert_intermediate_size, 2048);
  EXPECT_TRUE(spec.moe.router_bias);
  EXPECT_EQ(parameter_count(spec), std::int64_t{106031767424});
  vramplan_test::expect_published(106031767424, 106.0e9, 4);
  vramplan_test::expect_published(10267418496, 10.3e9);
}

// sarvam.py multiplies the shared MLP's width by num_shared_experts (unlike param2moe.py):
// without moe_shared_expert_intermediate_size and with 2 shared experts it is 2 x 2,048 = 4,096,
// 3 x 4,096 x 2,048 = 25,165,824 more a MoE layer, 780,140,544 over 31; without the expert bias
// 31 x 128 = 3,968 fewer. Without num_experts vLLM builds every layer dense (3 x 4,096 x 16,384
// = 201,326,592 each).
TEST(RegistryFamiliesA, SarvamMlaKeys) {
  nlohmann::json config = config_json("sarvamai__sarvam-105b.json");
  config.erase("moe_shared_expert_intermediate_size");
  config["num_shared_experts"] = 2;
  config["moe_router_enable_expert_bias"] = false;
  EXPECT_EQ(parameter_count(model_spec_from_hf_config(config, nullptr, "s105.json")),
            std::int64_t{106031767424 + 780140544 - 3968});
  // 2,147,483,648 + 32 x (94,642,688 + 201,326,592) + 4,096 = 11,618,504,704.
  config = config_json("sarvamai__sarvam-105b.json");
  config.erase("num_experts");
  EXPECT_EQ(parameter_count(model_spec_from_hf_config(config, nullptr, "s105-dense.json")),
            std::int64_t{11618504704});
}
