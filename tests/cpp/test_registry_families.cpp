// Families added to plan more of vLLM 0.33's registry, each as its model file builds it:
// StableLM (stablelm.py), OLMoE (olmoe.py), MiniMax-M2 (minimax_m2.py) and TeleChat3 (registered
// as llama.py's LlamaForCausalLM). KV bytes per token and parameters derived by hand from those
// files; parameters also against the checkpoint's published count.
#include <gtest/gtest.h>

#include <algorithm>
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

// The spec leaves out a few vectors vLLM holds (a LayerNorm's final bias, full-width q/k norms
// counted per head): the counts agree with the hand derivation to 0.01 %, and the hand
// derivation with the published count to 0.5 % (the published counts are rounded).
void expect_close(std::int64_t got, std::int64_t hand, double published) {
  EXPECT_LT(std::fabs(static_cast<double>(got - hand)) / static_cast<double>(hand), 1e-4)
      << "spec " << got << " vs hand " << hand;
  EXPECT_LT(std::fabs(static_cast<double>(hand) - published) / published, 0.005)
      << "hand " << hand << " vs published " << published;
}

}  // namespace

// stabilityai/stablelm-2-1_6b: 24 layers of 32 KV heads x 64 (2,048 / 32):
// 2 x 32 x 64 x 2 B = 8,192 B a layer, 196,608 B a token; TP 2 halves it.
TEST(RegistryFamilies, StableLmKvBytesPerTokenByHand) {
  const ModelSpec spec =
      load_hf_config(config_path("published_values/stabilityai__stablelm-2-1_6b.json"));
  EXPECT_EQ(spec.model_type, "stablelm");
  EXPECT_EQ(spec.rotary_dim, 16);  // partial_rotary_factor 0.25 of 64
  EXPECT_EQ(kv_bf16(spec), 196608);
  EXPECT_EQ(kv_bf16(spec, 2), 98304);
}

// Parameters (h 2,048, V 100,352 untied): embed + lm_head 2 x 205,520,896 = 411,041,792.
// Per layer: q/k/v/o 4 x 2,048^2 = 16,777,216 + q/k/v bias 6,144; gate/up/down 3 x 2,048 x
// 5,632 = 34,603,008; two LayerNorms (weight + bias) 8,192: 51,394,560. 24 layers 1,233,469,440;
// final LayerNorm 4,096: 1,644,515,328, the count the model page publishes.
TEST(RegistryFamilies, StableLmParametersByHand) {
  const ModelSpec spec =
      load_hf_config(config_path("published_values/stabilityai__stablelm-2-1_6b.json"));
  EXPECT_TRUE(spec.qkv_bias);
  EXPECT_FALSE(spec.o_proj_bias);
  expect_close(parameter_count(spec), 1644515328, 1644515328.0);
}

// vLLM's stablelm.py builds no q/k LayerNorms: a qk_layernorm checkpoint cannot load.
TEST(RegistryFamilies, StableLmQkLayerNormIsRefusedByName) {
  nlohmann::json config = config_json("published_values/stabilityai__stablelm-2-1_6b.json");
  config["qk_layernorm"] = true;
  try {
    (void)model_spec_from_hf_config(config, nullptr, "stablelm-12b.json");
    ADD_FAILURE() << "expected a refusal";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("qk_layernorm"), std::string::npos) << e.what();
  }
}

// allenai/OLMoE-1B-7B-0924: 16 layers of 16 KV heads x 128: 2 x 16 x 128 x 2 B = 8,192 B a
// layer, 131,072 B a token.
TEST(RegistryFamilies, OlmoeKvBytesPerTokenByHand) {
  const ModelSpec spec =
      load_hf_config(config_path("published_values/allenai__OLMoE-1B-7B-0924.json"));
  EXPECT_EQ(spec.model_type, "olmoe");
  EXPECT_TRUE(spec.layers[0].moe);
  EXPECT_EQ(spec.moe.num_experts, 64);
  EXPECT_EQ(spec.moe.moe_intermediate_size, 1024);
  EXPECT_EQ(kv_bf16(spec), 131072);
}

