// Granite-Swash (granite_swa, granitemoe_swa) as vLLM 0.33 builds it: granite.py and
// granitemoeshared.py serve GraniteSWAForCausalLM and GraniteMoeSWAForCausalLM with
// granite_layer_attn_params, which slides the layers layer_types marks sliding_attention and
// gives every layer a sink logit per query head (HF SWA checkpoints store self_attn.sinks
// without a flag; attention_sinks false drops them). GraniteSWAConfig / GraniteMoeSWAConfig
// fill an omitted layer_types with full attention on layers i % 4 == 0, sliding elsewhere.
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

namespace {

constexpr const char* kSwash2b = "ibm-granite__granite-swash-2b.json";
constexpr const char* kSwash3bMoe = "published_values/ibm-granite__granite-swash-3b-a600m.json";

int count_kind(const ModelSpec& spec, AttentionKind kind) {
  int n = 0;
  for (const LayerSpec& layer : spec.layers) n += layer.attention == kind ? 1 : 0;
  return n;
}

}  // namespace

// granite-swash-2b: 24 layers, full attention on 0, 4, 8, 12, 16, 20 and a 128-token window on
// the other 18; 4 KV heads of 128 (2,560 / 20): 2 x 4 x 128 x 2 B = 2,048 B a layer and token,
// 24 x 2,048 = 49,152 B a token (a sliding layer caches at most its window, which the block
// pool, not this per-token figure, accounts for).
TEST(GraniteSwa, Swash2bLayersAndKvBytesByHand) {
  const ModelSpec spec = load_hf_config(config_path(kSwash2b));
  EXPECT_EQ(spec.model_type, "granite_swa");
  ASSERT_EQ(spec.layers.size(), 24U);
  EXPECT_EQ(count_kind(spec, AttentionKind::Full), 6);
  EXPECT_EQ(count_kind(spec, AttentionKind::SlidingWindow), 18);
  EXPECT_EQ(spec.layers[4].attention, AttentionKind::Full);
  EXPECT_EQ(spec.layers[5].sliding_window, 128);
  EXPECT_EQ(spec.head_dim, 128);
  EXPECT_TRUE(spec.attention_sinks);
  EXPECT_EQ(kv_bytes_per_token(spec, bf16_kv_options()), 49152);
}

// Parameters (h 2,560, V 100,352 tied): embed_tokens 256,901,120; final norm 2,560. Per layer:
// q and o 2 x 2,560^2 = 13,107,200; k and v 2 x 512 x 2,560 = 2,621,440; sinks 20; gate, up
// and down 3 x 8,192 x 2,560 = 62,914,560; two norms 5,120: 78,648,340. 24 layers
// 1,887,560,160: 2,144,463,840 in all, the "2b" of the checkpoint's name.
TEST(GraniteSwa, Swash2bParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path(kSwash2b));
  EXPECT_TRUE(spec.tie_word_embeddings);
  EXPECT_EQ(parameter_count(spec), std::int64_t{2144463840});
}

// Without layer_types the config class's default applies; attention_sinks false drops the sinks
// (20 per layer); a zero window with sliding layers is a named error.
TEST(GraniteSwa, DefaultLayerTypesSinkFlagAndWindowRefusal) {
  nlohmann::json config = config_json(kSwash2b);
  config.erase("layer_types");
  const ModelSpec defaulted = model_spec_from_hf_config(config, nullptr, "swa.json");
  for (int i = 0; i < 24; ++i) {
    EXPECT_EQ(defaulted.layers[i].attention,
              i % 4 == 0 ? AttentionKind::Full : AttentionKind::SlidingWindow)
        << i;
  }
  config["attention_sinks"] = false;
  const ModelSpec no_sinks = model_spec_from_hf_config(config, nullptr, "swa.json");
  EXPECT_FALSE(no_sinks.attention_sinks);
  EXPECT_EQ(parameter_count(defaulted) - parameter_count(no_sinks), 24 * 20);
  config["sliding_window"] = 0;
  try {
    (void)model_spec_from_hf_config(config, nullptr, "swa.json");
    ADD_FAILURE() << "expected a refusal";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("sliding_window"), std::string::npos) << e.what();
  }
}

// granite-swash-3b-a600m (published-values config): 28 layers, full attention on 0, 3, 7, 11,
// 15, 19, 23, 27, sliding on the other 20; 4 KV heads of 64 (1,280 / 20): 2 x 4 x 64 x 2 B =
// 1,024 B a layer, 28,672 B a token.
TEST(GraniteMoeSwa, Swash3bLayersAndKvBytesByHand) {
  const ModelSpec spec = load_hf_config(config_path(kSwash3bMoe));
  EXPECT_EQ(spec.model_type, "granitemoe_swa");
  EXPECT_EQ(count_kind(spec, AttentionKind::Full), 8);
  EXPECT_EQ(count_kind(spec, AttentionKind::SlidingWindow), 20);
  EXPECT_TRUE(spec.has_moe);
  EXPECT_EQ(spec.moe.num_experts, 48);
  EXPECT_EQ(spec.moe.num_shared_experts, 1);
  EXPECT_EQ(kv_bytes_per_token(spec, bf16_kv_options()), 28672);
}

// Parameters (h 1,280, V 100,352 tied): embed_tokens 128,450,560; final norm 1,280. Per layer:
// q and o 2 x 1,280^2 = 3,276,800; k and v 2 x 256 x 1,280 = 655,360; sinks 20; two norms
// 2,560; router 48 x 1,280 = 61,440; experts 48 x 3 x 512 x 1,280 = 94,371,840; shared MLP
// 3 x 1,280^2 = 4,915,200: 103,283,220. 28 layers 2,891,930,160: 3,020,382,000 in all, the
// published 3 B; with 4 of the 48 experts (7,864,320 a layer) 598,171,440 are active, the
// published 600 M.
TEST(GraniteMoeSwa, Swash3bParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path(kSwash3bMoe));
  EXPECT_EQ(parameter_count(spec), std::int64_t{3020382000});
}
