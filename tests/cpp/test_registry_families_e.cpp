// More of vLLM 0.33's text registry, each family as its model file builds it: StepFun
// Step-3.5-Flash (step3p5.py), Step3's text model (step3_text.py) and Meituan LongCat-Flash
// (longcat_flash.py). KV bytes per token and parameters derived by hand from those files, and
// checked against the published count.
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "test_support.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/kv_cache.hpp"
#include "vramplan/model_spec.hpp"
#include "vramplan/weights.hpp"

using namespace vramplan;
using vramplan_test::config_json;
using vramplan_test::config_path;
using vramplan_test::kv_bf16;

namespace {

ModelSpec from_json(const nlohmann::json& config) {
  return model_spec_from_hf_config(config, nullptr, "config.json");
}

std::string refusal(const nlohmann::json& config) {
  return vramplan_test::spec_error_of([&] { (void)from_json(config); }).what();
}

}  // namespace

// --- Step-3.5-Flash (step3p5.py) --------------------------------------------------------------

// 45 layers (layer_types' 48 entries less the 3 MTP ones: full on every fourth from layer 0,
// sliding 512 elsewhere), 8 KV heads (num_attention_groups) x 128 on every layer whatever its
// query heads: 2 x 8 x 128 x 2 B = 4,096 B a layer, 184,320 B a token; TP 8: one KV head a
// rank, 23,040.
TEST(RegistryFamiliesE, Step35FlashKvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path("stepfun-ai__Step-3.5-Flash.json"));
  EXPECT_EQ(spec.model_type, "step3p5");
  ASSERT_EQ(spec.layers.size(), 45U);
  EXPECT_EQ(spec.layers[0].attention, AttentionKind::Full);
  EXPECT_EQ(spec.layers[1].attention, AttentionKind::SlidingWindow);
  EXPECT_EQ(spec.layers[1].sliding_window, 512);
  EXPECT_EQ(spec.layers[44].attention, AttentionKind::Full);
  EXPECT_EQ(spec.layers[43].num_key_value_heads, 8);
  EXPECT_EQ(kv_bf16(spec), 184320);
  EXPECT_EQ(kv_bf16(spec, 8), 23040);
}

// h 4,096, head 128, 8 KV heads, V 128,896 untied: embed + lm_head 2 x 128,896 x 4,096 =
// 1,055,916,032. A full layer (64 heads): q_proj and o_proj 2 x 8,192 x 4,096 = 67,108,864,
// k/v 2 x 1,024 x 4,096 = 8,388,608, g_proj 64 x 4,096 = 262,144, q/k norms 256, two norms
// 8,192: 75,768,064. A sliding layer (96 heads): 2 x 12,288 x 4,096 = 100,663,296 + 8,388,608 +
// 393,216 + 256 + 8,192 = 109,453,568. Layers 0-2's dense MLP 3 x 4,096 x 11,264 =
// 138,412,032; layers 3-44: 288 experts x 3 x 4,096 x 1,280 = 4,529,848,320, the shared MLP 3 x
// 4,096 x 1,280 = 15,728,640, router 1,179,648 and its bias 288: 4,546,756,896. 12 full + 33
// sliding layers: 1,055,916,032 + 12 x 75,768,064 + 33 x 109,453,568 + 3 x 138,412,032 + 42 x
// 4,546,756,896 + final norm 4,096 = 196,956,130,368. The README's "196B backbone" is the
// decoder without embedding and lm_head, 195,900,214,336, at three figures; its 196.81B total
// adds a 0.81B "head" this count leaves out (the MTP layers vLLM's main model skips).
TEST(RegistryFamiliesE, Step35FlashParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path("stepfun-ai__Step-3.5-Flash.json"));
  EXPECT_TRUE(spec.attn_head_gate);
  EXPECT_TRUE(spec.qk_norm);
  EXPECT_FALSE(spec.qkv_bias);
  EXPECT_FALSE(spec.o_proj_bias);
  EXPECT_FALSE(spec.tie_word_embeddings);
  EXPECT_EQ(spec.layers[0].num_attention_heads, 64);
  EXPECT_EQ(spec.layers[1].num_attention_heads, 96);
  EXPECT_FALSE(spec.layers[2].moe);
  EXPECT_TRUE(spec.layers[3].moe);
  EXPECT_TRUE(spec.layers[44].moe);
  EXPECT_EQ(spec.moe.num_experts, 288);
  EXPECT_EQ(spec.moe.num_experts_per_tok, 8);
  EXPECT_EQ(spec.moe.num_shared_experts, 1);
  EXPECT_EQ(spec.moe.shared_expert_intermediate_size, 1280);
  EXPECT_TRUE(spec.moe.router_bias);
  EXPECT_EQ(spec.num_nextn_predict_layers, 0);  // step3p5_mtp.py's drafter: not counted
  EXPECT_EQ(parameter_count(spec), std::int64_t{196956130368});
  const std::int64_t embeddings = 2 * std::int64_t{128896} * 4096;
  vramplan_test::expect_published(196956130368 - embeddings, 196e9, 3);
}

