// Architectures of vLLM 0.33's registry mapped in issue 36 (helper h): per checkpoint, the tower
// and the language model counted by hand from the module shapes vLLM builds, and the text KV
// bytes per token by hand from its attention layout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "test_support.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/model_spec.hpp"

using namespace vramplan;
using vramplan_test::config_json;
using vramplan_test::config_path;
using vramplan_test::kv_bf16;
using vramplan_test::linear;
using vramplan_test::spec_error_of;

namespace {

bool has_default(const ModelSpec& spec, const std::string& line) {
  return std::find(spec.config_defaults.begin(), spec.config_defaults.end(), line) !=
         spec.config_defaults.end();
}

// MiniCPM-Llama3-V 2.5's vision path as vLLM 0.33's minicpmv.py (MiniCPMV2_5) builds it, with
// `layers` SigLIP blocks kept. Idefics2VisionTransformer over vision_config: a biased 14 x 14
// patch convolution from 3 channels (num_channels absent: Idefics2VisionConfig's default),
// (980 / 14)^2 = 70^2 = 4900 learned positions of width 1152; per block two LayerNorms, biased
// q/k/v/out [1152, 1152] and a biased fc1 / fc2 of 4304; the post-LayerNorm. Resampler2_5 at the
// text width D = 4096 with kv_dim 1152: 96 queries (query_num) [96, D], an unbiased kv_proj
// [1152 -> D], nn.MultiheadAttention (in_proj [3D, D] + 3D bias, out_proj [D, D] + D bias), three
// LayerNorms (ln_q, ln_kv, ln_post) and proj [D, D]; the sin-cos position table is a buffer.
std::int64_t minicpm_llama3_v25_tower(std::int64_t layers) {
  const std::int64_t w = 1152;
  const std::int64_t embeddings = linear(3 * 14 * 14, w, true) + 4900 * w;
  const std::int64_t block =
      2 * 2 * w + 4 * linear(w, w, true) + linear(w, 4304, true) + linear(4304, w, true);
  const std::int64_t d = 4096;
  const std::int64_t resampler = 96 * d + linear(w, d, false) + linear(d, 3 * d, true) +
                                 linear(d, d, true) + 3 * 2 * d + d * d;
  return embeddings + layers * block + 2 * w + resampler;
}

}  // namespace

// MiniCPM-Llama3-V 2.5 (openbmb). vLLM 0.33 dispatches MiniCPMV on config.version "2.5" to
// MiniCPMV2_5, whose text is LlamaForCausalLM over the top-level keys: 32 layers of 32 query and
// 8 KV heads x 128, unbiased q/k/v/o, SwiGLU 14336, two RMSNorms a layer, a final norm, a
// 128,256-token table and an untied head: Llama-3-8B, whose published count is 8,030,261,248.
// KV: 32 x 2 x 8 x 128 x 2 B = 131,072 B a token.
TEST(RegistryFamiliesH, MiniCpmLlama3V25ByHand) {
  const ModelSpec spec = load_hf_config(config_path("openbmb__MiniCPM-Llama3-V-2_5.json"));
  const std::int64_t tower = minicpm_llama3_v25_tower(27);  // drop_vision_last_layer false
  EXPECT_EQ(spec.vision.num_parameters, tower);
  EXPECT_TRUE(has_default(spec, "vision_config.num_channels = 3 (Idefics2VisionConfig)"));

  const std::int64_t h = 4096;
  const std::int64_t layer = linear(h, 32 * 128, false) + 2 * linear(h, 8 * 128, false) +
                             linear(32 * 128, h, false) + 3 * linear(h, 14336, false) + 2 * h;
  const std::int64_t text = 2 * std::int64_t{128256} * h + 32 * layer + h;
  EXPECT_EQ(text, 8030261248);  // Llama-3-8B's published parameter count
  EXPECT_EQ(parameter_count(spec), text + tower);
  EXPECT_EQ(kv_bf16(spec), 32 * 2 * 8 * 128 * 2);
  ASSERT_EQ(spec.layers.size(), 32U);
  for (const LayerSpec& layer_spec : spec.layers) {
    EXPECT_EQ(layer_spec.attention, AttentionKind::Full);
  }
}

