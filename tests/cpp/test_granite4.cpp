// Granite-4 hybrids as vLLM 0.33 builds them (vllm/model_executor/models/granitemoehybrid.py):
// per layer_types a MambaMixer2 or an attention layer (head_dim = hidden / heads, no q/k norm),
// each followed by GraniteMoeMoE (router + experts of intermediate_size) and
// GraniteMoeSharedMLP (input_linear [2 x shared, hidden], output_linear [hidden, shared]).
// The conv and SSM states take the model dtype (mamba_ssm_cache_dtype auto), and the attention
// block grows until its page holds one Mamba state (platforms/interface.py,
// update_block_size_for_backend).
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
using vramplan_test::config_path;

namespace {

nlohmann::json tiny_config() {
  return vramplan_test::config_json("ibm-granite__granite-4.0-h-tiny.json");
}

}  // namespace

// ibm-granite/granite-4.0-h-tiny: 4 attention layers of 4 KV heads x 128 (1,536 / 12 heads):
// 2 x 4 x 128 x 2 B = 2,048 B per layer, 8,192 B per token. TP 2: 2 heads, 4,096.
TEST(Granite4, KvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path("ibm-granite__granite-4.0-h-tiny.json"));
  EXPECT_EQ(spec.model_type, "granitemoehybrid");
  EXPECT_EQ(spec.layers[5].attention, AttentionKind::Full);
  EXPECT_EQ(spec.layers[0].attention, AttentionKind::Mamba);
  EXPECT_TRUE(spec.layers[0].moe);
  EXPECT_EQ(kv_bytes_per_token(spec, bf16_kv_options()), 8192);
  EXPECT_EQ(kv_bytes_per_token(spec, bf16_kv_options(2)), 4096);
}

// Mamba2 state per layer (MambaStateShapeCalculator.mamba2_state_shape), bf16:
//   conv (3,072 + 2 x 1 x 128) x (4 - 1) x 2 B = 19,968; ssm 48 x 64 x 128 x 2 B = 786,432;
//   806,400 B. The attention page (16-token alignment, 2,048 B per token) grows to
//   16 x ceil(806,400 / (16 x 2,048)) = 400 tokens: 819,200 B, the Mamba page padded to it.
// Groups: 4 attention and 36 Mamba layers -> group size 4, one attention and nine Mamba groups.
TEST(Granite4, MambaStatePageAndGroupsByHand) {
  const ModelSpec spec = load_hf_config(config_path("ibm-granite__granite-4.0-h-tiny.json"));
  EXPECT_EQ(mamba_state_bytes(spec, spec.layers[0], bf16_kv_options()), 806400);
  const KvGeometry geometry = kv_geometry(spec, bf16_kv_options());
  EXPECT_EQ(geometry.group_size, 4);
  EXPECT_EQ(geometry.groups.size(), 10U);
  const KvPage page = kv_page(geometry, 16, 2);
  EXPECT_EQ(page.block_size, 400);
  EXPECT_EQ(page.page_bytes, 819200);
}

// Parameters by hand (h 1,536, vocab 100,352, tied):
//   embed 100,352 x 1,536 = 154,140,672; final norm 1,536.
//   attention (4 layers): q and o 2 x 1,536^2 + k/v 2 x 512 x 1,536 = 6,291,456.
//   Mamba2 (36 layers): in_proj (2 x 3,072 + 2 x 128 + 48) x 1,536 = 9,904,128; conv1d weight
//     and bias 3,328 x 5 = 16,640; A_log, D, dt_bias 3 x 48 and the gated norm 3,072 = 3,216;
//     out_proj 1,536 x 3,072 = 4,718,592: 14,642,576.
//   every layer: router 64 x 1,536 = 98,304; experts 64 x 3 x 512 x 1,536 = 150,994,944; shared
//     MLP 3 x 1,024 x 1,536 = 4,718,592; 2 norms 3,072: 155,814,912.
//   154,142,208 + 4 x 6,291,456 + 36 x 14,642,576 + 40 x 155,814,912 = 6,939,037,248.
TEST(Granite4, MoeHybridParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path("ibm-granite__granite-4.0-h-tiny.json"));
  EXPECT_EQ(parameter_count(spec), std::int64_t{6939037248});
}

// Granite-4 Micro / H-1B publish num_local_experts 0: the shared MLP is the layer's only MLP.
// The same layout without experts: per layer 3 x 1,024 x 1,536 + 3,072 = 4,721,664 replaces
// 155,814,912, so 6,939,037,248 - 40 x 151,093,248 = 895,307,328.
TEST(Granite4, WithoutExpertsTheSharedMlpIsTheDenseMlp) {
  nlohmann::json config = tiny_config();
  config["num_local_experts"] = 0;
  config["num_experts_per_tok"] = 0;
  const ModelSpec spec = model_spec_from_hf_config(config, nullptr, "granite-dense.json");
  EXPECT_FALSE(spec.layers[0].moe);
  EXPECT_EQ(spec.intermediate_size, 1024);
  EXPECT_EQ(parameter_count(spec), std::int64_t{895307328});
}

// transformers fills a missing layer_types with "linear_attention", which vLLM's model cannot
// build; a projection bias is not modelled. Both are refused by the key's name.
TEST(Granite4, UnbuildableConfigsAreRefusedByName) {
  for (const char* key : {"layer_types", "mamba_proj_bias"}) {
    nlohmann::json config = tiny_config();
    if (std::string(key) == "layer_types") {
      config.erase("layer_types");
    } else {
      config[key] = true;
    }
    try {
      (void)model_spec_from_hf_config(config, nullptr, "granite-bad.json");
      ADD_FAILURE() << key << ": expected a refusal";
    } catch (const SpecError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
}
