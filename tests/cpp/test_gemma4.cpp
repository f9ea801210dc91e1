// Gemma 4 as vLLM 0.33 builds it (vllm/model_executor/models/gemma4.py, config from transformers
// 5.20's Gemma4TextConfig): full-attention layers of global_head_dim, with attention_k_eq_v
// num_global_key_value_heads KV heads (per_layer_config); the last num_kv_shared_layers read the
// KV of the last earlier layer of their kind (kv_sharing_target_layer_name: no KV cache, q_proj
// and o_proj only) with a double-wide MLP under use_double_wide_mlp; an MoE block beside the
// dense MLP; per-layer input embeddings (hidden_size_per_layer_input). Layers whose page is
// smaller take a proportionally larger block (kv_cache_planning.py,
// unify_kv_cache_spec_page_size), so every layer costs its own bytes per token.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "test_support.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/kv_cache.hpp"
#include "vramplan/model_spec.hpp"

using namespace vramplan;
using vramplan_test::config_path;

namespace {

KvCacheOptions options(std::int32_t tp = 1) {
  KvCacheOptions o;
  o.tensor_parallel_size = tp;
  o.kv_element_bytes = 2;
  return o;
}

}  // namespace

// google/gemma-4-26B-A4B(-it): 30 layers, 5 sliding then 1 full, x5. Sliding: 8 KV heads x 256
// -> 2 x 8 x 256 x 2 B = 8,192 B per token; full: attention_k_eq_v with 2 global KV heads x 512
// -> 2 x 2 x 512 x 2 = 4,096. 25 x 8,192 + 5 x 4,096 = 225,280 B per token. TP 2: 4 heads
// (4,096) and 1 head (2,048): 112,640.
TEST(Gemma4, MoeKvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path("google__gemma-4-26B-A4B-it.json"));
  EXPECT_EQ(spec.model_type, "gemma4_text");
  EXPECT_EQ(spec.layers[0].head_dim, 256);
  EXPECT_EQ(spec.layers[5].head_dim, 512);
  EXPECT_EQ(spec.layers[5].num_key_value_heads, 2);
  EXPECT_EQ(kv_bytes_per_token(spec, options()), 225280);
  EXPECT_EQ(kv_bytes_per_token(spec, options(2)), 112640);
}

// The groups vLLM forms: 25 sliding and 5 full layers -> group size 5 (25 >= 1.5 x 5): five
// sliding groups and one full group. The page is the sliding layers' 16 x 8,192 = 131,072 B; the
// full layers' half-size page takes 32-token blocks. One 262,144-token request with 8,192 batched
// tokens: sliding ceil((1,023 + 8,192) / 16) + 1 = 577 blocks per group (x5 = 2,885), full
// 262,144 / 32 = 8,192; 11,077 blocks x 131,072 B x 5 layers per block = 7,259,422,720 B.
TEST(Gemma4, MoeHybridGroupsAndRequestBytesByHand) {
  const ModelSpec spec = load_hf_config(config_path("google__gemma-4-26B-A4B-it.json"));
  const KvGeometry geometry = kv_geometry(spec, options());
  EXPECT_EQ(geometry.group_size, 5);
  ASSERT_EQ(geometry.groups.size(), 6U);
  const KvPage page = kv_page(geometry, 16, 2);
  EXPECT_EQ(page.page_bytes, 131072);
  EXPECT_EQ(page.bytes_per_token, 225280);
  EXPECT_EQ(kv_blocks_per_request(geometry, page, 262144, 8192), 11077);
  EXPECT_EQ(kv_request_bytes(geometry, page, 262144, 8192), std::int64_t{7259422720});
}

// Parameters by hand from gemma4.py's modules (h 2816, 16 heads, vocab 262,144, tied):
//   embed 262,144 x 2,816 = 738,197,504; final norm 2,816.
//   sliding attention: q 4,096 x 2,816 + k/v 2 x 2,048 x 2,816 + o 2,816 x 4,096 + q/k norms 512
//     = 34,603,520; full: q 8,192 x 2,816 + k/v 2 x 1,024 x 2,816 (vLLM builds V, the checkpoint
//     loads K into it) + o + norms 1,024 = 51,905,536.
//   every layer: dense MLP 3 x 2,112 x 2,816 = 17,842,176; router 128 x 2,816 = 360,448; experts
//     128 x 3 x 704 x 2,816 = 761,266,176; 8 norms of 2,816 (4 + 3 MoE + router scale) = 22,528.
//   25 x 814,094,848 + 5 x 831,396,864 = 24,509,355,520 -> text 25,247,555,840 (the published
//   "25.2B total"; per_expert_scale and layer_scalar, 3,870 values, left out).
//   Vision (the tensor list of the 31B checkpoint, same tower): 27 x (4 x 1,152^2 + 3 x 1,152 x
//   4,304 + 4 x 1,152 + 2 x 72) + input_proj 768 x 1,152 + position table 2 x 10,240 x 1,152 +
//   std_bias/std_scale 2 x 1,152 = 569,550,384 (the published "~550M"); projector 2,816 x 1,152.
TEST(Gemma4, MoeParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path("google__gemma-4-26B-A4B-it.json"));
  EXPECT_EQ(spec.vision.num_parameters, 569550384 + 2816 * 1152);
  EXPECT_EQ(parameter_count(spec) - spec.vision.num_parameters, std::int64_t{25247555840});
}

