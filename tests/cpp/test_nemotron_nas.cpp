// DeciLMForCausalLM (Llama-3.x-Nemotron Super / Ultra / 51B) as vLLM 0.33's nemotron_nas.py
// builds it: one block_configs entry per layer. attention.no_op leaves the layer without
// attention and without its input_layernorm; otherwise num_attention_heads // n_heads_in_group KV
// heads. ffn.no_op leaves it without MLP and post_attention_layernorm; otherwise a LlamaMLP of
// _ffn_mult_to_intermediate_size(ffn_mult, hidden) = int(2 x ffn_mult x hidden / 3) rounded up
// to a multiple of 256, or the block's own intermediate_size.
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

namespace {

nlohmann::json block(const nlohmann::json& attention, const nlohmann::json& ffn) {
  return {{"attention", attention}, {"ffn", ffn}};
}

// Four layers of hidden 1,024 and 16 heads of 64, untied vocabulary 32,000:
//   0: 4 KV heads (group 4), ffn_mult 2.625 -> int(1,792.0) = 1,792 (a multiple of 256);
//   1: no attention, ffn_mult 1.3125 -> 896, rounded up to 1,024;
//   2: 1 KV head (group 16), no MLP;
//   3: 2 KV heads (group 8), the block's intermediate_size 3,072.
nlohmann::json four_layer_config() {
  return {{"architectures", {"DeciLMForCausalLM"}},
          {"model_type", "nemotron-nas"},
          {"hidden_size", 1024},
          {"num_attention_heads", 16},
          {"num_hidden_layers", 4},
          {"vocab_size", 32000},
          {"max_position_embeddings", 8192},
          {"tie_word_embeddings", false},
          {"torch_dtype", "bfloat16"},
          {"block_configs",
           {block({{"n_heads_in_group", 4}, {"no_op", false}}, {{"ffn_mult", 2.625}}),
            block({{"n_heads_in_group", nullptr}, {"no_op", true}}, {{"ffn_mult", 1.3125}}),
            block({{"n_heads_in_group", 16}}, {{"no_op", true}}),
            block({{"n_heads_in_group", 8}}, {{"intermediate_size", 3072}})}}};
}

ModelSpec four_layer_spec(const nlohmann::json& config) {
  return model_spec_from_hf_config(config, nullptr, "decilm-4.json");
}

}  // namespace

// Layers, widths and KV: 2 x (4 + 1 + 2) heads x 64 x 2 B = 1,792 B a token.
TEST(NemotronNas, PerLayerLayoutAndKvBytesByHand) {
  const ModelSpec spec = four_layer_spec(four_layer_config());
  ASSERT_EQ(spec.layers.size(), 4U);
  EXPECT_EQ(spec.layers[0].num_key_value_heads, 4);
  EXPECT_EQ(spec.layers[0].intermediate_size, 1792);
  EXPECT_EQ(spec.layers[1].attention, AttentionKind::None);
  EXPECT_EQ(spec.layers[1].intermediate_size, 1024);
  EXPECT_EQ(spec.layers[2].num_key_value_heads, 1);
  EXPECT_FALSE(spec.layers[2].mlp);
  EXPECT_EQ(spec.layers[3].num_key_value_heads, 2);
  EXPECT_EQ(spec.layers[3].intermediate_size, 3072);
  EXPECT_EQ(kv_bytes_per_token(spec, bf16_kv_options()), 1792);
}

// Parameters: embed_tokens and lm_head 2 x 32,000 x 1,024 = 65,536,000; final norm 1,024.
//   0: two norms 2,048; q and o 2 x 1,024^2; k/v 2 x 4 x 64 x 1,024 = 524,288; MLP 3 x 1,792 x
//      1,024 = 5,505,024: 8,128,512.
//   1: one norm 1,024; MLP 3 x 1,024^2: 3,146,752.
//   2: one norm 1,024; q and o 2,097,152; k/v 131,072: 2,229,248.
//   3: two norms 2,048; q and o 2,097,152; k/v 262,144; MLP 3 x 3,072 x 1,024 = 9,437,184:
//      11,798,528.
//   65,536,000 + 1,024 + 25,303,040 = 90,840,064.
TEST(NemotronNas, ParametersByHandCountANormPerPresentBlock) {
  EXPECT_EQ(parameter_count(four_layer_spec(four_layer_config())), std::int64_t{90840064});
}