// The rope caches: without rope_theta or partial_rotary_factors (the test config keeps neither)
// both layer types build the same default rope, one cache of max_position_embeddings 262,144 x
// 128. With the per-layer lists (full layers: theta 5e6 over half the head; sliding: 1e4 over
// all of it), two caches: 262,144 x 64 + 262,144 x 128, written as 393,216 positions x 128.
// The lists carry the MTP layers' entries too (48), as the published config's do.
TEST(RegistryFamiliesE, Step35FlashRopeCachePerLayerType) {
  nlohmann::json config = config_json("stepfun-ai__Step-3.5-Flash.json");
  const ModelSpec plain = from_json(config);
  EXPECT_EQ(plain.rotary_dim, 128);
  EXPECT_EQ(plain.rotary_cache_positions, 262144);
  nlohmann::json theta = nlohmann::json::array();
  nlohmann::json partial = nlohmann::json::array();
  for (const auto& type : config["layer_types"]) {
    theta.push_back(type == "full_attention" ? 5000000.0 : 10000.0);
    partial.push_back(type == "full_attention" ? 0.5 : 1.0);
  }
  config["rope_theta"] = theta;
  config["partial_rotary_factors"] = partial;
  const ModelSpec split = from_json(config);
  EXPECT_EQ(split.rotary_dim, 128);
  EXPECT_EQ(split.rotary_cache_positions, 393216);
  // A llama3 rope_scaling (full layers only) caches max_position_embeddings rows: unchanged.
  config["rope_scaling"] = {
      {"rope_type", "llama3"}, {"factor", 2.0}, {"original_max_position_embeddings", 131072}};
  EXPECT_EQ(from_json(config).rotary_cache_positions, 393216);
  config["partial_rotary_factors"][0] = 0.25;
  EXPECT_NE(refusal(config).find("partial_rotary_factors"), std::string::npos);
}

