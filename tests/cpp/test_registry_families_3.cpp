// More of vLLM 0.33's text registry, each family as its model file builds it: Sarvam MoE
// (sarvam.py's SarvamMoEForCausalLM, bailing_moe.py's layers) and Param2 (param2moe.py). KV bytes
// per token and parameters derived by hand from those files, and checked against the published
// count.
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "test_support.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/kv_cache.hpp"
#include "vramplan/model_spec.hpp"

using namespace vramplan;
using vramplan_test::config_json;
using vramplan_test::config_path;
using vramplan_test::kv_bf16;

// Sarvam-30B: 19 layers of 4 KV heads x 64: 2 x 4 x 64 x 2 B = 1,024 B a layer, 19,456 B a
// token; TP 4: one KV head a rank, 4,864.
TEST(RegistryFamilies3, SarvamMoeKvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path("sarvamai__sarvam-30b.json"));
  EXPECT_EQ(spec.model_type, "sarvam_moe");
  EXPECT_EQ(spec.layers[0].head_dim, 64);
  EXPECT_FALSE(spec.layers[0].moe);  // first_k_dense_replace 1
  EXPECT_TRUE(spec.layers[1].moe);
  EXPECT_EQ(kv_bf16(spec), 19456);
  EXPECT_EQ(kv_bf16(spec, 4), 4864);
}

// Parameters (h 4,096, V 262,144 untied): word_embeddings + lm_head 2 x 1,073,741,824 =
// 2,147,483,648. Per layer: query_key_value (64 + 2 x 4) x 64 x 4,096 = 18,874,368, dense 4,096^2
// = 16,777,216 (no biases), q/k norm weights 2 x 64, two RMSNorms 8,192: 35,659,904. Layer 0's
// dense MLP 3 x 4,096 x 8,192 = 100,663,296. Layers 1-18: 128 experts x 3 x 4,096 x 1,024 =
// 1,610,612,736, one shared MLP 3 x 4,096 x 1,024 = 12,582,912, router 128 x 4,096 = 524,288 and
// its bias 128: 1,623,720,064. 2,147,483,648 + 19 x 35,659,904 + 100,663,296 + 18 x
// 1,623,720,064 + final norm 4,096 = 32,152,650,368, the published 32.15 B. Active (6 experts,
// 75,497,472 a layer): 4,520,575,616, the published 4.52 B.
TEST(RegistryFamilies3, SarvamMoeParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path("sarvamai__sarvam-30b.json"));
  EXPECT_FALSE(spec.qkv_bias);
  EXPECT_FALSE(spec.o_proj_bias);
  EXPECT_TRUE(spec.qk_norm);
  EXPECT_EQ(spec.moe.num_shared_experts, 1);
  EXPECT_EQ(spec.moe.shared_expert_intermediate_size, 1024);
  EXPECT_TRUE(spec.moe.router_bias);
  EXPECT_EQ(parameter_count(spec), std::int64_t{32152650368});
  vramplan_test::expect_published(32152650368, 32.15e9, 4);
  vramplan_test::expect_published(4520575616, 4.52e9);
}

// The remote SarvamMoEConfig's defaults fill what the config omits (no biases, q/k norm, a
// router bias), and the spec lists them; use_bias true is refused as for Ling.
TEST(RegistryFamilies3, SarvamMoeDefaultsAndRefusals) {
  const ModelSpec spec = load_hf_config(config_path("sarvamai__sarvam-30b.json"));
  bool named = false;
  for (const std::string& line : spec.config_defaults) {
    named |= line == "use_qk_norm = true (SarvamMoEConfig)";
  }
  EXPECT_TRUE(named);
  nlohmann::json config = config_json("sarvamai__sarvam-30b.json");
  config["use_bias"] = true;
  try {
    (void)model_spec_from_hf_config(config, nullptr, "sarvam-bias.json");
    ADD_FAILURE() << "use_bias planned";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("use_bias"), std::string::npos) << e.what();
  }
}

// Param2-17B-A2.4B: 21 layers of 8 KV heads x 64: 2 x 8 x 64 x 2 B = 2,048 B a layer, 43,008 B
// a token; TP 8: one KV head a rank, 5,376.
TEST(RegistryFamilies3, Param2MoeKvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path("bharatgenai__Param2-17B-A2.4B-Thinking.json"));
  EXPECT_EQ(spec.model_type, "param2moe");
  EXPECT_FALSE(spec.layers[0].moe);  // first_k_dense_replace 1
  EXPECT_TRUE(spec.layers[20].moe);
  EXPECT_EQ(kv_bf16(spec), 43008);
  EXPECT_EQ(kv_bf16(spec, 8), 5376);
}

// Parameters (h 2,048, V 128,008 tied): embed 262,160,384. Per layer: q and o 2 x 2,048^2 =
// 8,388,608, k/v 2 x 512 x 2,048 = 2,097,152, q/k norms 2 x 64, two RMSNorms 4,096: 10,489,984.
// Layer 0's dense MLP 3 x 2,048 x 9,216 = 56,623,104. Layers 1-20: 64 experts x 3 x 2,048 x
// 2,048 = 805,306,368, one shared MLP of 4,096 in total (moe_shared_expert_intermediate_size,
// not times num_shared_experts 2) 3 x 2,048 x 4,096 = 25,165,824, router 131,072 and its bias
// 64: 830,603,328. 262,160,384 + 21 x 10,489,984 + 56,623,104 + 20 x 830,603,328 + final norm
// 2,048 = 17,151,141,760: the model's name, 17B.
TEST(RegistryFamilies3, Param2MoeParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path("bharatgenai__Param2-17B-A2.4B-Thinking.json"));
  EXPECT_TRUE(spec.tie_word_embeddings);
  EXPECT_TRUE(spec.qk_norm);
  EXPECT_FALSE(spec.qkv_bias);
  EXPECT_FALSE(spec.o_proj_bias);
  EXPECT_EQ(spec.moe.num_shared_experts, 1);
  EXPECT_EQ(spec.moe.shared_expert_intermediate_size, 4096);
  EXPECT_TRUE(spec.moe.router_bias);
  EXPECT_EQ(parameter_count(spec), std::int64_t{17151141760});
  vramplan_test::expect_published(17151141760, 17e9, 2);
}

// Without moe_shared_expert_intermediate_size the shared MLP is moe_intermediate_size x
// num_shared_experts: 2 x 2,048 = 4,096 again; use_bias biases o_proj (2,048 a layer, 21 layers
// 43,008 more) and use_qkv_bias q/k/v (2,048 + 2 x 512 a layer: 64,512 more).
TEST(RegistryFamilies3, Param2MoeKeys) {
  nlohmann::json config = config_json("bharatgenai__Param2-17B-A2.4B-Thinking.json");
  config.erase("moe_shared_expert_intermediate_size");
  EXPECT_EQ(parameter_count(model_spec_from_hf_config(config, nullptr, "p2.json")),
            std::int64_t{17151141760});
  config["use_bias"] = true;
  config["use_qkv_bias"] = true;
  EXPECT_EQ(parameter_count(model_spec_from_hf_config(config, nullptr, "p2-bias.json")),
            std::int64_t{17151141760 + 43008 + 64512});
}