// MiniCPM-V 2.0 (openbmb/MiniCPM-V-2). No version key, hidden_size 2304 and query_num 64: vLLM
// 0.33 builds MiniCPMV2_0, whose text is MiniCPMForCausalLM over the top-level keys: 40 layers of
// 36 query and 36 KV heads x 64 (2304 / 36), unbiased q/k/v/o, SwiGLU 5760, two RMSNorms a
// layer, a final norm and a 122,753-token table: MiniCPM-2B's layout, whose published count
// 2,724,880,896 holds one table; this checkpoint's head is untied (tie_word_embeddings false).
// The tower is timm's vit_so400m_patch14_siglip_384 whatever the config says: a biased 14 x 14
// patch convolution from 3 channels to 1152, 27^2 = 729 positions, 26 of its 27 blocks
// (drop_vision_last_layer true) of two LayerNorms, a biased qkv and proj [1152, 1152] and a
// biased fc1 / fc2 of 4304, the final LayerNorm (the pooling head replaced by Identity).
// Resampler2 at D = 2304 over kv_dim 1152: sqrt(64)^2 = 64 queries [64, D], the 2-D sin-cos
// table as an nn.Parameter [64, D], an unbiased kv_proj, nn.MultiheadAttention (in_proj [3D, D]
// + 3D, out_proj [D, D] + D), three LayerNorms and proj [D, D]. KV: 40 x 2 x 36 x 64 x 2 B =
// 368,640 B a token.
TEST(RegistryFamiliesH, MiniCpmV20ByHand) {
  const ModelSpec spec = load_hf_config(config_path("openbmb__MiniCPM-V-2.json"));
  const std::int64_t w = 1152;
  const std::int64_t block =
      2 * 2 * w + 4 * linear(w, w, true) + linear(w, 4304, true) + linear(4304, w, true);
  const std::int64_t vit = linear(3 * 14 * 14, w, true) + 729 * w + 26 * block + 2 * w;
  const std::int64_t d = 2304;
  const std::int64_t resampler = 64 * d + 64 * d + linear(w, d, false) + linear(d, 3 * d, true) +
                                 linear(d, d, true) + 3 * 2 * d + d * d;
  EXPECT_EQ(spec.vision.num_parameters, vit + resampler);

  const std::int64_t layer = 4 * linear(d, 36 * 64, false) + 3 * linear(d, 5760, false) + 2 * d;
  const std::int64_t table = std::int64_t{122753} * d;
  EXPECT_EQ(table + 40 * layer + d, 2724880896);  // MiniCPM-2B's published count (one table)
  EXPECT_EQ(parameter_count(spec), 2 * table + 40 * layer + d + vit + resampler);
  EXPECT_EQ(kv_bf16(spec), 40 * 2 * 36 * 64 * 2);
  ASSERT_EQ(spec.layers.size(), 40U);
}

// MiniCPM-V 1.0 (openbmb/MiniCPM-V) has the 2.0 layout: its model.safetensors.index.json's
// total_size, 6,869,931,584 bytes of bf16, is 3,434,965,792 parameters, MiniCPM-V-2's count by
// hand above (resampler.pos_embed stored, the timm pooling head not).
TEST(RegistryFamiliesH, MiniCpmVPlansItsPublishedTotalSize) {
  const ModelSpec spec = load_hf_config(config_path("openbmb__MiniCPM-V.json"));
  EXPECT_EQ(2 * parameter_count(spec), 6869931584);
}

// drop_vision_last_layer true: vLLM keeps encoder.layers[:-1], one SigLIP block fewer.
TEST(RegistryFamiliesH, MiniCpmVDropsTheLastVisionLayerWhenAsked) {
  auto config = config_json("openbmb__MiniCPM-Llama3-V-2_5.json");
  config["drop_vision_last_layer"] = true;
  const ModelSpec spec = model_spec_from_hf_config(config, nullptr, "<minicpmv>");
  EXPECT_EQ(spec.vision.num_parameters, minicpm_llama3_v25_tower(26));
}

// The remote MiniCPMVConfig's defaults are not read: a config without drop_vision_last_layer or
// query_num is refused by the key's name, and so is a version other than 2.5 (its text model and
// resampler differ) or a config without vision_config.
TEST(RegistryFamiliesH, MiniCpmVRefusesWhatItCannotSizeByName) {
  const auto base = config_json("openbmb__MiniCPM-Llama3-V-2_5.json");
  auto refused = [](nlohmann::json config) {
    return std::string(spec_error_of([&] {
                         (void)model_spec_from_hf_config(config, nullptr, "<minicpmv>");
                       }).what());
  };
  auto without = [&](const char* key) {
    auto config = base;
    config.erase(key);
    return config;
  };
  EXPECT_NE(refused(without("drop_vision_last_layer")).find("drop_vision_last_layer"),
            std::string::npos);
  EXPECT_NE(refused(without("query_num")).find("query_num"), std::string::npos);
  EXPECT_NE(refused(without("vision_config")).find("vision_config"), std::string::npos);
  auto v26 = base;
  v26["version"] = 2.6;
  const std::string message = refused(v26);
  EXPECT_NE(message.find("version"), std::string::npos) << message;
  EXPECT_NE(message.find("2.6"), std::string::npos) << message;
}

