// Vision-language wrappers of vLLM 0.33's registry whose tower or projector is a variant of one
// the table already sizes and whose language model is a mapped family (issue 36). Per
// checkpoint: the tower, projector and text counted by hand from the module shapes vLLM builds,
// checked against the checkpoint's published size, and the text KV bytes per token by hand.
#include <gtest/gtest.h>

#include <cstdint>

#include "test_support.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/kv_cache.hpp"
#include "vramplan/model_spec.hpp"

using namespace vramplan;
using vramplan_test::config_path;
using vramplan_test::expect_published;
using vramplan_test::kv_bf16;
using vramplan_test::linear;

namespace {

constexpr std::int64_t kHead = 128;  // the text models' head_dim

// Qwen3-0.6B's decoder as vLLM's qwen3.py builds it: 28 layers of 16 query and 8 KV heads x
// 128, q/k RMSNorms over the head, SwiGLU 3072, two RMSNorms a layer, a final norm; the
// 151,936-token table tied to the head. Published 0.6 B (596,049,920).
std::int64_t qwen3_0_6b() {
  const std::int64_t h = 1024;
  const std::int64_t layer = linear(h, 16 * kHead, false) + 2 * linear(h, 8 * kHead, false) +
                             linear(16 * kHead, h, false) + 2 * kHead + 3 * linear(h, 3072, false) +
                             2 * h;
  return std::int64_t{151936} * h + 28 * layer + h;
}

}  // namespace

TEST(RegistryMultimodal3, Qwen3ZeroPointSixBByHand) {
  EXPECT_EQ(qwen3_0_6b(), std::int64_t{596049920});
}

// LightOnOCR-2-1B (lightonai; a git mirror of the Hugging Face repository holds its config.json
// and the model.safetensors LFS pointer, 2,011,367,489 bytes, bf16). vLLM 0.33's lightonocr.py
// builds Mistral-3's Pixtral tower and projector (mistral3.py) over the text_config's Qwen3:
// Pixtral-HF with an unbiased 14 x 14 patch convolution, ln_pre, 24 blocks of width 1024 (two
// RMSNorms, unbiased q/k/v/o, a SwiGLU of 4096), no post-norm; the projector an RMSNorm [1024],
// the 2 x 2 patch merger [1024, 4096] and linear_1 / linear_2 without bias
// (multimodal_projector_bias false). The text is Qwen3-0.6B's. The file is the tensors at 2 B
// and a JSON header: 532 tensors (310 text, 218 vision, 4 projector) at 64 to 256 header bytes
// each. KV: 28 x 2 x 8 x 128 x 2 B = 114,688 B a token.
TEST(RegistryMultimodal3, LightOnOcr2MatchesItsCheckpoint) {
  const ModelSpec spec = load_hf_config(config_path("lightonai__LightOnOCR-2-1B.json"));
  const std::int64_t v = 1024;
  const std::int64_t block = 2 * v + 4 * linear(v, v, false) + 3 * linear(v, 4096, false);
  const std::int64_t encoder = std::int64_t{3} * 14 * 14 * v + v + 24 * block;
  const std::int64_t projector = v + linear(4 * v, v, false) + 2 * linear(v, 1024, false);
  EXPECT_EQ(spec.vision.num_parameters, encoder + projector);
  const std::int64_t total = qwen3_0_6b() + encoder + projector;
  EXPECT_EQ(parameter_count(spec), total);
  const std::int64_t header = std::int64_t{2011367489} - 2 * total;
  EXPECT_GE(header, 532 * 64);
  EXPECT_LE(header, 532 * 256);
  expect_published(total, 1e9, 1);
  EXPECT_EQ(kv_bf16(spec), 28 * 2 * 8 * 128 * 2);
}

namespace {

// Qwen3.5's Gated DeltaNet mixer (qwen3_next.py / qwen3_5.py): in_proj_qkvz and in_proj_ba as
// q/k/v (2 key + value widths), z (value width), b and a (a value head each); a depthwise conv
// of 4 taps over q/k/v; dt_bias and A_log per value head; a gated RMSNorm over a value head;
// out_proj.
std::int64_t gated_deltanet(std::int64_t h, std::int64_t key_heads, std::int64_t value_heads) {
  const std::int64_t key = key_heads * kHead;
  const std::int64_t value = value_heads * kHead;
  return (2 * key + value) * h + value * h + 2 * value_heads * h + (2 * key + value) * 4 +
         2 * value_heads + kHead + value * h;
}

}  // namespace