// The keys vLLM reads and the layouts it cannot build: transformers' Step3p7TextConfig takes the
// sliding layers' heads from num_sliding_attention_heads before attention_other_setting;
// layer_types may list the decoder's 45 alone; a sliding setting of its own KV heads, a
// layer_types of another length, an attention other than GQA and a router without its bias are
// refused by name.
TEST(RegistryFamiliesE, Step35FlashKeys) {
  nlohmann::json config = config_json("stepfun-ai__Step-3.5-Flash.json");
  nlohmann::json decoder_only = config;
  decoder_only["layer_types"].erase(decoder_only["layer_types"].begin() + 45,
                                    decoder_only["layer_types"].end());
  EXPECT_EQ(parameter_count(from_json(decoder_only)), std::int64_t{196956130368});
  nlohmann::json named = config;
  named["num_sliding_attention_heads"] = 64;  // every layer 64 heads: 33 x 33,685,504 fewer
  const ModelSpec same_heads = from_json(named);
  EXPECT_EQ(same_heads.layers[1].num_attention_heads, 0);  // the model's 64
  EXPECT_EQ(parameter_count(same_heads), std::int64_t{196956130368} - 33 * std::int64_t{33685504});
  nlohmann::json other_kv = config;
  other_kv["attention_other_setting"]["num_attention_groups"] = 4;
  EXPECT_NE(refusal(other_kv).find("num_attention_groups"), std::string::npos);
  nlohmann::json short_types = config;
  short_types["layer_types"].erase(short_types["layer_types"].begin());
  EXPECT_NE(refusal(short_types).find("layer_types"), std::string::npos);
  nlohmann::json mfa = config;
  mfa["att_impl_type"] = "MFA";
  EXPECT_NE(refusal(mfa).find("att_impl_type"), std::string::npos);
  nlohmann::json no_bias = config;
  no_bias["use_moe_router_bias"] = false;
  EXPECT_NE(refusal(no_bias).find("use_moe_router_bias"), std::string::npos);
  // Without moe_layers_enum Step3p7TextConfig routes every layer from 3 on: the same layers; an
  // enum naming the MTP layers (45-47) too routes no more decoder layers; a negative index is
  // refused.
  config["moe_layers_enum"] = config["moe_layers_enum"].get<std::string>() + ",45,46,47";
  EXPECT_EQ(parameter_count(from_json(config)), std::int64_t{196956130368});
  nlohmann::json negative = config;
  negative["moe_layers_enum"] = "3,-4";
  EXPECT_NE(refusal(negative).find("moe_layers_enum"), std::string::npos);
  config.erase("moe_layers_enum");
  EXPECT_EQ(parameter_count(from_json(config)), std::int64_t{196956130368});
}

// --- Step3's text model (step3_text.py) -------------------------------------------------------

// Every layer caches one K and one V head of 256 (num_kv_heads=1 in the model, whatever the
// config): 2 x 256 x 2 B = 1,024 B a layer; 61 layers: 62,464 B a token, on every TP rank
// alike (the head is not split).
TEST(RegistryFamiliesE, Step3TextKvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path("stepfun-ai__step3-text.json"));
  EXPECT_EQ(spec.model_type, "step3_text");
  EXPECT_EQ(spec.layers[0].num_key_value_heads, 1);
  EXPECT_EQ(spec.layers[0].head_dim, 256);
  EXPECT_EQ(spec.max_position_embeddings, 65536);
  EXPECT_EQ(kv_bf16(spec), 62464);
  EXPECT_EQ(kv_bf16(spec, 8), 62464);
}

// h 7,168, V 128,815 untied: embed + lm_head 2 x 128,815 x 7,168 = 1,846,691,840. A layer's
// attention: qkv_proj [2,048 + 2 x 256, 7,168] = 18,350,080, inter_norm 2,048, wq [64 x 256,
// 2,048] = 33,554,432, o_proj [7,168, 16,384] = 117,440,512: 169,347,072; two norms 14,336.
// Layers 0-3 and 60 (off moe_layers_enum 4..59): a dense MLP 3 x 7,168 x 18,432 = 396,361,728;
// the 56 others: 48 experts x 3 x 7,168 x 5,120 = 5,284,823,040, the shared MLP 3 x 7,168 x
// 5,120 = 110,100,480, router 48 x 7,168 = 344,064: 5,395,267,584. 1,846,691,840 + 61 x
// 169,361,408 + 5 x 396,361,728 + 56 x 5,395,267,584 + final norm 7,168 = 316,294,538,240: the
// model card's 316B (LLM).
TEST(RegistryFamiliesE, Step3TextParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path("stepfun-ai__step3-text.json"));
  EXPECT_EQ(spec.share_q_dim, 2048);
  EXPECT_FALSE(spec.qk_norm);
  EXPECT_FALSE(spec.tie_word_embeddings);
  EXPECT_FALSE(spec.layers[3].moe);
  EXPECT_TRUE(spec.layers[4].moe);
  EXPECT_TRUE(spec.layers[59].moe);
  EXPECT_FALSE(spec.layers[60].moe);
  EXPECT_EQ(spec.moe.num_shared_experts, 1);
  EXPECT_EQ(spec.moe.shared_expert_intermediate_size, 5120);
  EXPECT_FALSE(spec.moe.router_bias);
  EXPECT_EQ(parameter_count(spec), std::int64_t{316294538240});
  vramplan_test::expect_published(316294538240, 316e9);
}

