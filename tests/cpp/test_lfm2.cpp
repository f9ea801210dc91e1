// LFM2 as vLLM 0.33 builds it (vllm/model_executor/models/lfm2.py): per layer_types (or the
// older full_attn_idxs) a ShortConv (layers/mamba/short_conv.py: in_proj [3 x conv_dim, hidden],
// a depthwise conv of conv_L_cache taps, out_proj) or attention with per-head q/k RMSNorms
// (head_dim = hidden / heads); each layer then Lfm2MLP (w13, w2) and two RMSNorms; the lm_head
// always ties to embed_tokens. vLLM sizes a ShortConv layer's state with a MambaSpec of one conv
// state, MambaStateShapeCalculator.short_conv_state_shape: (conv_dim / TP, conv_L_cache - 1),
// in the conv state's dtype (short_conv_state_dtype: the model's under auto).
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

constexpr const char* kConfig = "LiquidAI__LFM2-1.2B.json";

}  // namespace

// LiquidAI/LFM2-1.2B: full_attn_idxs [2, 5, 8, 10, 12, 14], the other 10 layers ShortConv.
// Attention: 8 KV heads x 64 (2,048 / 32) x (K + V) x 2 B = 2,048 B a layer, 6 layers: 12,288 B
// a token; TP 2: 4 heads, 6,144.
TEST(Lfm2, KvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path(kConfig));
  EXPECT_EQ(spec.model_type, "lfm2");
  ASSERT_EQ(spec.layers.size(), 16U);
  EXPECT_EQ(spec.layers[0].attention, AttentionKind::Mamba);
  EXPECT_EQ(spec.layers[2].attention, AttentionKind::Full);
  EXPECT_EQ(spec.layers[15].attention, AttentionKind::Mamba);
  EXPECT_EQ(kv_bytes_per_token(spec, bf16_kv_options()), 12288);
  EXPECT_EQ(kv_bytes_per_token(spec, bf16_kv_options(2)), 6144);
}

// The conv state: 2,048 channels x (3 - 1) columns x 2 B = 8,192 B (TP 2: 4,096). The attention
// page at 16 tokens holds 16 x 2,048 = 32,768 B >= 8,192, so the block stays 16 tokens
// (16 x ceil(8,192 / (16 x 2,048)) = 16) and the conv page is padded to 32,768 B.
TEST(Lfm2, ShortConvStateAndPageByHand) {
  const ModelSpec spec = load_hf_config(config_path(kConfig));
  EXPECT_EQ(mamba_state_bytes(spec, spec.layers[0], bf16_kv_options()), 8192);
  EXPECT_EQ(mamba_state_bytes(spec, spec.layers[0], bf16_kv_options(2)), 4096);
  const KvPage page = kv_page(kv_geometry(spec, bf16_kv_options()), 16, 2);
  EXPECT_EQ(page.block_size, 16);
  EXPECT_EQ(page.page_bytes, 32768);
}

// Parameters by hand (hidden 2,048, vocab 65,536, tied). The MLP width: block_ff_dim 12,288
// auto-adjusted, int(2 x 12,288 / 3) = 8,192, x 1.0, rounded up to 256: 8,192.
//   embed 65,536 x 2,048 = 134,217,728; final norm 2,048.
//   every layer: w13 2 x 8,192 x 2,048 + w2 2,048 x 8,192 = 50,331,648; two norms 4,096.
//   ShortConv (10): conv 2,048 x 3 = 6,144; in_proj 3 x 2,048 x 2,048 = 12,582,912; out_proj
//     2,048^2 = 4,194,304: 16,783,360.
//   attention (6): q and out_proj 2 x 2,048^2 + k/v 2 x 512 x 2,048 = 10,485,760; q/k norms 128.
//   134,219,776 + 16 x 50,335,744 + 10 x 16,783,360 + 6 x 10,485,888 = 1,170,340,608, the
//   published LFM2-1.2B parameter count (its model card's table).
TEST(Lfm2, ParametersMatchThePublishedCount) {
  const ModelSpec spec = load_hf_config(config_path(kConfig));
  EXPECT_TRUE(spec.tie_word_embeddings);
  EXPECT_EQ(spec.intermediate_size, 8192);
  EXPECT_EQ(parameter_count(spec), std::int64_t{1170340608});
}

