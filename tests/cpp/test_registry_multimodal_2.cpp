// More multimodal wrappers of vLLM 0.33's registry whose tower the table already sizes and whose
// language model is a mapped family (issue 36): Intern-S1 (interns1.py, InternVL in
// transformers' format over Qwen3-MoE), Skywork-R1V (skyworkr1v.py, InternVL's InternViT and
// mlp1 over Qwen2). Per checkpoint: the tower by hand against its published count, the whole
// count against the published one, and the text KV bytes per token by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

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

// InternViT-6B-448px-V2_5 (OpenGVLab, published 5.5 B): 45 blocks of width 3200, MLP 12800, 25
// heads; per block unbiased q/k/v, q/k RMSNorms over the whole width, a biased projection, a
// biased fc1/fc2, two RMSNorms (weights only) and two layer scales; a class vector, a biased
// 14 x 14 patch convolution and 32 x 32 + 1 positions; no final norm. intern_vit.py (fused
// qkv) and interns1_vit.py (separate q, k, v) hold the same numbers.
std::int64_t intern_vit_6b() {
  const std::int64_t h = 3200;
  const std::int64_t block = 3 * linear(h, h, false) + 2 * h + linear(h, h, true) +
                             linear(h, 12800, true) + linear(12800, h, true) + 2 * h + 2 * h;
  const std::int64_t embeddings =
      h + linear(std::int64_t{3} * 14 * 14, h, true) + (std::int64_t{32} * 32 + 1) * h;
  return 45 * block + embeddings;
}

// The pixel-shuffle projector of InternVL (mlp1) and of transformers' InternVL: a LayerNorm over
// 2 x 2 x 3200 = 12800, a biased [12800 -> text] and a biased [text -> text].
std::int64_t shuffle_projector(std::int64_t text_hidden) {
  return std::int64_t{2} * 12800 + linear(12800, text_hidden, true) +
         linear(text_hidden, text_hidden, true);
}

}  // namespace

TEST(RegistryMultimodal2, InternVit6bByHand) { expect_published(intern_vit_6b(), 5.5e9, 2); }

// Intern-S1 (internlm/Intern-S1, published 241 B total): InternViT-6B, the projector to 4096, and
// Qwen3-235B-A22B's text with the 153,216-token vocabulary: 94 layers of 64 query and 4 KV heads
// x 128 with q/k norms, 128 experts of [4096 -> 1536] SwiGLU, 8 a token, and a router; untied.
// Qwen3-235B-A22B itself (vocabulary 151,936) is its published 235 B. KV: 94 layers x 2 x 4 x
// 128 x 2 B = 192,512 B a token.
TEST(RegistryMultimodal2, InternS1ByHand) {
  const ModelSpec spec = load_hf_config(config_path("published_values/internlm__Intern-S1.json"));
  const std::int64_t h = 4096;
  const std::int64_t layer = linear(h, 64 * kHead, false) + 2 * linear(h, 4 * kHead, false) +
                             linear(64 * kHead, h, false) + 2 * kHead + linear(h, 128, false) +
                             128 * (3 * linear(h, 1536, false)) + 2 * h;
  auto text = [&](std::int64_t vocab) { return 2 * vocab * h + 94 * layer + h; };
  expect_published(text(151936), 235e9);
  const std::int64_t tower = intern_vit_6b() + shuffle_projector(h);
  EXPECT_EQ(spec.vision.num_parameters, tower);
  EXPECT_EQ(parameter_count(spec), text(153216) + tower);
  expect_published(parameter_count(spec), 241e9);
  EXPECT_EQ(kv_bf16(spec), 94 * 2 * 4 * 128 * 2);
}

