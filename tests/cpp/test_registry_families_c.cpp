// More of vLLM 0.33's text registry (issue 36), each family as its model file builds it:
// K2-Horizon (k2_horizon.py), Hy3 (hy_v3.py), Step1 (step1.py) and TeleChat2 (telechat2.py). KV
// bytes per token and parameters derived by hand from those files, and checked against the
// published count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
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
using vramplan_test::spec_error_of;

namespace {

ModelSpec k2_with(const std::string& key, const nlohmann::json& value) {
  nlohmann::json config = config_json("IFM__K2-Horizon-375B-A23B.json");
  config[key] = value;
  return model_spec_from_hf_config(config, nullptr, "k2.json");
}

}  // namespace

// K2-Horizon-375B-A23B: K2HorizonAttention caches 8 KV heads x 128 on each of 61 layers:
// 2 x 8 x 128 x 2 B = 4,096 B a layer, 249,856 B a token; TP 8: one KV head a rank, 31,232.
TEST(RegistryFamiliesC, K2HorizonKvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path("IFM__K2-Horizon-375B-A23B.json"));
  EXPECT_EQ(spec.model_type, "k2_horizon");
  EXPECT_EQ(spec.layers[0].head_dim, 128);
  EXPECT_EQ(kv_bf16(spec), 249856);
  EXPECT_EQ(kv_bf16(spec, 8), 31232);
}

// Parameters (h 6,144, V 250,624 untied): embed_tokens + lm_head 2 x 1,539,833,856 =
// 3,079,667,712. Per layer: q and o 2 x 6,144 x 6,144 = 75,497,472, k/v 2 x 1,024 x 6,144 =
// 12,582,912 (no biases, no q/k norms), two RMSNorms 12,288: 88,092,672. Layers 0-2
// (mlp_only_layers): a dense MLP 3 x 6,144 x 16,384 = 301,989,888. Layers 3-60 (decoder_sparse_step
// 1): 192 experts x 3 x 6,144 x 1,792 = 6,341,787,648, one shared MLP of 1,792 x 1 = 33,030,144,
// router 192 x 6,144 = 1,179,648 and its bias 192: 6,375,997,632. 3,079,667,712 + 61 x
// 88,092,672 + 3 x 301,989,888 + 58 x 6,375,997,632 + final norm 6,144 = 379,167,159,168: an MLX
// port's "K2-Horizon-375B-A23B (379B params)", and 758 GB at 2 B, the BF16 checkpoint's size a
// public engine's test states.
TEST(RegistryFamiliesC, K2HorizonMoeParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path("IFM__K2-Horizon-375B-A23B.json"));
  EXPECT_FALSE(spec.tie_word_embeddings);
  EXPECT_FALSE(spec.qk_norm);
  EXPECT_FALSE(spec.qkv_bias);
  EXPECT_FALSE(spec.attn_output_gate);  // attention_gate_func null
  EXPECT_EQ(spec.rotary_dim, 64);       // rope_head_dim
  EXPECT_FALSE(spec.layers[2].moe);
  EXPECT_TRUE(spec.layers[3].moe);
  EXPECT_TRUE(spec.layers[60].moe);
  EXPECT_EQ(spec.moe.num_shared_experts, 1);
  EXPECT_EQ(spec.moe.shared_expert_intermediate_size, 1792);
  EXPECT_FALSE(spec.moe.shared_expert_gate);
  EXPECT_TRUE(spec.moe.router_bias);
  EXPECT_TRUE(spec.moe.router_quantizable);  // GateLinear gets the quant config
  EXPECT_EQ(parameter_count(spec), std::int64_t{379167159168});
  vramplan_test::expect_published(379167159168, 379e9, 3);
}

// K2-Horizon-3.7B: dense (every layer in mlp_only_layers, num_experts 0). KV: 36 layers x 2 x 8
// x 128 x 2 B = 147,456 B a token. Parameters (h 2,560, V 250,624 untied): 2 x 641,597,440 =
// 1,283,194,880; per layer q and o 2 x 4,096 x 2,560 = 20,971,520, k/v 2 x 1,024 x 2,560 =
// 5,242,880, MLP 3 x 2,560 x 10,240 = 78,643,200, norms 5,120 (two grouped RMSNorms of one
// 2,560 weight each): 104,862,720; 1,283,194,880 + 36 x 104,862,720 + 2,560 = 5,058,255,360, the
// Hub API's total for IFM/K2-Horizon-3.7B a public note quotes.
TEST(RegistryFamiliesC, K2HorizonDenseByHand) {
  const ModelSpec spec = load_hf_config(config_path("IFM__K2-Horizon-3.7B.json"));
  EXPECT_FALSE(spec.has_moe);
  EXPECT_EQ(spec.rotary_dim, 128);  // rope_head_dim 128: the whole head
  EXPECT_EQ(kv_bf16(spec), 147456);
  EXPECT_EQ(parameter_count(spec), std::int64_t{5058255360});
}