// qkv_proj is a ReplicatedLinear: whole on every rank, where wq (column) and o_proj (row) split.
// At TP 8 a layer's attention projections: 2,560 x 7,168 + 16,384 x 2,048 / 8 + 7,168 x 16,384
// / 8 = 18,350,080 + 4,194,304 + 14,680,064 = 37,224,448 values; 61 layers at 2 B:
// 4,541,382,656 B (the norms count elsewhere).
TEST(RegistryFamiliesE, Step3TextSharedQueryReplicatesQkv) {
  const ModelSpec spec = load_hf_config(config_path("stepfun-ai__step3-text.json"));
  RankPlacement tp8;
  tp8.tensor_parallel_size = 8;
  const WeightBytes w = weight_bytes_per_rank(spec, spec.quantization, DType::BF16, tp8);
  EXPECT_EQ(w.attention, std::int64_t{4541382656});
  // The rope caches max_position_embedding 65,536 positions of 256.
  EXPECT_EQ(spec.rotary_cache_positions, 65536);
  EXPECT_EQ(w.rotary_cache, std::int64_t{65536} * 256 * 2);
}

// vLLM's Step3TextConfig keeps moe_layers_enum as a tuple when a config omits it, which
// step3_text.py's split() fails on: refused by name, as is a rope scaling not modelled. A config
// without share_q_dim takes Step3TextConfig's 2,048.
TEST(RegistryFamiliesE, Step3TextKeys) {
  nlohmann::json config = config_json("stepfun-ai__step3-text.json");
  nlohmann::json no_layers = config;
  no_layers.erase("moe_layers_enum");
  EXPECT_NE(refusal(no_layers).find("moe_layers_enum"), std::string::npos);
  nlohmann::json yarn = config;
  yarn["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  EXPECT_NE(refusal(yarn).find("rope_type"), std::string::npos);
  config.erase("share_q_dim");
  config["num_attention_groups"] = 8;  // not read: one KV head whatever it says
  const ModelSpec spec = from_json(config);
  EXPECT_EQ(spec.share_q_dim, 2048);
  EXPECT_EQ(spec.layers[0].num_key_value_heads, 1);
  EXPECT_EQ(parameter_count(spec), std::int64_t{316294538240});
}

// --- LongCat-Flash (longcat_flash.py) ---------------------------------------------------------

// 28 decoder layers, each two MLA attentions (vLLM registers both, each with its own latent
// cache) of kv_lora_rank + qk_rope_head_dim = 512 + 64 = 576 values x 2 B = 1,152 B: 2,304 B a
// layer, 64,512 B a token, whole on every TP rank. The config names no model_type: vLLM maps
// LongcatFlashForCausalLM to longcat_flash.
TEST(RegistryFamiliesE, LongcatFlashKvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path("meituan-longcat__LongCat-Flash-Chat.json"));
  EXPECT_EQ(spec.model_type, "longcat_flash");
  ASSERT_EQ(spec.layers.size(), 28U);  // num_layers, not LongcatFlashConfig's 2 x 28
  EXPECT_EQ(spec.layers[0].attention, AttentionKind::Mla);
  EXPECT_EQ(spec.layers[0].beside, AttentionKind::Mla);
  EXPECT_EQ(spec.max_position_embeddings, 131072);
  EXPECT_EQ(kv_bf16(spec), 64512);
  EXPECT_EQ(kv_bf16(spec, 8), 64512);
}

