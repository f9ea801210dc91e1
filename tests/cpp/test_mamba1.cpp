// Mamba-1 mixers as vLLM 0.33 builds them (vllm/model_executor/layers/mamba/mamba_mixer.py
// MambaMixer): in_proj [2 x inner, h], conv1d [inner, d_conv] + bias, x_proj [dt_rank +
// 2 x d_state, inner], dt_proj [inner, dt_rank] + bias, A [inner, d_state], D [inner],
// out_proj [h, inner]; Jamba adds RMSNorms with weights on dt (dt_rank), B and C (d_state).
// State per layer (mamba_utils.py mamba1_state_shape): conv (inner / TP) x (d_conv - 1), no
// speculative columns; SSM (inner / TP) x d_state; both in the model dtype unless
// --mamba-cache-dtype / --mamba-ssm-cache-dtype say otherwise (mamba1_state_dtype).
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

constexpr const char* kJamba = "ai21labs__AI21-Jamba-1.5-Mini.json";

}  // namespace

// ai21labs/AI21-Jamba-1.5-Mini: attention where i % 8 == 4 (layers 4, 12, 20, 28), Mamba-1
// elsewhere; experts where i % 2 == 1. Attention: 8 KV heads x 128 (4,096 / 32):
// 2 x 8 x 128 x 2 B = 4,096 B per layer, 16,384 B per token; TP 2: 8,192.
TEST(Mamba1, JambaLayoutAndKvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path(kJamba));
  EXPECT_EQ(spec.model_type, "jamba");
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(spec.layers[static_cast<std::size_t>(i)].attention,
              i % 8 == 4 ? AttentionKind::Full : AttentionKind::Mamba)
        << i;
    EXPECT_EQ(spec.layers[static_cast<std::size_t>(i)].moe, i % 2 == 1) << i;
  }
  EXPECT_EQ(spec.mamba.version, 1);
  EXPECT_EQ(kv_bytes_per_token(spec, bf16_kv_options()), 16384);
  EXPECT_EQ(kv_bytes_per_token(spec, bf16_kv_options(2)), 8192);
}

// Mamba-1 state per layer, bf16, inner = 2 x 4,096 = 8,192, d_conv 4, d_state 16:
//   conv 8,192 x 3 x 2 B = 49,152; SSM 8,192 x 16 x 2 B = 262,144: 311,296 B.
//   TP 2: 4,096 channels: 24,576 + 131,072 = 155,648. An fp32 SSM state (--mamba-ssm-cache-dtype
//   float32): 49,152 + 8,192 x 16 x 4 = 573,440. Speculative tokens add no conv columns.
TEST(Mamba1, JambaStateBytesByHand) {
  const ModelSpec spec = load_hf_config(config_path(kJamba));
  const LayerSpec& mamba = spec.layers[0];
  EXPECT_EQ(mamba_state_bytes(spec, mamba, bf16_kv_options()), 311296);
  EXPECT_EQ(mamba_state_bytes(spec, mamba, bf16_kv_options(2)), 155648);
  KvCacheOptions fp32_ssm = bf16_kv_options();
  fp32_ssm.ssm_state_element_bytes = 4;
  EXPECT_EQ(mamba_state_bytes(spec, mamba, fp32_ssm), 573440);
  KvCacheOptions speculative = bf16_kv_options();
  speculative.num_speculative_tokens = 2;
  EXPECT_EQ(mamba_state_bytes(spec, mamba, speculative), 311296);
  EXPECT_EQ(mamba_state_bytes(spec, spec.layers[4], bf16_kv_options()), 0);
}

// The attention page (16-token alignment, 4,096 B per token) grows to
// 16 x ceil(311,296 / (16 x 4,096)) = 16 x 5 = 80 tokens: 327,680 B, the Mamba page padded to
// it. Groups: 4 attention and 28 Mamba layers -> group size 4 (28 x 2 >= 4 x 3), one attention
// group and seven Mamba groups. One request at 262,144 tokens: ceil(262,144 / 80) = 3,277
// attention blocks + 7 Mamba blocks = 3,284 blocks of 4 x 327,680 B = 4,304,404,480 B.
TEST(Mamba1, JambaPageGroupsAndRequestBytesByHand) {
  const ModelSpec spec = load_hf_config(config_path(kJamba));
  const KvGeometry geometry = kv_geometry(spec, bf16_kv_options());
  EXPECT_EQ(geometry.group_size, 4);
  EXPECT_EQ(geometry.groups.size(), 8U);
  const KvPage page = kv_page(geometry, 16, 2);
  EXPECT_EQ(page.block_size, 80);
  EXPECT_EQ(page.page_bytes, 327680);
  EXPECT_EQ(kv_request_bytes(geometry, page, 262144, 8192), std::int64_t{4304404480});
}

// Parameters by hand (h 4,096, vocab 65,536, untied, dt_rank 256, d_state 16, inner 8,192):
//   embed + lm_head 2 x 65,536 x 4,096 = 536,870,912; final norm 4,096.
//   Mamba-1 (28 layers): in_proj 16,384 x 4,096 = 67,108,864; conv1d 8,192 x (4 + 1) = 40,960;
//     x_proj (256 + 32) x 8,192 = 2,359,296; dt_proj 8,192 x (256 + 1) = 2,105,344;
//     A 8,192 x 16 = 131,072; D 8,192; out_proj 4,096 x 8,192 = 33,554,432; dt/B/C norms
//     256 + 16 + 16 = 288: 105,308,448.
//   attention (4 layers): q and o 2 x 4,096^2 + k/v 2 x 1,024 x 4,096 = 41,943,040.
//   dense MLP (16 layers): 3 x 14,336 x 4,096 = 176,160,768.
//   MoE (16 layers): router 16 x 4,096 + 16 x 176,160,768 = 2,818,637,824.
//   2 norms a layer: 32 x 8,192 = 262,144.
//   536,875,008 + 28 x 105,308,448 + 4 x 41,943,040 + 16 x 176,160,768 + 16 x 2,818,637,824
//   + 262,144 = 51,570,323,328.
// Jamba-1.5-Mini has Jamba-v0.1's shapes; Jamba-v0.1's model.safetensors.index.json gives
// total_size 103,140,646,656 B of bf16 tensors = 2 x 51,570,323,328.
TEST(Mamba1, JambaParametersMatchThePublishedCheckpoint) {
  const ModelSpec spec = load_hf_config(config_path(kJamba));
  EXPECT_EQ(parameter_count(spec), std::int64_t{51570323328});
  EXPECT_EQ(2 * parameter_count(spec), std::int64_t{103140646656});
}

// A period's offset outside [0, period) places no layer; a missing Mamba key has no
// JambaConfig default here: each is refused by the key's name.
TEST(Mamba1, UnbuildableJambaConfigsAreRefusedByName) {
  for (const char* key : {"attn_layer_offset", "expert_layer_offset", "mamba_d_state"}) {
    nlohmann::json config = config_json(kJamba);
    if (std::string(key) == "mamba_d_state") {
      config.erase(key);
    } else {
      config[key] = 9;
    }
    try {
      (void)model_spec_from_hf_config(config, nullptr, "jamba-bad.json");
      ADD_FAILURE() << key << ": expected a refusal";
    } catch (const SpecError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  }
}
