// Multimodal architectures of vLLM 0.33's registry mapped in issue 36 (helper d): per
// checkpoint, the tower and the language model counted by hand from the module shapes vLLM
// builds, and the text KV bytes per token by hand from its attention layout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "test_support.hpp"
#include "vramplan/compiled.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/kv_cache.hpp"
#include "vramplan/model_spec.hpp"

using namespace vramplan;
using vramplan_test::config_json;
using vramplan_test::config_path;
using vramplan_test::h100;
using vramplan_test::kv_bf16;
using vramplan_test::linear;

namespace {

bool has_default(const ModelSpec& spec, const std::string& line) {
  return std::find(spec.config_defaults.begin(), spec.config_defaults.end(), line) !=
         spec.config_defaults.end();
}

}  // namespace

// dots.ocr (rednote-hilab). vLLM 0.33's dots_ocr.py reads the top-level Qwen2 keys as
// Qwen2ForCausalLM: 28 layers of 12 query and 2 KV heads x 128 (1536 / 12), q/k/v biased and
// o_proj not (qwen2.py), SwiGLU 8960, two RMSNorms a layer, a final norm, a 151,936-token table
// and an untied head. The DotsVisionTransformer over vision_config (embed_dim absent: the
// DotsVisionConfig default, 1536): a biased 14 x 14 patch convolution from 3 channels and an
// RMSNorm; 42 blocks of two RMSNorms, an unbiased qkv [3 x 1536, 1536] and proj, an unbiased
// SwiGLU fc13 [2 x 4224, 1536] and fc2 [1536, 4224] (use_bias false); the post-trunk RMSNorm
// (post_norm); the PatchMerger: a LayerNorm [1536] with bias, biased [6144 -> 6144] and [6144 ->
// 1536] over 2 x 2 patches. KV: 28 x 2 x 2 x 128 x 2 B = 28,672 B a token.
TEST(RegistryFamiliesD, DotsOcrByHand) {
  const ModelSpec spec = load_hf_config(config_path("rednote-hilab__dots.ocr.json"));
  const std::int64_t e = 1536;
  const std::int64_t block = 2 * e + linear(e, 3 * e, false) + linear(e, e, false) +
                             linear(e, 2 * 4224, false) + linear(4224, e, false);
  const std::int64_t patch_embed = linear(3 * 14 * 14, e, true) + e;
  const std::int64_t merger = 2 * e + linear(4 * e, 4 * e, true) + linear(4 * e, 1536, true);
  const std::int64_t tower = patch_embed + 42 * block + e + merger;
  EXPECT_EQ(spec.vision.num_parameters, tower);
  EXPECT_TRUE(has_default(spec, "vision_config.embed_dim = 1536 (DotsVisionConfig)"));

  const std::int64_t h = 1536;
  const std::int64_t layer = linear(h, 12 * 128, true) + 2 * linear(h, 2 * 128, true) +
                             linear(12 * 128, h, false) + 3 * linear(h, 8960, false) + 2 * h;
  const std::int64_t text = 2 * std::int64_t{151936} * h + 28 * layer + h;
  EXPECT_EQ(parameter_count(spec), text + tower);
  EXPECT_EQ(kv_bf16(spec), 28 * 2 * 2 * 128 * 2);
  ASSERT_EQ(spec.layers.size(), 28U);
  for (const LayerSpec& layer : spec.layers) {
    EXPECT_EQ(layer.attention, AttentionKind::Full);  // use_sliding_window false
  }
}

// A biased tower (use_bias true) adds the qkv, proj, fc13 and fc2 biases a block; without
// post_norm the trunk's final RMSNorm goes.
TEST(RegistryFamiliesD, DotsOcrBiasAndPostNormFlags) {
  auto config = config_json("rednote-hilab__dots.ocr.json");
  const ModelSpec plain = model_spec_from_hf_config(config, nullptr, "<dots>");
  config["vision_config"]["use_bias"] = true;
  config["vision_config"]["post_norm"] = false;
  const ModelSpec flagged = model_spec_from_hf_config(config, nullptr, "<dots>");
  const std::int64_t e = 1536;
  EXPECT_EQ(flagged.vision.num_parameters - plain.vision.num_parameters,
            42 * (3 * e + e + 2 * 4224 + e) - e);
}

TEST(RegistryFamiliesD, DotsOcrWithoutVisionConfigIsRefusedByName) {
  auto config = config_json("rednote-hilab__dots.ocr.json");
  config.erase("vision_config");
  try {
    (void)model_spec_from_hf_config(config, nullptr, "<dots>");
    FAIL() << "expected a SpecError";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("vision_config"), std::string::npos) << e.what();
  }
}