// Parameters (h 2,048, V 50,304 untied): embed + lm_head 2 x 103,022,592 = 206,045,184.
// Per layer: q/k/v/o 4 x 2,048^2 = 16,777,216; q_norm 2,048 + k_norm 2,048; two RMSNorms 4,096;
// router 64 x 2,048 = 131,072; experts 64 x 3 x 1,024 x 2,048 = 402,653,184: 419,569,664.
// 16 layers 6,713,114,624; final norm 2,048: 6,919,161,856 (published: 6.92 B).
TEST(RegistryFamilies, OlmoeParametersByHand) {
  const ModelSpec spec =
      load_hf_config(config_path("published_values/allenai__OLMoE-1B-7B-0924.json"));
  expect_close(parameter_count(spec), 6919161856, 6.92e9);
}

// k_norm spans the KV heads: with fewer KV heads than heads the norms are not hidden-wide.
TEST(RegistryFamilies, OlmoeGroupedKvIsRefusedByName) {
  nlohmann::json config = config_json("published_values/allenai__OLMoE-1B-7B-0924.json");
  config["num_key_value_heads"] = 4;
  try {
    (void)model_spec_from_hf_config(config, nullptr, "olmoe-gqa.json");
    ADD_FAILURE() << "expected a refusal";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("num_key_value_heads"), std::string::npos) << e.what();
  }
}

// MiniMaxAI/MiniMax-M2: 62 full-attention layers of 8 KV heads x 128: 2 x 8 x 128 x 2 B =
// 4,096 B a layer, 253,952 B a token; TP 8: one KV head a rank, 31,744.
TEST(RegistryFamilies, MiniMaxM2KvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path("published_values/MiniMaxAI__MiniMax-M2.json"));
  EXPECT_EQ(spec.model_type, "minimax_m2");
  EXPECT_EQ(spec.rotary_dim, 64);
  EXPECT_EQ(spec.num_nextn_predict_layers, 0);  // vLLM drops the MTP modules at load
  for (const LayerSpec& layer : spec.layers) EXPECT_EQ(layer.attention, AttentionKind::Full);
  EXPECT_EQ(kv_bf16(spec), 253952);
  EXPECT_EQ(kv_bf16(spec, 8), 31744);
}

// Parameters (h 3,072, V 200,064 untied): embed + lm_head 2 x 614,596,608 = 1,229,193,216.
// Per layer: q 6,144 x 3,072 = 18,874,368, k/v 2 x 1,024 x 3,072 = 6,291,456, o 18,874,368;
// q_norm 6,144 + k_norm 1,024; two RMSNorms 6,144; router 256 x 3,072 = 786,432 and its fp32
// e_score_correction_bias 256; experts 256 x 3 x 1,536 x 3,072 = 3,623,878,656: 3,668,718,848.
// 62 layers 227,460,568,576; final norm 3,072: 228,689,764,864 (published: 229 B).
TEST(RegistryFamilies, MiniMaxM2ParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path("published_values/MiniMaxAI__MiniMax-M2.json"));
  EXPECT_TRUE(spec.moe.router_bias);
  EXPECT_TRUE(spec.qk_norm);
  expect_close(parameter_count(spec), 228689764864, 229e9);
}

// TeleChat3-36B (telechat3, vLLM's LlamaForCausalLM): 64 layers of 8 KV heads x 128:
// 2 x 8 x 128 x 2 B = 4,096 B a layer, 262,144 B a token.
TEST(RegistryFamilies, TeleChat3KvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path("mlx-community__Telechat3-36B-Thinking.json"));
  EXPECT_EQ(spec.model_type, "telechat3");
  EXPECT_EQ(kv_bf16(spec), 262144);
}

// Parameters (h 6,144, V 131,072 untied): embed + lm_head 2 x 805,306,368 = 1,610,612,736.
// Per layer: q and o 2 x 6,144^2 = 75,497,472, k/v 2 x 1,024 x 6,144 = 12,582,912; gate/up/down
// 3 x 6,144 x 24,576 = 452,984,832; two RMSNorms 12,288: 541,077,504. 64 layers
// 34,628,960,256; final norm 6,144: 36,239,579,136 (the model's name: 36 B).
TEST(RegistryFamilies, TeleChat3ParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path("mlx-community__Telechat3-36B-Thinking.json"));
  EXPECT_EQ(parameter_count(spec), std::int64_t{36239579136});
}