// attention_gate_func adds gate_proj [48 x 128, 6,144] a layer: 61 x 37,748,736 more;
// attention_bias biases q/k/v (6,144 + 2 x 1,024) and o_proj (6,144) a layer: 61 x 14,336 more;
// decoder_sparse_step 2 makes only layers 3, 5, ..., 59 sparse (odd i, (i + 1) % 2 == 0): 29 MoE
// layers and 32 dense, 29 x (6,375,997,632 - 301,989,888) fewer.
TEST(RegistryFamiliesC, K2HorizonKeys) {
  constexpr std::int64_t kTotal = 379167159168;
  EXPECT_EQ(parameter_count(k2_with("attention_gate_func", "softplus")),
            kTotal + 61 * std::int64_t{37748736});
  EXPECT_TRUE(k2_with("attention_gate_func", "silu").attn_output_gate);
  EXPECT_EQ(parameter_count(k2_with("attention_bias", true)), kTotal + std::int64_t{61} * 14336);
  const ModelSpec stepped = k2_with("decoder_sparse_step", 2);
  EXPECT_FALSE(stepped.layers[4].moe);
  EXPECT_TRUE(stepped.layers[5].moe);
  EXPECT_EQ(parameter_count(stepped), kTotal - 29 * (std::int64_t{6375997632} - 301989888));
}

// K2HorizonRMSNorm's q/k norms span the rank's heads (heads x head_dim weights), and MoVA
// (K2-Horizon-MoVA-36B-A4B's mova_num_experts 64) routes value experts in place of v_proj:
// refused by name. K2HorizonConfig's default query_key_norm is true, so a config omitting it is
// refused too.
TEST(RegistryFamiliesC, K2HorizonRefusals) {
  const SpecError norm = spec_error_of([] { (void)k2_with("query_key_norm", true); });
  EXPECT_EQ(norm.field_path(), "query_key_norm");
  const SpecError mova = spec_error_of([] { (void)k2_with("mova_num_experts", 64); });
  EXPECT_EQ(mova.field_path(), "mova_num_experts");
  EXPECT_NE(std::string(mova.what()).find("MoVA"), std::string::npos) << mova.what();
  nlohmann::json config = config_json("IFM__K2-Horizon-3.7B.json");
  config.erase("query_key_norm");
  const SpecError omitted =
      spec_error_of([&] { (void)model_spec_from_hf_config(config, nullptr, "k2.json"); });
  EXPECT_EQ(omitted.field_path(), "query_key_norm");
}

// Hy3: HYV3Attention caches 8 KV heads x 128 on each of 80 layers (the MTP layer is a drafter's):
// 2 x 8 x 128 x 2 B = 4,096 B a layer, 327,680 B a token, the figure a public KV study of
// tencent/Hy3 states; TP 8: 40,960.
TEST(RegistryFamiliesC, Hy3KvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path("tencent__Hy3.json"));
  EXPECT_EQ(spec.model_type, "hy_v3");
  EXPECT_EQ(spec.num_nextn_predict_layers, 1);
  EXPECT_EQ(kv_bf16(spec), 327680);
  EXPECT_EQ(kv_bf16(spec, 8), 40960);
}

// Parameters (h 4,096, V 120,832 untied): 2 x 494,927,872 = 989,855,744. Per layer: q and o 2 x
// 8,192 x 4,096 = 67,108,864, k/v 2 x 1,024 x 4,096 = 8,388,608, q/k norms 2 x 128, two RMSNorms
// 8,192: 75,505,920. Layer 0 (first_k_dense_replace 1): 3 x 4,096 x 13,312 = 163,577,856.
// Layers 1-79: 192 experts x 3 x 4,096 x 1,536 = 3,623,878,656, one shared MLP of 1,536
// 18,874,368, router 786,432 and expert_bias 192: 3,643,539,648. 989,855,744 + 80 x 75,505,920 +
// 163,577,856 + 79 x 3,643,539,648 + final norm 4,096 = 295,033,543,488. The MTP layer: one more
// MoE layer 3,719,045,568, eh_proj 4,096 x 8,192 = 33,554,432 and three norms 12,288:
// 3,752,612,288, 298,786,155,776 in all: the checkpoint's 298,786,140,416 BF16 parameters and
// 15,360 F32 expert biases (80 x 192), total_size 597,572,342,272 = 2 x 298,786,140,416 + 4 x
// 15,360 (the public study's reading of model.safetensors.index.json).
TEST(RegistryFamiliesC, Hy3ParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path("tencent__Hy3.json"));
  EXPECT_TRUE(spec.qk_norm);
  EXPECT_FALSE(spec.qkv_bias);
  EXPECT_FALSE(spec.o_proj_bias);
  EXPECT_FALSE(spec.layers[0].moe);
  EXPECT_TRUE(spec.layers[1].moe);
  EXPECT_EQ(spec.moe.moe_intermediate_size, 1536);  // expert_hidden_dim
  EXPECT_EQ(spec.moe.shared_expert_intermediate_size, 1536);
  EXPECT_TRUE(spec.moe.router_bias);
  EXPECT_FALSE(spec.moe.router_quantizable);
  EXPECT_EQ(parameter_count(spec), std::int64_t{295033543488});
  EXPECT_EQ(parameter_count(spec, true), std::int64_t{298786140416} + 15360);
  EXPECT_EQ(2 * std::int64_t{298786140416} + std::int64_t{4} * 15360, std::int64_t{597572342272});
}

