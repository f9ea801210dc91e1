// Multimodal families of vLLM 0.33's registry where one modelled family unlocks a registry entry
// (issue 36). Per checkpoint: the tower, projector and text counted by hand from the module
// shapes vLLM builds, checked against the checkpoint's published size, and the text KV bytes per
// token by hand.
#include <gtest/gtest.h>

#include <cstdint>

#include "test_support.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/kv_cache.hpp"
#include "vramplan/model_spec.hpp"

using namespace vramplan;
using vramplan_test::config_path;
using vramplan_test::expect_published;
using vramplan_test::kv_bf16;
using vramplan_test::linear;

// Ovis2.5-9B (AIDC-AI; a git copy of the Hugging Face repository holds its config.json and
// model.safetensors.index.json, total_size 18,349,615,568 bytes at bf16). vLLM 0.33's
// ovis2_5.py builds:
// - the text, llm_config's Qwen3-8B (Qwen3ForCausalLM): 36 layers of width 4096, 32 query and 8
//   KV heads x 128 without bias, q/k RMSNorms over the head, SwiGLU 12288, two RMSNorms a layer,
//   a final norm; the 151,936-token table and lm_head untied (Qwen3Config's default);
// - the visual tokenizer's SigLIP2-NaViT (siglip2navit.py; num_patches -1): a biased 16 x 16
//   patch convolution to 1152, (512 / 16)^2 = 1024 positions (preserve_original_pe), 27 blocks
//   (biased q/k/v/o, fc1 / fc2 of 4304, two LayerNorms), the post-LayerNorm;
// - its head: an unbiased Linear [2^2 x 1152 -> 65536 - 4] and a LayerNorm over 65,532;
// - the vte embedding [65536, 4096].
// KV: 36 x 2 x 8 x 128 x 2 B = 147,456 B a token.
TEST(RegistryMultimodal4, Ovis25NineBMatchesItsCheckpoint) {
  const ModelSpec spec = load_hf_config(config_path("AIDC-AI__Ovis2.5-9B.json"));
  const std::int64_t v = 1152;
  const std::int64_t block =
      4 * linear(v, v, true) + linear(v, 4304, true) + linear(4304, v, true) + 2 * (2 * v);
  const std::int64_t vit =
      linear(std::int64_t{3} * 16 * 16, v, true) + std::int64_t{1024} * v + 27 * block + 2 * v;
  const std::int64_t head_out = 65532;  // visual_vocab_size less the 4 indicator slots
  const std::int64_t head = linear(4 * v, head_out, false) + 2 * head_out;
  const std::int64_t vte = std::int64_t{65536} * 4096;
  EXPECT_EQ(spec.vision.num_parameters, vit + head + vte);
  expect_published(vit, 400e6, 1);  // SigLIP2-so400m
  const std::int64_t h = 4096;
  const std::int64_t head_dim = 128;
  const std::int64_t layer = linear(h, 32 * head_dim, false) + 2 * linear(h, 8 * head_dim, false) +
                             linear(32 * head_dim, h, false) + 2 * head_dim +
                             3 * linear(h, 12288, false) + 2 * h;
  const std::int64_t text = 2 * std::int64_t{151936} * h + 36 * layer + h;
  expect_published(text, 8.19e9, 3);  // Qwen3-8B's model card: 8.2 B
  const std::int64_t total = text + vit + head + vte;
  EXPECT_EQ(parameter_count(spec), total);
  EXPECT_EQ(2 * total, std::int64_t{18349615568});
  EXPECT_EQ(kv_bf16(spec), 36 * 2 * 8 * 128 * 2);
}

// The visual tokenizers vLLM's ovis2_5.py builds are siglip2_navit only, and a NaFlex linear
// patch embedding (num_patches > 0) is not modelled: each is refused by name, never guessed.
TEST(RegistryMultimodal4, Ovis25RefusesWhatItCannotSize) {
  auto refused_at = [](const nlohmann::json& config) {
    try {
      (void)model_spec_from_hf_config(config, nullptr, "<ovis2_5>");
    } catch (const SpecError& e) {
      return e.field_path();
    }
    return std::string("accepted");
  };
  const nlohmann::json ovis = vramplan_test::config_json("AIDC-AI__Ovis2.5-9B.json");
  nlohmann::json aimv2 = ovis;
  aimv2["vit_config"]["model_type"] = "aimv2";
  EXPECT_EQ(refused_at(aimv2), "vit_config.model_type");
  nlohmann::json naflex = ovis;
  naflex["vit_config"]["num_patches"] = 256;
  EXPECT_EQ(refused_at(naflex), "vit_config.num_patches");
  nlohmann::json no_vit = ovis;
  no_vit.erase("vit_config");
  EXPECT_EQ(refused_at(no_vit), "vit_config");
  nlohmann::json no_vocab = ovis;
  no_vocab.erase("visual_vocab_size");
  EXPECT_EQ(refused_at(no_vocab), "visual_vocab_size");
}