// Gemma-4 12B Unified (google/gemma-4-12B-it, model_type gemma4_unified). vLLM 0.33's
// gemma4_unified.py builds Gemma4ForCausalLM over text_config (gemma4.py, as the Gemma 4 row):
// 48 layers, 5 sliding then 1 full; sliding layers of 16 query and 8 KV heads x 256, full layers
// of 16 query heads x global_head_dim 512 and, with attention_k_eq_v, 1 global KV head (vLLM
// builds V beside K); q/k norms over the head; a GELU-gated MLP of 15360; four norms a layer; no
// per-layer inputs (hidden_size_per_layer_input 0); a 262,144-token table tied to the head. No
// vision or audio tower: the Gemma4UnifiedVisionEmbedder over raw 48 x 48 x 3 = 6,912-value
// patches (a LayerNorm [6912], a biased dense [6912 -> 3840], a LayerNorm [3840], a position
// table [1120, 2, 3840] and its LayerNorm) and embed_vision [3840 -> 3840] (its RMSNorm has no
// weight); embed_audio [640 -> 3840] over raw 640-sample frames. KV: 40 sliding layers x 2 x 8 x
// 256 x 2 B + 8 full x 2 x 1 x 512 x 2 B = 327,680 + 16,384 = 344,064 B a token.
TEST(RegistryFamiliesD, Gemma4UnifiedByHand) {
  const ModelSpec spec = load_hf_config(config_path("google__gemma-4-12B-it.json"));
  EXPECT_EQ(spec.model_type, "gemma4_unified_text");
  const std::int64_t h = 3840;
  const std::int64_t patch = 48 * 48 * 3;
  const std::int64_t embedder = 2 * patch + linear(patch, h, true) + 2 * h +
                                std::int64_t{1120} * 2 * h + 2 * h + linear(h, h, false);
  const std::int64_t audio = linear(640, h, false);
  EXPECT_EQ(spec.vision.num_parameters, embedder + audio);
  EXPECT_TRUE(spec.vision.always_built);  // no _mark_tower_model: built with every limit 0

  const std::int64_t mlp = 3 * linear(h, 15360, false);
  const std::int64_t sliding = linear(h, 16 * 256, false) + 2 * linear(h, 8 * 256, false) +
                               linear(16 * 256, h, false) + 2 * 256;
  const std::int64_t full =
      linear(h, 16 * 512, false) + 2 * linear(h, 512, false) + linear(16 * 512, h, false) + 2 * 512;
  const std::int64_t text =
      std::int64_t{262144} * h + 40 * (sliding + mlp + 4 * h) + 8 * (full + mlp + 4 * h) + h;
  EXPECT_EQ(parameter_count(spec), text + embedder + audio);
  EXPECT_EQ(kv_bf16(spec), 40 * 2 * 8 * 256 * 2 + 8 * 2 * 1 * 512 * 2);
  ASSERT_EQ(spec.layers.size(), 48U);
  EXPECT_EQ(spec.layers[0].sliding_window, 1024);
  EXPECT_EQ(spec.layers[5].attention, AttentionKind::Full);
}

// transformers' Gemma4UnifiedVisionConfig refuses a model_patch_size other than patch_size x
// pooling_kernel_size, and Gemma4UnifiedAudioConfig's aliases all name audio_embed_dim: a config
// writing them apart is a named error, not a guess between them.
TEST(RegistryFamiliesD, Gemma4UnifiedInconsistentWidthsAreRefusedByName) {
  auto config = config_json("google__gemma-4-12B-it.json");
  config["vision_config"]["model_patch_size"] = 32;
  try {
    (void)model_spec_from_hf_config(config, nullptr, "<g4u>");
    FAIL() << "expected a SpecError";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("model_patch_size"), std::string::npos) << e.what();
  }
  config = config_json("google__gemma-4-12B-it.json");
  config["audio_config"]["output_proj_dims"] = 1024;
  try {
    (void)model_spec_from_hf_config(config, nullptr, "<g4u>");
    FAIL() << "expected a SpecError";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("output_proj_dims"), std::string::npos) << e.what();
  }
  // Without audio_config (Gemma4UnifiedConfig's default None) only the image path is counted.
  config = config_json("google__gemma-4-12B-it.json");
  config.erase("audio_config");
  const ModelSpec spec = model_spec_from_hf_config(config, nullptr, "<g4u>");
  // 13,824 + 26,545,920 + 7,680 + 8,601,600 + 7,680 + 14,745,600: the image path above.
  EXPECT_EQ(spec.vision.num_parameters, 49922304);
  EXPECT_TRUE(spec.vision.unmodelled_modalities.empty());
}