// vLLM reads qk_norm with a default of false, and raises without first_k_dense_replace; the
// experts' width is expert_hidden_dim, not moe_intermediate_size. Without q/k norms: 80 x 256
// fewer; expert_hidden_dim 1,024 (moe_intermediate_size kept): 79 x (192 + 1) x 3 x 4,096 x 512
// fewer. A key the config omits takes transformers 5.20.2's HYV3Config default
// (hy_v3/configuration_hy_v3.py: num_experts 192), and the spec says so.
TEST(RegistryFamiliesC, Hy3Keys) {
  nlohmann::json config = config_json("tencent__Hy3.json");
  config.erase("num_experts");
  const ModelSpec defaulted = model_spec_from_hf_config(config, nullptr, "hy3.json");
  EXPECT_EQ(parameter_count(defaulted), std::int64_t{295033543488});
  EXPECT_NE(std::find(defaulted.config_defaults.begin(), defaulted.config_defaults.end(),
                      "num_experts = 192 (HYV3Config)"),
            defaulted.config_defaults.end());
  config.erase("qk_norm");
  EXPECT_EQ(parameter_count(model_spec_from_hf_config(config, nullptr, "hy3.json")),
            std::int64_t{295033543488} - std::int64_t{80} * 256);
  config["qk_norm"] = true;
  config["expert_hidden_dim"] = 1024;
  EXPECT_EQ(parameter_count(model_spec_from_hf_config(config, nullptr, "hy3.json")),
            std::int64_t{295033543488} - std::int64_t{79} * 193 * 3 * 4096 * 512);
  config.erase("first_k_dense_replace");
  const SpecError missing =
      spec_error_of([&] { (void)model_spec_from_hf_config(config, nullptr, "hy3.json"); });
  EXPECT_EQ(missing.field_path(), "first_k_dense_replace");
}

// Step-Audio-EditX's LM (step1.py): 32 layers of num_attention_groups 4 KV heads x (3,072 / 48 =
// 64): 2 x 4 x 64 x 2 B = 1,024 B a layer, 32,768 B a token; TP 4: one group a rank, 8,192.
TEST(RegistryFamiliesC, Step1KvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path("stepfun-ai__Step-Audio-EditX.json"));
  EXPECT_EQ(spec.model_type, "step1");
  EXPECT_EQ(spec.layers[0].num_key_value_heads, 4);
  EXPECT_EQ(spec.layers[0].head_dim, 64);
  EXPECT_EQ(spec.max_position_embeddings, 32768);  // max_seq_len
  EXPECT_EQ(kv_bf16(spec), 32768);
  EXPECT_EQ(kv_bf16(spec, 4), 8192);
}

// Parameters (h 3,072, V 74,752 untied): 2 x 229,638,144 = 459,276,288. Per layer: q and o 2 x
// 3,072^2 = 18,874,368, k/v 2 x 256 x 3,072 = 1,572,864, MLP 3 x 3,072 x 8,192 = 75,497,472, two
// RMSNorms 6,144: 95,950,848. 459,276,288 + 32 x 95,950,848 + 3,072 = 3,529,706,496: 7.06 GB at
// 2 B, the LM a public MLX port loads (291 tensors: 32 x 9 + embed, norm and lm_head).
TEST(RegistryFamiliesC, Step1ParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path("stepfun-ai__Step-Audio-EditX.json"));
  EXPECT_FALSE(spec.tie_word_embeddings);
  EXPECT_FALSE(spec.qkv_bias);
  EXPECT_EQ(parameter_count(spec), std::int64_t{3529706496});
  vramplan_test::expect_published(2 * std::int64_t{3529706496}, 7.06e9, 3);
}

