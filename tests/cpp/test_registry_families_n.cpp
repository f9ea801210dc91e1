// Architectures of vLLM 0.33's registry mapped in issue 36 (helper n): Nemotron 3 Nano Omni
// (nano_nemotron_vl.py's NemotronH_Nano_VL_V2 class under the NemotronH_Nano_Omni_Reasoning_V3
// architecture). The RADIO tower, mlp1, the Parakeet sound encoder and the nemotron_h text model
// counted by hand from the module shapes vLLM builds; the state and KV bytes by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
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
using vramplan_test::linear;
using vramplan_test::spec_error_of;

namespace {

constexpr const char* kOmni = "nvidia__Nemotron-3-Nano-Omni-30B-A3B-Reasoning-BF16.json";

bool has_default(const ModelSpec& spec, const std::string& line) {
  return std::find(spec.config_defaults.begin(), spec.config_defaults.end(), line) !=
         spec.config_defaults.end();
}

// vLLM 0.33's RADIO tower (radio.py RadioModel) for C-RADIOv4-H as nano_nemotron_vl.py builds
// it: args.model vit_huge_patch16_224 is (1280 wide, 32 deep, MLP 5120) in RadioConfig's
// VIT_TIMM_DIM_BY_NAME. Patch 16: an unbiased embedder [3 x 16 x 16 -> 1280]; T = 2
// (video_temporal_patch_size) with separate_video_embedder: an unbiased [3 x 2 x 16 x 16 ->
// 1280]. cpe_max_size 2048: round(2048 / 16) = 128 rows and columns, 16,384 positions. Four
// distinct teacher names under cls_token_per_teacher: 4 class tokens, register_multiple 10:
// 10 - 4 % 10 = 6 registers. A block: two LayerNorms (weight + bias), qkv [3840, 1280] + bias
// (qkv_bias, RadioConfig's default true), proj [1280, 1280] + bias, fc1 / fc2 of 5120 with
// biases, ls1 and ls2 [1280]. No final norm.
std::int64_t c_radio_v4_h(std::int64_t temporal) {
  const std::int64_t w = 1280;
  const std::int64_t block = 2 * 2 * w + linear(w, 3 * w, true) + linear(w, w, true) +
                             linear(w, 5120, true) + linear(5120, w, true) + 2 * w;
  const std::int64_t embedders =
      linear(3 * 16 * 16, w, false) + (temporal > 1 ? linear(3 * temporal * 16 * 16, w, false) : 0);
  return embedders + 128 * 128 * w + (4 + 6) * w + 32 * block;
}

// mlp1 (nano_nemotron_vl.py): pixel shuffle at downsample_ratio 0.5 folds 2 x 2 patches: an
// RMSNorm [1280 x 4 = 5120], an unbiased [5120 -> 20480] (projector_hidden_size), ReLU^2 and an
// unbiased [20480 -> 2688] (the text width). No vision_final_layernorm: llm_config has no
// num_nextn_predict_layers.
std::int64_t mlp1() { return 5120 + linear(5120, 20480, false) + linear(20480, 2688, false); }

// ProjectedParakeet (parakeet.py) over sound_config: transformers 5.20's ParakeetEncoder with
// attention_bias forced false. d 1024, 8 heads of 128, 24 blocks, FFN 4096, depthwise kernel 9,
// convolution_bias false. Subsampling (factor 8: log2 = 3 stride-2 stages, channels 256,
// kernel 3): a biased Conv2d 1 -> 256 (3 x 3), two pairs of a biased depthwise 3 x 3 and a
// biased pointwise 256 x 256, then a biased linear [256 x (128 mel / 2^3 = 16) -> 1024]. A
// block: two feed-forwards [1024 -> 4096 -> 1024] unbiased; q, k, v, o and relative_k_proj
// [1024, 1024] unbiased, bias_u and bias_v [8, 128]; the convolution module's pointwise
// [2048, 1024], depthwise [1024, 9], BatchNorm weight + bias, pointwise [1024, 1024]; five
// LayerNorms. The projection: RMSNorm [1024], [1024 -> 4096] and [4096 -> 2688], unbiased
// (projection_bias false).
std::int64_t parakeet_encoder() {
  const std::int64_t d = 1024;
  const std::int64_t c = 256;
  const std::int64_t subsampling =
      (c * 9 + c) + 2 * ((c * 9 + c) + linear(c, c, true)) + linear(c * 16, d, true);
  const std::int64_t feed_forward = linear(d, 4096, false) + linear(4096, d, false);
  const std::int64_t attention = 5 * linear(d, d, false) + 2 * 8 * 128;
  const std::int64_t convolution = 2 * d * d + d * 9 + 2 * d + d * d;
  const std::int64_t block = 2 * feed_forward + attention + convolution + 5 * 2 * d;
  return subsampling + 24 * block;
}
std::int64_t parakeet_projection() {
  return 1024 + linear(1024, 4096, false) + linear(4096, 2688, false);
}

// Nemotron 3 Nano 30B-A3B's text model (llm_config, hybrid_override_pattern 23 M, 23 E, 6 *):
// Mamba2 64 heads x 64, 8 groups, state 128, conv 4; attention 32 query / 2 KV heads x 128;
// MoE 128 ReLU^2 experts of 1856, a shared expert of 3712, a router with a correction bias;
// untied 131,072-token table and head. Nemotron-3-Nano's published total is 31.6 B
// (tests/cpp/test_architectures.cpp derives 31,577,940,288 from its own config.json).
std::int64_t nemotron3_nano_text() {
  const std::int64_t h = 2688;
  const std::int64_t inner = 64 * 64;
  const std::int64_t conv = inner + 2 * 8 * 128;
  const std::int64_t mamba =
      (2 * inner + 2 * 8 * 128 + 64) * h + conv * 4 + conv + 3 * 64 + inner + h * inner + h;
  const std::int64_t attention = h * 32 * 128 + 2 * h * 2 * 128 + 32 * 128 * h + h;
  const std::int64_t moe = 128 * h + 128 + 128 * 2 * 1856 * h + 2 * 3712 * h + h;
  return 2 * std::int64_t{131072} * h + h + 23 * mamba + 6 * attention + 23 * moe;
}

nlohmann::json omni_with(const char* section, const char* key, const nlohmann::json& value) {
  auto config = config_json(kOmni);
  config[section][key] = value;
  return config;
}

std::string refusal(const nlohmann::json& config) {
  return spec_error_of([&] { (void)model_spec_from_hf_config(config, nullptr, "<omni>"); }).what();
}

}  // namespace