// baidu/ERNIE-4.5-21B-A3B-PT: 28 layers of 4 KV heads x 128 (2,560 / 20): 2 x 4 x 128 x 2 B =
// 2,048 B a layer, 57,344 B a token.
TEST(RegistryFamilies, Ernie45MoeKvBytesPerTokenByHand) {
  const ModelSpec spec =
      load_hf_config(config_path("published_values/baidu__ERNIE-4.5-21B-A3B-PT.json"));
  EXPECT_EQ(spec.model_type, "ernie4_5_moe");
  EXPECT_FALSE(spec.layers[0].moe);
  EXPECT_TRUE(spec.layers[1].moe);
  EXPECT_TRUE(spec.layers[27].moe);
  EXPECT_EQ(kv_bf16(spec), 57344);
}

// Parameters (h 2,560, V 103,424 tied): embed 264,765,440; final norm 2,560. Every layer:
// q 2,560 x 2,560 = 6,553,600, k/v 2 x 512 x 2,560 = 2,621,440, o 6,553,600; two RMSNorms 5,120:
// 15,733,760. Layer 0 dense MLP 3 x 2,560 x 12,288 = 94,371,840. Layers 1-27: router 64 x 2,560
// = 163,840 and its fp32 bias 64; experts 64 x 3 x 1,536 x 2,560 = 754,974,720; two shared
// experts as one MLP of 3,072: 3 x 2,560 x 3,072 = 23,592,960: 778,731,584.
// 264,768,000 + 28 x 15,733,760 + 94,371,840 + 27 x 778,731,584 = 21,825,437,888
// (published: 21.8 B).
TEST(RegistryFamilies, Ernie45MoeParametersByHand) {
  const ModelSpec spec =
      load_hf_config(config_path("published_values/baidu__ERNIE-4.5-21B-A3B-PT.json"));
  expect_close(parameter_count(spec), 21825437888, 21.8e9);
}

// moe_layer_end_index bounds the MoE layers (the later ones keep the dense MLP); omitted keys
// take Ernie4_5_MoeConfig's defaults (those of ERNIE-4.5-21B-A3B), which agree with the file.
TEST(RegistryFamilies, Ernie45MoeLayerRangeAndClassDefaults) {
  nlohmann::json config = config_json("published_values/baidu__ERNIE-4.5-21B-A3B-PT.json");
  config["moe_layer_end_index"] = 25;
  const ModelSpec bounded = model_spec_from_hf_config(config, nullptr, "ernie-bounded.json");
  EXPECT_TRUE(bounded.layers[25].moe);
  EXPECT_FALSE(bounded.layers[26].moe);
  EXPECT_FALSE(bounded.layers[27].moe);
  const nlohmann::json bare = {{"architectures", {"Ernie4_5_MoeForCausalLM"}},
                               {"model_type", "ernie4_5_moe"}};
  const ModelSpec defaults = model_spec_from_hf_config(bare, nullptr, "ernie-bare.json");
  EXPECT_EQ(parameter_count(defaults), parameter_count(load_hf_config(config_path(
                                           "published_values/baidu__ERNIE-4.5-21B-A3B-PT.json"))));
  EXPECT_FALSE(defaults.config_defaults.empty());
}

// databricks/dbrx-instruct: 40 layers of attn_config.kv_n_heads 8 x 128 (6,144 / 48):
// 2 x 8 x 128 x 2 B = 4,096 B a layer, 163,840 B a token.
TEST(RegistryFamilies, DbrxKvBytesPerTokenByHand) {
  const ModelSpec spec =
      load_hf_config(config_path("published_values/databricks__dbrx-instruct.json"));
  EXPECT_EQ(spec.model_type, "dbrx");
  EXPECT_EQ(spec.hidden_size, 6144);
  EXPECT_EQ(spec.num_hidden_layers, 40);
  EXPECT_EQ(spec.max_position_embeddings, 32768);
  EXPECT_EQ(kv_bf16(spec), 163840);
}