// Skywork-R1V-38B (model card: InternViT-6B-448px-V2_5 + DeepSeek-R1-Distill-Qwen-32B, 38 B):
// a remote-code InternVL checkpoint (model_type internvl_chat) that vLLM builds as
// SkyworkR1VChatModel: InternViT to select_layer -1 (all 45 blocks), mlp1 to 5120. The text is
// Qwen2.5-32B's shape (published 32.8 B): 64 layers of 40 query and 8 KV heads x 128, biased
// q/k/v, MLP 27648, vocabulary 152,064, untied. KV: 64 x 2 x 8 x 128 x 2 B = 262,144 B a token.
TEST(RegistryMultimodal2, SkyworkR1v38bByHand) {
  const ModelSpec spec =
      load_hf_config(config_path("published_values/Skywork__Skywork-R1V-38B.json"));
  const std::int64_t h = 5120;
  const std::int64_t layer = linear(h, h, true) + 2 * linear(h, 8 * kHead, true) +
                             linear(h, h, false) + 3 * linear(h, 27648, false) + 2 * h;
  const std::int64_t text = 2 * std::int64_t{152064} * h + 64 * layer + h;
  expect_published(text, 32.8e9);
  const std::int64_t tower = intern_vit_6b() + shuffle_projector(h);
  EXPECT_EQ(spec.vision.num_parameters, tower);
  EXPECT_EQ(parameter_count(spec), text + tower);
  expect_published(parameter_count(spec), 38e9, 2);
  EXPECT_EQ(kv_bf16(spec), 64 * 2 * 8 * 128 * 2);
}

// BLIP-2 OPT-2.7B (Salesforce/blip2-opt-2.7b; 3.74 B on its Hugging Face listing, as
// promptlayer.com/models/blip2-opt-27b-3cd6 relays it). The config is transformers' compact form:
// the vision tower and Q-Former take Blip2VisionConfig's and Blip2QFormerConfig's defaults. EVA
// ViT-g: 39 layers of width 1408, MLP 6144, fused biased qkv; 16 x 16 patches + CLS; the
// post-LayerNorm (blip2.py builds every layer). The study note quoting the config prints a
// torchinfo table of a copy cut to 3 vision, 2 Q-Former and 3 OPT layers: its per-module counts
// are checked here. Q-Former: 12 layers of width 768, MLP 3072, a cross-attention over the 1408
// vision width on every 2nd layer (0, 2, ...), 32 learned queries, a biased projection to 2560.
// OPT-2.7B: 32 layers of 32 heads x 80, biased, ReLU MLP 10240, learned positions 2048 + 2,
// tied embeddings (50,304 x 2560). KV: 32 x 2 x 32 x 80 x 2 B = 327,680 B a token.
TEST(RegistryMultimodal2, Blip2Opt27bByHand) {
  const std::int64_t h = 1408;
  const std::int64_t vision_layer = linear(h, 3 * h, true) + linear(h, h, true) +
                                    linear(h, 6144, true) + linear(6144, h, true) + 4 * h;
  EXPECT_EQ(3 * vision_layer, 75750528);                          // torchinfo: ModuleList 3-2
  EXPECT_EQ(h + (16 * 16 + 1) * h, 363264);                       // Blip2VisionEmbeddings 2-1
  EXPECT_EQ(linear(std::int64_t{3} * 14 * 14, h, true), 829312);  // Conv2d 3-1
  const std::int64_t vision = 363264 + 829312 + 39 * vision_layer + 2 * h;
  const std::int64_t q = 768;
  const std::int64_t self_attention = 4 * linear(q, q, true) + 2 * q;
  const std::int64_t cross_attention = 2 * linear(q, q, true) + 2 * linear(h, q, true) + 2 * q;
  const std::int64_t mlp = linear(q, 3072, true) + linear(3072, q, true) + 2 * q;
  EXPECT_EQ(2 * (self_attention + mlp) + cross_attention, 17522688);  // ModuleList 3-3
  const std::int64_t qformer = 2 * q + 12 * (self_attention + mlp) + 6 * cross_attention;
  const std::int64_t projection = linear(q, 2560, true);
  EXPECT_EQ(projection, 1968640);  // Linear 1-3
  const std::int64_t tower = vision + 32 * q + qformer + projection;
  const ModelSpec spec = load_hf_config(config_path("Salesforce__blip2-opt-2.7b.json"));
  EXPECT_EQ(spec.vision.num_parameters, tower);
  const std::int64_t opt_layer = 4 * linear(2560, 2560, true) + linear(2560, 10240, true) +
                                 linear(10240, 2560, true) + std::int64_t{4} * 2560;
  const std::int64_t text = std::int64_t{50304} * 2560 + std::int64_t{2048 + 2} * 2560 +
                            32 * opt_layer + std::int64_t{2} * 2560;
  // The spec counts OPT's final LayerNorm as its weight alone (its bias: 2,560 parameters), as
  // for OPT itself (tests/cpp/test_registry_families.cpp, OptParametersByHand).
  EXPECT_EQ(parameter_count(spec), text + tower - 2560);
  expect_published(parameter_count(spec), 3.74e9);
  EXPECT_EQ(kv_bf16(spec), 32 * 2 * 32 * 80 * 2);
}

