// More of vLLM 0.33's text registry (issue 36, second batch), each family as its model file
// builds it: A.X K1 (AXK1.py), poolside Laguna (laguna.py) and Cohere North (cohere2_moe.py). KV
// bytes per token and parameters derived by hand from those files, and checked against the
// published count.
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
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

namespace {

// Laguna's published checkpoints are FP8; the test data keeps their configs without the
// quantization block (SOURCES.md), so the counts below are of the bf16 layout.
ModelSpec laguna_bf16(const char* file) { return load_hf_config(config_path(file)); }

// The named error a config is refused with.
std::string spec_error_of(const nlohmann::json& config) {
  try {
    (void)model_spec_from_hf_config(config, nullptr, "config.json");
  } catch (const SpecError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no SpecError";
  return "";
}

}  // namespace

// A.X K1: MLA caches one latent row a token and layer, kv_lora_rank + qk_rope_head_dim = 512 +
// 64 = 576 values x 2 B = 1,152 B a layer; 61 layers: 70,272 B a token. The latent is not split
// over TP (every rank caches it whole): 70,272 at TP 8 too.
TEST(RegistryFamiliesB, AXK1KvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path("skt__A.X-K1.json"));
  EXPECT_EQ(spec.model_type, "AXK1");
  EXPECT_TRUE(spec.has_mla);
  EXPECT_FALSE(spec.layers[0].moe);  // first_k_dense_replace 1
  EXPECT_TRUE(spec.layers[1].moe);
  EXPECT_TRUE(spec.layers[60].moe);
  EXPECT_EQ(kv_bf16(spec), 70272);
  EXPECT_EQ(kv_bf16(spec, 8), 70272);
}

// Parameters (h 7,168, 64 heads, V 163,840 untied): embed + lm_head 2 x 163,840 x 7,168 =
// 2,348,810,240. Per layer, MLA: q_a_proj 7,168 x 1,536 = 11,010,048 and its norm 1,536; q_b_proj
// 64 x (128 + 64) x 1,536 = 18,874,368; kv_a_proj_with_mqa (512 + 64) x 7,168 = 4,128,768 and
// its norm 512; kv_b_proj 64 x (128 + 128) x 512 = 8,388,608; o_proj 7,168 x 64 x 128 =
// 58,720,256: 101,124,096. Three RMSNorms (input, post_attention, post_mlp) 21,504: 101,145,600
// a layer. Layer 0's dense MLP 3 x 7,168 x 18,432 = 396,361,728. Layers 1-60: 192 experts x 3 x
// 7,168 x 2,048 = 8,455,716,864, one shared MLP 3 x 7,168 x 2,048 = 44,040,192, router 192 x
// 7,168 = 1,376,256 and its fp32 bias 192: 8,501,133,504. 2,348,810,240 + 61 x 101,145,600 +
// 396,361,728 + 60 x 8,501,133,504 + final norm 7,168 = 518,983,070,976. The published
// 518,983,059,456 (519B) is this less 60 x 192 = 11,520, the MoE layers' router biases.
TEST(RegistryFamiliesB, AXK1ParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path("skt__A.X-K1.json"));
  EXPECT_EQ(spec.norms_per_layer, 3);
  EXPECT_FALSE(spec.tie_word_embeddings);
  EXPECT_EQ(spec.moe.num_experts, 192);
  EXPECT_EQ(spec.moe.num_shared_experts, 1);
  EXPECT_TRUE(spec.moe.router_bias);
  EXPECT_EQ(spec.num_nextn_predict_layers, 1);
  const std::int64_t hand = 518983070976;
  EXPECT_EQ(parameter_count(spec), hand);
  EXPECT_EQ(hand - std::int64_t{60} * 192, std::int64_t{518983059456});
  vramplan_test::expect_published(hand, 519e9);
}