// gemma4_unified.py builds its embedders outside _mark_tower_model: vLLM loads them whatever
// --limit-mm-per-prompt allows, so the weights stay the same with every modality off.
TEST(RegistryFamiliesD, Gemma4UnifiedEmbeddersLoadWithEveryModalityOff) {
  const auto spec =
      std::make_shared<const ModelSpec>(load_hf_config(config_path("google__gemma-4-12B-it.json")));
  auto weights = [&](const char* limits) {
    EngineConfig config;
    config.max_model_len = 8192;
    config.limit_mm_per_prompt = limits;
    HardwareConfig hw;
    hw.gpu = h100();
    const CompiledLaunch launch(spec, hw, config);
    return launch.breakdown(launch_knobs(config)).ranks.front().weights_bytes;
  };
  EXPECT_EQ(weights(R"({"image": 0, "video": 0, "audio": 0})"), weights(""));
}

// Keye-VL-8B-Preview (Kwai-Keye). vLLM 0.33's keye.py reads the top-level Qwen3 keys as
// Qwen3ForCausalLM: 36 layers of 32 query and 8 KV heads x 128, unbiased q/k/v/o, per-head q/k
// RMSNorms [128], SwiGLU 12288, two RMSNorms a layer, a final norm, a 151,936-token table and an
// untied head: Qwen3-8B, whose published count is 8,190,735,360. The tower
// (KeyeSiglipVisionModel): a biased 14 x 14 patch convolution from 3 channels (num_channels
// absent: SigLIP's default), (384 / 14)^2 = 27^2 = 729 learned positions and a
// packing_position_embedding of 32,768 x 1152; 27 blocks of two LayerNorms, biased q/k/v/out and
// a biased fc1 / fc2 of 4304; the post-LayerNorm (the pooling head is dropped on load). The
// projector (mlp_AR): a LayerNorm [1152], biased [4608 -> 4608] and [4608 -> 4096] over 2 x 2
// patches. KV: 36 x 2 x 8 x 128 x 2 B = 147,456 B a token.
TEST(RegistryFamiliesD, KeyeVl8bPreviewByHand) {
  const ModelSpec spec = load_hf_config(config_path("Kwai-Keye__Keye-VL-8B-Preview.json"));
  const std::int64_t w = 1152;
  const std::int64_t block =
      2 * 2 * w + 4 * linear(w, w, true) + linear(w, 4304, true) + linear(4304, w, true);
  const std::int64_t embeddings = linear(3 * 14 * 14, w, true) + 729 * w + 32768 * w;
  const std::int64_t projector = 2 * w + linear(4 * w, 4 * w, true) + linear(4 * w, 4096, true);
  const std::int64_t tower = embeddings + 27 * block + 2 * w + projector;
  EXPECT_EQ(spec.vision.num_parameters, tower);
  EXPECT_TRUE(has_default(spec, "vision_config.num_channels = 3 (SiglipVisionConfig)"));

  const std::int64_t h = 4096;
  const std::int64_t layer = linear(h, 32 * 128, false) + 2 * linear(h, 8 * 128, false) +
                             linear(32 * 128, h, false) + 2 * 128 + 3 * linear(h, 12288, false) +
                             2 * h;
  const std::int64_t text = 2 * std::int64_t{151936} * h + 36 * layer + h;
  EXPECT_EQ(text, 8190735360);  // Qwen3-8B's published parameter count
  EXPECT_EQ(parameter_count(spec), text + tower);
  EXPECT_EQ(kv_bf16(spec), 36 * 2 * 8 * 128 * 2);
  ASSERT_EQ(spec.layers.size(), 36U);
  for (const LayerSpec& layer : spec.layers) {
    EXPECT_EQ(layer.attention, AttentionKind::Full);  // use_sliding_window false
  }
}

TEST(RegistryFamiliesD, KeyeWithoutVisionConfigIsRefusedByName) {
  auto config = config_json("Kwai-Keye__Keye-VL-8B-Preview.json");
  config.erase("vision_config");
  try {
    (void)model_spec_from_hf_config(config, nullptr, "<keye>");
    FAIL() << "expected a SpecError";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("vision_config"), std::string::npos) << e.what();
  }
}