// layer_types spells the same layout ("conv" / "full_attention"); a conv wider than the hidden
// size is not modelled and is refused by name.
TEST(Lfm2, LayerTypesAndRefusals) {
  nlohmann::json config = vramplan_test::config_json(kConfig);
  config.erase("full_attn_idxs");
  nlohmann::json types = nlohmann::json::array();
  for (int i = 0; i < 16; ++i) types.push_back(i == 3 ? "full_attention" : "conv");
  config["layer_types"] = types;
  const ModelSpec spec = model_spec_from_hf_config(config, nullptr, "lfm2-types.json");
  EXPECT_EQ(spec.layers[3].attention, AttentionKind::Full);
  EXPECT_EQ(spec.layers[2].attention, AttentionKind::Mamba);
  EXPECT_EQ(kv_bytes_per_token(spec, bf16_kv_options()), 2048);
  config["conv_dim"] = 4096;
  try {
    (void)model_spec_from_hf_config(config, nullptr, "lfm2-bad.json");
    ADD_FAILURE() << "expected a refusal";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("conv_dim"), std::string::npos) << e.what();
  }
}

// LFM2-8B-A1B as vLLM 0.33's lfm2_moe.py builds it (published-values config, see
// tests/data/configs/published_values/README.md): layer_types puts attention at 2, 6, 10, 14,
// 18 and 21, ShortConv on the other 18 layers; 8 KV heads x 64 (2,048 / 32) x (K + V) x 2 B =
// 2,048 B a layer, 12,288 B a token. Each ShortConv layer holds a conv state of 2,048 channels
// x (3 - 1) taps x 2 B = 8,192 B a sequence.
TEST(Lfm2Moe, KvAndStateBytesByHand) {
  const ModelSpec spec = load_hf_config(config_path("published_values/LiquidAI__LFM2-8B-A1B.json"));
  EXPECT_EQ(spec.model_type, "lfm2_moe");
  ASSERT_EQ(spec.layers.size(), 24U);
  for (const int i : {2, 6, 10, 14, 18, 21}) {
    EXPECT_EQ(spec.layers[i].attention, AttentionKind::Full) << i;
  }
  EXPECT_EQ(spec.layers[0].attention, AttentionKind::Mamba);
  EXPECT_EQ(spec.layers[23].attention, AttentionKind::Mamba);
  EXPECT_FALSE(spec.layers[1].moe);  // num_dense_layers 2
  EXPECT_TRUE(spec.layers[2].moe);
  EXPECT_EQ(kv_bytes_per_token(spec, bf16_kv_options()), 12288);
  EXPECT_EQ(mamba_state_bytes(spec, spec.layers[0], bf16_kv_options()), 8192);
  EXPECT_EQ(mamba_state_bytes(spec, spec.layers[0], bf16_kv_options(2)), 4096);
}

// Parameters (h 2,048, V 65,536 tied): embed_tokens 134,217,728; embedding_norm 2,048.
//   Every layer: two RMSNorms 4,096.
//   ShortConv (18): in_proj 3 x 2,048^2 = 12,582,912; conv 2,048 x 3 = 6,144; out_proj 2,048^2 =
//     4,194,304: 16,783,360.
//   Attention (6): q and out_proj 2 x 2,048^2 + k/v 2 x 512 x 2,048 = 10,485,760; q/k norms 128:
//     10,485,888.
//   Dense MLP (layers 0, 1): w13 2 x 7,168 x 2,048 + w2 2,048 x 7,168 = 44,040,192.
//   MoE (22 layers): router 32 x 2,048 = 65,536; expert bias 32; experts 32 x 3 x 1,792 x 2,048 =
//     352,321,536: 352,387,104.
//   134,217,728 + 2,048 + 24 x 4,096 + 18 x 16,783,360 + 6 x 10,485,888 + 2 x 44,040,192 +
//   22 x 352,387,104 = 8,339,930,560, the published 8.3 B total.
TEST(Lfm2Moe, ParametersByHandMatchThePublishedTotal) {
  const ModelSpec spec = load_hf_config(config_path("published_values/LiquidAI__LFM2-8B-A1B.json"));
  EXPECT_TRUE(spec.tie_word_embeddings);
  EXPECT_EQ(spec.intermediate_size, 7168);
  EXPECT_EQ(parameter_count(spec), std::int64_t{8339930560});
}

// Lfm2MoeConfig has no full_attn_idxs: without layer_types vLLM cannot place the layers.
TEST(Lfm2Moe, MissingLayerTypesAreRefusedByName) {
  nlohmann::json config = vramplan_test::config_json("published_values/LiquidAI__LFM2-8B-A1B.json");
  config.erase("layer_types");
  try {
    (void)model_spec_from_hf_config(config, nullptr, "lfm2-moe.json");
    ADD_FAILURE() << "expected a refusal";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("layer_types"), std::string::npos) << e.what();
  }
}
