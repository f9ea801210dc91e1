// Vision-language architectures of vLLM 0.33's registry mapped in issue 36 (helper g): SigLIP /
// CLIP towers over text rows the table already plans. Per checkpoint, the tower and the language
// model counted by hand from the module shapes vLLM builds, checked against the published size,
// and the text KV bytes per token by hand from its attention layout.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
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
using vramplan_test::linear;

namespace {

// A SigLIP / CLIP encoder block (siglip.py / clip.py): two LayerNorms with biases, biased
// q/k/v/out [w, w] and a biased fc1 / fc2 of `inter`.
std::int64_t vit_block(std::int64_t w, std::int64_t inter) {
  return 2 * 2 * w + 4 * linear(w, w, true) + linear(w, inter, true) + linear(inter, w, true);
}

// The SpecError text model_spec_from_hf_config raises for `config`.
std::string refusal(const nlohmann::json& config) {
  try {
    (void)model_spec_from_hf_config(config, nullptr, "<test>");
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// PaddleOCR-VL-1.5 (PaddlePaddle). vLLM 0.33's paddleocr_vl.py reads the top-level ERNIE-4.5 keys
// as Ernie4_5ForCausalLM (Llama's layout without the o_proj bias; use_bias and attention_bias
// absent: no q/k/v bias): 18 layers of 16 query heads and 2 KV heads x 128 (head_dim), SwiGLU
// 3072, two RMSNorms a layer, a final norm, a 103,424-token table and an untied head. The tower
// (SiglipVisionModel): a biased 14 x 14 patch convolution from 3 channels, (384 / 14)^2 = 27^2 =
// 729 learned positions, 27 blocks of width 1152 and MLP 4304, the post-LayerNorm (no packing
// table: its checkpoint copy is dropped on load). The projector (mlp_AR): a LayerNorm [1152],
// biased [4608 -> 4608] and [4608 -> 1024] over 2 x 2 patches. KV: 18 x 2 x 2 x 128 x 2 B =
// 18,432 B a token.
TEST(RegistryFamiliesG, PaddleOcrVl15ByHand) {
  const ModelSpec spec = load_hf_config(config_path("PaddlePaddle__PaddleOCR-VL-1.5.json"));
  const std::int64_t w = 1152;
  const std::int64_t embeddings = linear(3 * 14 * 14, w, true) + 729 * w;
  const std::int64_t projector = 2 * w + linear(4 * w, 4 * w, true) + linear(4 * w, 1024, true);
  const std::int64_t tower = embeddings + 27 * vit_block(w, 4304) + 2 * w + projector;
  EXPECT_EQ(spec.vision.num_parameters, tower);

  const std::int64_t h = 1024;
  const std::int64_t layer = linear(h, 16 * 128, false) + 2 * linear(h, 2 * 128, false) +
                             linear(16 * 128, h, false) + 3 * linear(h, 3072, false) + 2 * h;
  const std::int64_t text = 2 * std::int64_t{103424} * h + 18 * layer + h;
  EXPECT_EQ(parameter_count(spec), text + tower);
  // PaddleOCR-VL's published size: 0.9 B (PaddleOCR-VL-0.9B).
  EXPECT_EQ(std::llround(static_cast<double>(text + tower) / 1e8), 9);
  EXPECT_EQ(kv_bf16(spec), 18 * 2 * 2 * 128 * 2);
  ASSERT_EQ(spec.layers.size(), 18U);
  for (const LayerSpec& layer_spec : spec.layers) {
    EXPECT_EQ(layer_spec.attention, AttentionKind::Full);
  }
}

TEST(RegistryFamiliesG, PaddleOcrVlNamesAMissingVisionSize) {
  auto config = config_json("PaddlePaddle__PaddleOCR-VL-1.5.json");
  config["vision_config"].erase("image_size");  // no defaults table: the file must name it
  EXPECT_NE(refusal(config).find("vision_config.image_size"), std::string::npos);
  config.erase("vision_config");
  EXPECT_NE(refusal(config).find("vision_config"), std::string::npos);
}

// Phi-3-vision-128k-instruct (microsoft). vLLM 0.33's phi3v.py builds the top-level Phi-3 keys
// as LlamaForCausalLM: 32 layers of 32 query and 32 KV heads x 96 (3072 / 32), fused unbiased
// qkv and o, gate_up [2 x 8192] and down, two RMSNorms a layer, a final norm, a 32,064-token
// table and an untied head: Phi-3-mini's 3,821,079,552. sliding_window 131072 is not below
// max_position_embeddings: no layer slides. The image embedding: CLIP ViT-L/14-336 of
// CLIP_VIT_LARGE_PATCH14_336_CONFIG (width 1024, MLP 4096) up to layer_idx -2 (absent from
// img_processor: phi3v.py's default), 24 - 2 + 1 = 23 layers, without the post-LayerNorm; its
// embeddings: a class vector, an unbiased 14 x 14 patch convolution from 3 channels, (336 /
// 14)^2 + 1 = 577 positions and the pre-LayerNorm; glb_GN and sub_GN [4 x 1024]; img_projection
// biased [4096 -> 3072] and [3072 -> 3072]. The wte table is the language model's own after
// load (the checkpoint stores model.embed_tokens.weight alone). KV: 32 x 2 x 32 x 96 x 2 B =
// 393,216 B a token.
TEST(RegistryFamiliesG, Phi3Vision128kByHand) {
  const ModelSpec spec = load_hf_config(config_path("microsoft__Phi-3-vision-128k-instruct.json"));
  const std::int64_t c = 1024;
  const std::int64_t clip_embeddings = c + 3 * 14 * 14 * c + 577 * c + 2 * c;
  const std::int64_t hd = 2 * 4 * c + linear(4 * c, 3072, true) + linear(3072, 3072, true);
  const std::int64_t tower = clip_embeddings + 23 * vit_block(c, 4096) + hd;
  EXPECT_EQ(spec.vision.num_parameters, tower);

  const std::int64_t h = 3072;
  const std::int64_t layer = linear(h, 3 * h, false) + linear(h, h, false) +
                             linear(h, 2 * 8192, false) + linear(8192, h, false) + 2 * h;
  const std::int64_t text = 2 * std::int64_t{32064} * h + 32 * layer + h;
  EXPECT_EQ(text, 3821079552);  // Phi-3-mini's parameter count
  EXPECT_EQ(parameter_count(spec), text + tower);
  // The checkpoint holds the whole CLIP besides (its 24th layer and post-LayerNorm, which vLLM
  // skips): 4,146,621,440 parameters, the published 4.2 B.
  const std::int64_t checkpoint = text + tower + vit_block(c, 4096) + 2 * c;
  EXPECT_EQ(checkpoint, 4146621440);
  EXPECT_EQ(std::llround(static_cast<double>(checkpoint) / 1e8), 41);
  EXPECT_EQ(kv_bf16(spec), 32 * 2 * 32 * 96 * 2);
  ASSERT_EQ(spec.layers.size(), 32U);
  for (const LayerSpec& layer_spec : spec.layers) {
    EXPECT_EQ(layer_spec.attention, AttentionKind::Full);
  }
}

TEST(RegistryFamiliesG, Phi3VisionLayerIndexSetsTheClipDepth) {
  auto config = config_json("microsoft__Phi-3-vision-128k-instruct.json");
  const std::int64_t base = model_spec_from_hf_config(config, nullptr, "<a>").vision.num_parameters;
  // layer_idx -1: all 24 layers, and with them the post-LayerNorm.
  config["img_processor"]["layer_idx"] = -1;
  const std::int64_t all = model_spec_from_hf_config(config, nullptr, "<b>").vision.num_parameters;
  EXPECT_EQ(all - base, vit_block(1024, 4096) + 2 * 1024);
  config["img_processor"]["layer_idx"] = -24;  // the first layer alone
  EXPECT_EQ(model_spec_from_hf_config(config, nullptr, "<c>").vision.num_parameters,
            all - 23 * vit_block(1024, 4096) - 2 * 1024);
  config["img_processor"]["layer_idx"] = 24;
  EXPECT_NE(refusal(config).find("img_processor.layer_idx"), std::string::npos);
  config["img_processor"]["layer_idx"] = -25;
  EXPECT_NE(refusal(config).find("img_processor.layer_idx"), std::string::npos);
}

TEST(RegistryFamiliesG, Phi3VisionRefusesWhatPhi3vDoesNotBuild) {
  auto config = config_json("microsoft__Phi-3-vision-128k-instruct.json");
  config["img_processor"]["image_dim_out"] = 1152;  // the CLIP phi3v.py builds is 1024 wide
  EXPECT_NE(refusal(config).find("img_processor.image_dim_out"), std::string::npos);
  config = config_json("microsoft__Phi-3-vision-128k-instruct.json");
  config["embd_layer"]["use_hd_transform"] = false;  // phi3v.py asserts it
  EXPECT_NE(refusal(config).find("embd_layer.use_hd_transform"), std::string::npos);
  config.erase("img_processor");
  EXPECT_NE(refusal(config).find("img_processor"), std::string::npos);
}

// Command A Vision (CohereLabs/command-a-vision-07-2025). vLLM 0.33's cohere2_vision.py builds
// text_config as Cohere2ForCausalLM (commandr.py): 64 layers of 96 query and 8 KV heads x 128,
// unbiased q/k/v/o, SwiGLU 36864 in parallel with attention, one LayerNorm without bias a layer,
// a final one, a 256,000-token table tied to the head: 111,057,580,032, Command A's 111 B. Three
// sliding layers then one full (sliding_window_pattern 4). The tower: SiglipVisionModel, a
// biased 16 x 16 patch convolution from 3 channels (num_channels absent: SigLIP's default),
// (512 / 16)^2 = 1024 positions, 27 blocks of width 1152 and MLP 4304, the post-LayerNorm; the
// projector: pixel shuffle of 2 x 2 patches, biased linear_1 [4608 -> 36864] (gate and up
// halves) and linear_2 [18432 -> 12288]. 111,867,525,360 in all: the published 112 B. KV: 64 x
// 2 x 8 x 128 x 2 B = 262,144 B a token.
TEST(RegistryFamiliesG, CommandAVisionByHand) {
  const ModelSpec spec = load_hf_config(config_path("CohereLabs__command-a-vision-07-2025.json"));
  const std::int64_t w = 1152;
  const std::int64_t embeddings = linear(3 * 16 * 16, w, true) + 1024 * w;
  const std::int64_t projector = linear(4 * w, 36864, true) + linear(36864 / 2, 12288, true);
  const std::int64_t tower = embeddings + 27 * vit_block(w, 4304) + 2 * w + projector;
  EXPECT_EQ(spec.vision.num_parameters, tower);

  const std::int64_t h = 12288;
  const std::int64_t layer = linear(h, 96 * 128, false) + 2 * linear(h, 8 * 128, false) +
                             linear(96 * 128, h, false) + 3 * linear(h, 36864, false) + h;
  const std::int64_t text = std::int64_t{256000} * h + 64 * layer + h;
  EXPECT_EQ(text, 111057580032);
  EXPECT_EQ(parameter_count(spec), text + tower);
  EXPECT_EQ(text + tower, 111867525360);
  EXPECT_EQ(std::llround(static_cast<double>(text + tower) / 1e9), 112);
  EXPECT_EQ(kv_bf16(spec), 64 * 2 * 8 * 128 * 2);
  ASSERT_EQ(spec.layers.size(), 64U);
  for (std::size_t i = 0; i < spec.layers.size(); ++i) {
    EXPECT_EQ(spec.layers[i].attention,
              (i + 1) % 4 == 0 ? AttentionKind::Full : AttentionKind::SlidingWindow)
        << i;
  }
}

TEST(RegistryFamiliesG, CommandAVisionProjectorDefaultsAndRefusals) {
  auto config = config_json("CohereLabs__command-a-vision-07-2025.json");
  const std::int64_t tower =
      model_spec_from_hf_config(config, nullptr, "<a>").vision.num_parameters;
  // Cohere2VisionConfig's defaults are the file's values.
  config.erase("downsample_factor");
  config.erase("alignment_intermediate_size");
  EXPECT_EQ(model_spec_from_hf_config(config, nullptr, "<b>").vision.num_parameters, tower);
  config["alignment_intermediate_size"] = 36865;
  EXPECT_NE(refusal(config).find("alignment_intermediate_size"), std::string::npos);
  config = config_json("CohereLabs__command-a-vision-07-2025.json");
  config["vision_config"]["model_type"] = "clip_vision_model";
  EXPECT_NE(refusal(config).find("vision_config.model_type"), std::string::npos);
}

// Keye-VL-1.5 widens the projector's LayerNorm to the merged 2 x 2 width (keye_vl1_5.py): a
// config naming KeyeVL1_5ForConditionalGeneration is refused by name, not sized as Keye-VL's.
TEST(RegistryFamiliesG, KeyeVl15ArchitectureIsRefusedByName) {
  auto config = config_json("Kwai-Keye__Keye-VL-8B-Preview.json");
  config["architectures"] = {"KeyeVL1_5ForConditionalGeneration"};
  EXPECT_NE(refusal(config).find("Keye-VL-1.5"), std::string::npos);
}

// Bee-8B (bee.py) and R-4B (rvl.py) subclass LLaVA-OneVision with projectors of their own (a
// LayerNorm before linear_1): a OneVision-layout config naming either is refused by name.
TEST(RegistryFamiliesG, BeeAndRArchitecturesAreRefusedByName) {
  for (const char* architecture : {"BeeForConditionalGeneration", "RForConditionalGeneration"}) {
    auto config = config_json("published_values/llava-hf__llava-onevision-qwen2-0.5b-ov-hf.json");
    config["architectures"] = {architecture};
    EXPECT_NE(refusal(config).find(architecture), std::string::npos) << architecture;
  }
}