// LFM2-VL-1.6B (published 1.6 B: LFM2-1.2B, whose 1,170,340,608 tests/cpp/test_lfm2.cpp derives,
// and SigLIP2 NaFlex so400m, "400M"). vLLM's lfm2_vl.py builds every SigLIP2 layer and the
// post-LayerNorm: a biased linear patch embedding [3 x 16 x 16 -> 1152], 256 positions, 27 blocks
// of width 1152 and MLP 4304. Projector without LayerNorm: pixel unshuffle by 2 (4 x 1152),
// [4608 -> 2048] and [2048 -> 2048], biased. KV: LFM2-1.2B's six attention layers, 8 KV heads x
// 64: 6 x 2 x 8 x 64 x 2 B = 12,288 B a token.
TEST(RegistryMultimodal2, Lfm2Vl16bByHand) {
  const ModelSpec spec =
      load_hf_config(config_path("published_values/LiquidAI__LFM2-VL-1.6B.json"));
  const std::int64_t h = 1152;
  const std::int64_t block =
      4 * linear(h, h, true) + linear(h, 4304, true) + linear(4304, h, true) + 4 * h;
  const std::int64_t siglip2 =
      linear(std::int64_t{3} * 16 * 16, h, true) + 256 * h + 27 * block + 2 * h;
  expect_published(siglip2, 400e6, 1);
  const std::int64_t projector = linear(4 * h, 2048, true) + linear(2048, 2048, true);
  EXPECT_EQ(spec.vision.num_parameters, siglip2 + projector);
  EXPECT_EQ(parameter_count(spec), std::int64_t{1170340608} + siglip2 + projector);
  expect_published(parameter_count(spec), 1.6e9, 2);
  EXPECT_EQ(kv_bf16(spec), 6 * 2 * 8 * 64 * 2);
}

namespace {

// GLM-4.1V / 4.5V's vision transformer (glm4_1v.py), term by term as GLM-4.5V's checkpoint lists
// its tensors: a biased Conv3d [1536, 3, 2, 14, 14], post_conv_layernorm [1536], 24 x 24
// positions; 24 blocks of norm1 / norm2 [1536], qkv [4608, 1536], proj [1536, 1536] and a
// SwiGLU of out_hidden_size 4096 (gate, up [4096, 1536], down [1536, 4096]); post_layernorm
// [1536]; a biased downsample [4096, 1536, 2, 2]; the merger: proj [4096, 4096], a LayerNorm
// [4096] with bias, gate / up [merger, 4096] and down [4096, merger].
std::int64_t glm4v_tower(std::int64_t merger) {
  const std::int64_t h = 1536;
  const std::int64_t out = 4096;
  const std::int64_t embeddings =
      linear(std::int64_t{3} * 2 * 14 * 14, h, true) + h + std::int64_t{24} * 24 * h;
  const std::int64_t block = 2 * h + linear(h, 3 * h, false) + linear(h, h, false) +
                             2 * linear(h, out, false) + linear(out, h, false);
  const std::int64_t downsample = linear(h * 2 * 2, out, true);
  const std::int64_t merger_params = linear(out, out, false) + 2 * out +
                                     2 * linear(out, merger, false) + linear(merger, out, false);
  return embeddings + 24 * block + h + downsample + merger_params;
}

}  // namespace

