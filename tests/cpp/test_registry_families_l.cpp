// More of vLLM 0.33's text registry: Zyphra Zamba2 as zamba2.py builds it. A MambaMixer2 on
// every layer; each "hybrid" layer first runs one of num_mem_blocks shared transformer blocks
// (Zamba2AttentionDecoderLayer, reused round-robin, its weights held once) and keeps an Attention
// of its own, so a KV cache a use. KV bytes, states and parameters derived by hand from that file
// and layers/mamba/mamba_mixer2.py, and checked against the published parameter count.
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
using vramplan_test::bf16_kv_options;
using vramplan_test::config_json;
using vramplan_test::config_path;
using vramplan_test::kv_bf16;

namespace {

const char* kZamba2 = "Zyphra__Zamba2-7B-Instruct.json";

ModelSpec from_json(const nlohmann::json& config) {
  return model_spec_from_hf_config(config, nullptr, "config.json");
}

std::string refusal(const nlohmann::json& config) {
  return vramplan_test::spec_error_of([&] { (void)from_json(config); }).what();
}

}  // namespace

// Zamba2-7B: 81 layers, 13 of them hybrid (6, 11, 17, ..., 77). A hybrid layer's Attention has
// num_attention_heads 32 heads for K and V alike (QKVParallelLinear given no KV head count) of
// attention_head_dim 224 (2 x 3,584 / 32): 2 x 32 x 224 x 2 B = 28,672 B a layer, 13 x 28,672 =
// 372,736 B a token. TP 2: 16 heads a rank, 186,368. The mamba layers hold no KV.
TEST(RegistryFamiliesL, Zamba2KvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path(kZamba2));
  EXPECT_EQ(spec.model_type, "zamba2");
  ASSERT_EQ(spec.layers.size(), 81U);
  int hybrid = 0;
  for (const LayerSpec& layer : spec.layers) {
    if (layer.attention == AttentionKind::Full) {
      ++hybrid;
      EXPECT_EQ(layer.beside, AttentionKind::Mamba);
      EXPECT_EQ(layer.num_key_value_heads, 32);
      EXPECT_EQ(layer.head_dim, 224);
    } else {
      EXPECT_EQ(layer.attention, AttentionKind::Mamba);
    }
  }
  EXPECT_EQ(hybrid, 13);
  EXPECT_EQ(spec.layers[6].attention, AttentionKind::Full);
  EXPECT_EQ(spec.layers[11].attention, AttentionKind::Full);
  EXPECT_EQ(spec.layers[77].attention, AttentionKind::Full);
  EXPECT_EQ(spec.layers[80].attention, AttentionKind::Mamba);
  EXPECT_EQ(kv_bf16(spec), 372736);
  EXPECT_EQ(kv_bf16(spec, 2), 186368);
}

// Every layer's Mamba2 state (Zamba2ForCausalLM.get_mamba_state_shape_from_config: intermediate
// 2 x 3,584 = 7,168, 2 groups of state 64, 112 heads of mamba_headdim 64, conv 4), bf16 (the
// states take the model dtype): conv (7,168 + 2 x 2 x 64) x (4 - 1) x 2 B = 44,544, ssm 112 x
// 64 x 64 x 2 B = 917,504: 962,048 B. TP 2 (one group a rank): conv (3,584 + 2 x 64) x 3 x 2 =
// 22,272, ssm 56 x 64 x 64 x 2 = 458,752: 481,024. A hybrid layer's mixer holds the same.
TEST(RegistryFamiliesL, Zamba2MambaStateOnEveryLayerByHand) {
  const ModelSpec spec = load_hf_config(config_path(kZamba2));
  EXPECT_EQ(mamba_state_bytes(spec, spec.layers[0], bf16_kv_options()), 962048);
  EXPECT_EQ(mamba_state_bytes(spec, spec.layers[0], bf16_kv_options(2)), 481024);
  const LayerSpec mixer = beside_cache(spec.layers[6]);
  EXPECT_EQ(mixer.attention, AttentionKind::Mamba);
  EXPECT_EQ(mamba_state_bytes(spec, mixer, bf16_kv_options()), 962048);
}

