// ChatGLM2 / ChatGLM3 / GLM-4-9B as vLLM 0.33 builds them (vllm/model_executor/models/chatglm.py):
// config.num_layers GLMBlocks, each an RMSNorm, GLMAttention (a fused query_key_value over
// hidden / heads per head, multi_query_group_num KV heads under multi_query_attention, biased
// under add_qkv_bias; dense without bias), an RMSNorm and GLMMLP (a gated dense_h_to_4h of
// ffn_hidden_size, dense_4h_to_h); a final RMSNorm; embedding and output_layer of
// padded_vocab_size rows, untied. Half the head is rotated, over a cache of seq_length positions,
// which is also the context vLLM derives (seq_length is one of its context keys).
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

constexpr const char* kGlm4 = "published_values/THUDM__glm-4-9b-chat.json";
constexpr const char* kChatGlm2 = "published_values/THUDM__chatglm2-6b.json";

}  // namespace

// glm-4-9b-chat: 40 layers of 2 KV heads x 128 (4,096 / 32) x (K + V) x 2 B = 1,024 B a layer,
// 40,960 B a token; the context is seq_length 131,072; 64 of 128 dims rotate.
TEST(ChatGlm, Glm4KvBytesAndContextByHand) {
  const ModelSpec spec = load_hf_config(config_path(kGlm4));
  EXPECT_EQ(spec.model_type, "chatglm");
  EXPECT_EQ(spec.num_hidden_layers, 40);
  EXPECT_EQ(spec.num_key_value_heads, 2);
  EXPECT_EQ(spec.max_position_embeddings, 131072);
  EXPECT_FALSE(spec.max_position_embeddings_assumed);
  EXPECT_EQ(spec.rotary_dim, 64);
  EXPECT_EQ(kv_bytes_per_token(spec, bf16_kv_options()), 40960);
}

// Parameters (h 4,096, padded vocab 151,552, untied): embedding and output_layer 2 x 151,552 x
// 4,096 = 1,241,513,984; final norm 4,096. Per layer: query_key_value (32 + 2 + 2) x 128 x 4,096
// = 18,874,368 + its bias 4,608; dense 4,096^2 = 16,777,216; dense_h_to_4h 2 x 13,696 x 4,096 =
// 112,197,632; dense_4h_to_h 56,098,816; two norms 8,192: 203,960,832. 40 layers 8,158,433,280:
// 9,399,951,360 in all, the checkpoint's published 9.4 B.
TEST(ChatGlm, Glm4ParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path(kGlm4));
  EXPECT_EQ(parameter_count(spec), std::int64_t{9399951360});
}

// chatglm2-6b names only num_layers (28) and is stored in float16: 28 x 2 x 128 x 2 x 2 B =
// 28,672 B a token. Parameters: 2 x 65,024 x 4,096 = 532,676,608 + 4,096 + 28 x 203,960,832 =
// 6,243,584,000, the published 6.2 B.
TEST(ChatGlm, ChatGlm2NamesItsLayersNumLayers) {
  const ModelSpec spec = load_hf_config(config_path(kChatGlm2));
  EXPECT_EQ(spec.num_hidden_layers, 28);
  EXPECT_EQ(spec.max_position_embeddings, 32768);
  EXPECT_EQ(kv_bytes_per_token(spec, bf16_kv_options()), 28672);
  EXPECT_EQ(parameter_count(spec), std::int64_t{6243584000});
}

// Without multi_query_attention every head keeps its own K and V (32 x 128 x 2 x 2 B x 28 =
// 458,752 B a token); LayerNorm blocks and GLM-4V's vision tower are refused by name.
TEST(ChatGlm, MultiHeadVariantAndRefusals) {
  nlohmann::json config = vramplan_test::config_json(kChatGlm2);
  config["multi_query_attention"] = false;
  const ModelSpec mha = model_spec_from_hf_config(config, nullptr, "chatglm-mha.json");
  EXPECT_EQ(kv_bytes_per_token(mha, bf16_kv_options()), 458752);
  for (const char* key : {"rmsnorm", "vision_config"}) {
    nlohmann::json bad = vramplan_test::config_json(kChatGlm2);
    bad[key] = std::string(key) == "rmsnorm" ? nlohmann::json(false) : nlohmann::json::object();
    try {
      (void)model_spec_from_hf_config(bad, nullptr, "chatglm-bad.json");
      ADD_FAILURE() << "expected a refusal naming " << key;
    } catch (const SpecError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
}
