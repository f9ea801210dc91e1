// Speculative decoding: the drafter's weights, KV layers, activations and graphs.
#include <gtest/gtest.h>

#include <memory>

#include "test_support.hpp"
#include "vramplan/engine.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/spec_db.hpp"

using namespace vramplan;
using vramplan_test::spec_from_yaml;

namespace {

// An EAGLE head for Llama-3.1-8B: one Llama decoder layer of the target's shape (the public
// EAGLE-LLaMA3.1-Instruct-8B config: h 4096, 32 / 8 heads of 128, I 14336, vocab 128256).
const char* kEagleHead = R"(
id: test/eagle-llama-3.1-8b
model_type: llama
hidden_size: 4096
num_hidden_layers: 1
num_attention_heads: 32
num_key_value_heads: 8
intermediate_size: 14336
vocab_size: 128256
max_position_embeddings: 131072
torch_dtype: bfloat16
)";

Breakdown run(const ModelSpec& spec, const EngineConfig& config, int gpus = 1) {
  HardwareConfig hw;
  hw.gpu = vramplan_test::h100();
  hw.num_gpus = gpus;
  return compute_breakdown(spec, hw, config);
}

}  // namespace

TEST(Speculative, EagleHeadAddsItsLayerToTheKvPool) {
  const ModelSpec target = spec_from_yaml(vramplan_test::kLlama31_8B);
  EngineConfig config;
  config.engine_version = "0.19.0";
  config.max_model_len = 8192;
  const Breakdown plain = run(target, config);
  config.num_speculative_tokens = 3;
  config.speculative_method = "eagle";
  config.draft_model = std::make_shared<const ModelSpec>(spec_from_yaml(kEagleHead));
  const Breakdown with_eagle = run(target, config);
  // 32 target layers + 1 draft layer, each 2 x 8 heads x 128 x 2 B = 4,096 B per token.
  EXPECT_EQ(plain.ranks[0].kv_bytes_per_token, 32 * 4096);
  EXPECT_EQ(with_eagle.ranks[0].kv_bytes_per_token, 33 * 4096);
  // The head's weights (its own embedding and lm_head included): one layer of q, o 4096^2,
  // k, v 1024 x 4096, MLP 3 x 4096 x 14336 = 218,103,808 params; embedding and head
  // 2 x 525,336,576; norms 3 x 4096: 1,268,789,248 params x 2 B; plus its rotary cache
  // [131072, 128] x 2 B.
  EXPECT_EQ(with_eagle.ranks[0].weights_bytes - plain.ranks[0].weights_bytes,
            std::int64_t{1'268'789'248} * 2 + 131072 * 128 * 2);
  EXPECT_GE(with_eagle.ranks[0].activation_peak_bytes, plain.ranks[0].activation_peak_bytes);
  EXPECT_GT(with_eagle.ranks[0].cudagraph_bytes, plain.ranks[0].cudagraph_bytes);
  EXPECT_LT(with_eagle.kv_tokens, plain.kv_tokens);
}

TEST(Speculative, MtpUsesTheCheckpointsOwnLayer) {
  const SpecDatabase db = SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  const ModelSpec& v3 = db.model("deepseek-ai/DeepSeek-V3");
  EngineConfig config;
  config.engine_version = "0.19.0";
  config.tensor_parallel_size = 8;
  config.max_model_len = 8192;
  HardwareConfig hw;
  hw.gpu = db.gpu("H200");
  hw.num_gpus = 8;
  const Breakdown plain = compute_breakdown(v3, hw, config);
  config.num_speculative_tokens = 1;  // method defaults to the model's MTP layers
  const Breakdown mtp = compute_breakdown(v3, hw, config);
  // MLA caches (kv_lora 512 + rope 64) x 2 B = 1,152 B per layer and token, not split by TP:
  // 61 layers + 1 MTP layer.
  EXPECT_EQ(plain.ranks[0].kv_bytes_per_token, 61 * 1152);
  EXPECT_EQ(mtp.ranks[0].kv_bytes_per_token, 62 * 1152);
  // The MTP module: one MoE decoder layer plus eh_proj and norms; the model card counts
  // 14B of MTP weights including its own embedding and head copies (2 x 0.93B), so one
  // layer's share is 11-14B parameters, about 1/8 of that per rank in fp8.
  const std::int64_t added = mtp.ranks[0].weights_bytes - plain.ranks[0].weights_bytes;
  EXPECT_GT(added, std::int64_t{11'000'000'000} / 8);
  EXPECT_LT(added, std::int64_t{14'000'000'000} / 8);
}

TEST(Speculative, MissingPiecesAreNamedErrors) {
  const ModelSpec target = spec_from_yaml(vramplan_test::kLlama31_8B);
  EngineConfig config;
  config.num_speculative_tokens = 2;
  EXPECT_THROW(run(target, config), ConfigError);  // no MTP layers, no method
  config.speculative_method = "eagle";
  EXPECT_THROW(run(target, config), ConfigError);  // no drafter model
  config.speculative_method = "medusa-ish";
  EXPECT_THROW(run(target, config), ConfigError);
  config.speculative_method = "ngram";
  EXPECT_EQ(run(target, config).ranks[0].kv_bytes_per_token, 32 * 4096);
}