// Parameters (h 6,144, V 100,352 untied): embed + lm_head 2 x 616,562,688 = 1,233,125,376.
// Per layer: Wqkv (6,144 + 2 x 1,024) x 6,144 = 50,331,648, out_proj 37,748,736; norm_1 and
// norm_2 as vLLM builds them (weight + bias) 24,576; router 16 x 6,144 = 98,304; experts
// 16 x 3 x 10,752 x 6,144 = 3,170,893,824: 3,259,097,088. 40 layers 130,363,883,520; norm_f
// 12,288: 131,597,021,184 (published: 132 B).
TEST(RegistryFamilies, DbrxParametersByHand) {
  const ModelSpec spec =
      load_hf_config(config_path("published_values/databricks__dbrx-instruct.json"));
  expect_close(parameter_count(spec), 131597021184, 132e9);
}

// The nested blocks are required: a config without attn_config is refused by its name.
TEST(RegistryFamilies, DbrxWithoutAttnConfigIsRefusedByName) {
  nlohmann::json config = config_json("published_values/databricks__dbrx-instruct.json");
  config.erase("attn_config");
  try {
    (void)model_spec_from_hf_config(config, nullptr, "dbrx-bad.json");
    ADD_FAILURE() << "expected a refusal";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("attn_config"), std::string::npos) << e.what();
  }
}

// deepseek-ai/deepseek-moe-16b-base (model_type deepseek: vLLM's DeepseekAttention, MHA):
// 28 layers of 16 KV heads x 128: 2 x 16 x 128 x 2 B = 8,192 B a layer, 229,376 B a token.
TEST(RegistryFamilies, DeepseekV1KvBytesPerTokenByHand) {
  const ModelSpec spec =
      load_hf_config(config_path("published_values/deepseek-ai__deepseek-moe-16b-base.json"));
  EXPECT_EQ(spec.model_type, "deepseek");
  EXPECT_FALSE(spec.has_mla);
  EXPECT_FALSE(spec.layers[0].moe);
  EXPECT_TRUE(spec.layers[1].moe);
  EXPECT_EQ(kv_bf16(spec), 229376);
}

// Parameters (h 2,048, V 102,400 untied): embed + lm_head 419,430,400; final norm 2,048. Every
// layer: q/k/v/o 4 x 2,048^2 = 16,777,216 and two RMSNorms 4,096. Layer 0 dense MLP 3 x 2,048 x
// 10,944 = 67,239,936. Layers 1-27: router 64 x 2,048 = 131,072; experts 64 x 3 x 1,408 x 2,048
// = 553,648,128; the 2 shared experts as one MLP of 2,816: 17,301,504; 571,080,704.
// 419,432,448 + 28 x 16,781,312 + 67,239,936 + 27 x 571,080,704 = 16,375,728,128
// (published: 16.4 B).
TEST(RegistryFamilies, DeepseekV1ParametersByHand) {
  const ModelSpec spec =
      load_hf_config(config_path("published_values/deepseek-ai__deepseek-moe-16b-base.json"));
  expect_close(parameter_count(spec), 16375728128, 16.4e9);
}

// bigscience/bloom-560m: ALiBi adds no cache; 24 layers of 16 KV heads x 64 (1,024 / 16):
// 2 x 16 x 64 x 2 B = 4,096 B a layer, 98,304 B a token. The config names no context length:
// vLLM assumes 2048 and serves any --max-model-len given; the spec says it assumed so.
TEST(RegistryFamilies, BloomKvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path("bigscience__bloom-560m.json"));
  EXPECT_EQ(spec.model_type, "bloom");
  EXPECT_EQ(spec.max_position_embeddings, 2048);
  EXPECT_TRUE(spec.max_position_embeddings_assumed);
  EXPECT_TRUE(std::any_of(spec.config_defaults.begin(), spec.config_defaults.end(),
                          [](const std::string& line) {
                            return line.rfind("max_position_embeddings = 2048 (vLLM's", 0) == 0;
                          }));
  EXPECT_EQ(spec.intermediate_size, 4096);
  EXPECT_EQ(kv_bf16(spec), 98304);
}

