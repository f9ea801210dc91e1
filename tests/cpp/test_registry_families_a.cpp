// More of vLLM 0.33's registry (issue 36, helper a), each family as its model file builds it:
// Sarvam MLA (sarvam.py's SarvamMLAForCausalLM) and Kimi-Linear (vllm/models/kimi_k3's
// KimiLinearForCausalLM). KV and state bytes and parameters derived by hand from those files and
// checked against the published counts where there are any.
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

void expect_refused_naming(const nlohmann::json& config, const std::string& key) {
  try {
    (void)model_spec_from_hf_config(config, nullptr, "refused.json");
    ADD_FAILURE() << "accepted a config with " << key;
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
  }
}

}  // namespace

// Sarvam-105B: sarvam.py's SarvamMLAAttention hands MultiHeadLatentAttentionWrapper an
// MLAAttention layer, whose cache spec is one latent of kv_lora_rank + qk_rope_head_dim = 512 +
// 64 = 576 elements a token (num_kv_heads 1), whatever the model_type: 32 x 576 x 2 B = 36,864 B
// a token, the same on every TP rank (the latent is not split over heads).
TEST(RegistryFamiliesA, SarvamMlaKvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path("sarvamai__sarvam-105b.json"));
  EXPECT_EQ(spec.model_type, "sarvam_mla");
  EXPECT_TRUE(spec.has_mla);
  EXPECT_EQ(spec.layers[0].attention, AttentionKind::Mla);
  EXPECT_FALSE(spec.layers[0].moe);  // first_k_dense_replace 1
  EXPECT_TRUE(spec.layers[1].moe);
  EXPECT_TRUE(spec.layers[31].moe);
  EXPECT_EQ(kv_bf16(spec), 36864);
  EXPECT_EQ(kv_bf16(spec, 8), 36864);
}

// Parameters (h 4,096, V 262,144 untied): embed + lm_head 2 x 1,073,741,824 = 2,147,483,648.
// MLA a layer (q_lora_rank null: a plain q_proj): q_proj 4,096 x 64 x 192 = 50,331,648,
// kv_a_proj_with_mqa 4,096 x 576 = 2,359,296, kv_a_layernorm 512, kv_b_proj 512 x 64 x (128 +
// 128) = 8,388,608, o_proj 64 x 128 x 4,096 = 33,554,432: 94,634,496; two RMSNorms 8,192:
// 94,642,688. Layer 0's dense MLP 3 x 4,096 x 16,384 = 201,326,592. Layers 1-31: 128 experts x
// 3 x 4,096 x 2,048 = 3,221,225,472, one shared MLP 3 x 4,096 x 2,048 = 25,165,824, router 128 x
// 4,096 = 524,288 and its fp32 bias 128: 3,246,915,712. 2,147,483,648 + 32 x 94,642,688 +
// 201,326,592 + 31 x 3,246,915,712 + final norm 4,096 = 106,031,767,424: the published 106.0 B.
// Active: 120 idle experts x 25,165,824 x 31 layers = 93,616,865,280 fewer, 12,414,902,144;
// without the two embedding tables 10,267,418,496, the published 10.3 B active.
TEST(RegistryFamiliesA, SarvamMlaParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path("sarvamai__sarvam-105b.json"));
  EXPECT_FALSE(spec.tie_word_embeddings);
  EXPECT_EQ(spec.mla.q_lora_rank, 0);
  EXPECT_EQ(spec.mla.kv_lora_rank, 512);
  EXPECT_EQ(spec.moe.num_experts, 128);
  EXPECT_EQ(spec.moe.num_shared_experts, 1);
  EXPECT_EQ(spec.moe.shared_expert_intermediate_size, 2048);
  EXPECT_TRUE(spec.moe.router_bias);
  EXPECT_EQ(parameter_count(spec), std::int64_t{106031767424});
  vramplan_test::expect_published(106031767424, 106.0e9, 4);
  vramplan_test::expect_published(10267418496, 10.3e9);
}

