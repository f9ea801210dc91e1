// The architecture table is data (model_specs/architectures.yaml, compiled in): the file in the
// repository loads and is the table the importer uses, and each kind of malformed row is a
// named error (file, field, value) rather than a crash or a silently ignored key.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "vramplan/architectures.hpp"
#include "vramplan/errors.hpp"

using namespace vramplan;
namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// A valid two-row table; each case below breaks one thing in it.
const char* kTable = R"(architectures:
  - family: Llama
    model_types: [llama]
    wrapper_model_types: [llava]
    config_class: LlamaConfig
    attention: full
    applied: {tie_word_embeddings: false, partial_rotary_factor: 0.5, vocab_size: 32000}
    sliding: if_set
    set: {qk_norm: true, mlp: plain}
    erase: [o_proj_bias]
    rules: [qkv_bias_only]
  - family: Falcon
    model_types: [falcon]
    gguf: [falcon]
    config_class: FalconConfig
    attention: full
    sliding: never
    renames: {num_hidden_layers: n_layer}
    rules: [falcon]
config_class_defaults:
  - {class: FalconConfig, model_types: [falcon], file: falcon/configuration_falcon.py,
     defaults: {vocab_size: 65024, multi_query: true}, post_init: {max_position_embeddings: 2048}}
wrappers:
  - {model_type: llava, text_model_type: llama, vision: llava}
refused_model_types:
  - {model_type: jamba, reason: Mamba-1 mixers}
)";

std::string with(const std::string& find, const std::string& replace) {
  std::string text = kTable;
  const auto at = text.find(find);
  EXPECT_NE(at, std::string::npos) << find;
  if (at != std::string::npos) text.replace(at, find.size(), replace);
  return text;
}

struct BadRow {
  const char* name;
  const char* find;
  const char* replace;
  const char* field;
  const char* value;
};

class ArchitectureTableMalformed : public ::testing::TestWithParam<BadRow> {};

}  // namespace

TEST(ArchitectureTable, TheValidExampleLoads) {
  EXPECT_NO_THROW(check_architecture_table(kTable, "t.yaml"));
}

TEST(ArchitectureTable, TheRepositoryFileIsTheCompiledInTable) {
  const fs::path file = fs::path(VRAMPLAN_MODEL_SPECS_DIR) / "architectures.yaml";
  const std::string text = read_text(file);
  ASSERT_FALSE(text.empty());
  EXPECT_NO_THROW(check_architecture_table(text, file.string()));
  // One family per `- family:` entry in the file, in the file's order.
  ASSERT_EQ(architecture_infos().size(), count(text, "\n  - family: "));
  EXPECT_EQ(architecture_infos().front().family, "Llama 2/3/3.x");
  EXPECT_EQ(architecture_infos().back().family, "Nemotron-H, Nemotron 3");
  EXPECT_EQ(refused_architectures().size(),
            count(text, "\n  - {model_type: ") - count(text, "text_model_type"));
}

TEST_P(ArchitectureTableMalformed, IsANamedError) {
  const BadRow& c = GetParam();
  try {
    check_architecture_table(with(c.find, c.replace), "t.yaml");
    FAIL() << "accepted: " << c.name;
  } catch (const SpecError& e) {
    EXPECT_EQ(e.file(), "t.yaml");
    EXPECT_EQ(e.field_path(), c.field) << e.what();
    EXPECT_EQ(e.value(), c.value) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ArchitectureTableMalformed,
    ::testing::Values(
        BadRow{"UnknownRule", "rules: [falcon]", "rules: [falcom]", "architectures[1].rules",
               "'falcom'"},
        BadRow{"UnknownSliding", "sliding: never", "sliding: sometimes", "architectures[1].sliding",
               "'sometimes'"},
        BadRow{"UnknownField", "    sliding: never\n", "    sliding: never\n    slidng: never\n",
               "architectures[1].slidng", "'slidng'"},
        BadRow{"MissingFamily", "  - family: Falcon\n    model_types", "  - model_types",
               "architectures[1].family", "missing"},
        BadRow{"EmptyModelTypes", "model_types: [falcon]", "model_types: []",
               "architectures[1].model_types", "[]"},
        BadRow{"WordAsDefault", "partial_rotary_factor: 0.5", "partial_rotary_factor: half",
               "architectures[0].applied.partial_rotary_factor", "'half'"},
        BadRow{"NanAsDefault", "partial_rotary_factor: 0.5", "partial_rotary_factor: .nan",
               "architectures[0].applied.partial_rotary_factor", "'.nan'"},
        BadRow{"ListAsDefault", "vocab_size: 32000", "vocab_size: [1]",
               "architectures[0].applied.vocab_size", "not a value"},
        BadRow{"ClassDefaultsOfUnplannedType", "model_types: [falcon], file",
               "model_types: [falcom], file", "config_class_defaults[0].model_types", "falcom"},
        BadRow{"ClassDefaultTwice", "post_init: {max_position_embeddings: 2048}",
               "post_init: {vocab_size: 2048}", "config_class_defaults[0].post_init.vocab_size",
               "vocab_size"},
        BadRow{"ClassDefaultNotAValue", "multi_query: true}", "multi_query: [true]}",
               "config_class_defaults[0].defaults.multi_query", "not a value"},
        BadRow{"ClassDefaultsWithoutSource", " file: falcon/configuration_falcon.py,", "",
               "config_class_defaults[0].file", "missing"},
        BadRow{"UnsettableField", "qk_norm: true", "hidden_size: 1",
               "architectures[0].set.hidden_size", "hidden_size"},
        BadRow{"UnerasableField", "erase: [o_proj_bias]", "erase: [vocab_size]",
               "architectures[0].erase", "vocab_size"},
        BadRow{"ModelTypeTwice", "model_types: [falcon]", "model_types: [llama]",
               "architectures[1].model_types", "llama"},
        BadRow{"RefusedAndPlanned", "{model_type: jamba,", "{model_type: falcon,",
               "refused_model_types[0].model_type", "falcon"},
        BadRow{"WrapperWithoutRow", "{model_type: llava,", "{model_type: llava_next,",
               "wrappers[0].model_type", "llava_next"},
        BadRow{"WrapperOfUnknownText", "text_model_type: llama", "text_model_type: lama",
               "wrappers[0].text_model_type", "lama"},
        BadRow{"UnknownVisionTower", "vision: llava}", "vision: clip}", "wrappers[0].vision",
               "'clip'"},
        BadRow{"UnknownAudioEncoder", "vision: llava}", "audio: whisper}", "wrappers[0].audio",
               "'whisper'"},
        BadRow{"WrapperWithoutTower", ", vision: llava}", "}", "wrappers[0].vision", "missing"},
        BadRow{"RowWrapperNotListed",
               "wrappers:\n  - {model_type: llava, text_model_type: "
               "llama, vision: llava}\n",
               "wrappers: []\n", "wrappers", "llava"},
        BadRow{"GgufTwice", "gguf: [falcon]", "gguf: [falcon, falcon]", "architectures[1].gguf",
               "falcon"},
        BadRow{"UnknownSection", "refused_model_types:", "refused_modeltypes:",
               "refused_modeltypes", "'refused_modeltypes'"},
        BadRow{"MissingSection",
               "wrappers:\n  - {model_type: llava, text_model_type: llama, "
               "vision: llava}\n",
               "", "wrappers", "missing"}),
    [](const ::testing::TestParamInfo<BadRow>& info) { return std::string(info.param.name); });