// google/gemma-4-31B-it: 50 sliding layers of 16 KV heads x 256 (16,384 B) and 10 full of 4 global
// KV heads x 512 (8,192): 819,200 + 81,920 = 901,120 B per token.
TEST(Gemma4, DenseKvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path("google__gemma-4-31B-it.json"));
  EXPECT_EQ(kv_bytes_per_token(spec, options()), 901120);
}

// The 31B checkpoint's tensor list (tests/data/configs/SOURCES.md) by hand: embed 262,144 x 5,376;
// sliding layers q [8192, 5376], k and v [4096, 5376], o [5376, 8192], q/k norms [256]; full
// layers q [16384, 5376], k [2048, 5376] and no v_proj, o [5376, 16384], norms [512]; MLP
// 3 x 21,504 x 5,376; 4 norms of 5,376: 30,697,345,280 text parameters (+ 60 layer scalars).
// vLLM builds the full layers' V beside K: 10 x 2,048 x 5,376 = 110,100,480 more.
TEST(Gemma4, DenseParametersAgainstTheCheckpointTensorList) {
  const ModelSpec spec = load_hf_config(config_path("google__gemma-4-31B-it.json"));
  const std::int64_t checkpoint_text = 30697345280;
  EXPECT_EQ(parameter_count(spec) - spec.vision.num_parameters,
            checkpoint_text + std::int64_t{110100480});
  EXPECT_EQ(spec.vision.num_parameters, 569550384 + 5376 * 1152);
}

// Gemma-4 E2B's text model: 35 layers (4 sliding, 1 full) x 7; the last 20 share the KV of
// layers 13 (sliding) and 14 (full). The first 15: 12 sliding of 1 KV head x 256 (1,024 B) and 3
// full of 1 KV head x 512 (no attention_k_eq_v: 2,048): 12,288 + 6,144 = 18,432 B per token.
// Groups: 12 sliding and 3 full -> group size 3, four sliding groups and one full; the page is the
// full layers' 16 x 2,048 = 32,768 B, the sliding layers take 32-token blocks.
TEST(Gemma4, KvSharedLayersHoldNoCache) {
  const ModelSpec spec = load_hf_config(config_path("google__gemma-4-E2B-it.text_config.json"));
  EXPECT_FALSE(spec.layers[14].kv_shared);
  EXPECT_TRUE(spec.layers[15].kv_shared);
  EXPECT_EQ(kv_bytes_per_token(spec, options()), 18432);
  const KvGeometry geometry = kv_geometry(spec, options());
  EXPECT_EQ(geometry.group_size, 3);
  EXPECT_EQ(geometry.groups.size(), 5U);
  EXPECT_EQ(kv_page(geometry, 16, 2).page_bytes, 32768);
  // One 4,096-token request, 2,048 batched: sliding ceil((511 + 2,048) / 32) + 1 = 81 blocks per
  // group (x4 = 324), full 4,096 / 16 = 256: 580 blocks.
  EXPECT_EQ(kv_blocks_per_request(geometry, kv_page(geometry, 16, 2), 4096, 2048), 580);
}

// E2B parameters by hand (h 1536, 8 heads, vocab 262,144, per-layer inputs 256):
//   embed 402,653,184; per-layer table 262,144 x 35 x 256 = 2,348,810,240, projection
//   8,960 x 1,536 = 13,762,560, its norm 256; final norm 1,536.
//   every layer: 5 norms x 1,536 (4 + post-PLE) + gate and projection 2 x 256 x 1,536 = 794,112.
//   layers 0-14: sliding attention 3,145,728 x 2 + 786,432 + 512 = 7,078,400, full 6,291,456 x 2
//   + 1,572,864 + 1,024 = 14,156,800, MLP 3 x 6,144 x 1,536 = 28,311,552.
//   layers 15-34 (KV-shared, double-wide MLP 56,623,104): sliding q/o 6,291,456 + q_norm 256,
//   full 12,582,912 + 512.
//   12 x 36,184,064 + 3 x 43,262,464 + 16 x 63,708,928 + 4 x 70,000,640 = 1,863,341,568
//   -> 4,628,569,344 in all.
TEST(Gemma4, PerLayerEmbeddingsAndDoubleWideMlpByHand) {
  const ModelSpec spec = load_hf_config(config_path("google__gemma-4-E2B-it.text_config.json"));
  EXPECT_EQ(spec.per_layer_input_size, 256);
  EXPECT_EQ(parameter_count(spec), std::int64_t{4628569344});
}

// The E2B / E4B wrappers carry an audio tower that is not counted: refused by the key's name.
TEST(Gemma4, AudioTowerIsRefusedByName) {
  std::ifstream in(config_path("google__gemma-4-26B-A4B-it.json"));
  nlohmann::json config = nlohmann::json::parse(in);
  config["audio_config"] = {{"model_type", "gemma4_audio"}};
  try {
    (void)model_spec_from_hf_config(config, nullptr, "gemma4-with-audio.json");
    FAIL() << "expected a refusal";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("audio_config"), std::string::npos) << e.what();
  }
}
