// Architectures of vLLM 0.33's registry mapped in issue 36 (helper q): Step-3.7-Flash
// (step3p7.py Step3p7ForConditionalGeneration), step_vl.py's Perception Encoder and
// vit_large_projector over the Step-3.5 text model. The tower counted by hand from the module
// shapes vLLM builds, the text KV bytes per token by hand from step3p5.py's attention layout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "test_support.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/model_spec.hpp"
#include "vramplan/weights.hpp"

using namespace vramplan;
using vramplan_test::config_json;
using vramplan_test::config_path;
using vramplan_test::kv_bf16;
using vramplan_test::linear;

namespace {

ModelSpec from_json(const nlohmann::json& config) {
  return model_spec_from_hf_config(config, nullptr, "config.json");
}

std::string refusal(const nlohmann::json& config) {
  return vramplan_test::spec_error_of([&] { (void)from_json(config); }).what();
}

bool has_default(const ModelSpec& spec, const std::string& line) {
  return std::find(spec.config_defaults.begin(), spec.config_defaults.end(), line) !=
         spec.config_defaults.end();
}

// step_vl.py's PerceptionEncoder at width w = 1536, 16 heads, 47 layers, patch 14 over 728 px
// (52 x 52 patches), mlp_ratio 8960 / 1536 (the remote class's default: int(1536 x 5.8333...) =
// 8,960), no class token, learned positions, ln_pre on and ln_post off (the class defaults),
// layer scales (ls_init_value 0.1). conv1: an unbiased [1536, 3, 14, 14] convolution; the
// position table 52^2 x 1536; ln_pre weight + bias. A block: ln_1 / ln_2 (2 x 2 w), the fused
// biased qkv [3 w, w], the biased out_proj [w, w], ls_1 / ls_2 gammas (2 w), the biased fc1
// [8960, w] and fc2 [w, 8960]. vit_downsampler1: a biased 3 x 3 convolution w -> 2 w;
// vit_downsampler2: 2 w -> 4 w; vit_large_projector: [4 w -> text 4096], no bias
// (projector_bias false).
constexpr std::int64_t kW = 1536;
constexpr std::int64_t kMlp = 8960;

std::int64_t pe_block(bool layer_scales) {
  return kW * 2 * 2 + linear(kW, 3 * kW, true) + linear(kW, kW, true) +
         (layer_scales ? 2 * kW : 0) + linear(kW, kMlp, true) + linear(kMlp, kW, true);
}

std::int64_t pe_vit(bool layer_scales) {
  return kW * 3 * 14 * 14 + kW * 52 * 52 + 2 * kW + 47 * pe_block(layer_scales);
}

std::int64_t pe_downsamplers() {
  return linear(kW * 3 * 3, 2 * kW, true) + linear(2 * kW * 3 * 3, 4 * kW, true);
}

constexpr std::int64_t kProjector = 4 * kW * 4096;

}  // namespace

// The tower: a block 6,144 + 7,082,496 + 2,360,832 + 3,072 + 13,771,520 + 13,764,096 =
// 36,988,160; the ViT 903,168 + 4,153,344 + 3,072 + 47 x 36,988,160 = 1,743,503,104; the
// downsamplers 42,470,400 + 169,875,456 = 212,345,856; the projector 25,165,824: 1,981,014,784.
// The text model is Step-3.5-Flash's (the text_config holds its layout, which TensorRT-LLM's
// checkpoint test asserts for Step-3.7-Flash): 196,956,130,368 as
// test_registry_families_e.cpp derives it. vLLM's recipe card: "a 198B-parameter ... model
// that combines a 196B-parameter language backbone with a 1.8B-parameter vision encoder"; as for
// Step-3.5, the 196B backbone is the decoder without embedding and lm_head (195,900,214,336),
// and with the tower 197,881,229,120: 198B at three figures. (Its "1.8B" encoder is not this
// tower's 1.98B nor the ViT's 1.74B at two figures: a rounded name, not asserted.)
TEST(RegistryFamiliesQ, Step37FlashTowerAndTextByHand) {
  const ModelSpec spec = load_hf_config(config_path("stepfun-ai__Step-3.7-Flash.json"));
  EXPECT_EQ(spec.model_type, "step3p5");
  EXPECT_EQ(pe_block(true), 36988160);
  EXPECT_EQ(pe_vit(true), 1743503104);
  EXPECT_EQ(pe_downsamplers(), 212345856);
  const std::int64_t tower = pe_vit(true) + pe_downsamplers() + kProjector;
  EXPECT_EQ(tower, 1981014784);
  EXPECT_EQ(spec.vision.num_parameters, tower);
  EXPECT_TRUE(
      has_default(spec, "vision_config.use_ln_pre = true (StepRoboticsVisionEncoderConfig)"));
  EXPECT_TRUE(has_default(
      spec, "vision_config.mlp_ratio = 5.833333333333333 (StepRoboticsVisionEncoderConfig)"));

  const std::int64_t text = 196956130368;
  EXPECT_EQ(parameter_count(spec), text + tower);
  const std::int64_t embeddings = 2 * std::int64_t{128896} * 4096;
  vramplan_test::expect_published(text - embeddings + tower, 198e9, 3);
}

