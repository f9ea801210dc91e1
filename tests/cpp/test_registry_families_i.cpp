// Architectures of vLLM 0.33's registry mapped in issue 36 (helper i): per checkpoint, the tower
// and the language model counted by hand from the module shapes vLLM builds, and the text KV
// bytes per token by hand from its attention layout.
#include <gtest/gtest.h>

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
using vramplan_test::expect_published;
using vramplan_test::kv_bf16;
using vramplan_test::linear;

// H2OVL-Mississippi-800M (h2oai). vLLM 0.33's h2ovl.py builds InternVLChatModel's layout:
// InternViT-300M-448px up to select_layer -1 (all 24 blocks of width 1024: biased qkv [3 x 1024,
// 1024] and proj, biased fc1 / fc2 of 4096, two LayerNorms and two layer scales; a class vector,
// a biased 14 x 14 patch convolution from 3 channels, (448 / 14)^2 + 1 = 1025 positions; no
// post-norm), then mlp1: a LayerNorm over the pixel-shuffled 4 x 1024 = 4096 (downsample_ratio
// 0.5), biased [4096 -> 1536] and [1536 -> 1536]. llm_config is h2o-danube3-500m-chat, built as
// LlamaForCausalLM: 16 layers of 16 query and 8 KV heads x 96 (1536 / 16), unbiased q/k/v/o,
// SwiGLU 4096, two RMSNorms a layer, a final norm, a 32,010-token table and an untied head.
// KV: 16 x 2 (K, V) x 8 x 96 x 2 B = 49,152 B a token.
TEST(RegistryFamiliesI, H2ovlMississippi800mByHand) {
  const ModelSpec spec = load_hf_config(config_path("h2oai__h2ovl-mississippi-800m.json"));
  const std::int64_t w = 1024;
  const std::int64_t block = linear(w, 3 * w, true) + linear(w, w, true) + linear(w, 4096, true) +
                             linear(4096, w, true) + 2 * 2 * w + 2 * w;
  const std::int64_t embeddings = w + linear(3 * 14 * 14, w, true) + (32 * 32 + 1) * w;
  const std::int64_t intern_vit = 24 * block + embeddings;
  expect_published(intern_vit, 304e6);  // InternViT-300M-448px's published 304 M
  const std::int64_t mlp1 = 2 * 4096 + linear(4096, 1536, true) + linear(1536, 1536, true);
  EXPECT_EQ(spec.vision.num_parameters, intern_vit + mlp1);

  const std::int64_t h = 1536;
  const std::int64_t layer = linear(h, 16 * 96, false) + 2 * linear(h, 8 * 96, false) +
                             linear(16 * 96, h, false) + 3 * linear(h, 4096, false) + 2 * h;
  const std::int64_t text = 2 * std::int64_t{32010} * h + 16 * layer + h;
  EXPECT_EQ(parameter_count(spec), text + intern_vit + mlp1);
  // The model card: "0.8 billion parameters" (826,295,808 by hand).
  expect_published(text + intern_vit + mlp1, 0.8e9, 1);
  EXPECT_EQ(kv_bf16(spec), 16 * 2 * 8 * 96 * 2);
  ASSERT_EQ(spec.layers.size(), 16U);
  for (const LayerSpec& layer_spec : spec.layers) {
    EXPECT_EQ(layer_spec.attention, AttentionKind::Full);  // sliding_window null
  }
}

// A tower whose size the file does not settle is refused by name, as for InternVL (remote-code
// config class: no default is read for qkv_bias).
TEST(RegistryFamiliesI, H2ovlWithoutQkvBiasIsRefusedByName) {
  auto config = config_json("h2oai__h2ovl-mississippi-800m.json");
  config["vision_config"].erase("qkv_bias");
  try {
    (void)model_spec_from_hf_config(config, nullptr, "<h2ovl>");
    FAIL() << "expected a SpecError";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("vision_config.qkv_bias"), std::string::npos) << e.what();
  }
}

// OpenCUA-7B (xlangai), fine-tuned from Qwen2.5-VL-7B-Instruct's weights. vLLM 0.33's opencua.py
// builds qwen2_5_vl.py's vision transformer and merger over text_config as Qwen2ForCausalLM: 28
// layers of 28 query and 4 KV heads x 128, q/k/v biased and o_proj not, SwiGLU 18944, two
// RMSNorms a layer, a final norm, a 152,064-token table and an untied head. The tower: an
// unbiased 3-D patch convolution (3 channels, as in_chans says, x 2 frames x 14 x 14) to 1280;
// 32 blocks of two RMSNorms, a biased qkv and proj, a biased gated MLP of 3420; the merger: an
// RMSNorm [1280], biased [5120 -> 5120] and [5120 -> 3584] over 2 x 2 patches. The shapes are
// Qwen2.5-VL-7B's, whose published count is 8.29 B. No mrope_section in text_config: 1-D rotary.
// KV: 28 x 2 x 4 x 128 x 2 B = 57,344 B a token.
TEST(RegistryFamiliesI, OpenCua7bByHand) {
  const ModelSpec spec = load_hf_config(config_path("xlangai__OpenCUA-7B.json"));
  const std::int64_t e = 1280;
  const std::int64_t block = 2 * e + linear(e, 3 * e, true) + linear(e, e, true) +
                             2 * linear(e, 3420, true) + linear(3420, e, true);
  const std::int64_t merger = e + linear(4 * e, 4 * e, true) + linear(4 * e, 3584, true);
  const std::int64_t tower = 3 * 2 * 14 * 14 * e + 32 * block + merger;
  EXPECT_EQ(spec.vision.num_parameters, tower);

  const std::int64_t h = 3584;
  const std::int64_t layer = linear(h, 28 * 128, true) + 2 * linear(h, 4 * 128, true) +
                             linear(28 * 128, h, false) + 3 * linear(h, 18944, false) + 2 * h;
  const std::int64_t text = 2 * std::int64_t{152064} * h + 28 * layer + h;
  EXPECT_EQ(parameter_count(spec), text + tower);
  expect_published(text + tower, 8.29e9);  // Qwen2.5-VL-7B's published count
  EXPECT_EQ(kv_bf16(spec), 28 * 2 * 4 * 128 * 2);
  // Its largest image comes from the checkpoint's preprocessor_config.json, not config.json,
  // and it takes no video: no encoder-profile facts, no video modality.
  EXPECT_EQ(spec.vision.image_tokens_per_item, 0);
  EXPECT_TRUE(spec.vision.unmodelled_modalities.empty());
  ASSERT_EQ(spec.layers.size(), 28U);
  for (const LayerSpec& layer_spec : spec.layers) {
    EXPECT_EQ(layer_spec.attention, AttentionKind::Full);  // use_sliding_window absent
  }
}
