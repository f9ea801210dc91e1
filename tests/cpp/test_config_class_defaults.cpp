// Keys a config.json omits take their transformers config class's default, as vLLM's config
// loading (transformers' AutoConfig) fills them; the spec and the plan say which ones applied.
// The defaults are data (model_specs/architectures.yaml, config_class_defaults, read from
// transformers 5.20.2); the expected values below are read from transformers' own files
// (src/transformers/models/<family>/configuration_<family>.py), not from the table.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "test_support.hpp"
#include "vramplan/compiled.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/model_spec.hpp"

using namespace vramplan;
using nlohmann::json;

namespace {

bool lists(const ModelSpec& spec, const std::string& entry) {
  return std::find(spec.config_defaults.begin(), spec.config_defaults.end(), entry) !=
         spec.config_defaults.end();
}

ModelSpec tiny(const json& extra) {
  json config = {{"model_type", "mistral"},          {"hidden_size", 64},
                 {"num_hidden_layers", 2},           {"num_attention_heads", 4},
                 {"intermediate_size", 128},         {"vocab_size", 100},
                 {"max_position_embeddings", 65536}, {"num_key_value_heads", 2},
                 {"tie_word_embeddings", false}};
  config.update(extra);
  return model_spec_from_hf_config(config, nullptr, "tiny/config.json");
}

}  // namespace

// llava-hf/llava-1.5-7b-hf's text_config (Vicuna-7B v1.5) names only vocab_size and
// max_position_embeddings; LlamaConfig's defaults give the rest: hidden_size 4096,
// intermediate_size 11008, num_hidden_layers 32, num_attention_heads 32 (num_key_value_heads
// None -> num_attention_heads; head_dim None -> hidden_size / heads = 128).
TEST(ConfigClassDefaults, LlavaTextConfigTakesLlamaConfigDefaults) {
  const ModelSpec spec = load_hf_config(std::string(VRAMPLAN_TEST_DATA_DIR) +
                                        "/configs/llava-hf__llava-1.5-7b-hf.json");
  EXPECT_EQ(spec.hidden_size, 4096);
  EXPECT_EQ(spec.intermediate_size, 11008);
  EXPECT_EQ(spec.num_hidden_layers, 32);
  EXPECT_EQ(spec.num_attention_heads, 32);
  EXPECT_EQ(spec.num_key_value_heads, 32);
  EXPECT_EQ(spec.head_dim, 128);
  EXPECT_EQ(spec.vocab_size, 32064);
  EXPECT_EQ(spec.max_position_embeddings, 4096);
  for (const char* entry : {"text_config.hidden_size = 4096 (LlamaConfig)",
                            "text_config.intermediate_size = 11008 (LlamaConfig)",
                            "text_config.num_hidden_layers = 32 (LlamaConfig)",
                            "text_config.num_attention_heads = 32 (LlamaConfig)",
                            "text_config.attention_bias = false (LlamaConfig)"}) {
    EXPECT_TRUE(lists(spec, entry)) << entry;
  }
  // Keys the file names are never listed; neither is the top-level tie flag LLaVA reads.
  EXPECT_FALSE(lists(spec, "text_config.vocab_size = 32000 (LlamaConfig)"));
  EXPECT_FALSE(lists(spec, "text_config.tie_word_embeddings = false (LlamaConfig)"));
  // The language model by hand (Llama-2-7B shapes, vocab 32064, untied): embed + lm_head
  // 2 x 32064 x 4096 = 262,668,288; per layer q/k/v/o 4 x 4096^2 = 67,108,864, gate/up/down
  // 3 x 4096 x 11008 = 135,266,304, two norms 8,192 -> 202,383,360 x 32 = 6,476,267,520;
  // final norm 4,096: 6,738,939,904. With the CLIP ViT-L/14-336 tower and projector this is the
  // model card's 7.06B.
  EXPECT_EQ(parameter_count(spec) - spec.vision.num_parameters, 6738939904);
}

// The plan says which defaults it used, in the breakdown's messages (text, JSON, Python, HTML).
TEST(ConfigClassDefaults, ThePlanNamesTheDefaultsItUsed) {
  const auto spec = std::make_shared<const ModelSpec>(load_hf_config(
      std::string(VRAMPLAN_TEST_DATA_DIR) + "/configs/llava-hf__llava-1.5-7b-hf.json"));
  HardwareConfig hw;
  hw.gpu = vramplan_test::h100();
  EngineConfig config;
  config.max_model_len = 4096;
  const CompiledLaunch launch(spec, hw, config);
  const Breakdown b = launch.breakdown(launch_knobs(config));
  const bool named = std::any_of(b.messages.begin(), b.messages.end(), [](const std::string& m) {
    return m.find("transformers config class's defaults") != std::string::npos &&
           m.find("text_config.hidden_size = 4096 (LlamaConfig)") != std::string::npos;
  });
  EXPECT_TRUE(named);
}

// MistralConfig.sliding_window defaults to 4096: a config that omits the key slides at 4096 as
// vLLM serves it, while one that writes null keeps full attention (transformers keeps None).
TEST(ConfigClassDefaults, AnOmittedKeyTakesTheDefaultAndANullStaysUnset) {
  const ModelSpec omitted = tiny(json::object());
  ASSERT_EQ(omitted.layers.size(), 2u);
  EXPECT_EQ(omitted.layers[0].attention, AttentionKind::SlidingWindow);
  EXPECT_EQ(omitted.layers[0].sliding_window, 4096);
  EXPECT_TRUE(lists(omitted, "sliding_window = 4096 (MistralConfig)"));
  const ModelSpec null_window = tiny({{"sliding_window", nullptr}});
  EXPECT_EQ(null_window.layers[0].attention, AttentionKind::Full);
  EXPECT_FALSE(lists(null_window, "sliding_window = 4096 (MistralConfig)"));
}

// A class without a default for a required key (InternLM2's remote-code config) is a named
// error, never a guess.
TEST(ConfigClassDefaults, ARequiredKeyWithoutADefaultIsANamedError) {
  const json config = {{"model_type", "internlm2"}, {"hidden_size", 64},
                       {"num_hidden_layers", 2},    {"intermediate_size", 128},
                       {"vocab_size", 100},         {"max_position_embeddings", 256}};
  try {
    (void)model_spec_from_hf_config(config, nullptr, "internlm/config.json");
    FAIL() << "accepted a config without num_attention_heads";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.field_path(), "num_attention_heads");
    EXPECT_NE(std::string(e.what()).find("InternLM2Config gives it no default"), std::string::npos)
        << e.what();
  }
}
