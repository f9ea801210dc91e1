// More of vLLM 0.33's registry, each family as its model file builds it: Nemotron-4 / Minitron
// (nemotron.py), Apertus (apertus.py), Orion (orion.py), GLM-4.7-Flash (glm4_moe_lite.py) and
// Ling / Ring (bailing_moe.py).
// KV bytes per token and parameters derived by hand from those files; parameters also against
// the checkpoint's published count.
#include <gtest/gtest.h>

#include <cmath>
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
using vramplan_test::config_json;
using vramplan_test::config_path;
using vramplan_test::kv_bf16;

namespace {

// The spec leaves out a few vectors vLLM holds (a final LayerNorm's bias, xIELU's two scalars a
// layer): the counts agree with the hand derivation to 0.01 %, and the hand derivation with the
// published count to 0.5 % (the published counts are rounded).
void expect_close(std::int64_t got, std::int64_t hand, double published) {
  EXPECT_LT(std::fabs(static_cast<double>(got - hand)) / static_cast<double>(hand), 1e-4)
      << "spec " << got << " vs hand " << hand;
  EXPECT_LT(std::fabs(static_cast<double>(hand) - published) / published, 0.005)
      << "hand " << hand << " vs published " << published;
}

void expect_refused_naming(const nlohmann::json& config, const std::string& key) {
  try {
    (void)model_spec_from_hf_config(config, nullptr, "refused.json");
    ADD_FAILURE() << "expected a refusal naming " << key;
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
  }
}

}  // namespace

// Nemotron-4 4B (nemotron.py): 32 layers of 8 KV heads x 128 (3,072 / 24): 2 x 8 x 128 x 2 B =
// 4,096 B a layer, 131,072 B a token; TP 8: one KV head a rank, 16,384.
TEST(RegistryFamilies, NemotronKvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path("nvidia__Nemotron-Mini-4B-Instruct.json"));
  EXPECT_EQ(spec.model_type, "nemotron");
  EXPECT_EQ(spec.rotary_dim, 64);  // partial_rotary_factor 0.5 of 128
  EXPECT_FALSE(spec.gated_mlp);    // up_proj, squared ReLU, down_proj
  EXPECT_EQ(kv_bf16(spec), 131072);
  EXPECT_EQ(kv_bf16(spec, 8), 16384);
}

// Parameters (h 3,072, V 256,000 untied): embed + lm_head 2 x 786,432,000 = 1,572,864,000.
// Per layer: q and o 2 x 3,072^2 = 18,874,368, k/v 2 x 1,024 x 3,072 = 6,291,456; up/down
// 2 x 3,072 x 9,216 = 56,623,104; two LayerNorm1P (weight + bias) 12,288: 81,801,216. 32 layers
// 2,617,638,912; final LayerNorm1P 6,144: 4,190,509,056 (published: 4.19 B).
TEST(RegistryFamilies, NemotronParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path("nvidia__Nemotron-Mini-4B-Instruct.json"));
  EXPECT_FALSE(spec.qkv_bias);
  EXPECT_FALSE(spec.mlp_bias);
  expect_close(parameter_count(spec), 4190509056, 4.19e9);
}

// NemotronConfig.__post_init__ sets partial_rotary_factor 0.5 when the config omits it.
TEST(RegistryFamilies, NemotronPartialRotaryDefault) {
  nlohmann::json config = config_json("nvidia__Nemotron-Mini-4B-Instruct.json");
  config.erase("partial_rotary_factor");
  const ModelSpec spec = model_spec_from_hf_config(config, nullptr, "nemotron.json");
  EXPECT_EQ(spec.rotary_dim, 64);
  bool named = false;
  for (const std::string& line : spec.config_defaults) {
    named |= line.find("partial_rotary_factor") != std::string::npos;
  }
  EXPECT_TRUE(named);
}