// OpenVLA-7B (openvla). vLLM 0.33's openvla.py builds text_config as LlamaConfig (its defaults:
// Llama-2-7B, 32 layers of 32 heads x 128, SwiGLU 11008, untied) over a 32,064-token table, whose
// published count at 32,000 tokens is 6,738,415,616. The fused backbone, every block built:
// timm's DINOv2 ViT-L/14 with 4 registers at 224 px (a biased 14 x 14 patch convolution to 1024,
// a class vector, 4 register vectors, 16^2 = 256 positions; 24 blocks of two LayerNorms, biased
// qkv [3072, 1024] and proj, biased fc1 / fc2 of 4096 and two layer scales [1024]; the final
// LayerNorm) and SigLIP So400m/14 at 224 px (a biased patch convolution to 1152, 256 positions;
// 27 blocks of two LayerNorms, biased qkv and proj, biased fc1 / fc2 of 4304; the final LayerNorm;
// the attention-pooling head: a latent [1152], biased q [1152, 1152], kv [2304, 1152] and proj,
// a LayerNorm and a biased MLP of 4304). The projector over 1024 + 1152 = 2176: fc1 [8704, 2176],
// fc2 [4096, 8704] and fc3 [4096, 4096], all biased. KV: 32 x 2 x 32 x 128 x 2 B = 524,288 B.
TEST(RegistryFamiliesH, OpenVla7bByHand) {
  const ModelSpec spec = load_hf_config(config_path("openvla__openvla-7b.json"));
  const std::int64_t d = 1024;
  const std::int64_t dino_block = 2 * 2 * d + linear(d, 3 * d, true) + linear(d, d, true) +
                                  linear(d, 4 * d, true) + linear(4 * d, d, true) + 2 * d;
  const std::int64_t dino =
      linear(3 * 14 * 14, d, true) + d + 4 * d + 256 * d + 24 * dino_block + 2 * d;
  const std::int64_t s = 1152;
  const std::int64_t siglip_block = 2 * 2 * s + linear(s, 3 * s, true) + linear(s, s, true) +
                                    linear(s, 4304, true) + linear(4304, s, true);
  const std::int64_t pool = s + linear(s, s, true) + linear(s, 2 * s, true) + linear(s, s, true) +
                            2 * s + linear(s, 4304, true) + linear(4304, s, true);
  const std::int64_t siglip =
      linear(3 * 14 * 14, s, true) + 256 * s + 27 * siglip_block + 2 * s + pool;
  const std::int64_t h = 4096;
  const std::int64_t projector =
      linear(2176, 8704, true) + linear(8704, h, true) + linear(h, h, true);
  EXPECT_EQ(spec.vision.num_parameters, dino + siglip + projector);

  const std::int64_t layer = 4 * linear(h, h, false) + 3 * linear(h, 11008, false) + 2 * h;
  EXPECT_EQ(2 * std::int64_t{32000} * h + 32 * layer + h, 6738415616);  // Llama-2-7B
  const std::int64_t text = 2 * std::int64_t{32064} * h + 32 * layer + h;
  EXPECT_EQ(parameter_count(spec), text + dino + siglip + projector);
  EXPECT_EQ(kv_bf16(spec), 32 * 2 * 32 * 128 * 2);
  EXPECT_EQ(spec.max_position_embeddings, 2048);  // LlamaConfig's default, as vLLM reads it
}

// vLLM refuses any other backbone, image size or activation: so does the plan, by the key.
TEST(RegistryFamiliesH, OpenVlaRefusesAnotherBackboneByName) {
  const auto base = config_json("openvla__openvla-7b.json");
  auto refused = [](const nlohmann::json& config) {
    return std::string(spec_error_of([&] {
                         (void)model_spec_from_hf_config(config, nullptr, "<openvla>");
                       }).what());
  };
  auto single = base;
  single["use_fused_vision_backbone"] = false;
  EXPECT_NE(refused(single).find("use_fused_vision_backbone"), std::string::npos);
  auto larger = base;
  larger["image_sizes"] = {384, 384};
  EXPECT_NE(refused(larger).find("image_sizes"), std::string::npos);
  auto other = base;
  other["timm_model_ids"][1] = "vit_so400m_patch14_siglip_384";
  EXPECT_NE(refused(other).find("timm_model_ids"), std::string::npos);
}