// mlp_layer_types (transformers' AXK1Config writes it) places the MoE layers instead of
// first_k_dense_replace: two dense layers cost one MoE block and add one dense MLP,
// 396,361,728 - 8,501,133,504 fewer. A value other than dense / sparse is named.
TEST(RegistryFamiliesB, AXK1MlpLayerTypes) {
  nlohmann::json config = config_json("skt__A.X-K1.json");
  nlohmann::json types = nlohmann::json::array();
  for (int i = 0; i < 61; ++i) types.push_back(i < 2 ? "dense" : "sparse");
  config["mlp_layer_types"] = types;
  const ModelSpec spec = model_spec_from_hf_config(config, nullptr, "axk1.json");
  EXPECT_FALSE(spec.layers[1].moe);
  EXPECT_TRUE(spec.layers[2].moe);
  EXPECT_EQ(parameter_count(spec),
            std::int64_t{518983070976} + 396361728 - std::int64_t{8501133504});
  config["mlp_layer_types"][5] = "moe";
  EXPECT_NE(spec_error_of(config).find("mlp_layer_types"), std::string::npos);
}

// Laguna-XS.2: 40 layers (full on every fourth from layer 0, sliding 512 elsewhere), 8 KV heads
// x 128 on every layer whatever its query heads: 2 x 8 x 128 x 2 B = 4,096 B a layer, 163,840 B
// a token; TP 8: one KV head a rank, 20,480. Laguna-S-2.1: 48 such layers, 196,608 and 24,576.
TEST(RegistryFamiliesB, LagunaKvBytesPerTokenByHand) {
  const ModelSpec xs = laguna_bf16("poolside__Laguna-XS.2-FP8.json");
  EXPECT_EQ(xs.model_type, "laguna");
  EXPECT_EQ(xs.layers[0].attention, AttentionKind::Full);
  EXPECT_EQ(xs.layers[1].attention, AttentionKind::SlidingWindow);
  EXPECT_EQ(xs.layers[1].sliding_window, 512);
  EXPECT_EQ(xs.layers[4].attention, AttentionKind::Full);
  EXPECT_EQ(kv_bf16(xs), 163840);
  EXPECT_EQ(kv_bf16(xs, 8), 20480);
  const ModelSpec s = laguna_bf16("poolside__Laguna-S-2.1-FP8.json");
  EXPECT_EQ(kv_bf16(s), 196608);
  EXPECT_EQ(kv_bf16(s, 8), 24576);
}

// Laguna-XS.2 (h 2,048, head 128, 8 KV heads, V 100,352 untied): embed + lm_head 2 x 100,352 x
// 2,048 = 411,041,792. A full layer (48 heads): q_proj and o_proj 2 x 2,048 x 6,144 =
// 25,165,824, k/v 2 x 1,024 x 2,048 = 4,194,304, g_proj 48 x 2,048 = 98,304, q/k norms 256, two
// RMSNorms 4,096: 29,462,784. A sliding layer (64 heads): 2 x 2,048 x 8,192 = 33,554,432 +
// 4,194,304 + 131,072 + 256 + 4,096 = 37,884,160. Layer 0's dense MLP 3 x 2,048 x 8,192 =
// 50,331,648; layers 1-39: 256 experts x 3 x 2,048 x 512 = 805,306,368, the shared MLP 3 x 2,048
// x 512 = 3,145,728, router 524,288 and its bias 256: 808,976,640. 411,041,792 + 10 x 29,462,784
// + 30 x 37,884,160 + 50,331,648 + 39 x 808,976,640 + final norm 2,048 = 33,442,617,088: the
// published 33B.
TEST(RegistryFamiliesB, LagunaXs2ParametersByHand) {
  const ModelSpec spec = laguna_bf16("poolside__Laguna-XS.2-FP8.json");
  EXPECT_TRUE(spec.attn_head_gate);  // gating: true
  EXPECT_TRUE(spec.qk_norm);
  EXPECT_FALSE(spec.qkv_bias);
  EXPECT_EQ(spec.layers[0].num_attention_heads, 48);
  EXPECT_EQ(spec.layers[1].num_attention_heads, 64);
  EXPECT_FALSE(spec.layers[0].moe);
  EXPECT_TRUE(spec.layers[1].moe);
  EXPECT_EQ(spec.moe.shared_expert_intermediate_size, 512);
  EXPECT_FALSE(spec.moe.shared_expert_gate);
  EXPECT_TRUE(spec.moe.router_bias);
  EXPECT_EQ(parameter_count(spec), std::int64_t{33442617088});
  vramplan_test::expect_published(33442617088, 33e9, 2);
}

