// K-EXAONE (exaone_moe; ExaoneMoeForCausalLM / ExaoneMoEForCausalLM) as vLLM 0.33's
// exaone_moe.py builds it: EXAONE-4's attention (per-head q/k RMSNorms over head_dim, sliding
// and full layers per layer_types, the full ones NoPE) in pre-norm layers of two RMSNorms; per
// mlp_layer_types a gated MLP of intermediate_size or ExaoneMoe (GateLinear router, fp32
// e_score_correction_bias, num_experts experts of moe_intermediate_size, one shared MLP of
// num_shared_experts x moe_intermediate_size).
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

constexpr const char* kKExaone = "published_values/LGAI-EXAONE__K-EXAONE-236B-A23B.json";

}  // namespace

// K-EXAONE-236B-A23B: 48 layers, every fourth (3, 7, ..., 47) full attention, the other 36
// sliding over 128 tokens; 8 KV heads of 128: 2 x 8 x 128 x 2 B = 4,096 B a layer and token,
// 48 x 4,096 = 196,608 B a token. Layer 0 is dense, layers 1-47 MoE.
TEST(ExaoneMoe, KExaoneLayersAndKvBytesByHand) {
  const ModelSpec spec = load_hf_config(config_path(kKExaone));
  EXPECT_EQ(spec.model_type, "exaone_moe");
  ASSERT_EQ(spec.layers.size(), 48U);
  EXPECT_EQ(spec.layers[3].attention, AttentionKind::Full);
  EXPECT_EQ(spec.layers[0].attention, AttentionKind::SlidingWindow);
  EXPECT_EQ(spec.layers[0].sliding_window, 128);
  EXPECT_FALSE(spec.layers[0].moe);
  EXPECT_TRUE(spec.layers[1].moe);
  EXPECT_TRUE(spec.layers[47].moe);
  EXPECT_TRUE(spec.qk_norm);
  EXPECT_TRUE(spec.moe.router_bias);
  EXPECT_EQ(kv_bytes_per_token(spec, bf16_kv_options()), 196608);
}

// Parameters (h 6,144, V 153,600 untied): embed_tokens and lm_head 2 x 153,600 x 6,144 =
// 1,887,436,800; final norm 6,144. Every layer: q and o 2 x 8,192 x 6,144 = 100,663,296; k and
// v 2 x 1,024 x 6,144 = 12,582,912; q/k norms 256; two norms 12,288. Layer 0's MLP 3 x 18,432
// x 6,144 = 339,738,624. Each of the 47 MoE layers: router 128 x 6,144 = 786,432 and its bias
// 128; experts 128 x 3 x 2,048 x 6,144 = 4,831,838,208; shared MLP 3 x 2,048 x 6,144 =
// 37,748,736: 4,870,373,504. In all 236,571,156,352, the published 236 B; with 8 of the 128
// experts 23,668,285,312 are active, the published 23 B.
TEST(ExaoneMoe, KExaoneParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path(kKExaone));
  EXPECT_FALSE(spec.tie_word_embeddings);
  EXPECT_EQ(parameter_count(spec), std::int64_t{236571156352});
}

// Without mlp_layer_types the layers below first_k_dense_replace are dense (ExaoneMoeConfig);
// a mlp_layer_types entry other than dense / sparse and per-layer sliding_windows are named
// errors.
TEST(ExaoneMoe, DenseLayersAndRefusals) {
  nlohmann::json config = config_json(kKExaone);
  config.erase("mlp_layer_types");
  config["first_k_dense_replace"] = 2;
  const ModelSpec two_dense = model_spec_from_hf_config(config, nullptr, "kexaone.json");
  EXPECT_FALSE(two_dense.layers[1].moe);
  EXPECT_TRUE(two_dense.layers[2].moe);
  nlohmann::json unknown_kind = config_json(kKExaone)["mlp_layer_types"];
  unknown_kind[5] = "moe";
  for (const auto& [key, value] :
       {std::pair<std::string, nlohmann::json>{"mlp_layer_types", unknown_kind},
        std::pair<std::string, nlohmann::json>{"sliding_windows",
                                               nlohmann::json::array({128, 0})}}) {
    nlohmann::json bad = config_json(kKExaone);
    bad[key] = value;
    try {
      (void)model_spec_from_hf_config(bad, nullptr, "kexaone.json");
      ADD_FAILURE() << "expected a refusal of " << key;
    } catch (const SpecError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
}
