// The spec database indexes model files by the id and aliases their top-level lines name and
// parses a file on first use: every way the shipped files write their names is read, a file
// the scan cannot read for certain is parsed at load, a name the parse reads otherwise is a
// named error, and a broken file fails only the model it holds.
#include <gtest/gtest.h>

#include <string>

#include "test_support.hpp"
#include "vramplan/bounded_read.hpp"
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

namespace {

// One gpus.yaml item with `names` as its id/aliases lines (the shape of the shipped file).
std::string gpu_item(const std::string& names, const std::string& vendor = "nvidia") {
  return "  - " + names + "\n    name: Test GPU\n    vendor: " + vendor +
         "\n    family: test\n    total_memory_bytes: 85030076416  # 79.19 GiB\n"
         "    total_memory_source: \"a test\"\n    compute_capability: 9.0\n"
         "    num_sms: 132\n";
}

void write_gpus(const TempDir& dir, const std::string& items) {
  write_file(dir.path() / "gpus.yaml", "# GPUs for a test\ngpus:\n" + items);
}

}  // namespace

// gpus.yaml is indexed the same way: each GPU's lines give its names, and a GPU parses when it
// is first named, with its MIG slices; a listing or a slice's name parses every GPU.
TEST(SpecIndex, AGpuParsesWhenNamedAndABrokenOneFailsOnlyItself) {
  const TempDir dir("spec_index");
  const std::string mig =
      "    mig:\n      source: a test\n      profiles:\n"
      "        - {profile: 3g.40gb, memory_eighths: 4}\n";
  write_gpus(dir, gpu_item("id: GOOD-80GB\n    aliases: [\"Good 80\", good-sxm]") + mig +
                      "\n  # a comment between items\n" +
                      gpu_item("id: BAD-80GB\n    aliases: [bad]", "intel"));
  const SpecDatabase db = SpecDatabase::load_directory(dir.path().string());
  EXPECT_EQ(db.gpu("good 80").id, "GOOD-80GB");
  EXPECT_EQ(db.gpu("NVIDIA Good-SXM").total_memory_bytes, 85030076416);
  try {
    db.gpu("bad");
    FAIL() << "a GPU with an unknown vendor planned";
  } catch (const SpecError& e) {
    // Numbered as the second item of the file's list, as a whole-file parse names it.
    EXPECT_EQ(e.field_path(), "gpus[1].vendor") << e.what();
    EXPECT_EQ(e.value(), "'intel'") << e.what();
  }
  EXPECT_THROW(db.gpu("GOOD-80GB-MIG-3g.40gb"), SpecError);  // a slice's name parses them all
  EXPECT_THROW(db.gpus(), SpecError);
}

TEST(SpecIndex, AGpuSliceIsFoundByItsNamesWithoutParsingAtLoad) {
  const TempDir dir("spec_index");
  write_gpus(dir, gpu_item("id: GOOD-80GB\n    aliases: [\"Good 80\"]") +
                      "    mig:\n      source: a test\n      profiles:\n"
                      "        - {profile: 3g.40gb, memory_eighths: 4}\n" +
                      gpu_item("id: OTHER-24GB"));
  const SpecDatabase db = SpecDatabase::load_directory(dir.path().string());
  // 4/8 of 81,091 MiB (85,030,076,416 B) less the 640 MiB MIG gap: 39,905 MiB.
  EXPECT_EQ(db.gpu("Good 80 MIG 3g.40gb").total_memory_bytes, std::int64_t{39905} << 20);
  EXPECT_EQ(db.gpu("GOOD-80GB-MIG-3g.40gb").mig_parent, "GOOD-80GB");
  EXPECT_EQ(db.gpu_ids(),
            (std::vector<std::string>{"GOOD-80GB", "GOOD-80GB-MIG-3g.40gb", "OTHER-24GB"}));
}

TEST(SpecIndex, AGpuFileTheScanCannotReadIsParsedAtLoad) {
  const TempDir dir("spec_index");
  // Block-style aliases make the scan unsure: the file is parsed whole at load, so the broken
  // second GPU fails the load.
  write_gpus(dir, gpu_item("id: GOOD-80GB\n    aliases:\n      - good") +
                      gpu_item("id: BAD-80GB", "intel"));
  EXPECT_THROW(SpecDatabase::load_directory(dir.path().string()), SpecError);
  write_gpus(dir,
             gpu_item("id: GOOD-80GB\n    aliases:\n      - good") + gpu_item("id: OTHER-24GB"));
  const SpecDatabase db = SpecDatabase::load_directory(dir.path().string());
  EXPECT_EQ(db.gpu("good").id, "GOOD-80GB");
  EXPECT_EQ(db.gpus().size(), 2u);
}

TEST(SpecIndex, AGpuNameTwiceIsRefusedAtLoadAndAYamlErrorKeepsItsLine) {
  const TempDir dir("spec_index");
  write_gpus(dir, gpu_item("id: A-80GB\n    aliases: [shared-name]") +
                      gpu_item("id: B-80GB\n    aliases: [Shared_Name]"));
  EXPECT_THROW(SpecDatabase::load_directory(dir.path().string()), SpecError);
  // A YAML error inside the third item (its name on line 20: two header lines and eight per
  // item before it) is reported as the whole file's parse reports it, at the file's own line.
  write_gpus(dir, gpu_item("id: A-80GB") + gpu_item("id: B-80GB") +
                      gpu_item("id: C-80GB")
                          .replace(gpu_item("id: C-80GB").find("name:"), 5, "name: [unclosed"));
  const std::string file = (dir.path() / "gpus.yaml").string();
  std::string whole_file_error;
  try {
    parse_gpus_yaml(read_regular_file(file, "GPU database", std::int64_t{1} << 20), file);
  } catch (const Error& e) {
    whole_file_error = e.what();
  }
  ASSERT_NE(whole_file_error.find("line 2"), std::string::npos) << whole_file_error;
  const SpecDatabase db = SpecDatabase::load_directory(dir.path().string());
  EXPECT_EQ(db.gpu("B-80GB").id, "B-80GB");
  try {
    db.gpu("C-80GB");
    FAIL() << "a GPU whose YAML does not parse planned";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), whole_file_error);
  }
}
