// ModelOpt MIXED_PRECISION checkpoints whose quantized_layers map names a different algorithm per
// layer (FP8 attention, NVFP4 and W4A16_NVFP4 MLP, a W4A16_NVFP4 lm_head: the layout NVIDIA's
// own NVFP4 exports of Qwen3.6 use), sized module by module as the ModelOpt export stores them and
// as vLLM 0.33's ModelOptMixedPrecisionConfig builds them
// (vllm/model_executor/layers/quantization/modelopt.py: LINEAR_ALGOS, resolve(),
// _DropInputScale, get_quant_method for ParallelLMHead).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "vramplan/errors.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/model_spec.hpp"
#include "vramplan/weights.hpp"

using namespace vramplan;
using nlohmann::json;

namespace {

// A 2-layer Llama: hidden 64, 4 heads of 16 with 2 KV heads, MLP 128, vocab 100, bf16, untied.
json tiny_llama() {
  return {{"model_type", "llama"},
          {"hidden_size", 64},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 4},
          {"num_key_value_heads", 2},
          {"intermediate_size", 128},
          {"vocab_size", 100},
          {"max_position_embeddings", 256},
          {"tie_word_embeddings", false},
          {"attention_bias", false},
          {"mlp_bias", false},
          {"torch_dtype", "bfloat16"}};
}

json mixed_quant_config(const json& layers) {
  return {{"producer", {{"name", "modelopt"}}},
          {"quantization",
           {{"quant_algo", "MIXED_PRECISION"},
            {"kv_cache_quant_algo", nullptr},
            {"quantized_layers", layers}}}};
}

json per_layer_recipe() {
  json layers = json::object();
  for (const char* layer : {"0", "1"}) {
    const std::string p = std::string("model.layers.") + layer + ".";
    for (const char* m :
         {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj"}) {
      layers[p + m] = {{"quant_algo", "FP8"}};
    }
    layers[p + "mlp.gate_proj"] = {{"quant_algo", "NVFP4"}, {"group_size", 16}};
    layers[p + "mlp.up_proj"] = {{"quant_algo", "NVFP4"}, {"group_size", 16}};
    layers[p + "mlp.down_proj"] = {{"quant_algo", "W4A16_NVFP4"}, {"group_size", 16}};
  }
  layers["lm_head"] = {{"quant_algo", "W4A16_NVFP4"}, {"group_size", 16}};
  return layers;
}

}  // namespace

// Checkpoint bytes by hand, module by module as the ModelOpt export stores them:
//   FP8 module [N, K]: weight fp8 N*K + weight_scale fp32 (4) + input_scale fp32 (4).
//   NVFP4 (W4A4) [N, K]: weight uint8 N*K/2 + weight_scale fp8 N*K/16 + weight_scale_2 fp32 (4)
//     + input_scale fp32 (4).
//   W4A16_NVFP4 [N, K]: the same without input_scale (vLLM drops it: _DropInputScale).
// embed_tokens bf16 100 x 64 x 2 = 12,800; final norm 64 x 2 = 128;
// lm_head W4A16 [100, 64]: 3,200 + 400 + 4 = 3,604.
// Per layer: q_proj [64, 64] FP8 4,096 + 8 = 4,104; k_proj, v_proj [32, 64] 2,048 + 8 = 2,056
// each; o_proj [64, 64] 4,104; gate_proj, up_proj [128, 64] NVFP4 4,096 + 512 + 8 = 4,616 each;
// down_proj [64, 128] W4A16 4,096 + 512 + 4 = 4,612; two bf16 norms 256: 26,420.
// Total: 12,800 + 128 + 3,604 + 2 x 26,420 = 69,372.
TEST(ModelOptPerLayer, EachLayerIsSizedByItsOwnAlgorithm) {
  const json quant = mixed_quant_config(per_layer_recipe());
  const ModelSpec spec = model_spec_from_hf_config(tiny_llama(), &quant, "tiny/config.json");
  EXPECT_EQ(spec.quantization.method, QuantMethod::Nvfp4);
  EXPECT_TRUE(spec.quantization.quantized_lm_head);
  EXPECT_EQ(checkpoint_tensor_bytes(spec, true), 69372);
}

// On the GPU the lm_head is vLLM's ParallelLMHead, its rows padded to a multiple of 64 (128):
// W4A16 NVFP4 weight [128, 32] uint8 4,096 + weight_scale fp8 [128, 4] 512 + the global scale
// 4 = 4,612 at TP 1; at TP 2 each rank holds 64 rows: 2,048 + 256 + 4 = 2,308.
TEST(ModelOptPerLayer, TheLmHeadIsQuantizedWhenTheMapListsIt) {
  const json quant = mixed_quant_config(per_layer_recipe());
  const ModelSpec spec = model_spec_from_hf_config(tiny_llama(), &quant, "tiny/config.json");
  RankPlacement tp1;
  EXPECT_EQ(weight_bytes_per_rank(spec, spec.quantization, DType::BF16, tp1).lm_head, 4612);
  RankPlacement tp2;
  tp2.tensor_parallel_size = 2;
  EXPECT_EQ(weight_bytes_per_rank(spec, spec.quantization, DType::BF16, tp2).lm_head, 2308);
  // Without an lm_head entry it stays bf16: 128 x 64 x 2 = 16,384.
  json layers = per_layer_recipe();
  layers.erase("lm_head");
  const json plain = mixed_quant_config(layers);
  const ModelSpec unlisted = model_spec_from_hf_config(tiny_llama(), &plain, "tiny/config.json");
  EXPECT_FALSE(unlisted.quantization.quantized_lm_head);
  EXPECT_EQ(weight_bytes_per_rank(unlisted, unlisted.quantization, DType::BF16, tp1).lm_head,
            16384);
}