// Laguna-S-2.1 (h 3,072): embed + lm_head 616,562,688. A full layer (48 heads): 2 x 3,072 x
// 6,144 = 37,748,736 + k/v 6,291,456 + g_proj 147,456 + 256 + 6,144 = 44,194,048; a sliding
// layer (72 heads): 2 x 3,072 x 9,216 = 56,623,104 + 6,291,456 + 221,184 + 256 + 6,144 =
// 63,142,144. Layer 0's MLP 3 x 3,072 x 12,288 = 113,246,208; layers 1-47: 256 x 3 x 3,072 x
// 1,024 = 2,415,919,104 + shared 9,437,184 + router 786,432 + bias 256 = 2,426,142,976.
// 616,562,688 + 12 x 44,194,048 + 36 x 63,142,144 + 113,246,208 + 47 x 2,426,142,976 + 3,072 =
// 117,561,977,600: the published 118B.
TEST(RegistryFamiliesB, LagunaS21ParametersByHand) {
  const ModelSpec spec = laguna_bf16("poolside__Laguna-S-2.1-FP8.json");
  EXPECT_TRUE(spec.attn_head_gate);  // gating: "per-head"
  EXPECT_EQ(spec.layers[3].num_attention_heads, 72);
  EXPECT_EQ(parameter_count(spec), std::int64_t{117561977600});
  vramplan_test::expect_published(117561977600, 118e9);
}

// One cos/sin cache per layer type's rope (get_rope caches by its parameters): the full layers'
// YaRN over original_max_position_embeddings x factor = 4,096 x 64 = 262,144 positions (S-2.1:
// 8,192 x 32) x 64 rotated dims (partial_rotary_factor 0.5), the sliding layers' default rope
// over max_position_embeddings 262,144 x 128: 50,331,648 values, written as 393,216 positions x
// 128.
TEST(RegistryFamiliesB, LagunaRopeCachePerLayerType) {
  for (const char* file : {"poolside__Laguna-XS.2-FP8.json", "poolside__Laguna-S-2.1-FP8.json"}) {
    const ModelSpec spec = laguna_bf16(file);
    EXPECT_EQ(spec.max_position_embeddings, 262144) << file;
    EXPECT_EQ(spec.rotary_dim, 128) << file;
    EXPECT_EQ(spec.rotary_cache_positions, 393216) << file;
  }
}

// LagunaConfig's defaults where a config omits the layout keys: every layer full with
// num_attention_heads, layer 0 dense, per-head gating, the default per-type rope (full layers
// 0.5 rotary over 131,072 positions: 131,072 x 64 = 65,536 positions x 128). Per-element gating
// and sliding-layer sinks are refused by name, as is a per-layer head count TP does not divide.
TEST(RegistryFamiliesB, LagunaDefaultsAndRefusals) {
  nlohmann::json config = config_json("poolside__Laguna-XS.2-FP8.json");
  for (const char* key :
       {"layer_types", "mlp_layer_types", "num_attention_heads_per_layer", "gating",
        "rope_parameters", "partial_rotary_factor", "max_position_embeddings"}) {
    config.erase(key);
  }
  const ModelSpec plain = model_spec_from_hf_config(config, nullptr, "laguna.json");
  EXPECT_EQ(plain.layers[1].attention, AttentionKind::Full);
  EXPECT_EQ(plain.layers[1].num_attention_heads, 0);  // num_attention_heads, 48
  EXPECT_FALSE(plain.layers[0].moe);
  EXPECT_TRUE(plain.layers[1].moe);
  EXPECT_TRUE(plain.attn_head_gate);
  EXPECT_EQ(plain.rotary_cache_positions, 65536);
  // 30 sliding layers lose 16 heads each: 2 x 2,048 x 2,048 + 16 x 2,048 = 8,421,376 apiece.
  EXPECT_EQ(parameter_count(plain), std::int64_t{33442617088} - 30 * std::int64_t{8421376});
  ASSERT_TRUE(tensor_parallel_split_problem(laguna_bf16("poolside__Laguna-S-2.1-FP8.json"), 16));
  EXPECT_EQ(
      tensor_parallel_split_problem(laguna_bf16("poolside__Laguna-S-2.1-FP8.json"), 16)->field,
      "layer_num_attention_heads");  // 72 heads over 16 ranks
  // gating null: no g_proj, 10 x 48 x 2,048 + 30 x 64 x 2,048 = 4,915,200 fewer.
  nlohmann::json ungated = config_json("poolside__Laguna-XS.2-FP8.json");
  ungated["gating"] = nullptr;
  EXPECT_EQ(parameter_count(model_spec_from_hf_config(ungated, nullptr, "l.json")),
            std::int64_t{33442617088} - 4915200);
  config["gating"] = "per-element";
  EXPECT_NE(spec_error_of(config).find("gating"), std::string::npos);
  config["gating"] = true;
  config["swa_attention_sink_enabled"] = true;
  EXPECT_NE(spec_error_of(config).find("swa_attention_sink_enabled"), std::string::npos);
}