// Parameters (h 1,024, V 250,880 tied): word_embeddings 256,901,120 and its LayerNorm 2,048.
// Per layer: two LayerNorms 4,096; query_key_value 3 x 1,024^2 + 3,072 = 3,148,800; dense
// 1,048,576 + 1,024; dense_h_to_4h 4,096 x 1,024 + 4,096 = 4,198,400; dense_4h_to_h 1,024 x
// 4,096 + 1,024 = 4,195,328: 12,596,224. 24 layers 302,309,376; ln_f 2,048:
// 559,214,592, the count the model page publishes.
TEST(RegistryFamilies, BloomParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path("bigscience__bloom-560m.json"));
  expect_close(parameter_count(spec), 559214592, 559214592.0);
}

// EleutherAI/gpt-j-6b: 28 layers of 16 KV heads x 256 (4,096 / 16): 2 x 16 x 256 x 2 B =
// 16,384 B a layer, 458,752 B a token.
TEST(RegistryFamilies, GptjKvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path("published_values/EleutherAI__gpt-j-6b.json"));
  EXPECT_EQ(spec.model_type, "gptj");
  EXPECT_EQ(spec.rotary_dim, 64);
  EXPECT_EQ(spec.intermediate_size, 16384);
  EXPECT_EQ(kv_bf16(spec), 458752);
}

// Parameters (h 4,096, V 50,400 untied): wte 206,438,400; lm_head 206,438,400 + its bias 50,400.
// Per layer: ln_1 8,192; q/k/v 3 x 4,096^2 = 50,331,648; out_proj 16,777,216; fc_in 16,384 x
// 4,096 + 16,384 = 67,125,248; fc_out 4,096 x 16,384 + 4,096 = 67,112,960: 201,355,264.
// 28 layers 5,637,947,392; ln_f 8,192: 6,050,882,784 (the model card: 6,053,381,344).
TEST(RegistryFamilies, GptjParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path("published_values/EleutherAI__gpt-j-6b.json"));
  expect_close(parameter_count(spec), 6050882784, 6053381344.0);
}

// vLLM's gpt_j.py asserts an untied lm_head.
TEST(RegistryFamilies, GptjTiedEmbeddingsAreRefusedByName) {
  nlohmann::json config = config_json("published_values/EleutherAI__gpt-j-6b.json");
  config["tie_word_embeddings"] = true;
  try {
    (void)model_spec_from_hf_config(config, nullptr, "gptj-tied.json");
    ADD_FAILURE() << "expected a refusal";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("tie_word_embeddings"), std::string::npos) << e.what();
  }
}

// openai-community/gpt2: 12 layers of 12 KV heads x 64: 2 x 12 x 64 x 2 B = 3,072 B a layer,
// 36,864 B a token.
TEST(RegistryFamilies, Gpt2KvBytesPerTokenByHand) {
  const ModelSpec spec =
      load_hf_config(config_path("published_values/openai-community__gpt2.json"));
  EXPECT_EQ(spec.model_type, "gpt2");
  EXPECT_EQ(spec.position_embeddings, 1024);
  EXPECT_EQ(spec.intermediate_size, 3072);
  EXPECT_TRUE(spec.tie_word_embeddings);  // GPT2Config's default
  EXPECT_EQ(kv_bf16(spec), 36864);
}

// Parameters (h 768, V 50,257 tied): wte 38,597,376; wpe 1,024 x 768 = 786,432. Per layer:
// ln_1 and ln_2 (weight + bias) 3,072; c_attn 768 x 2,304 + 2,304 = 1,771,776; c_proj 768^2 +
// 768 = 590,592; c_fc 768 x 3,072 + 3,072 = 2,362,368; mlp c_proj 3,072 x 768 + 768 =
// 2,360,064: 7,087,872. 12 layers 85,054,464; ln_f 1,536: 124,439,808, the published count.
TEST(RegistryFamilies, Gpt2ParametersByHand) {
  const ModelSpec spec =
      load_hf_config(config_path("published_values/openai-community__gpt2.json"));
  expect_close(parameter_count(spec), 124439808, 124439808.0);
}

// facebook/opt-125m: 12 layers of 12 KV heads x 64: 36,864 B a token, as GPT-2.
TEST(RegistryFamilies, OptKvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path("published_values/facebook__opt-125m.json"));
  EXPECT_EQ(spec.model_type, "opt");
  EXPECT_EQ(spec.position_embeddings, 2050);  // max_position_embeddings + OPT's offset 2
  EXPECT_EQ(kv_bf16(spec), 36864);
}