// Nemotron-3-Nano-Omni-30B-A3B-Reasoning-BF16: the towers and the text model by hand.
TEST(RegistryFamiliesN, NemotronNanoOmniParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path(kOmni));
  const std::int64_t text = nemotron3_nano_text();
  vramplan_test::expect_published(text, 31.6e9);  // Nemotron-3-Nano-30B-A3B's card: 31.6 B
  const std::int64_t vision = c_radio_v4_h(2) + mlp1();
  const std::int64_t audio = parakeet_encoder() + parakeet_projection();
  EXPECT_EQ(spec.vision.num_parameters, vision + audio);
  EXPECT_EQ(spec.vision.audio_parameters, audio);
  EXPECT_EQ(parameter_count(spec), text + vision + audio);
  // The Omni card names its encoders Parakeet-TDT-0.6B-v2 and C-RADIOv4-H (a ViT-H/16):
  // 608,879,616 and 653,693,440 here (the latter with vLLM's layer scales, 81,920, which the
  // checkpoint does not store); its "BF16 (62 GB)" is near 33,015,631,680 x 2 B = 61.5 GiB.
  vramplan_test::expect_published(parakeet_encoder(), 0.6e9, 1);
  EXPECT_TRUE(has_default(spec, "vision_config.args.qkv_bias = true (RadioConfig)"));
}

// Six attention layers of 2 KV heads x 128: 6 x 2 x 2 x 128 x 2 B = 6,144 B a token. The
// Mamba2 layers keep a conv state of (4 - 1) x (4096 + 2 x 8 x 128) = 18,432 elements and an
// SSM state of 64 x 64 x 128 = 524,288. vLLM 0.33 applies Nemotron-H's float32 SSM default
// (NemotronHNanoVLV2Config) only to the NemotronH_Nano_VL_V2 architecture name: this
// checkpoint's NemotronH_Nano_Omni_Reasoning_V3 keeps mamba_ssm_cache_dtype auto, the conv
// state's bf16: (18,432 + 524,288) x 2 B = 1,085,440 B a slot; under NemotronH_Nano_VL_V2,
// 18,432 x 2 + 524,288 x 4 = 2,134,016 B.
TEST(RegistryFamiliesN, NemotronNanoOmniStateAndKvByHand) {
  const ModelSpec spec = load_hf_config(config_path(kOmni));
  EXPECT_EQ(kv_bf16(spec), 6 * 2 * 2 * 128 * 2);
  ASSERT_EQ(spec.layers.size(), 52U);
  const auto mamba = std::find_if(spec.layers.begin(), spec.layers.end(), [](const LayerSpec& l) {
    return l.attention == AttentionKind::Mamba;
  });
  ASSERT_NE(mamba, spec.layers.end());
  EXPECT_FALSE(spec.mamba.ssm_state_dtype.has_value());
  EXPECT_EQ(mamba_state_bytes(spec, *mamba, bf16_kv_options()), (18432 + 524288) * 2);

  auto v2 = config_json(kOmni);
  v2["architectures"] = nlohmann::json::array({"NemotronH_Nano_VL_V2"});
  const ModelSpec f32 = model_spec_from_hf_config(v2, nullptr, "<omni as v2>");
  EXPECT_EQ(mamba_state_bytes(f32, *mamba, bf16_kv_options()), 18432 * 2 + 524288 * 4);
}