// sarvam.py multiplies the shared MLP's width by num_shared_experts (unlike param2moe.py):
// without moe_shared_expert_intermediate_size and with 2 shared experts it is 2 x 2,048 = 4,096,
// 3 x 4,096 x 2,048 = 25,165,824 more a MoE layer, 780,140,544 over 31; without the expert bias
// 31 x 128 = 3,968 fewer. Experts every second layer counted from first_k_dense_replace are
// refused by key. Without num_experts vLLM builds every layer dense (3 x 4,096 x 16,384 =
// 201,326,592 each).
TEST(RegistryFamiliesA, SarvamMlaKeys) {
  nlohmann::json config = config_json("sarvamai__sarvam-105b.json");
  config.erase("moe_shared_expert_intermediate_size");
  config["num_shared_experts"] = 2;
  config["moe_router_enable_expert_bias"] = false;
  EXPECT_EQ(parameter_count(model_spec_from_hf_config(config, nullptr, "s105.json")),
            std::int64_t{106031767424 + 780140544 - 3968});
  // 2,147,483,648 + 32 x (94,642,688 + 201,326,592) + 4,096 = 11,618,504,704.
  config = config_json("sarvamai__sarvam-105b.json");
  config["moe_layer_freq"] = 2;
  expect_refused_naming(config, "moe_layer_freq");
  config = config_json("sarvamai__sarvam-105b.json");
  config.erase("num_experts");
  EXPECT_EQ(parameter_count(model_spec_from_hf_config(config, nullptr, "s105-dense.json")),
            std::int64_t{11618504704});
}

// Kimi-Linear-48B-A3B-Instruct (vllm/models/kimi_k3, KimiLinearForCausalLM): the 1-based
// kda_layers 1-3, 5-7, ..., 25-26 are Kimi Delta Attention (20 layers), layers 4, 8, ..., 24 and
// 27 MLA (7 layers, 0-based 3, 7, ..., 23, 26). Each MLA layer caches one latent of
// kv_lora_rank + qk_rope_head_dim = 576 elements: 7 x 576 x 2 B = 8,064 B a token on every TP
// rank. A KDA layer's state (kda_state_shape, num_heads 32 x head_dim 128 = 4,096): the conv
// state over q, k and v, 3 x 4,096 x (kernel 4 - 1) x 2 B = 73,728, and the recurrent state 32 x
// 128 x 128 x 4 B (fp32: kda_state_dtype) = 2,097,152: 2,170,880 B; TP 2 halves both,
// 1,085,440.
TEST(RegistryFamiliesA, KimiLinearKvAndStateBytesByHand) {
  const ModelSpec spec =
      load_hf_config(config_path("moonshotai__Kimi-Linear-48B-A3B-Instruct.json"));
  EXPECT_EQ(spec.model_type, "kimi_linear");
  EXPECT_EQ(spec.layers[0].attention, AttentionKind::LinearAttention);
  EXPECT_EQ(spec.layers[2].attention, AttentionKind::LinearAttention);
  EXPECT_EQ(spec.layers[3].attention, AttentionKind::Mla);
  EXPECT_EQ(spec.layers[25].attention, AttentionKind::LinearAttention);
  EXPECT_EQ(spec.layers[26].attention, AttentionKind::Mla);
  EXPECT_FALSE(spec.layers[0].moe);  // first_k_dense_replace 1
  EXPECT_TRUE(spec.layers[1].moe);
  EXPECT_EQ(kv_bf16(spec), 8064);
  EXPECT_EQ(kv_bf16(spec, 2), 8064);
  EXPECT_EQ(mamba_state_bytes(spec, spec.layers[0], vramplan_test::bf16_kv_options()), 2170880);
  EXPECT_EQ(mamba_state_bytes(spec, spec.layers[0], vramplan_test::bf16_kv_options(2)), 1085440);
  // --mamba-ssm-cache-dtype does not reach it: vLLM asks kda_state_dtype without that flag.
  KvCacheOptions half_ssm = vramplan_test::bf16_kv_options();
  half_ssm.ssm_state_element_bytes = 2;
  EXPECT_EQ(mamba_state_bytes(spec, spec.layers[0], half_ssm), 2170880);
}