// A linear replacement block (vLLM builds none), a group that is no head count and a block list
// of the wrong length are refused by name.
TEST(NemotronNas, UnbuildableBlocksAreRefusedByName) {
  const auto refused = [](const nlohmann::json& config, const std::string& field) {
    try {
      (void)four_layer_spec(config);
      ADD_FAILURE() << "expected a refusal naming " << field;
    } catch (const SpecError& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  nlohmann::json linear = four_layer_config();
  linear["block_configs"][0]["ffn"]["replace_with_linear"] = true;
  refused(linear, "block_configs[0].ffn.replace_with_linear");
  nlohmann::json group = four_layer_config();
  group["block_configs"][3]["attention"]["n_heads_in_group"] = 0;
  refused(group, "block_configs[3].attention.n_heads_in_group");
  nlohmann::json short_list = four_layer_config();
  short_list["num_hidden_layers"] = 5;
  refused(short_list, "block_configs");
}

// vLLM's UniformTypeKVCacheSpecs: full-attention layers of different KV heads share one block
// id, and a block costs the sum of their pages: 16 tokens x 1,792 B = 28,672 B (not the largest
// page, 16 x 1,024 B, times the three layers).
TEST(NemotronNas, ABlockCostsTheSumOfTheLayersPages) {
  const ModelSpec spec = four_layer_spec(four_layer_config());
  const KvLayout layout = kv_layout(spec, bf16_kv_options());
  EXPECT_EQ(layout.page_bytes * layout.group_size, 16 * 1792);
  EXPECT_EQ(layout.bytes_per_token, 1792);
}

// nvidia/Llama-3_3-Nemotron-Super-49B-v1 (tests/data/configs): 80 blocks of hidden 8,192 and 64
// heads of 128; 49 keep attention (n_heads_in_group 8: 8 KV heads), 31 are no-op; no MLP is.
// KV: 49 x 2 x 8 x 128 x 2 B = 200,704 B a token. Widths from ffn_mult: 0.5 -> 2,730 -> 2,816;
// 1.0 -> 5,461 -> 5,632; 1.3125 -> 7,168; 2.625 -> 14,336; 3.28125 -> 17,920; 5.25 -> 28,672.
// Parameters: embed_tokens and lm_head 2 x 128,256 x 8,192 plus the final norm; each attention
// block 8,192 (norm) + 2 x 8,192^2 (q, o) + 2 x 8 x 128 x 8,192 (k, v); each MLP 8,192 (norm) +
// 3 x width x 8,192. Summed over the blocks as the config lists them (a separate Python pass over
// the JSON with vLLM's formula): 49,867,145,216, the published 49.9 B.
TEST(NemotronNas, Super49bKvBytesAndParametersByHand) {
  const ModelSpec spec =
      load_hf_config(vramplan_test::config_path("nvidia__Llama-3_3-Nemotron-Super-49B-v1.json"));
  EXPECT_EQ(spec.model_type, "nemotron-nas");
  int attention_layers = 0;
  for (const LayerSpec& layer : spec.layers) {
    attention_layers += layer.attention == AttentionKind::Full ? 1 : 0;
  }
  EXPECT_EQ(attention_layers, 49);
  EXPECT_EQ(spec.layers[62].intermediate_size, 2816);
  EXPECT_EQ(spec.layers[54].intermediate_size, 5632);
  EXPECT_EQ(kv_bytes_per_token(spec, bf16_kv_options()), 200704);
  EXPECT_EQ(parameter_count(spec), std::int64_t{49867145216});
}