// vLLM builds no sound encoder without sound_config, no video embedder at
// video_temporal_patch_size 1, one class token without cls_token_per_teacher (1 + 10 - 1
// registers: 10 tokens still), and vision_final_layernorm only under MTP.
TEST(RegistryFamiliesN, NemotronNanoOmniOptionalParts) {
  auto no_sound = config_json(kOmni);
  no_sound.erase("sound_config");
  const ModelSpec vision_only = model_spec_from_hf_config(no_sound, nullptr, "<omni>");
  EXPECT_EQ(vision_only.vision.num_parameters, c_radio_v4_h(2) + mlp1());

  auto image_only = no_sound;
  image_only["vision_config"].erase("video_temporal_patch_size");
  const ModelSpec image = model_spec_from_hf_config(image_only, nullptr, "<omni>");
  EXPECT_EQ(image.vision.num_parameters, c_radio_v4_h(1) + mlp1());
  EXPECT_TRUE(has_default(
      image, "vision_config.video_temporal_patch_size = 1 (NemotronH_Nano_VL_V2 vision_config)"));

  auto one_cls = no_sound;
  one_cls["vision_config"]["args"]["cls_token_per_teacher"] = false;
  const ModelSpec single = model_spec_from_hf_config(one_cls, nullptr, "<omni>");
  EXPECT_EQ(single.vision.num_parameters, c_radio_v4_h(2) + mlp1());
  one_cls["vision_config"]["args"].erase("register_multiple");  // None: no registers
  const ModelSpec bare = model_spec_from_hf_config(one_cls, nullptr, "<omni>");
  EXPECT_EQ(bare.vision.num_parameters, c_radio_v4_h(2) + mlp1() - 9 * 1280);

  // A text model with MTP layers: vision_final_layernorm, a LayerNorm [1280] (weight + bias).
  auto mtp = no_sound;
  mtp["llm_config"]["num_nextn_predict_layers"] = 1;
  const ModelSpec with_mtp = model_spec_from_hf_config(mtp, nullptr, "<omni>");
  EXPECT_EQ(with_mtp.vision.num_parameters, c_radio_v4_h(2) + mlp1() + 2 * 1280);
}

// What vLLM cannot build, or what the remote config classes leave unknown, is refused by name.
TEST(RegistryFamiliesN, NemotronNanoOmniRefusesByName) {
  auto args = config_json(kOmni);
  args["vision_config"]["args"]["model"] = "vit_giant_patch14_224";
  std::string message = refusal(args);
  EXPECT_NE(message.find("vision_config.args.model"), std::string::npos) << message;
  EXPECT_NE(message.find("vit_huge_patch16_224"), std::string::npos) << message;

  auto sound = config_json(kOmni);
  sound["sound_config"].erase("subsampling_conv_channels");
  message = refusal(sound);
  EXPECT_NE(message.find("sound_config.subsampling_conv_channels"), std::string::npos) << message;

  auto ratio = config_json(kOmni);
  ratio.erase("downsample_ratio");
  message = refusal(ratio);
  EXPECT_NE(message.find("downsample_ratio"), std::string::npos) << message;

  message = refusal(omni_with("vision_config", "separate_video_embedder", false));
  EXPECT_NE(message.find("separate_video_embedder"), std::string::npos) << message;

  message = refusal(omni_with("sound_config", "attention_bias", true));
  EXPECT_NE(message.find("sound_config.attention_bias"), std::string::npos) << message;

  auto duplicate = config_json(kOmni);
  duplicate["vision_config"]["args"]["patch_size"] = 16;
  message = refusal(duplicate);
  EXPECT_NE(message.find("vision_config.args.patch_size"), std::string::npos) << message;
}