// Parameters (h 768, V 50,272 tied): embed_tokens 38,608,896; embed_positions 2,050 x 768 =
// 1,574,400. Per layer: q/k/v/out_proj 4 x (768^2 + 768) = 2,362,368; two LayerNorms 3,072;
// fc1 768 x 3,072 + 3,072 = 2,362,368; fc2 3,072 x 768 + 768 = 2,360,064: 7,087,872. 12 layers
// 85,054,464; final_layer_norm 1,536: 125,239,296, the published count.
TEST(RegistryFamilies, OptParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path("published_values/facebook__opt-125m.json"));
  expect_close(parameter_count(spec), 125239296, 125239296.0);
}

// OPT-350m's word_embed_proj_dim (project_in / project_out) is refused by name.
TEST(RegistryFamilies, OptProjectedEmbeddingsAreRefusedByName) {
  nlohmann::json config = config_json("published_values/facebook__opt-125m.json");
  config["word_embed_proj_dim"] = 512;
  try {
    (void)model_spec_from_hf_config(config, nullptr, "opt-350m.json");
    ADD_FAILURE() << "expected a refusal";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("word_embed_proj_dim"), std::string::npos) << e.what();
  }
}

// The position table is replicated and kept in the model dtype: at TP 2 each rank holds all of
// it (2,050 x 768 x 2 B = 3,148,800 B) beside half the token table.
TEST(RegistryFamilies, PositionTableIsReplicatedUnderTensorParallel) {
  const ModelSpec spec = load_hf_config(config_path("published_values/facebook__opt-125m.json"));
  ModelSpec without = spec;
  without.position_embeddings = 0;
  const auto groups = model_tensor_groups(spec, false);
  const auto fewer = model_tensor_groups(without, false);
  ASSERT_EQ(groups.size(), fewer.size() + 1);
  bool found = false;
  for (const TensorGroup& g : groups) {
    if (g.role == TensorRole::Embedding && g.split == TensorSplit::Replicated) {
      EXPECT_EQ(g.rows * g.cols * g.count, 2050 * 768);
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

// openbmb/MiniCPM-2B-sft-bf16: 40 layers of 36 KV heads x 64 (2,304 / 36): 2 x 36 x 64 x 2 B =
// 9,216 B a layer, 368,640 B a token.
TEST(RegistryFamilies, MiniCpmKvBytesPerTokenByHand) {
  const ModelSpec spec =
      load_hf_config(config_path("published_values/openbmb__MiniCPM-2B-sft-bf16.json"));
  EXPECT_EQ(spec.model_type, "minicpm");
  EXPECT_TRUE(spec.tie_word_embeddings);
  EXPECT_EQ(kv_bf16(spec), 368640);
}

// Parameters (h 2,304, V 122,753 tied): embed 282,822,912. Per layer: q/k/v/o 4 x 2,304^2 =
// 21,233,664; gate/up/down 3 x 2,304 x 5,760 = 39,813,120; two RMSNorms 4,608: 61,051,392.
// 40 layers 2,442,055,680; final norm 2,304 (2,442,057,984 without embeddings, as the MiniCPM
// report states): 2,724,880,896 (published: 2.7 B).
TEST(RegistryFamilies, MiniCpmParametersByHand) {
  const ModelSpec spec =
      load_hf_config(config_path("published_values/openbmb__MiniCPM-2B-sft-bf16.json"));
  expect_close(parameter_count(spec), 2724880896, 2.72e9);
}

// MiniCPM-MoE: num_experts turns every MLP into routed experts of intermediate_size.
TEST(RegistryFamilies, MiniCpmMoeExpertsOfIntermediateSize) {
  nlohmann::json config = config_json("published_values/openbmb__MiniCPM-2B-sft-bf16.json");
  config["num_experts"] = 8;
  config["num_experts_per_tok"] = 2;
  const ModelSpec spec = model_spec_from_hf_config(config, nullptr, "minicpm-moe.json");
  EXPECT_TRUE(spec.layers[0].moe);
  EXPECT_EQ(spec.moe.num_experts, 8);
  EXPECT_EQ(spec.moe.moe_intermediate_size, 5760);
}
