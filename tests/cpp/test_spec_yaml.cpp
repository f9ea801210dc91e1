// The schema: every malformed spec in tests/data/bad_specs is answered by a SpecError whose
// message names the field and value; every file in model_specs/ loads.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_support.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/spec_db.hpp"

using namespace vramplan;
namespace fs = std::filesystem;

TEST(SpecYaml, MalformedSpecsGiveNamedErrors) {
  const fs::path dir = fs::path(VRAMPLAN_TEST_DATA_DIR) / "bad_specs";
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 15u);
  for (const auto& file : files) {
    std::ifstream in(file);
    std::string first_line;
    std::getline(in, first_line);
    const std::string prefix = "# expect: ";
    ASSERT_EQ(first_line.rfind(prefix, 0), 0u) << file;
    const std::string expected = first_line.substr(prefix.size());
    try {
      load_model_spec_file(file.string());
      ADD_FAILURE() << file << " loaded without error";
    } catch (const SpecError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(expected), std::string::npos) << file << ": " << what;
      EXPECT_EQ(what.rfind(file.string(), 0), 0u) << "message must start with the file: " << what;
    }
  }
}

TEST(SpecYaml, DefaultsAndPatternsExpand) {
  const ModelSpec s = vramplan_test::spec_from_yaml(R"(
id: t/gemma3-like
model_type: gemma3
hidden_size: 3840
num_hidden_layers: 12
num_attention_heads: 16
num_key_value_heads: 8
head_dim: 256
intermediate_size: 15360
vocab_size: 262208
max_position_embeddings: 131072
torch_dtype: bfloat16
sliding_window: 1024
layer_pattern: [sliding_attention, sliding_attention, sliding_attention, sliding_attention, sliding_attention, full_attention]
)");
  ASSERT_EQ(s.layers.size(), 12u);
  EXPECT_EQ(s.layers[5].attention, AttentionKind::Full);
  EXPECT_EQ(s.layers[6].attention, AttentionKind::SlidingWindow);
  EXPECT_EQ(s.layers[6].sliding_window, 1024);
  EXPECT_EQ(s.layers[0].head_dim, 256);
  const ModelSpec plain = vramplan_test::spec_from_yaml(vramplan_test::kLlama31_8B);
  EXPECT_EQ(plain.head_dim, 4096 / 32);  // default hidden_size / heads
}

TEST(SpecYaml, DatabaseLoadsAndResolvesAliases) {
  const SpecDatabase db = SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  EXPECT_TRUE(db.has_model("meta-llama/Meta-Llama-3.1-8B-Instruct"));
  EXPECT_EQ(db.model("META-LLAMA/LLAMA-3.1-8B").id, "meta-llama/Llama-3.1-8B-Instruct");
  EXPECT_THROW(db.model("no/such-model"), ConfigError);
  EXPECT_GE(db.gpus().size(), 1u);
  EXPECT_THROW(db.gpu("H1000"), ConfigError);
}

TEST(SpecYaml, SchemaMarkdownListsEveryKey) {
  const std::string md = schema_markdown();
  for (const auto& key : schema_keys()) {
    EXPECT_NE(md.find(std::string("`") + key.key + "`"), std::string::npos) << key.key;
  }
}