// KV: 45 layers (layer_types' 48 entries less the 3 MTP ones), 8 KV heads (num_attention_groups)
// x 128 on every layer: 2 x 8 x 128 x 2 B = 4,096 B a layer, 184,320 B a token; TP 8: one KV
// head a rank, 23,040. Full attention on layers 0, 4, ..., 44, a 512-token window elsewhere.
TEST(RegistryFamiliesQ, Step37FlashKvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path("stepfun-ai__Step-3.7-Flash.json"));
  ASSERT_EQ(spec.layers.size(), 45U);
  for (std::size_t i = 0; i < spec.layers.size(); ++i) {
    const bool full = i % 4 == 0;
    EXPECT_EQ(spec.layers[i].attention, full ? AttentionKind::Full : AttentionKind::SlidingWindow);
    EXPECT_EQ(spec.layers[i].num_attention_heads, full ? 64 : 96);
    EXPECT_EQ(spec.layers[i].num_key_value_heads, 8);
  }
  EXPECT_EQ(spec.layers[1].sliding_window, 512);
  EXPECT_EQ(kv_bf16(spec), 45 * 2 * 8 * 128 * 2);
  EXPECT_EQ(kv_bf16(spec, 8), 45 * 2 * 1 * 128 * 2);
}

// The flags the tower reads, each by the module it adds or drops: a class token (a vector and a
// position row), ln_post, a projector bias, layer scales (ls_init_value null: Identity).
TEST(RegistryFamiliesQ, PerceptionEncoderFlagsByHand) {
  nlohmann::json config = config_json("stepfun-ai__Step-3.7-Flash.json");
  const std::int64_t base = from_json(config).vision.num_parameters;
  nlohmann::json cls = config;
  cls["vision_config"]["use_cls_token"] = true;
  EXPECT_EQ(from_json(cls).vision.num_parameters, base + 2 * kW);
  nlohmann::json misspelt = config;  // the remote class reads ues_cls_token without use_cls_token
  misspelt["vision_config"].erase("use_cls_token");
  misspelt["vision_config"]["ues_cls_token"] = true;
  EXPECT_EQ(from_json(misspelt).vision.num_parameters, base + 2 * kW);
  nlohmann::json post = config;
  post["vision_config"]["use_ln_post"] = true;
  EXPECT_EQ(from_json(post).vision.num_parameters, base + 2 * kW);
  nlohmann::json bias = config;
  bias["projector_bias"] = true;
  EXPECT_EQ(from_json(bias).vision.num_parameters, base + 4096);
  nlohmann::json no_scales = config;
  no_scales["vision_config"]["ls_init_value"] = nullptr;
  EXPECT_EQ(from_json(no_scales).vision.num_parameters,
            pe_vit(false) + pe_downsamplers() + kProjector);
  nlohmann::json no_posemb = config;
  no_posemb["vision_config"]["use_abs_posemb"] = false;
  EXPECT_EQ(from_json(no_posemb).vision.num_parameters, base - kW * 52 * 52);
}

// What step_vl.py refuses or cannot build is refused by name: use_rope2d false (it raises),
// heads that do not divide the width, a missing vision_config.
TEST(RegistryFamiliesQ, PerceptionEncoderRefusesByName) {
  nlohmann::json config = config_json("stepfun-ai__Step-3.7-Flash.json");
  nlohmann::json rope = config;
  rope["vision_config"]["use_rope2d"] = false;
  EXPECT_NE(refusal(rope).find("vision_config.use_rope2d"), std::string::npos);
  nlohmann::json heads = config;
  heads["vision_config"]["heads"] = 7;
  EXPECT_NE(refusal(heads).find("vision_config.heads"), std::string::npos);
  nlohmann::json ratio = config;
  ratio["vision_config"]["mlp_ratio"] = -1.0;
  EXPECT_NE(refusal(ratio).find("vision_config.mlp_ratio"), std::string::npos);
  nlohmann::json missing = config;
  missing.erase("vision_config");
  EXPECT_NE(refusal(missing).find("vision_config"), std::string::npos);
}