// KV heads: num_attention_groups, else num_key_value_heads, else 1 (32 x 2 x 64 x 2 B = 8,192 B
// a token); vLLM reads tie_word_embeddings with a default of true (the lm_head's 229,638,144
// shared); attention_bias biases q/k/v and o_proj: 32 x (3,072 + 2 x 256 + 3,072) more.
TEST(RegistryFamiliesC, Step1Keys) {
  nlohmann::json config = config_json("stepfun-ai__Step-Audio-EditX.json");
  config.erase("num_attention_groups");
  config["num_key_value_heads"] = 8;
  EXPECT_EQ(kv_bf16(model_spec_from_hf_config(config, nullptr, "step1.json")), 65536);
  config.erase("num_key_value_heads");
  EXPECT_EQ(kv_bf16(model_spec_from_hf_config(config, nullptr, "step1.json")), 8192);
  config = config_json("stepfun-ai__Step-Audio-EditX.json");
  config.erase("tie_word_embeddings");
  EXPECT_EQ(parameter_count(model_spec_from_hf_config(config, nullptr, "step1.json")),
            std::int64_t{3529706496} - 229638144);
  config["tie_word_embeddings"] = false;
  config["attention_bias"] = true;
  EXPECT_EQ(parameter_count(model_spec_from_hf_config(config, nullptr, "step1.json")),
            std::int64_t{3529706496} + std::int64_t{32} * (3072 + 2 * 256 + 3072));
}

// TeleChat2-115B (telechat2.py over LlamaAttention): n_head 64 query heads, num_key_value_heads
// 8 KV heads of hidden / heads = 128 on each of n_layer 96 layers: 2 x 8 x 128 x 2 B = 4,096 B a
// layer, 393,216 B a token; TP 8: one KV head a rank, 49,152. seq_length is the context.
TEST(RegistryFamiliesC, TeleChat2KvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path("Tele-AI__TeleChat2-115B.json"));
  EXPECT_EQ(spec.model_type, "telechat");
  EXPECT_EQ(spec.num_hidden_layers, 96);
  EXPECT_EQ(spec.layers[0].num_key_value_heads, 8);
  EXPECT_EQ(spec.layers[0].head_dim, 128);
  EXPECT_EQ(spec.intermediate_size, 40960);  // ffn_hidden_size
  EXPECT_EQ(spec.max_position_embeddings, 8192);
  EXPECT_EQ(kv_bf16(spec), 393216);
  EXPECT_EQ(kv_bf16(spec, 8), 49152);
}

// Parameters (h 8,192, V 131,072 untied): word_embeddings + lm_head 2 x 1,073,741,824 =
// 2,147,483,648. Per layer: query and dense 2 x 8,192^2 = 134,217,728, key_value 2 x 1,024 x
// 8,192 = 16,777,216, dense's bias 8,192 (query / key_value none: vLLM removes qkv_proj's), MLP
// 3 x 8,192 x 40,960 = 1,006,632,960 with down_proj's bias 8,192 (gate_up_proj's removed), two
// RMSNorms 16,384: 1,157,660,672. 2,147,483,648 + 96 x 1,157,660,672 + ln_f 8,192 =
// 113,282,916,352, which at 4 B (the checkpoint is float32) is the index's total_size,
// 453,131,665,408 B, to the byte.
TEST(RegistryFamiliesC, TeleChat2ParametersMatchTheIndex) {
  const ModelSpec spec = load_hf_config(config_path("Tele-AI__TeleChat2-115B.json"));
  EXPECT_FALSE(spec.tie_word_embeddings);
  EXPECT_FALSE(spec.qkv_bias);
  EXPECT_TRUE(spec.o_proj_bias);
  EXPECT_FALSE(spec.mlp_bias);
  EXPECT_TRUE(spec.mlp_down_bias);
  EXPECT_EQ(parameter_count(spec), std::int64_t{113282916352});
  EXPECT_EQ(4 * parameter_count(spec), std::int64_t{453131665408});
}

// The biases are the row's, not the config's: attention_bias / mlp_bias in a config do not add
// the q/k/v or gate/up biases vLLM removes. Without num_key_value_heads every head caches KV
// (getattr's default): 96 x 2 x 64 x 128 x 2 B = 3,145,728 B a token.
TEST(RegistryFamiliesC, TeleChat2Keys) {
  nlohmann::json config = config_json("Tele-AI__TeleChat2-115B.json");
  config["attention_bias"] = true;
  config["mlp_bias"] = true;
  EXPECT_EQ(parameter_count(model_spec_from_hf_config(config, nullptr, "telechat.json")),
            std::int64_t{113282916352});
  config.erase("num_key_value_heads");
  EXPECT_EQ(kv_bf16(model_spec_from_hf_config(config, nullptr, "telechat.json")), 3145728);
}
