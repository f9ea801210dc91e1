// Arcee Trinity (afmoe; AfmoeForCausalLM) as vLLM 0.33's afmoe.py builds it: attention without
// biases with a gate_proj of heads x head_dim on its output and per-head q/k RMSNorms, sliding
// and full layers per layer_types (AfmoeConfig: full where (i + 1) % global_attn_every_n_layers
// == 0 when the config omits it), four RMSNorms a layer, a gated MLP below num_dense_layers and
// AfmoeMoE after (router, expert_bias, routed experts, one shared MLP).
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
using vramplan_test::bf16_kv_options;
using vramplan_test::config_json;
using vramplan_test::config_path;

namespace {

constexpr const char* kTrinityNano = "arcee-ai__Trinity-Nano-Preview.json";

}  // namespace

// Trinity-Nano-Preview names no layer_types: global_attn_every_n_layers 4 puts full attention on
// layers 3, 7, ..., 55 (14) and a 2,048-token window on the other 42; 2 KV heads of 128: 2 x 2
// x 128 x 2 B = 1,024 B a layer and token, 56 x 1,024 = 57,344 B a token.
TEST(Afmoe, TrinityNanoLayersAndKvBytesByHand) {
  const ModelSpec spec = load_hf_config(config_path(kTrinityNano));
  EXPECT_EQ(spec.model_type, "afmoe");
  ASSERT_EQ(spec.layers.size(), 56U);
  int full = 0;
  for (const LayerSpec& layer : spec.layers) full += layer.attention == AttentionKind::Full ? 1 : 0;
  EXPECT_EQ(full, 14);
  EXPECT_EQ(spec.layers[3].attention, AttentionKind::Full);
  EXPECT_EQ(spec.layers[0].attention, AttentionKind::SlidingWindow);
  EXPECT_EQ(spec.layers[0].sliding_window, 2048);
  EXPECT_FALSE(spec.layers[1].moe);  // num_dense_layers 2
  EXPECT_TRUE(spec.layers[2].moe);
  EXPECT_EQ(kv_bytes_per_token(spec, bf16_kv_options()), 57344);
}

// Parameters (h 1,024, V 200,192 untied): embed_tokens and lm_head 2 x 200,192 x 1,024 =
// 409,993,216; final norm 1,024. Every layer: q_proj and gate_proj 2 x 1,024 x 1,024 =
// 2,097,152; k and v 2 x 256 x 1,024 = 524,288; o_proj 1,048,576; q/k norms 256; four norms
// 4,096: 3,674,368. Layers 0-1: MLP 3 x 3,072 x 1,024 = 9,437,184. Layers 2-55: router 128 x
// 1,024 = 131,072 and its bias 128; experts 128 x 3 x 256 x 1,024 = 100,663,296; shared MLP 3 x
// 256 x 1,024 = 786,432: 101,580,928. In all 6,120,003,328, the published 6 B; with 8 of the 128
// experts 1,023,923,968 are active, the published 1 B.
TEST(Afmoe, TrinityNanoParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path(kTrinityNano));
  EXPECT_TRUE(spec.attn_output_gate);
  EXPECT_EQ(spec.norms_per_layer, 4);
  EXPECT_EQ(parameter_count(spec), std::int64_t{6120003328});
}

// A layer_types list wins over global_attn_every_n_layers; a zero cadence is a named error.
TEST(Afmoe, LayerTypesWinAndCadenceRefusal) {
  nlohmann::json config = config_json(kTrinityNano);
  nlohmann::json types = nlohmann::json::array();
  for (int i = 0; i < 56; ++i) types.push_back(i % 2 == 0 ? "full_attention" : "sliding_attention");
  config["layer_types"] = types;
  const ModelSpec listed = model_spec_from_hf_config(config, nullptr, "trinity.json");
  EXPECT_EQ(listed.layers[0].attention, AttentionKind::Full);
  EXPECT_EQ(listed.layers[3].attention, AttentionKind::SlidingWindow);
  config.erase("layer_types");
  config["global_attn_every_n_layers"] = 0;
  try {
    (void)model_spec_from_hf_config(config, nullptr, "trinity.json");
    ADD_FAILURE() << "expected a refusal";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("global_attn_every_n_layers"), std::string::npos)
        << e.what();
  }
}