// Parameters (h 2,304, V 163,840 untied): embed + lm_head 2 x 377,487,360 = 754,974,720. A KDA
// layer (H 32, D 128, H x D 4,096; kimi_gdn_linear_attn.py): in_proj q/k/v + b (3 x 4,096 + 32)
// x 2,304 = 28,385,280 and its f_a part with g_a_proj 2 x 128 x 2,304 = 589,824, f_b_proj and
// g_b_proj 2 x 4,096 x 128 = 1,048,576, conv1d 3 x 4,096 x 4 = 49,152, dt_bias 4,096 and A_log
// 32, o_norm 128, o_proj 4,096 x 2,304 = 9,437,184: 39,514,272. An MLA layer (q_lora_rank null):
// q_proj 2,304 x 32 x 192 = 14,155,776, kv_a_proj_with_mqa 2,304 x 576 = 1,327,104,
// kv_a_layernorm 512, kv_b_proj 512 x 32 x 256 = 4,194,304, o_proj 32 x 128 x 2,304 = 9,437,184:
// 29,114,880. Two RMSNorms a layer 4,608. Layer 0's dense MLP 3 x 2,304 x 9,216 = 63,700,992;
// layers 1-26: 256 experts x 3 x 2,304 x 1,024 = 1,811,939,328, one shared MLP 7,077,888, router
// 256 x 2,304 = 589,824 and its bias 256: 1,819,607,296. 754,974,720 + 20 x 39,514,272 + 7 x
// 29,114,880 + 27 x 4,608 + 63,700,992 + 26 x 1,819,607,296 + final norm 2,304 =
// 49,122,681,728 (the model is named 48B); active (8 of 256 experts): 248 x 7,077,888 x 26 =
// 45,638,221,824 fewer, 3,484,459,904 (named A3B).
TEST(RegistryFamiliesA, KimiLinearParametersByHand) {
  const ModelSpec spec =
      load_hf_config(config_path("moonshotai__Kimi-Linear-48B-A3B-Instruct.json"));
  EXPECT_TRUE(spec.linear_attention.kimi_delta);
  EXPECT_EQ(spec.mla.q_lora_rank, 0);
  EXPECT_EQ(spec.moe.num_experts, 256);
  EXPECT_EQ(spec.moe.num_shared_experts, 1);
  EXPECT_TRUE(spec.moe.router_bias);
  EXPECT_EQ(parameter_count(spec), std::int64_t{49122681728});
  vramplan_test::expect_published(3484459904, 3e9, 1);
}

// What vLLM's kimi_k3 model builds only for Kimi-K3 is refused by key, as is a KDA layer past
// num_hidden_layers.
TEST(RegistryFamiliesA, KimiLinearRefusesKimiK3Blocks) {
  const nlohmann::json base = config_json("moonshotai__Kimi-Linear-48B-A3B-Instruct.json");
  nlohmann::json config = base;
  config["linear_attn_config"]["use_full_rank_gate"] = true;
  expect_refused_naming(config, "use_full_rank_gate");
  config = base;
  config["attn_res_block_size"] = 12;
  expect_refused_naming(config, "attn_res_block_size");
  config = base;
  config["routed_expert_hidden_size"] = 1152;
  expect_refused_naming(config, "routed_expert_hidden_size");
  config = base;
  config["mla_use_output_gate"] = true;
  expect_refused_naming(config, "mla_use_output_gate");
  config = base;
  config["linear_attn_config"]["kda_layers"].push_back(28);
  expect_refused_naming(config, "kda_layers");
}
