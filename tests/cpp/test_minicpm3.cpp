// MiniCPM3 as vLLM 0.33 builds it (vllm/model_executor/models/minicpm3.py): MiniCPM's decoder
// layers whose MiniCPM3Attention has DeepSeek-V2's MLA projections (q_a_proj, q_a_layernorm,
// q_b_proj, kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj) but attends through a
// standard Attention(num_heads, qk_head_dim, num_kv_heads=num_heads): K is [k_nope | k_pe] per
// head and V is zero-padded to qk_head_dim, so the KV cache is per head, not the latent
// (minicpm3 is not an is_deepseek_mla model_type in transformers_utils/
// model_arch_config_convertor.py).
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "test_support.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/kv_cache.hpp"
#include "vramplan/model_spec.hpp"
#include "vramplan/sglang.hpp"
#include "vramplan/spec_db.hpp"

using namespace vramplan;
using vramplan_test::bf16_kv_options;
using vramplan_test::config_path;

namespace {

constexpr const char* kConfig = "openbmb__MiniCPM3-4B.json";

}  // namespace

// openbmb/MiniCPM3-4B: 62 layers, 40 heads, qk_nope_head_dim 64 + qk_rope_head_dim 32 = 96.
// Per layer K and V of 40 heads x 96 dims at 2 B: 2 x 40 x 96 x 2 = 15,360 B; x 62 layers =
// 952,320 B a token. TP 2 splits the heads: 20 a rank, 476,160 B. (A latent cache would hold
// (256 + 32) x 2 = 576 B a layer, 35,712 B a token: not what vLLM allocates.)
TEST(MiniCpm3, KvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path(kConfig));
  EXPECT_EQ(spec.model_type, "minicpm3");
  ASSERT_EQ(spec.layers.size(), 62U);
  EXPECT_EQ(spec.layers[0].attention, AttentionKind::Full);
  EXPECT_EQ(spec.layers[0].num_key_value_heads, 40);
  EXPECT_EQ(spec.layers[0].head_dim, 96);
  EXPECT_EQ(spec.layers[0].head_dim_v, 96);
  EXPECT_FALSE(spec.mla.latent_kv_cache);
  EXPECT_EQ(kv_bytes_per_token(spec, bf16_kv_options()), 952320);
  EXPECT_EQ(kv_bytes_per_token(spec, bf16_kv_options(2)), 476160);
}

// Parameters by hand (hidden 2,560, vocab 73,448, tied as MiniCPM3Config's default; v_head_dim
// absent, so hidden / heads = 64):
//   embed 73,448 x 2,560 = 188,026,880; final norm 2,560.
//   per layer: q_a_proj 768 x 2,560 = 1,966,080; q_a_layernorm 768; q_b_proj 40 x 96 x 768 =
//     2,949,120; kv_a_proj_with_mqa (256 + 32) x 2,560 = 737,280; kv_a_layernorm 256; kv_b_proj
//     40 x (64 + 64) x 256 = 1,310,720; o_proj 2,560 x 40 x 64 = 6,553,600; gate/up/down 3 x
//     6,400 x 2,560 = 49,152,000; two RMSNorms 5,120: 62,674,944.
//   188,026,880 + 62 x 62,674,944 + 2,560 = 4,073,875,968 (the published "4B"; bf16 tensors
//   8,147,751,936 B).
TEST(MiniCpm3, ParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path(kConfig));
  EXPECT_TRUE(spec.tie_word_embeddings);
  EXPECT_EQ(spec.mla.v_head_dim, 64);
  EXPECT_EQ(spec.rotary_dim, 32);
  EXPECT_EQ(parameter_count(spec), std::int64_t{4073875968});
}

// MiniCPM3Attention always builds q_a_proj of q_lora_rank: a config without one cannot load.
// A v_head_dim wider than the q/k head cannot be padded to it.
TEST(MiniCpm3, UnbuildableConfigsAreRefusedByName) {
  nlohmann::json no_rank = vramplan_test::config_json(kConfig);
  no_rank["q_lora_rank"] = nullptr;
  nlohmann::json wide_v = vramplan_test::config_json(kConfig);
  wide_v["v_head_dim"] = 128;
  for (const auto& [config, key] : {std::pair{no_rank, "q_lora_rank"}, {wide_v, "v_head_dim"}}) {
    try {
      (void)model_spec_from_hf_config(config, nullptr, "minicpm3-bad.json");
      ADD_FAILURE() << key << ": expected a refusal";
    } catch (const SpecError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
}

// SGLang serves MiniCPM3 as MLA with a latent cache, which this spec (vLLM's per-head cache)
// does not describe: the SGLang planner refuses it by the model_type rather than misprice it.
TEST(MiniCpm3, SglangRefusesThePerHeadSpec) {
  const ModelSpec spec = load_hf_config(config_path(kConfig));
  const SpecDatabase database = SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  try {
    (void)sglang_breakdown(spec, database.gpu("H100-80GB"), sglang_rules(sglang_table(), "0.5.23"),
                           SglangConfig{});
    ADD_FAILURE() << "expected a refusal";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("model_type"), std::string::npos) << e.what();
  }
}