// North Mini Code: 49 layers of 4 KV heads x 128: 2 x 4 x 128 x 2 B = 2,048 B a layer, 100,352 B
// a token; TP 4: one KV head a rank, 25,088. Its sliding layers (three of every four after layer
// 0) attend over sliding_window + 1 = 4,097 tokens.
TEST(RegistryFamiliesB, Cohere2MoeKvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path("CohereLabs__north-mini-code.json"));
  EXPECT_EQ(spec.model_type, "cohere2_moe");
  EXPECT_EQ(spec.layers[0].attention, AttentionKind::Full);
  EXPECT_EQ(spec.layers[1].attention, AttentionKind::SlidingWindow);
  EXPECT_EQ(spec.layers[1].sliding_window, 4097);
  EXPECT_EQ(spec.layers[4].attention, AttentionKind::Full);
  EXPECT_EQ(kv_bf16(spec), 100352);
  EXPECT_EQ(kv_bf16(spec, 4), 25088);
}

// Parameters (h 2,048, 32 heads x 128, V 262,144, logits from the embedding): embed 262,144 x
// 2,048 = 536,870,912. Per layer: q_proj and o_proj 2 x 2,048 x 4,096 = 16,777,216, k/v 2 x 512
// x 2,048 = 2,097,152, one norm 2,048 (the parallel block's): 18,876,416. Layer 0's dense MLP 3
// x 2,048 x 3,072 = 18,874,368; layers 1-48: 128 experts x 3 x 2,048 x 768 = 603,979,776 and the
// router 262,144 (no bias, no shared expert): 604,241,920. 536,870,912 + 49 x 18,876,416 +
// 18,874,368 + 48 x 604,241,920 + final norm 2,048 = 30,484,303,872: the published 30B.
TEST(RegistryFamiliesB, Cohere2MoeParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path("CohereLabs__north-mini-code.json"));
  EXPECT_TRUE(spec.tie_word_embeddings);
  EXPECT_EQ(spec.norms_per_layer, 1);
  EXPECT_EQ(spec.intermediate_size, 3072);
  EXPECT_FALSE(spec.layers[0].moe);
  EXPECT_TRUE(spec.layers[1].moe);
  EXPECT_EQ(spec.moe.moe_intermediate_size, 768);
  EXPECT_FALSE(spec.moe.router_bias);
  EXPECT_EQ(parameter_count(spec), std::int64_t{30484303872});
  vramplan_test::expect_published(30484303872, 30e9, 2);
}

// Cohere2MoeConfig's derivation without layer_types: prefix layers by
// prefix_dense_sliding_window_pattern (1: full), then three sliding and one full: the same 49
// kinds. num_shared_experts 1 adds one MLP of intermediate_size a MoE layer, 48 x 3 x 2,048 x 768
// = 226,492,416. q/k norms and a sequential block are refused by name.
TEST(RegistryFamiliesB, Cohere2MoeDefaultsAndRefusals) {
  nlohmann::json config = config_json("CohereLabs__north-mini-code.json");
  config.erase("layer_types");
  config["num_shared_experts"] = 1;
  const ModelSpec spec = model_spec_from_hf_config(config, nullptr, "north.json");
  for (int i = 0; i < 49; ++i) {
    EXPECT_EQ(spec.layers[i].attention,
              i % 4 == 0 ? AttentionKind::Full : AttentionKind::SlidingWindow)
        << i;
  }
  EXPECT_EQ(spec.layers[2].sliding_window, 4097);
  EXPECT_EQ(parameter_count(spec), std::int64_t{30484303872} + 226492416);
  config["use_qk_norm"] = true;
  EXPECT_NE(spec_error_of(config).find("use_qk_norm"), std::string::npos);
  config["use_qk_norm"] = false;
  config["use_parallel_block"] = false;
  EXPECT_NE(spec_error_of(config).find("use_parallel_block"), std::string::npos);
}
