// vLLM 0.33's architecture registry, walked: every text- and multimodal-generation architecture
// either plans (through a model_type of the table) or is refused with its reason in
// docs/models.md. The registry list is a copy from the vLLM 0.33.0 wheel with provenance
// (tests/data/vllm_registry/); model_specs/architectures.yaml says what vramplan does with each.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "vramplan/architectures.hpp"

namespace {

namespace fs = std::filesystem;

std::map<std::string, std::string> registry_copy() {  // architecture -> kind
  std::ifstream in(fs::path(VRAMPLAN_TEST_DATA_DIR) / "vllm_registry" /
                   "vllm-0.33.0-generation-architectures.tsv");
  std::map<std::string, std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string architecture, module, kind;
    std::getline(fields, architecture, '\t');
    std::getline(fields, module, '\t');
    std::getline(fields, kind, '\t');
    out[architecture] = kind;
  }
  return out;
}

std::map<std::string, vramplan::VllmArchitecture> table() {
  std::map<std::string, vramplan::VllmArchitecture> out;
  for (const auto& a : vramplan::vllm_registry_architectures()) out[a.architecture] = a;
  return out;
}

TEST(VllmRegistry, EveryGenerationArchitecturePlansOrIsRefusedInTheDocs) {
  const auto registry = registry_copy();
  ASSERT_EQ(registry.size(), 251U);  // 124 text + 127 multimodal in vLLM 0.33.0
  const auto entries = table();
  std::ifstream doc_in(fs::path(VRAMPLAN_SOURCE_DIR) / "docs" / "models.md");
  const std::string docs((std::istreambuf_iterator<char>(doc_in)), {});
  const std::string supported = vramplan::supported_model_types();
  int planned = 0;
  for (const auto& [architecture, kind] : registry) {
    SCOPED_TRACE(architecture + " (" + kind + ")");
    const auto it = entries.find(architecture);
    ASSERT_NE(it, entries.end()) << "not in model_specs/architectures.yaml";
    const auto& entry = it->second;
    if (!entry.model_type.empty()) {
      ++planned;
      EXPECT_NE(supported.find(entry.model_type), std::string::npos);
    } else {
      EXPECT_NE(docs.find("| `" + architecture + "` | — | " + entry.refused_reason + " |"),
                std::string::npos)
          << "refusal not in docs/models.md";
    }
  }
  EXPECT_EQ(entries.size(), registry.size()) << "architectures.yaml lists one vLLM lacks";
  EXPECT_GE(planned, 150);
}

// The mapping architecture -> model_type against real configs (tests/data), which carry both.
TEST(VllmRegistry, PlannedModelTypesAgreeWithRealConfigs) {
  const auto entries = table();
  int checked = 0;
  for (const char* dir : {"configs", "reference/configs", "configs/published_values"}) {
    const fs::path folder = fs::path(VRAMPLAN_TEST_DATA_DIR) / dir;
    if (!fs::is_directory(folder)) continue;
    for (const auto& file : fs::directory_iterator(folder)) {
      if (file.path().extension() != ".json") continue;
      std::ifstream in(file.path());
      const auto config = nlohmann::json::parse(in, nullptr, false);
      if (!config.is_object() || !config.contains("architectures") ||
          !config["architectures"].is_array() || config["architectures"].empty() ||
          !config.contains("model_type")) {
        continue;
      }
      const auto it = entries.find(config["architectures"][0].get<std::string>());
      if (it == entries.end() || it->second.model_type.empty()) continue;
      const std::string model_type = config["model_type"].get<std::string>();
      // DeepseekV3ForCausalLM also serves Kimi-K2 (model_type kimi_k2, the same table row).
      if (model_type == "kimi_k2" && it->second.model_type == "deepseek_v3") continue;
      EXPECT_EQ(it->second.model_type, model_type) << file.path().filename();
      ++checked;
    }
  }
  EXPECT_GE(checked, 20);
}

}  // namespace