// GLM-4.5V (zai-org/GLM-4.5V; its checkpoint holds 107,710,933,120 parameters, which the report
// quoting the config counts from the safetensors): the vision tower above with a 10944-wide
// merger, and GLM-4.5-Air's text (glm4_moe.py): 46 layers of 96 query and 8 KV heads x 128, q/k/v
// biased, no q/k norm; layer 0 a dense SwiGLU of 10944, layers 1-45 128 routed experts of 1408
// (8 a token) with one shared expert, a router [128, 4096] and its e_score_correction_bias [128];
// vocabulary 151,552, untied. KV: 46 x 2 x 8 x 128 x 2 B = 94,208 B a token.
TEST(RegistryMultimodal2, Glm45vMatchesItsCheckpoint) {
  const ModelSpec spec = load_hf_config(config_path("zai-org__GLM-4.5V.json"));
  const std::int64_t tower = glm4v_tower(10944);
  EXPECT_EQ(spec.vision.num_parameters, tower);
  const std::int64_t h = 4096;
  const std::int64_t attention = linear(h, 96 * kHead, true) + 2 * linear(h, 8 * kHead, true) +
                                 linear(96 * kHead, h, false) + 2 * h;
  const std::int64_t dense = 3 * linear(h, 10944, false);
  const std::int64_t moe = 128 * (3 * linear(h, 1408, false)) + 3 * linear(h, 1408, false) +
                           linear(h, 128, false) + std::int64_t{128};
  const std::int64_t text = 2 * std::int64_t{151552} * h + 46 * attention + dense + 45 * moe + h;
  EXPECT_EQ(text + tower, std::int64_t{107710933120});
  EXPECT_EQ(parameter_count(spec), std::int64_t{107710933120});
  EXPECT_EQ(kv_bf16(spec), 46 * 2 * 8 * 128 * 2);
}

// GLM-4.1V-9B-Thinking (published-values config): the same tower with a 13696-wide merger over
// GLM-4-9B-0414's text (glm4.py: 40 layers of 32 query and 2 KV heads x 128, q/k/v biased, four
// RMSNorms a layer, SwiGLU 13696, vocabulary 151,552, untied; published 9.4 B). KV: 40 x 2 x 2 x
// 128 x 2 B = 40,960 B a token.
TEST(RegistryMultimodal2, Glm41v9bByHand) {
  const ModelSpec spec =
      load_hf_config(config_path("published_values/zai-org__GLM-4.1V-9B-Thinking.json"));
  const std::int64_t h = 4096;
  const std::int64_t layer = linear(h, 32 * kHead, true) + 2 * linear(h, 2 * kHead, true) +
                             linear(32 * kHead, h, false) + 3 * linear(h, 13696, false) + 4 * h;
  const std::int64_t text = 2 * std::int64_t{151552} * h + 40 * layer + h;
  expect_published(text, 9.4e9, 2);
  EXPECT_EQ(spec.vision.num_parameters, glm4v_tower(13696));
  EXPECT_EQ(parameter_count(spec), text + glm4v_tower(13696));
  EXPECT_EQ(kv_bf16(spec), 40 * 2 * 2 * 128 * 2);
  EXPECT_EQ(spec.rotary_dim, 64);  // partial_rotary_factor 0.5 of 128
}

// GLM-OCR (zai-org/GLM-OCR; the report: 0.9 B = a 0.4 B CogViT encoder + a 0.5 B GLM decoder).
// glm_ocr.py's CogViT: a biased Conv3d [1024, 3, 2, 14, 14], no positions and no post-conv norm;
// 24 blocks of two RMSNorms, biased qkv [3072, 1024] and proj, q/k RMSNorms over the head size
// 64, a biased SwiGLU of 4096; post_layernorm; a biased downsample [1536, 1024, 2, 2]; the merger
// (proj [1536, 1536], a LayerNorm, a SwiGLU of the text's 4608): 434,120,192, the "0.4 B".
// The decoder (glm4.py): 16 layers of 16 query and 8 KV heads x 128 (head_dim written, not
// 1536 / 16), no biases, four RMSNorms, SwiGLU 4608; untied 59,392-token embeddings; without
// them 490,833,408 parameters, the "0.5 B". Its MTP layer is a drafter's, not counted. KV: 16 x 2
// x 8 x 128 x 2 B = 65,536 B a token.
TEST(RegistryMultimodal2, GlmOcrByHand) {
  const ModelSpec spec = load_hf_config(config_path("zai-org__GLM-OCR.json"));
  const std::int64_t h = 1024;
  const std::int64_t block = 2 * h + linear(h, 3 * h, true) + linear(h, h, true) +
                             std::int64_t{2} * 64 + 2 * linear(h, 4096, true) +
                             linear(4096, h, true);
  const std::int64_t out = 1536;
  const std::int64_t tower = linear(std::int64_t{3} * 2 * 14 * 14, h, true) + 24 * block + h +
                             linear(h * 2 * 2, out, true) + linear(out, out, false) + 2 * out +
                             2 * linear(out, 4608, false) + linear(4608, out, false);
  expect_published(tower, 0.4e9, 1);
  EXPECT_EQ(spec.vision.num_parameters, tower);
  const std::int64_t t = 1536;
  const std::int64_t layer = linear(t, 16 * kHead, false) + 2 * linear(t, 8 * kHead, false) +
                             linear(16 * kHead, t, false) + 3 * linear(t, 4608, false) + 4 * t;
  const std::int64_t decoder = 16 * layer + t;
  expect_published(decoder, 0.5e9, 1);
  EXPECT_EQ(parameter_count(spec), 2 * std::int64_t{59392} * t + decoder + tower);
  EXPECT_EQ(spec.num_nextn_predict_layers, 1);
  EXPECT_EQ(kv_bf16(spec), 16 * 2 * 8 * 128 * 2);
}