// MiniCPM-V 4.6 (openbmb; its model card and vLLM's recipe: 1.3 B, SigLIP2-400M + Qwen3.5-0.8B).
// vLLM 0.33's minicpmv4_6.py: the SigLIP-style Idefics2VisionTransformer (a biased 14 x 14 patch
// convolution, (980 / 14)^2 = 4,900 positions, 27 blocks of width 1152 with biased q/k/v/o and
// fc1 / fc2 of 4304, two LayerNorms a block, the post-LayerNorm; drop_vision_last_layer false);
// the window-attention merger (a LayerNorm, biased qkv [3456, 1152] and out_proj, a LayerNorm
// over 4608, biased [4608 -> 17216] and [17216 -> 1152]); the merger's downsample MLP (a
// LayerNorm over 4608, biased [4608 -> 4608] and [4608 -> 1024]). The text, Qwen3_5ForCausalLM:
// 24 layers of width 1024, every 4th gated full attention (8 query heads doubled by the output
// gate, 2 KV heads of 256, q/k norms), the others Gated DeltaNet (16 key and 16 value heads of
// 128); SwiGLU 3584; the 248,094-token table tied. KV: the 6 full-attention layers, 6 x 2 x 2 x
// 256 x 2 B = 12,288 B a token (the DeltaNet state is per sequence).
TEST(RegistryMultimodal3, MiniCpmV46ByHand) {
  const ModelSpec spec = load_hf_config(config_path("openbmb__MiniCPM-V-4.6.json"));
  const std::int64_t v = 1152;
  const std::int64_t block =
      4 * linear(v, v, true) + linear(v, 4304, true) + linear(4304, v, true) + 4 * v;
  const std::int64_t siglip =
      linear(std::int64_t{3} * 14 * 14, v, true) + std::int64_t{4900} * v + 27 * block + 2 * v;
  expect_published(siglip, 400e6, 1);
  const std::int64_t window_merger = 2 * v + linear(v, 3 * v, true) + linear(v, v, true) +
                                     2 * (4 * v) + linear(4 * v, 4 * 4304, true) +
                                     linear(4 * 4304, v, true);
  const std::int64_t h = 1024;
  const std::int64_t merger = 2 * (4 * v) + linear(4 * v, 4 * v, true) + linear(4 * v, h, true);
  const std::int64_t tower = siglip + window_merger + merger;
  EXPECT_EQ(spec.vision.num_parameters, tower);
  const std::int64_t full = linear(h, 2 * 8 * 256, false) + 2 * linear(h, 2 * 256, false) +
                            linear(8 * 256, h, false) + 2 * 256;
  const std::int64_t mlp = 3 * linear(h, 3584, false) + 2 * h;
  const std::int64_t text =
      std::int64_t{248094} * h + 6 * (full + mlp) + 18 * (gated_deltanet(h, 16, 16) + mlp) + h;
  EXPECT_EQ(parameter_count(spec), text + tower);
  expect_published(parameter_count(spec), 1.3e9, 2);
  EXPECT_EQ(kv_bf16(spec), 6 * 2 * 2 * 256 * 2);
}