// Parameters (h 3,584, vocab 32,000, lm_head tied): embed 114,688,000. Every layer (81):
// input_layernorm 3,584; in_proj (2 x 7,168 + 2 x 2 x 64 + 112) x 3,584 = 52,699,136; conv1d
// weight and bias 7,424 x 5 = 37,120; A_log, D, dt_bias 3 x 112 = 336 and the gated norm 7,168;
// out_proj 3,584 x 7,168 = 25,690,112: 78,437,456 a layer, 6,353,433,936. Each shared block,
// held ONCE (2): norms 7,168 + 3,584; q, k and v 3 x 7,168 x 7,168 = 154,140,672; o_proj 3,584
// x 7,168 = 25,690,112; gate_up 2 x 14,336 x 3,584 = 102,760,448; down 3,584 x 14,336 =
// 51,380,224: 333,982,208 a block, 667,964,416. Each use (13 hybrid layers): linear 3,584 x
// 3,584 = 12,845,056; gate_up LoRA A 128 x 3,584 = 458,752 and B 28,672 x 128 = 3,670,016 (no
// q/k/v adapters: use_shared_attention_adapter false): 16,973,824 a use, 220,659,712. With the
// final norm: 7,356,749,648, the model card's 7.4B at two figures.
TEST(RegistryFamiliesL, Zamba2ParametersCountTheSharedBlocksOnceByHand) {
  const ModelSpec spec = load_hf_config(config_path(kZamba2));
  EXPECT_TRUE(spec.tie_word_embeddings);
  EXPECT_EQ(spec.shared_blocks, 2);
  EXPECT_EQ(spec.shared_block_adapter_rank, 128);
  EXPECT_FALSE(spec.shared_block_attention_adapters);
  const std::int64_t params = parameter_count(spec);
  EXPECT_EQ(params, 7356749648);
  EXPECT_NEAR(static_cast<double>(params), 7.4e9, 0.05e9);

  // One block more is one block's weights more, however many layers use it.
  nlohmann::json config = config_json(kZamba2);
  config["num_mem_blocks"] = 3;
  EXPECT_EQ(parameter_count(from_json(config)) - params, 333982208);
  // q, k and v adapters on each use: 13 x 3 x (128 x 7,168 + 7,168 x 128) = 71,565,312.
  config["num_mem_blocks"] = 2;
  config["use_shared_attention_adapter"] = true;
  EXPECT_EQ(parameter_count(from_json(config)) - params, 71565312);
}

// What zamba2.py cannot build, or vramplan does not model, is refused by name.
TEST(RegistryFamiliesL, Zamba2RefusesWhatVllmDoesNotBuild) {
  const nlohmann::json base = config_json(kZamba2);
  nlohmann::json config = base;
  config.erase("layers_block_type");
  EXPECT_NE(refusal(config).find("layers_block_type"), std::string::npos);
  config = base;
  config["layers_block_type"][3] = "attention";
  EXPECT_NE(refusal(config).find("layers_block_type"), std::string::npos);
  config = base;
  config["attention_hidden_size"] = 3584;
  EXPECT_NE(refusal(config).find("attention_hidden_size"), std::string::npos);
  config = base;
  config["hidden_act"] = "silu";
  EXPECT_NE(refusal(config).find("hidden_act"), std::string::npos);
  config = base;
  config["add_bias_linear"] = true;
  EXPECT_NE(refusal(config).find("add_bias_linear"), std::string::npos);
  config = base;
  config["mamba_headdim"] = 32;
  EXPECT_NE(refusal(config).find("mamba_headdim"), std::string::npos);
  config = base;
  config["num_mem_blocks"] = 0;
  EXPECT_NE(refusal(config).find("num_mem_blocks"), std::string::npos);
}