// Kimi-K2.5 (moonshotai/Kimi-K2.5, INT4 experts): a public report prints its config and every
// tensor's shape, and counts 170,738,182,128 stored elements (packed int32 experts, their bf16
// group scales and shape vectors included), which the shapes below sum to. Unpacked (8 int4
// values an int32), the checkpoint holds 1,026,879,376,368 parameters (the published 1 T).
// Vision (kimi_k25_vit.py, Kimi_K25VisionConfig's 1152 / 4304 / 27 layers): a biased 14 x 14
// patch convolution, a 64 x 64 position table, blocks of two LayerNorms, a biased wqkv [3456,
// 1152] and wo, a biased fc0 / fc1 MLP, a final LayerNorm; the patch merger: a LayerNorm [1152],
// biased [4608 -> 4608] and [4608 -> 7168]. Text: Kimi-K2's DeepSeek-V3 layout (61 layers, MLA
// with q_lora 1536 and kv_lora 512 + 64, 384 experts of 2048 from layer 1, one shared expert,
// vocabulary 163,840, untied). KV (MLA): 61 x (512 + 64) x 2 B = 70,272 B a token.
TEST(RegistryMultimodal2, KimiK25MatchesItsCheckpoint) {
  const std::int64_t v = 1152;
  const std::int64_t block = 4 * v + linear(v, 3 * v, true) + linear(v, v, true) +
                             linear(v, 4304, true) + linear(4304, v, true);
  const std::int64_t tower = linear(std::int64_t{3} * 14 * 14, v, true) +
                             std::int64_t{64} * 64 * v + 27 * block + 2 * v + 2 * v +
                             linear(4 * v, 4 * v, true) + linear(4 * v, 7168, true);
  const std::int64_t h = 7168;
  const std::int64_t attention = 2 * h + 512 + 1536 + linear(h, 576, false) +
                                 linear(512, 16384, false) + linear(8192, h, false) +
                                 linear(h, 1536, false) + linear(1536, 12288, false);
  const std::int64_t moe_rest = linear(h, 384, false) + 384 + 3 * linear(h, 2048, false);
  const std::int64_t expert = 3 * linear(h, 2048, false);
  const std::int64_t text_rest = 2 * std::int64_t{163840} * h + 61 * attention +
                                 3 * linear(h, 18432, false) + 60 * moe_rest + h;
  // As stored: per expert, down_proj packed [7168, 256] + scales [7168, 64], gate / up packed
  // [2048, 896] + scales [2048, 224] each, and three 2-element shape vectors.
  const std::int64_t stored_expert =
      h * 256 + h * 64 + 2 * (std::int64_t{2048} * 896 + std::int64_t{2048} * 224) + 6;
  EXPECT_EQ(text_rest + tower + 60 * (384 * stored_expert), std::int64_t{170738182128});
  const ModelSpec spec = load_hf_config(config_path("moonshotai__Kimi-K2.5.json"));
  EXPECT_EQ(spec.vision.num_parameters, tower);
  EXPECT_EQ(parameter_count(spec), text_rest + tower + 60 * (384 * expert));
  EXPECT_EQ(parameter_count(spec), std::int64_t{1026879376368});
  EXPECT_EQ(spec.quantization.method, QuantMethod::PackedWNA16);
  EXPECT_EQ(kv_bf16(spec), 61 * (512 + 64) * 2);
}