// DeepSeek-OCR (deepseek-ai; a public model report prints its config.json, every tensor's shape
// and the checkpoint's 3,336,106,240 parameters, which the shapes below sum to). vLLM 0.33's
// deepseek_ocr.py builds a fixed SAM ViT-B and CLIP-L/14 (deepencoder.py) whatever its
// vision_config says: SAM's biased 16 x 16 patch convolution to 768, a 64 x 64 position table,
// 12 blocks (two LayerNorms, biased qkv and proj, biased lin1 / lin2 of 3072, relative
// positions [127, 64] x 2 on the global blocks 2, 5, 8, 11 and [27, 64] x 2 on the others), the
// neck (unbiased 1 x 1 and 3 x 3 convolutions to 256, each with a LayerNorm) and unbiased 3 x 3
// convolutions to 512 and 1024; CLIP's class vector, unbiased 14 x 14 patch convolution, 257
// positions, pre-LayerNorm and 24 blocks of width 1024 (biased fused qkv, out_proj, fc1 / fc2 of
// 4096, two LayerNorms). The linear projector [2048 -> 1280] and two 1280-vectors. The text
// (language_config, built by deepseek_v2.py with MHA since qk_nope / qk_rope are 0): 12 layers of
// 10 heads x 128, unbiased q/k/v/o; layer 0 a SwiGLU of 6848, layers 1-11 64 experts of 896 and
// two shared (1792) behind a router; 129,280-token table and head, untied. KV: 12 x 2 x 10 x 128
// x 2 B = 61,440 B a token.
TEST(RegistryMultimodal3, DeepseekOcrMatchesItsCheckpoint) {
  const ModelSpec spec = load_hf_config(config_path("deepseek-ai__DeepSeek-OCR.json"));
  const std::int64_t s = 768;
  const std::int64_t sam_block = 4 * s + linear(s, 3 * s, true) + linear(s, s, true) +
                                 linear(s, 3072, true) + linear(3072, s, true);
  const std::int64_t sam = linear(std::int64_t{3} * 16 * 16, s, true) + std::int64_t{64} * 64 * s +
                           12 * sam_block + 4 * (2 * 127 * 64) + 8 * (2 * 27 * 64) + 256 * s +
                           2 * 256 + 256 * 256 * 9 + 2 * 256 + 512 * 256 * 9 + 1024 * 512 * 9;
  const std::int64_t c = 1024;
  const std::int64_t clip_block = 4 * c + linear(c, 3 * c, true) + linear(c, c, true) +
                                  linear(c, 4096, true) + linear(4096, c, true);
  const std::int64_t clip = c + std::int64_t{3} * 14 * 14 * c + 257 * c + 2 * c + 24 * clip_block;
  const std::int64_t tower = sam + clip + linear(2048, 1280, true) + 2 * 1280;
  EXPECT_EQ(spec.vision.num_parameters, tower);
  const std::int64_t h = 1280;
  const std::int64_t attention = 4 * linear(h, h, false) + 2 * h;
  const std::int64_t moe =
      64 * 3 * linear(h, 896, false) + linear(h, 64, false) + 3 * linear(h, 1792, false);
  const std::int64_t text =
      2 * std::int64_t{129280} * h + 12 * attention + 3 * linear(h, 6848, false) + 11 * moe + h;
  EXPECT_EQ(text + tower, std::int64_t{3336106240});
  EXPECT_EQ(parameter_count(spec), std::int64_t{3336106240});
  EXPECT_EQ(kv_bf16(spec), 12 * 2 * 10 * 128 * 2);
}

// EXAONE-4.5-33B (LGAI-EXAONE; its technical report: a 1.2 B vision encoder on EXAONE 4.0 32B,
// 33 B in all). vLLM 0.33's exaone4_5.py subclasses Qwen2.5-VL: an unbiased 3-D patch
// convolution [2048, 3, 2, 14, 14]; 28 blocks of two RMSNorms, a biased qkv of 32 query and 8
// K/V heads x 64 ([2048 + 2 x 512, 2048]), a biased proj and a biased gated MLP of 5120; the
// patch merger (an RMSNorm [2048], biased [8192 -> 8192] and [8192 -> 5120]). The text is
// EXAONE 4.0 32B's (Exaone4ForCausalLM: 64 layers of 40 query and 8 KV heads x 128 with q/k
// norms, SwiGLU 27392, post-attention and post-MLP norms) over a 153,600-token table, untied;
// its MTP layer is a drafter's, not counted. With EXAONE-4.0-32B's 102,400 tokens the text is
// the published 32.0 B. KV: every one of the 64 layers, 64 x 2 x 8 x 128 x 2 B = 262,144 B a
// token (48 of them slide within 4096 tokens).
TEST(RegistryMultimodal3, Exaone45ByHand) {
  const ModelSpec spec = load_hf_config(config_path("LGAI-EXAONE__EXAONE-4.5-33B.json"));
  const std::int64_t e = 2048;
  const std::int64_t block = 2 * e + linear(e, e + 2 * 8 * 64, true) + linear(e, e, true) +
                             2 * linear(e, 5120, true) + linear(5120, e, true);
  const std::int64_t encoder = std::int64_t{3} * 2 * 14 * 14 * e + 28 * block;
  expect_published(encoder, 1.2e9, 2);
  const std::int64_t merger = e + linear(4 * e, 4 * e, true) + linear(4 * e, 5120, true);
  EXPECT_EQ(spec.vision.num_parameters, encoder + merger);
  const std::int64_t h = 5120;
  const std::int64_t layer = linear(h, 40 * kHead, false) + 2 * linear(h, 8 * kHead, false) +
                             linear(40 * kHead, h, false) + 2 * kHead +
                             3 * linear(h, 27392, false) + 2 * h;
  auto text = [&](std::int64_t vocab) { return 2 * vocab * h + 64 * layer + h; };
  expect_published(text(102400), 32.0e9);
  EXPECT_EQ(parameter_count(spec), text(153600) + encoder + merger);
  EXPECT_EQ(spec.num_nextn_predict_layers, 1);
  EXPECT_EQ(kv_bf16(spec), 64 * 2 * 8 * 128 * 2);
}