// swiss-ai/Apertus-8B (apertus.py): 32 layers of 8 KV heads x 128: 2 x 8 x 128 x 2 B = 4,096 B
// a layer, 131,072 B a token.
TEST(RegistryFamilies, ApertusKvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path("swiss-ai__Apertus-8B.json"));
  EXPECT_EQ(spec.model_type, "apertus");
  EXPECT_TRUE(spec.qk_norm);
  EXPECT_FALSE(spec.gated_mlp);  // up_proj, xIELU, down_proj
  for (const LayerSpec& layer : spec.layers) EXPECT_EQ(layer.attention, AttentionKind::Full);
  EXPECT_EQ(kv_bf16(spec), 131072);
}

// Parameters (h 4,096, V 131,072 untied): embed + lm_head 2 x 536,870,912 = 1,073,741,824.
// Per layer: q and o 2 x 4,096^2 = 33,554,432, k/v 2 x 1,024 x 4,096 = 8,388,608; q_norm and
// k_norm 2 x 128; up/down 2 x 4,096 x 21,504 = 176,160,768; two RMSNorms 8,192; xIELU's alpha_p
// and alpha_n 2: 218,112,258. 32 layers 6,979,592,256; final norm 4,096: 8,053,338,176, the
// count the model page publishes (the spec leaves out the 64 xIELU scalars).
TEST(RegistryFamilies, ApertusParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path("swiss-ai__Apertus-8B.json"));
  expect_close(parameter_count(spec), 8053338176, 8053338176.0);
}

// Sliding layers per layer_types, as apertus.py passes per_layer_sliding_window.
TEST(RegistryFamilies, ApertusSlidesPerLayerTypes) {
  nlohmann::json config = config_json("swiss-ai__Apertus-8B.json");
  nlohmann::json types = nlohmann::json::array();
  for (int i = 0; i < 32; ++i) types.push_back(i % 4 == 3 ? "full_attention" : "sliding_attention");
  config["layer_types"] = types;
  config["sliding_window"] = 4096;
  const ModelSpec spec = model_spec_from_hf_config(config, nullptr, "apertus-swa.json");
  EXPECT_EQ(spec.layers[0].attention, AttentionKind::SlidingWindow);
  EXPECT_EQ(spec.layers[0].sliding_window, 4096);
  EXPECT_EQ(spec.layers[3].attention, AttentionKind::Full);
}

// OrionStarAI/Orion-14B-Base (orion.py): 40 layers of 40 KV heads x 128: 2 x 40 x 128 x 2 B =
// 20,480 B a layer, 819,200 B a token.
TEST(RegistryFamilies, OrionKvBytesPerTokenByHand) {
  const ModelSpec spec =
      load_hf_config(config_path("published_values/OrionStarAI__Orion-14B-Base.json"));
  EXPECT_EQ(spec.model_type, "orion");
  EXPECT_EQ(kv_bf16(spec), 819200);
}

// Parameters (h 5,120, V 84,608 untied): embed + lm_head 2 x 433,192,960 = 866,385,920. Per
// layer: q/k/v/o 4 x 5,120^2 = 104,857,600; gate/up/down 3 x 5,120 x 15,360 = 235,929,600; two
// LayerNorms (weight + bias) 20,480: 340,807,680. 40 layers 13,632,307,200; final LayerNorm
// 10,240: 14,498,703,360 (published: 14.5 B).
TEST(RegistryFamilies, OrionParametersByHand) {
  const ModelSpec spec =
      load_hf_config(config_path("published_values/OrionStarAI__Orion-14B-Base.json"));
  EXPECT_FALSE(spec.qkv_bias);
  EXPECT_FALSE(spec.o_proj_bias);
  expect_close(parameter_count(spec), 14498703360, 14.5e9);
}

// zai-org/GLM-4.7-Flash (glm4_moe_lite.py, MLA): every layer caches one latent of kv_lora_rank
// + qk_rope_head_dim = 576 elements: 47 x 576 x 2 B = 54,144 B a token, the same on every TP
// rank (the latent is not split over heads).
TEST(RegistryFamilies, Glm4MoeLiteKvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path("zai-org__GLM-4.7-Flash.json"));
  EXPECT_EQ(spec.model_type, "glm4_moe_lite");
  EXPECT_TRUE(spec.has_mla);
  EXPECT_EQ(spec.layers[0].attention, AttentionKind::Mla);
  EXPECT_FALSE(spec.layers[0].moe);
  EXPECT_TRUE(spec.layers[1].moe);
  EXPECT_TRUE(spec.layers[46].moe);
  EXPECT_EQ(kv_bf16(spec), 54144);
  EXPECT_EQ(kv_bf16(spec, 4), 54144);
}

