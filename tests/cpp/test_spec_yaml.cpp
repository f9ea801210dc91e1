// The schema: every malformed spec in tests/data/bad_specs is answered by a SpecError whose
// message names the field and value; every file in model_specs/ loads.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "test_support.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/spec_db.hpp"
#include "vramplan/utf8.hpp"

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

// Invalid UTF-8 is refused before anything reads the text, naming file, field and offset
// (it used to load, then crash `plan` in JSON; in a key it surfaced as a UnicodeDecodeError).
namespace {

SpecError spec_error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const SpecError& e) {
    return e;
  }
  ADD_FAILURE() << "no SpecError";
  return SpecError("", "", "", "");
}

}  // namespace

TEST(SpecYaml, InvalidUtf8IsANamedError) {
  const std::string good = vramplan_test::kLlama31_8B;
  // "\nid: test/llama" starts at offset 0 of the text; the bad byte replaces the 't' of test.
  std::string bad_id = good;
  const std::size_t id_at = bad_id.find("test/llama");
  bad_id[id_at] = '\xff';
  SpecError e = spec_error_of([&] { parse_model_spec_yaml(bad_id, "bad_id.yaml"); });
  EXPECT_EQ(e.file(), "bad_id.yaml");
  EXPECT_EQ(e.field_path(), "id");
  EXPECT_EQ(e.value(), "byte 0xff");
  EXPECT_NE(std::string(e.what()).find("not valid UTF-8 at byte offset " + std::to_string(id_at) +
                                       " (line 2, column 5)"),
            std::string::npos)
      << e.what();

  // A bad byte in a key: the field is the key (shown with U+FFFD), never raw bytes.
  std::string bad_key = good;
  const std::size_t key_at = bad_key.find("vocab_size");
  bad_key[key_at + 1] = '\xc3';  // a lead byte followed by 'c', not a continuation
  e = spec_error_of([&] { parse_model_spec_yaml(bad_key, "bad_key.yaml"); });
  EXPECT_EQ(e.field_path(),
            "v\xef\xbf\xbd"
            "cab_size");
  EXPECT_NE(std::string(e.what()).find("byte offset " + std::to_string(key_at + 1)),
            std::string::npos)
      << e.what();
  EXPECT_EQ(utf8::find_invalid(e.what()), std::string::npos);

  // In a nested map, a list, and a comment (named by its line).
  e = spec_error_of([&] {
    parse_model_spec_yaml(good +
                              "moe:\n  num_experts: 8\n  num_experts_per_tok: 2\n"
                              "  moe_intermediate_size: 1\n  dense_layers: [1, \"\xe2\x82\"]\n",
                          "nested.yaml");
  });
  EXPECT_EQ(e.field_path(), "moe.dense_layers[1]");
  e = spec_error_of([&] { parse_model_spec_yaml(good + "# caf\xe9\n", "comment.yaml"); });
  EXPECT_EQ(e.field_path(), "line 12");

  // The GPU list too.
  e = spec_error_of([&] { parse_gpus_yaml("gpus:\n  - id: H\xff\n    name: x\n", "gpus.yaml"); });
  EXPECT_EQ(e.file(), "gpus.yaml");
  EXPECT_EQ(e.field_path(), "gpus[0].id");
  EXPECT_NE(std::string(e.what()).find("byte offset 15"), std::string::npos) << e.what();
}