// What the planner cannot size exactly is refused by name: an algorithm vLLM accepts per layer
// but vramplan does not model, one role in NVFP4 in some layers and W4A16 in others, and an FP8
// lm_head beside NVFP4.
TEST(ModelOptPerLayer, WhatCannotBeSizedIsRefusedByName) {
  auto refusal = [](const json& layers) -> std::string {
    const json quant = mixed_quant_config(layers);
    try {
      (void)model_spec_from_hf_config(tiny_llama(), &quant, "tiny/config.json");
    } catch (const Error& e) {
      return e.what();
    }
    return "accepted";
  };
  json mxfp8 = per_layer_recipe();
  mxfp8["model.layers.0.mlp.down_proj"] = {{"quant_algo", "MXFP8"}};
  EXPECT_NE(refusal(mxfp8).find("MXFP8"), std::string::npos) << refusal(mxfp8);
  json split = per_layer_recipe();
  split["model.layers.1.mlp.down_proj"] = {{"quant_algo", "NVFP4"}, {"group_size", 16}};
  EXPECT_NE(refusal(split).find("mlp_down"), std::string::npos) << refusal(split);
  json fp8_head = per_layer_recipe();
  fp8_head["lm_head"] = {{"quant_algo", "FP8"}};
  EXPECT_NE(refusal(fp8_head).find("lm_head"), std::string::npos) << refusal(fp8_head);
}

// A hybrid (Qwen3.5-27B: 64 layers, a full-attention layer every 4th, Gated DeltaNet in the
// others) quantized as NVIDIA's Qwen3.6 NVFP4 exports are described: FP8 on every attention and
// linear-attention projection, W4A16_NVFP4 on the MLP and the lm_head, names under
// model.language_model.layers.N. Attention projections exist in 16 layers only: FP8 in all 16
// is the whole role, not "some layers".
TEST(ModelOptPerLayer, AHybridWithFp8AttentionAndW4a16MlpPlans) {
  std::ifstream in(std::string(VRAMPLAN_TEST_DATA_DIR) + "/configs/Qwen__Qwen3.5-27B.json");
  json config = json::parse(in);
  const json& types = config["text_config"]["layer_types"];
  json layers = json::object();
  for (std::size_t i = 0; i < types.size(); ++i) {
    const std::string p = "model.language_model.layers." + std::to_string(i) + ".";
    const bool linear = types[i] == "linear_attention";
    for (const char* m :
         linear ? std::vector<const char*>{"linear_attn.in_proj_qkv", "linear_attn.in_proj_z",
                                           "linear_attn.out_proj"}
                : std::vector<const char*>{"self_attn.q_proj", "self_attn.k_proj",
                                           "self_attn.v_proj", "self_attn.o_proj"}) {
      layers[p + m] = {{"quant_algo", "FP8"}};
    }
    for (const char* m : {"mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"}) {
      layers[p + m] = {{"quant_algo", "W4A16_NVFP4"}, {"group_size", 16}};
    }
  }
  layers["lm_head"] = {{"quant_algo", "W4A16_NVFP4"}, {"group_size", 16}};
  config["quantization_config"] = {{"quant_method", "modelopt"},
                                   {"quant_algo", "MIXED_PRECISION"},
                                   {"quantized_layers", layers}};
  const ModelSpec spec = model_spec_from_hf_config(config, nullptr, "qwen36/config.json");
  const QuantSpec& q = spec.quantization;
  auto has = [](const std::vector<std::string>& list, const char* role) {
    return std::find(list.begin(), list.end(), role) != list.end();
  };
  for (const char* role : {"attn_q", "attn_kv", "attn_o", "mixer_in", "mixer_out"}) {
    EXPECT_TRUE(has(q.fp8_roles, role)) << role;
  }
  for (const char* role : {"mlp_gate_up", "mlp_down", "lm_head"}) {
    EXPECT_TRUE(has(q.nvfp4_weight_only_roles, role)) << role;
  }
  EXPECT_TRUE(has(q.unquantized_roles, "mixer_in_ba"));  // in_proj_b / in_proj_a not listed
  EXPECT_TRUE(q.unquantized_layers.empty());
  // lm_head [248320, 5120] W4A16 at TP 1 (248,320 is a multiple of 64): 248,320 x 2,560 +
  // 248,320 x 320 + 4 = 715,161,604 bytes.
  EXPECT_EQ(weight_bytes_per_rank(spec, q, DType::BF16, RankPlacement{}).lm_head, 715161604);
}