// Parameters (h 2,048, V 154,880 untied): embed + lm_head 2 x 317,194,240 = 634,388,480. MLA a
// layer: q_a_proj 2,048 x 768 = 1,572,864, q_a_layernorm 768, q_b_proj 768 x 20 x 256 =
// 3,932,160, kv_a_proj_with_mqa 2,048 x 576 = 1,179,648, kv_a_layernorm 512, kv_b_proj 512 x 20 x
// (192 + 256) = 4,587,520, o_proj 20 x 256 x 2,048 = 10,485,760: 21,759,232; two RMSNorms
// 4,096. Layer 0's dense MLP 3 x 2,048 x 10,240 = 62,914,560. Layers 1-46: experts 64 x 3 x
// 2,048 x 1,536 = 603,979,776, one shared expert 9,437,184, router 131,072 and its bias 64:
// 613,548,096. 634,388,480 + 47 x 21,763,328 + 62,914,560 + 46 x 613,548,096 + final norm
// 2,048 = 29,943,393,920 (the model card: a 30B-A3B model; its MTP layer is not loaded).
TEST(RegistryFamilies, Glm4MoeLiteParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path("zai-org__GLM-4.7-Flash.json"));
  EXPECT_EQ(spec.mla.q_lora_rank, 768);
  EXPECT_EQ(spec.moe.num_shared_experts, 1);
  EXPECT_TRUE(spec.moe.router_bias);
  expect_close(parameter_count(spec), 29943393920, 30e9);
}

// vLLM reads first_k_dense_replace from the checkpoint (Glm4MoeLiteConfig has no default), and
// a sparse-attention checkpoint (index_topk) builds an index group the row does not size.
TEST(RegistryFamilies, Glm4MoeLiteRefusesWhatItCannotSize) {
  nlohmann::json config = config_json("zai-org__GLM-4.7-Flash.json");
  config.erase("first_k_dense_replace");
  expect_refused_naming(config, "first_k_dense_replace");
  config = config_json("zai-org__GLM-4.7-Flash.json");
  config["index_topk"] = 2048;
  expect_refused_naming(config, "index_topk");
}

// inclusionAI/Ling-lite-1.5 (bailing_moe.py): 28 layers of 4 KV heads x 128 (2,048 / 16): 2 x 4 x
// 128 x 2 B = 2,048 B a layer, 57,344 B a token (a public estimator's test gives 469,762,048 B
// for this model at 8,192 tokens: 57,344 x 8,192); TP 4: one KV head a rank, 14,336.
TEST(RegistryFamilies, BailingMoeKvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path("inclusionAI__Ling-lite-1.5.json"));
  EXPECT_EQ(spec.model_type, "bailing_moe");
  EXPECT_EQ(spec.layers[0].head_dim, 128);
  EXPECT_TRUE(spec.layers[0].moe);  // first_k_dense_replace 0
  EXPECT_EQ(kv_bf16(spec), 57344);
  EXPECT_EQ(kv_bf16(spec, 4), 14336);
}