// h 6,144, 64 heads, V 131,072 untied: embed + lm_head 2 x 131,072 x 6,144 = 1,610,612,736. An
// MLA attention: q_a_proj 1,536 x 6,144 = 9,437,184, its norm 1,536, q_b_proj 64 x 192 x 1,536
// = 18,874,368, kv_a_proj 576 x 6,144 = 3,538,944, its norm 512, kv_b_proj 64 x 256 x 512 =
// 8,388,608, o_proj 6,144 x 8,192 = 50,331,648: 90,572,800, two a layer. Two dense MLPs 2 x 3 x
// 6,144 x 12,288 = 452,984,832. The MoE: 512 experts x 3 x 6,144 x 2,048 = 19,327,352,832, the
// fp32 router over 512 + 256 zero experts 768 x 6,144 = 4,718,592 and its bias 768:
// 19,332,072,192. Four norms 24,576. A layer: 19,966,227,200; 28 layers + embeddings + final
// norm 6,144 = 560,664,980,480: the published 560B.
TEST(RegistryFamiliesE, LongcatFlashParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path("meituan-longcat__LongCat-Flash-Chat.json"));
  EXPECT_TRUE(spec.has_mla);
  EXPECT_EQ(spec.norms_per_layer, 4);
  EXPECT_EQ(spec.dense_mlps_per_layer, 2);
  EXPECT_EQ(spec.intermediate_size, 12288);
  EXPECT_TRUE(spec.layers[0].moe);
  EXPECT_TRUE(spec.layers[27].moe);
  EXPECT_TRUE(spec.moe.dense_mlp_beside_experts);
  EXPECT_EQ(spec.moe.num_experts, 512);
  EXPECT_EQ(spec.moe.zero_experts, 256);
  EXPECT_EQ(spec.moe.moe_intermediate_size, 2048);
  EXPECT_EQ(spec.moe.num_shared_experts, 0);
  EXPECT_TRUE(spec.moe.router_bias);
  EXPECT_FALSE(spec.tie_word_embeddings);
  EXPECT_EQ(parameter_count(spec), std::int64_t{560664980480});
  vramplan_test::expect_published(560664980480, 560e9, 2);
}

// LongcatFlashConfig's num_hidden_layers is 2 x num_layers (its setter halves a written value):
// a config writing 56 is the same model, one writing 28 a different one vLLM would build with
// 14 layers, refused by name; the n-gram tables of LongcatFlashNgramForCausalLM and modules kept
// out of quantization are refused by name.
TEST(RegistryFamiliesE, LongcatFlashKeys) {
  const nlohmann::json config = config_json("meituan-longcat__LongCat-Flash-Chat.json");
  nlohmann::json both = config;
  both["num_hidden_layers"] = 56;
  EXPECT_EQ(parameter_count(from_json(both)), std::int64_t{560664980480});
  both["num_hidden_layers"] = 28;
  EXPECT_NE(refusal(both).find("num_hidden_layers"), std::string::npos);
  nlohmann::json ngram = config;
  ngram["architectures"] = {"LongcatFlashNgramForCausalLM"};
  ngram["ngram_vocab_size_ratio"] = 78;
  EXPECT_NE(refusal(ngram).find("ngram_vocab_size_ratio"), std::string::npos);
  nlohmann::json unquantized = config;
  unquantized["disable_quant_module"] = {"self_attn", "mlps"};
  EXPECT_NE(refusal(unquantized).find("disable_quant_module"), std::string::npos);
  nlohmann::json nameless = config;
  nameless["architectures"] = {"SomethingElse"};
  EXPECT_NE(refusal(nameless).find("model_type"), std::string::npos);
}

// Pipeline stages split the 28 decoder layers, each with both attentions and all three MLPs:
// PP 2 puts 14 layers and 14 x 2,304 = 32,256 KV B a token on each stage.
TEST(RegistryFamiliesE, LongcatFlashPipelineStagesKeepLayersWhole) {
  const ModelSpec spec = load_hf_config(config_path("meituan-longcat__LongCat-Flash-Chat.json"));
  KvCacheOptions o = vramplan_test::bf16_kv_options();
  o.layers = pipeline_layer_range(28, 2, 1);
  EXPECT_EQ(o.layers.end - o.layers.begin, 14);
  EXPECT_EQ(kv_bytes_per_token(spec, o), 32256);
}
