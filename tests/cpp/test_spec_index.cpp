// The spec database indexes model files by the id and aliases their top-level lines name and
// parses a file on first use: every way the shipped files write their names is read, a file
// the scan cannot read for certain is parsed at load, a name the parse reads otherwise is a
// named error, and a broken file fails only the model it holds.
#include <gtest/gtest.h>

#include <string>

#include "test_support.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/spec_db.hpp"

using namespace vramplan;
using vramplan_test::TempDir;
using vramplan_test::write_file;

namespace {

// A whole spec with `names` as its id/aliases lines (the shape of a shipped file).
std::string spec_text(const std::string& names) {
  return "# a comment line\n" + names +
         "\nsource: test\nmodel_type: llama\nhidden_size: 4096\nnum_hidden_layers: 32\n"
         "num_attention_heads: 32\nnum_key_value_heads: 8\nintermediate_size: 14336\n"
         "vocab_size: 128256\nmax_position_embeddings: 131072\ntorch_dtype: bfloat16\n";
}

void write_spec(const TempDir& dir, const std::string& name, const std::string& text) {
  std::filesystem::create_directories(dir.path() / "models" / "org");
  write_file(dir.path() / "models" / "org" / name, text);
}

}  // namespace

TEST(SpecIndex, EveryNameSpellingIsIndexedAndParsesAlike) {
  const TempDir dir("spec_index");
  write_spec(dir, "a.yaml", spec_text("id: org/A\naliases: [org/A-flow, 'org/A q', \"org/A,c\"]"));
  write_spec(dir, "b.yaml",
             spec_text("aliases:\n  - org/B-block  # a comment\n  - \"org/B quoted\"\nid: org/B"));
  write_spec(dir, "c.yaml", spec_text("id: \"org/C\"  # quoted id\n"));
  write_spec(dir, "d.yaml", spec_text("id: org/D\naliases:\n- org/D-at-column-0"));
  const SpecDatabase db = SpecDatabase::load_directory(dir.path().string());
  EXPECT_EQ(db.model("org/a,c").id, "org/A");
  EXPECT_EQ(db.model("ORG/A Q").id, "org/A");
  EXPECT_EQ(db.model("org/B quoted").id, "org/B");
  EXPECT_EQ(db.model("org/B-block").hidden_size, 4096);
  EXPECT_EQ(db.model("org/C").id, "org/C");
  EXPECT_EQ(db.model("org/D-at-column-0").id, "org/D");
  EXPECT_EQ(db.model_ids(), (std::vector<std::string>{"org/A", "org/B", "org/C", "org/D"}));
  EXPECT_EQ(db.models().size(), 4u);
}

TEST(SpecIndex, AFileTheScanCannotReadIsParsedAtLoad) {
  const TempDir dir("spec_index");
  // An anchor and a key written in quotes make the scan unsure: the file is parsed whole at
  // load, so its errors come there (c lacks every required key but its id).
  write_spec(dir, "a.yaml", spec_text("id: &name org/A"));
  write_spec(dir, "b.yaml", spec_text("\"id\": org/B"));
  write_spec(dir, "c.yaml", "\"id\": org/C\n");
  EXPECT_THROW(SpecDatabase::load_directory(dir.path().string()), SpecError);
  std::filesystem::remove(dir.path() / "models" / "org" / "c.yaml");
  const SpecDatabase db = SpecDatabase::load_directory(dir.path().string());
  EXPECT_EQ(db.model("org/A").id, "org/A");
  EXPECT_EQ(db.model("org/B").id, "org/B");
}

TEST(SpecIndex, ABrokenFileFailsOnlyItsModelAndNamesTheFile) {
  const TempDir dir("spec_index");
  write_spec(dir, "good.yaml", spec_text("id: org/Good"));
  write_spec(dir, "bad.yaml", "id: org/Bad\nhidden_size: -1\n");
  const SpecDatabase db = SpecDatabase::load_directory(dir.path().string());
  EXPECT_EQ(db.model("org/Good").hidden_size, 4096);
  try {
    db.model("org/Bad");
    FAIL() << "a broken spec planned";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.yaml"), std::string::npos) << e.what();
  }
  EXPECT_THROW(db.model("org/Bad"), SpecError);  // again on every use, never a half spec
  EXPECT_THROW(db.models(), SpecError);
}

TEST(SpecIndex, NamesTheParseReadsOtherwiseAreANamedError) {
  const TempDir dir("spec_index");
  // A plain scalar continued on the next line: YAML reads "org/A more", the scan "org/A".
  write_spec(dir, "a.yaml", spec_text("id: org/A\n  more"));
  const SpecDatabase db = SpecDatabase::load_directory(dir.path().string());
  try {
    db.model("org/A");
    FAIL() << "planned under a name the file does not give";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("a.yaml"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("org/A more"), std::string::npos) << e.what();
  }
}

TEST(SpecIndex, ANameInTwoFilesIsRefusedAtLoad) {
  const TempDir dir("spec_index");
  write_spec(dir, "a.yaml", spec_text("id: org/A\naliases: [org/Shared]"));
  write_spec(dir, "b.yaml", spec_text("id: org/B\naliases:\n  - ORG/shared"));
  try {
    SpecDatabase::load_directory(dir.path().string());
    FAIL() << "a duplicate name loaded";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("a.yaml"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ORG/shared"), std::string::npos) << e.what();
  }
}

TEST(SpecIndex, EveryShippedFileIsIndexedUnderTheNamesItsParseGives) {
  const SpecDatabase db = SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  const std::vector<ModelSpec> all = db.models();  // parses every file, checking its names
  ASSERT_EQ(all.size(), db.model_ids().size());
  for (const ModelSpec& spec : all) {
    EXPECT_EQ(db.model(spec.id).id, spec.id);
    for (const std::string& alias : spec.aliases) EXPECT_EQ(db.model(alias).id, spec.id);
  }
}

TEST(SpecIndex, UnknownNamesSuggestNamesAsTheFilesWriteThem) {
  const TempDir dir("spec_index");
  write_spec(dir, "a.yaml", spec_text("id: Org/Model-A\naliases: [Org/Model-A-Instruct]"));
  const SpecDatabase db = SpecDatabase::load_directory(dir.path().string());
  try {
    db.model("org/model-b");
    FAIL() << "an unknown model planned";
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("Org/Model-A, Org/Model-A-Instruct"), std::string::npos) << message;
    EXPECT_EQ(message.find("org/model-a"), std::string::npos) << message;  // not lower-cased
  }
  const SpecDatabase shipped = SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  try {
    shipped.gpu("H100-81GB");
    FAIL() << "an unknown GPU planned";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("H100-80GB"), std::string::npos) << e.what();
  }
}