// Parameters (h 2,048, V 126,464 untied): word_embeddings + lm_head 2 x 258,998,272 =
// 517,996,544. Per layer: query_key_value (2,048 + 2 x 512) x 2,048 = 6,291,456 and dense
// 2,048^2 = 4,194,304 (no biases: use_bias and use_qkv_bias false); two RMSNorms 4,096; 64
// experts x 3 x 2,048 x 1,408 = 553,648,128; the shared MLP of 2 x 1,408 = 2,816: 3 x 2,048 x
// 2,816 = 17,301,504; gate 64 x 2,048 = 131,072: 581,570,560. 28 layers 16,283,975,680; final
// norm 2,048: 16,801,974,272, the published 16.8 B. Active (6 experts of 8,650,752 a layer):
// 2,753,153,024, the published 2.75 B.
TEST(RegistryFamilies, BailingMoeParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path("inclusionAI__Ling-lite-1.5.json"));
  EXPECT_FALSE(spec.qkv_bias);
  EXPECT_FALSE(spec.o_proj_bias);
  EXPECT_FALSE(spec.qk_norm);
  EXPECT_EQ(spec.moe.num_shared_experts, 2);
  EXPECT_EQ(spec.moe.shared_expert_intermediate_size, 1408);
  EXPECT_FALSE(spec.moe.router_bias);
  expect_close(parameter_count(spec), 16801974272, 16.8e9);
}

// Ling 2.0's keys (BailingMoeV2ForCausalLM, the same model file and model_type) on Ling-lite's
// shapes: use_qk_norm with use_rmsnorm adds q_norm and k_norm of 128 a layer; partial rotary
// 0.5 of 128 is 64; first_k_dense_replace 1 makes layer 0 a dense MLP of intermediate_size, 3 x
// 2,048 x 1,408 = 8,650,752; moe_shared_expert_intermediate_size 512 with 2 shared experts is a
// shared MLP of 1,024, 3 x 2,048 x 1,024 = 6,291,456; moe_router_enable_expert_bias adds 64 a
// MoE layer. 517,996,544 + 28 x (10,485,760 + 4,096 + 256) + 8,650,752 + 27 x (553,648,128 +
// 6,291,456 + 131,072 + 64) + 2,048 = 15,942,281,920.
TEST(RegistryFamilies, BailingMoeV2KeysByHand) {
  nlohmann::json config = config_json("inclusionAI__Ling-lite-1.5.json");
  config["architectures"] = {"BailingMoeV2ForCausalLM"};
  config["head_dim"] = 128;
  config["use_qk_norm"] = true;
  config["use_rmsnorm"] = true;
  config["partial_rotary_factor"] = 0.5;
  config["first_k_dense_replace"] = 1;
  config["moe_shared_expert_intermediate_size"] = 512;
  config["moe_router_enable_expert_bias"] = true;
  const ModelSpec spec = model_spec_from_hf_config(config, nullptr, "ling-v2.json");
  EXPECT_TRUE(spec.qk_norm);
  EXPECT_EQ(spec.rotary_dim, 64);
  EXPECT_FALSE(spec.layers[0].moe);
  EXPECT_TRUE(spec.layers[1].moe);
  EXPECT_TRUE(spec.moe.router_bias);
  EXPECT_EQ(spec.moe.shared_expert_intermediate_size, 512);
  EXPECT_EQ(parameter_count(spec), 15942281920);
  config["rotary_dim"] = 32;  // read before partial_rotary_factor
  EXPECT_EQ(model_spec_from_hf_config(config, nullptr, "ling-v2.json").rotary_dim, 32);
}

// use_bias biases the dense projection and every MLP, shared experts included, which the spec
// does not hold: refused by name, also when the config omits it (BailingMoeConfig's default is
// true); vLLM reads first_k_dense_replace and num_shared_experts from the config itself.
TEST(RegistryFamilies, BailingMoeRefusesWhatItCannotSize) {
  nlohmann::json config = config_json("inclusionAI__Ling-lite-1.5.json");
  config["use_bias"] = true;
  expect_refused_naming(config, "use_bias");
  config.erase("use_bias");
  expect_refused_naming(config, "use_bias");
  for (const char* key : {"first_k_dense_replace", "num_shared_experts"}) {
    config = config_json("inclusionAI__Ling-lite-1.5.json");
    config.erase(key);
    expect_refused_naming(config, key);
  }
  config = config_json("inclusionAI__Ling-lite-1.5.json");
  config["use_qkv_bias"] = true;
  EXPECT_TRUE(model_spec_from_hf_config(config, nullptr, "ling-qkv.json").qkv_bias);
}
