// Architectures of vLLM 0.33's registry looked at in issue 36 (helper k): the Ling hybrids
// (bailing_moe_linear.py, bailing_moe_v3.py, bailing_moe_v3_vl.py). No published config.json of
// their checkpoints was found to test against, so each stays refused, with that reason and the
// layout vramplan would need; a config.json naming their model_types is refused by name instead
// of reaching the generic path.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "vramplan/architectures.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/hf_import.hpp"

using namespace vramplan;

namespace {

std::string refusal_of(const std::string& architecture) {
  for (const VllmArchitecture& a : vllm_registry_architectures()) {
    if (a.architecture == architecture) {
      EXPECT_TRUE(a.model_type.empty()) << architecture << " plans as " << a.model_type;
      return a.refused_reason;
    }
  }
  ADD_FAILURE() << architecture << " is not in the registry table";
  return {};
}

std::string import_error(const nlohmann::json& config) {
  try {
    (void)model_spec_from_hf_config(config, nullptr, "config.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST(RegistryFamiliesK, LingHybridsAreRefusedForWantOfAConfig) {
  const std::map<std::string, std::string> expected = {
      {"BailingMoeV2_5ForCausalLM", "no config.json of inclusionAI/Ling-2.6-flash"},
      {"BailingMoeV3ForCausalLM", "no config.json of inclusionAI/Ling-3.0-flash or Ling-3.0-tiny"},
      {"BailingMoeV3VLForConditionalGeneration", "no config.json of inclusionAI/Ling-3.0-flash-VL"},
  };
  for (const auto& [architecture, opening] : expected) {
    SCOPED_TRACE(architecture);
    const std::string reason = refusal_of(architecture);
    EXPECT_EQ(reason.rfind(opening, 0), 0U) << reason;
    EXPECT_NE(reason.find("was found to test against"), std::string::npos) << reason;
  }
  // The Lightning state as vLLM 0.33 sizes it (MambaStateShapeCalculator.
  // linear_attention_state_shape: (num_heads / tp, head_dim, head_dim); dtype from
  // linear_attention_state_dtype: --mamba-cache-dtype, else the model's), named in the reason.
  EXPECT_NE(refusal_of("BailingMoeV2_5ForCausalLM")
                .find("num_attention_heads / TP x head_dim x head_dim state in the model dtype"),
            std::string::npos);
  // What bailing_moe_v3.py builds beyond Kimi-Linear's KDA and MLA.
  const std::string v3 = refusal_of("BailingMoeV3ForCausalLM");
  EXPECT_NE(v3.find("full-rank Kimi Delta Attention gates"), std::string::npos) << v3;
  EXPECT_NE(v3.find("gated_attention_proj_granularity_type"), std::string::npos) << v3;
}

// Ling-2.6-flash's (bailing_hybrid) and Ring-mini-linear-2.0's (bailing_moe_linear) model_types
// carry MLA / linear-attention keys the generic path would refuse one by one; the table refuses
// the model_type itself, with the layout.
TEST(RegistryFamiliesK, LingHybridModelTypesAreRefusedByName) {
  const std::map<std::string, std::string> expected = {
      {"bailing_hybrid", "Lightning linear-attention layers"},
      {"bailing_moe_linear", "Ring-linear-2.0"},
      {"bailing_moe_v3_vl", "Ling-3.0-VL"},
  };
  for (const auto& [model_type, layout] : expected) {
    SCOPED_TRACE(model_type);
    const std::string message = import_error(
        {{"model_type", model_type}, {"hidden_size", 4096}, {"num_hidden_layers", 32}});
    EXPECT_NE(message.find("model_type"), std::string::npos) << message;
    EXPECT_NE(message.find("known but not modelled"), std::string::npos) << message;
    EXPECT_NE(message.find(layout), std::string::npos) << message;
  }
}
