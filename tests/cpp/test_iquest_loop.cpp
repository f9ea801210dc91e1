// IQuest-Coder-Loop as vLLM 0.33 builds it (vllm/model_executor/models/iquest_loopcoder.py):
// Llama's 80 layers run twice. The first pass attends with full attention over its own KV; the
// second reuses the layer's projections, keeps a KV of its own over the last loop_window_size
// tokens (a SlidingWindowSpec: the Attention built with a cache_config of sliding_window 64) and
// mixes it with the first pass's by a per-head gate. Each layer thus holds two KV caches, two
// attention layers to vLLM's KV-cache manager. Bytes and parameters derived by hand from that
// file.
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

const char* kConfig = "IQuestLab__IQuest-Coder-V1-40B-Loop-Instruct.json";

}  // namespace

// Per layer and pass: 8 KV heads x 128 (5,120 / 40): 2 x 8 x 128 x 2 B = 4,096 B a token. The
// full pass's 80 layers: 327,680 B a token; the second pass's 80 windowed layers as many per
// token they hold (64 at most): 655,360 B summed. TP 8: one KV head a rank, 81,920.
TEST(IQuestLoop, KvBytesPerTokenByHand) {
  const ModelSpec spec = load_hf_config(config_path(kConfig));
  EXPECT_EQ(spec.model_type, "iquestloopcoder");
  EXPECT_EQ(spec.num_hidden_layers, 80);
  for (const LayerSpec& layer : spec.layers) {
    EXPECT_EQ(layer.attention, AttentionKind::Full);
    EXPECT_EQ(layer.head_dim, 128);
    EXPECT_EQ(layer.beside, AttentionKind::SlidingWindow);
    EXPECT_EQ(layer.beside_window, 64);
  }
  EXPECT_EQ(kv_bf16(spec), 655360);
  EXPECT_EQ(kv_bf16(spec, 8), 81920);
}

// Two specs of equal pages: 80 full-attention and 80 sliding-window (64) layers, one group of
// each (group size 80). A layer's token takes 2 x 8 x 128 = 2,048 KV elements: 327,680 over
// the 160 caches, per byte of KV element.
TEST(IQuestLoop, TwoGroupsOfEightyLayersByHand) {
  const ModelSpec spec = load_hf_config(config_path(kConfig));
  const KvGeometry geometry = kv_geometry(spec, bf16_kv_options());
  EXPECT_FALSE(geometry.uniform);
  EXPECT_EQ(geometry.group_size, 80);
  ASSERT_EQ(geometry.groups.size(), 2U);
  int windowed = 0;
  for (const KvGroup& group : geometry.groups) {
    EXPECT_EQ(group.num_layers, 80);
    if (group.kind == AttentionKind::SlidingWindow) {
      EXPECT_EQ(group.window, 64);
      ++windowed;
    }
  }
  EXPECT_EQ(windowed, 1);
  EXPECT_EQ(geometry.token_bytes_per_element, 327680);
}

// Parameters (h 5,120, V 76,800 untied): embed + lm_head 2 x 393,216,000 = 786,432,000. Per
// layer: q and o 2 x 5,120^2 = 52,428,800, k/v 2 x 1,024 x 5,120 = 10,485,760; gate/up/down 3 x
// 5,120 x 27,648 = 424,673,280; two RMSNorms 10,240; the loop gate 40 x 128 + 40 = 5,160:
// 487,603,240. 80 layers 39,008,259,200; final norm 5,120: 39,794,696,320 (the model card: 40B;
// the passes share every weight).
TEST(IQuestLoop, ParametersByHand) {
  const ModelSpec spec = load_hf_config(config_path(kConfig));
  EXPECT_FALSE(spec.qkv_bias);
  EXPECT_FALSE(spec.mlp_bias);
  EXPECT_EQ(parameter_count(spec), std::int64_t{39794696320});
  vramplan_test::expect_published(39794696320, 40e9, 2);
}

// loop_window_size sets the second pass's window; a third pass (loop_num 3) would keep a
// third KV, which the spec does not hold: refused by name.
TEST(IQuestLoop, LoopKeys) {
  nlohmann::json config = config_json(kConfig);
  config["loop_window_size"] = 128;
  EXPECT_EQ(model_spec_from_hf_config(config, nullptr, "w.json").layers[0].beside_window, 128);
  config["loop_num"] = 3;
  try {
    (void)model_spec_from_hf_config(config, nullptr, "loop3.json");
    ADD_FAILURE() << "loop_num 3 planned";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("loop_num"), std::string::npos) << e.what();
  }
}
