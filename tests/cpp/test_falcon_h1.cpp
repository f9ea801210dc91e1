// Falcon-H1 as vLLM 0.33 builds it (vllm/model_executor/models/falcon_h1.py): every layer runs
// attention and a MambaMixer2 side by side on input_layernorm's output, then pre_ff_layernorm
// and a gated MLP. vLLM's hybrid KV-cache manager registers the layer's attention and its mixer
// as two layers: each decoder layer holds a KV cache and a Mamba state. KV bytes, states and
// parameters derived by hand from that file and layers/mamba/mamba_mixer2.py.
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
using vramplan_test::kv_bf16;

namespace {

const char* kConfig = "tiiuae__Falcon-H1-0.5B-Instruct.json";

void expect_refused_naming(const nlohmann::json& config, const std::string& key) {
  try {
    (void)model_spec_from_hf_config(config, nullptr, "falcon-h1.json");
    ADD_FAILURE() << "expected a refusal naming " << key;
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
  }
}

}  // namespace

// Falcon-H1-0.5B: 36 layers, each with attention of 2 KV heads x 64: 2 x 2 x 64 x 2 B = 512 B
// a layer, 18,432 B a token. TP 2: one KV head a rank, 9,216.
TEST(FalconH1, KvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path(kConfig));
  EXPECT_EQ(spec.model_type, "falcon_h1");
  EXPECT_EQ(spec.num_hidden_layers, 36);
  for (const LayerSpec& layer : spec.layers) {
    EXPECT_EQ(layer.attention, AttentionKind::Full);
    EXPECT_EQ(layer.beside, AttentionKind::Mamba);
    EXPECT_TRUE(layer.mlp);
  }
  EXPECT_EQ(kv_bf16(spec), 18432);
  EXPECT_EQ(kv_bf16(spec, 2), 9216);
}

// Each layer's Mamba2 state (MambaStateShapeCalculator.mamba2_state_shape), bf16 (the states
// take the model dtype): conv (1,536 + 2 x 1 x 128) x (4 - 1) x 2 B = 10,752; ssm 24 x 64 x
// 128 x 2 B = 393,216; 403,968 B. TP 2: the one group is padded to two (extra_groups_for_head_
// shards), conv (1,536 + 2 x 2 x 128) / 2 x 3 x 2 = 6,144, ssm 12 x 64 x 128 x 2 = 196,608:
// 202,752. The attention page (512 B a token) grows to 16 x ceil(403,968 / (16 x 512))
// = 800 tokens, 409,600 B. Groups: 36 attention and 36 Mamba layers, one group of each.
TEST(FalconH1, EveryLayerHoldsKvAndAMambaStateByHand) {
  const ModelSpec spec = load_hf_config(config_path(kConfig));
  const LayerSpec mixer = beside_cache(spec.layers[0]);
  EXPECT_EQ(mixer.attention, AttentionKind::Mamba);
  EXPECT_EQ(mamba_state_bytes(spec, mixer, bf16_kv_options()), 403968);
  EXPECT_EQ(mamba_state_bytes(spec, mixer, bf16_kv_options(2)), 202752);
  const KvGeometry geometry = kv_geometry(spec, bf16_kv_options());
  EXPECT_EQ(geometry.state_bytes, 403968);
  EXPECT_EQ(geometry.group_size, 36);
  ASSERT_EQ(geometry.groups.size(), 2U);
  EXPECT_EQ(geometry.groups[0].num_layers + geometry.groups[1].num_layers, 72);
  const KvPage page = kv_page(geometry, 16, 2);
  EXPECT_EQ(page.block_size, 800);
  EXPECT_EQ(page.page_bytes, 409600);
}

// Parameters (h 1,024, vocab 32,784, untied): embed + lm_head 2 x 33,570,816 = 67,141,632.
// Per layer: attention q and o 2 x 1,024 x 512 + k/v 2 x 1,024 x 128 = 1,310,720 (no biases);
// Mamba2 in_proj (2 x 1,536 + 2 x 128 + 24) x 1,024 = 3,432,448, conv1d weight and bias 1,792
// x 5 = 8,960, A_log, D, dt_bias 3 x 24 = 72 (no gated-norm weight: mamba_rms_norm false),
// out_proj 1,536 x 1,024 = 1,572,864: 5,014,344; MLP 3 x 1,024 x 2,048 = 6,291,456; two
// RMSNorms 2,048: 12,618,568. 36 layers 454,268,448; final norm 1,024: 521,411,104. A
// continued-pretraining of Falcon-H1-0.5B-Base (same layout) publishes 521 M parameters.
TEST(FalconH1, ParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path(kConfig));
  EXPECT_FALSE(spec.qkv_bias);
  EXPECT_FALSE(spec.mlp_bias);
  EXPECT_FALSE(spec.mamba.gated_norm);
  EXPECT_EQ(spec.mamba.num_heads * spec.mamba.head_dim, 1536);
  EXPECT_EQ(parameter_count(spec), std::int64_t{521411104});
  vramplan_test::expect_published(521411104, 521e6);
}

// mamba_rms_norm true registers the gated norm's weight [1,536] a layer: 36 x 1,536 = 55,296
// more. mamba_d_ssm written null takes mamba_expand x hidden_size = 2,048: with mamba_d_head
// "auto" 2,048 / 24 is no head size, so 32 heads of 64: in_proj (2 x 2,048 + 256 + 32) x 1,024
// = 4,489,216, conv 2,304 x 5 = 11,520, A_log / D / dt_bias 96, out_proj 2,097,152: 6,597,984
// a layer, 1,583,640 more than 5,014,344; 36 x 1,583,640 = 57,011,040 more.
TEST(FalconH1, MambaKeysByHand) {
  nlohmann::json config = config_json(kConfig);
  config["mamba_rms_norm"] = true;
  EXPECT_EQ(parameter_count(model_spec_from_hf_config(config, nullptr, "norm.json")),
            std::int64_t{521411104 + 55296});
  config = config_json(kConfig);
  config["mamba_d_ssm"] = nullptr;
  config["mamba_n_heads"] = 32;
  config["mamba_d_head"] = "auto";
  const ModelSpec wide = model_spec_from_hf_config(config, nullptr, "wide.json");
  EXPECT_EQ(wide.mamba.head_dim, 64);
  EXPECT_EQ(parameter_count(wide), std::int64_t{521411104 + 57011040});
}

// What falcon_h1.py does not build, or the spec does not hold, is refused by the key's name.
TEST(FalconH1, UnmodelledKeysAreRefusedByName) {
  nlohmann::json config = config_json(kConfig);
  config["attn_layer_indices"] = {0, 2};
  expect_refused_naming(config, "attn_layer_indices");
  config = config_json(kConfig);
  config["mamba_proj_bias"] = true;
  expect_refused_naming(config, "mamba_proj_bias");
  config = config_json(kConfig);
  config["mamba_conv_bias"] = false;
  expect_refused_naming(config, "mamba_conv_bias");
  config = config_json(kConfig);
  config["mamba_d_head"] = 60;
  expect_refused_naming(config, "mamba_d_head");
}
