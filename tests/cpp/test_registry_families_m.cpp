// Vision-language architectures of vLLM 0.33's registry looked at in issue 36 (helper m): what a
// published config.json of each says, and why vramplan refuses the ones vLLM 0.33 does not build
// as the checkpoint is.
#include <gtest/gtest.h>

#include <string>

#include "test_support.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/hf_import.hpp"

using namespace vramplan;
using vramplan_test::config_json;
using vramplan_test::config_path;

namespace {

// The first SpecError message loading `name` raises, or "" when it plans.
std::string refusal(const std::string& name) {
  try {
    (void)load_hf_config(config_path(name));
  } catch (const SpecError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// deepseek-ai/deepseek-vl2 writes model_type deepseek_vl_v2 and no architectures, which vLLM's
// DeepseekVLV2Config reads as DeepseekVLV2ForCausalLM. Its language_config leaves the layer and
// head counts to the remote DeepseekV2Config (30 layers); vLLM 0.33 reads it with transformers'
// DeepseekV2Config (32), so it is refused by architecture, not planned as DeepSeek-OCR.
TEST(RegistryFamiliesM, DeepseekVl2IsRefusedByArchitecture) {
  const auto config = config_json("refused/deepseek-ai__deepseek-vl2.json");
  EXPECT_EQ(config.at("model_type"), "deepseek_vl_v2");
  EXPECT_FALSE(config.contains("architectures"));
  const auto& text = config.at("language_config");
  EXPECT_FALSE(text.contains("num_hidden_layers"));
  EXPECT_FALSE(text.contains("num_attention_heads"));

  const std::string message = refusal("refused/deepseek-ai__deepseek-vl2.json");
  ASSERT_FALSE(message.empty()) << "deepseek-vl2 must not plan";
  EXPECT_NE(message.find("architectures"), std::string::npos) << message;
  EXPECT_NE(message.find("DeepseekVLV2ForCausalLM"), std::string::npos) << message;
  EXPECT_NE(message.find("DeepseekOCRForCausalLM"), std::string::npos) << message;
}
