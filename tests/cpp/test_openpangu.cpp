// openPangu-Embedded (remote-code model_type PanguEmbedded; PanguEmbeddedForCausalLM) as vLLM
// 0.33's openpangu.py builds it: Llama's layers, OpenPanguEmbeddedAttention with q/k/v biased
// by qkv_bias (else attention_bias or bias) and o_proj by attention_bias or bias, the gated MLP
// biased by mlp_bias, two more RMSNorms a layer under sandwich_norm, windows per
// interleaved_sliding_window. The MLA, sink-attention and MoE layers of the other openPangu
// checkpoints are refused under this model_type.
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

constexpr const char* kPangu7b = "ascend-tribe__openPangu-Embedded-7B-V1.1.json";

}  // namespace

// openPangu-Embedded-7B-V1.1: 34 layers of 8 KV heads x 128 (4,096 / 32): 2 x 8 x 128 x 2 B =
// 4,096 B a layer, 139,264 B a token; bias true puts biases on q, k, v and o (the printout the
// config comes with shows them), none on the MLP.
TEST(OpenPangu, Embedded7bKvBytesAndBiasesByHand) {
  const ModelSpec spec = load_hf_config(config_path(kPangu7b));
  EXPECT_EQ(spec.model_type, "PanguEmbedded");
  EXPECT_TRUE(spec.qkv_bias);
  EXPECT_TRUE(spec.o_proj_bias);
  EXPECT_FALSE(spec.mlp_bias);
  EXPECT_EQ(spec.norms_per_layer, 2);
  EXPECT_EQ(kv_bytes_per_token(spec, bf16_kv_options()), 139264);
}

// Parameters (h 4,096, V 153,376 untied): embed_tokens and lm_head 2 x 153,376 x 4,096 =
// 1,256,456,192; final norm 4,096. Per layer: q and o 2 x 4,096^2 = 33,554,432 and their biases
// 8,192; k and v 2 x 1,024 x 4,096 = 8,388,608 and their biases 2,048; gate, up and down 3 x
// 12,800 x 4,096 = 157,286,400; two norms 8,192: 199,247,872. 34 layers 6,774,427,648:
// 8,030,887,936 in all, 6,774,431,744 without the two vocabulary tables (the model's "7B").
TEST(OpenPangu, Embedded7bParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path(kPangu7b));
  EXPECT_EQ(parameter_count(spec), std::int64_t{8030887936});
}

// sandwich_norm adds two RMSNorms a layer (34 x 2 x 4,096); a window list cycles over the
// layers, null meaning full attention; qkv_bias false leaves o_proj's bias; MLA keys are refused.
TEST(OpenPangu, SandwichNormWindowsAndRefusals) {
  nlohmann::json config = config_json(kPangu7b);
  config["sandwich_norm"] = true;
  config["interleaved_sliding_window"] = nlohmann::json::array({4096, 4096, nullptr});
  config["qkv_bias"] = false;
  const ModelSpec spec = model_spec_from_hf_config(config, nullptr, "pangu.json");
  EXPECT_EQ(spec.norms_per_layer, 4);
  EXPECT_FALSE(spec.qkv_bias);
  EXPECT_TRUE(spec.o_proj_bias);
  EXPECT_EQ(spec.layers[0].attention, AttentionKind::SlidingWindow);
  EXPECT_EQ(spec.layers[0].sliding_window, 4096);
  EXPECT_EQ(spec.layers[2].attention, AttentionKind::Full);
  EXPECT_EQ(spec.layers[5].attention, AttentionKind::Full);
  config["kv_lora_rank"] = 512;
  try {
    (void)model_spec_from_hf_config(config, nullptr, "pangu.json");
    ADD_FAILURE() << "expected a refusal";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("kv_lora_rank"), std::string::npos) << e.what();
  }
}
