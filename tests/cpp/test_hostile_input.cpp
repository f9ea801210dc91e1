// Hostile input: every reader bounded and typed, every numeric spec field
// bounded so the plan's products stay inside int64, duplicate keys and alias bombs refused, a
// log's launches never mixed. Inputs are generated here (small files, FIFOs, links, sparse
// files). The bound sweep is the test the sanitizer build (ASan + UBSan) runs for overflow.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "vramplan/bounded_read.hpp"
#include "vramplan/calibrate.hpp"
#include "vramplan/compiled.hpp"
#include "vramplan/engine.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/log_parser.hpp"
#include "vramplan/model_source.hpp"
#include "vramplan/solver.hpp"
#include "vramplan/spec_db.hpp"

namespace {

namespace fs = std::filesystem;
using vramplan::ConfigError;
using vramplan::ParseError;
using vramplan::SpecError;

// --- the bound sweep -------------------------------------------------------------------------

// One base spec per record, its block last so that a key appended lands in it.
std::string base_yaml(const std::string& record) {
  std::string yaml = vramplan_test::kLlama31_8B;
  if (record == "mla") {
    yaml +=
        "mla:\n  kv_lora_rank: 512\n  qk_nope_head_dim: 128\n  qk_rope_head_dim: 64\n"
        "  v_head_dim: 128\n";
  } else if (record == "moe") {
    yaml += "moe:\n  num_experts: 8\n  num_experts_per_tok: 2\n  moe_intermediate_size: 14336\n";
  } else if (record == "mamba") {
    yaml +=
        "layer_pattern: [mamba, full_attention]\n"
        "mamba:\n  num_heads: 128\n  head_dim: 64\n  state_size: 128\n";
  } else if (record == "short_conv") {
    yaml += "layer_pattern: [mamba, full_attention]\nshort_conv:\n  dim: 4096\n";
  } else if (record == "linear_attention") {
    yaml +=
        "layer_pattern: [linear_attention, full_attention]\n"
        "linear_attention:\n  num_key_heads: 16\n  key_head_dim: 128\n"
        "  num_value_heads: 32\n  value_head_dim: 128\n";
  } else if (record == "vision") {
    yaml +=
        "vision:\n  num_parameters: 400000000\n  image_tokens_per_item: 576\n"
        "  encoder_tokens_per_item: 577\n  pixel_values_per_item: 602112\n"
        "  encoder_hidden_size: 1024\n  encoder_intermediate_size: 4096\n";
  } else if (record == "quantization") {
    yaml += "quantization:\n  method: fp8\n";
  }
  return yaml;
}

// `yaml` with `key` of `record` set to `value` (replacing the line that sets it, if any).
std::string set_value(std::string yaml, const std::string& record, const std::string& key,
                      const std::string& value, const std::string& type) {
  std::string text = value;
  if (type == "list[int]") text = key == "block_size" ? "[" + value + ", 128]" : "[" + value + "]";
  if (record == "model") {
    const std::regex line("(^|\n)" + key + ": [^\n]*");
    if (std::regex_search(yaml, line))
      return std::regex_replace(yaml, line, "$1" + key + ": " + text);
    return key + ": " + text + "\n" + yaml;
  }
  const std::regex line("\n  " + key + ": [^\n]*");
  if (std::regex_search(yaml, line))
    return std::regex_replace(yaml, line, "\n  " + key + ": " + text);
  return yaml + "  " + key + ": " + text + "\n";
}

// The base spec of `record` with `key` at `value`, and the keys a cross-field rule ties to it
// set so that the rule holds (heads that divide, top-k within the experts).
std::string with_value(const std::string& record, const std::string& key, const std::string& value,
                       const std::string& type) {
  std::string base = base_yaml(record);
  if (record == "mamba" && (key == "intermediate_size" || key == "time_step_rank")) {
    // Mamba-1's own keys: a version-1 block (Jamba-shaped) instead of the Mamba2 one.
    base = std::string(vramplan_test::kLlama31_8B) +
           "layer_pattern: [mamba, full_attention]\n"
           "mamba:\n  version: 1\n  intermediate_size: 8192\n  time_step_rank: 256\n"
           "  state_size: 16\n";
  }
  std::string yaml = set_value(base, record, key, value, type);
  if (key == "hidden_size") yaml = set_value(yaml, "model", "head_dim", "128", "int");
  // An audio encoder's share of the tower is at most the whole tower.
  if (key == "audio_parameters") {
    yaml =
        set_value(yaml, "vision", "num_parameters", std::to_string(std::int64_t{1} << 42), "int");
  }
  if (key == "layer_num_key_value_heads" || key == "layer_intermediate_sizes" ||
      key == "layer_num_attention_heads") {
    // A per-layer list of one value: one layer (its KV heads must divide the 256 heads).
    yaml = set_value(yaml, "model", "num_hidden_layers", "1", "int");
    yaml = set_value(yaml, "model", "num_attention_heads", "256", "int");
  }
  if (key == "num_key_value_heads") {
    yaml = set_value(yaml, "model", "num_attention_heads", "256", "int");
  }
  if (key == "num_experts_per_tok") yaml = set_value(yaml, "moe", "num_experts", "8192", "int");
  if (key == "num_kv_shared_layers") {
    yaml = set_value(yaml, "model", "num_hidden_layers", "4096", "int");
  }
  if (key == "shared_blocks" || key == "shared_block_adapter_rank") {
    // Zamba2's shared blocks run on the attention layers of a Mamba2 mixer on every layer.
    yaml +=
        "layer_pattern: [mamba, full_attention]\nmamba_beside_attention: true\n"
        "mamba:\n  num_heads: 128\n  head_dim: 64\n  state_size: 128\n";
    if (key == "shared_block_adapter_rank") {
      yaml = set_value(yaml, "model", "shared_blocks", "2", "int");
    }
  }
  return yaml;
}

// The whole plan of a spec: compile the launch on one H100 and solve it (the solver walks
// every knob search and the remedies). Any vramplan::Error is an answer (returned), UB is not.
std::string plan_whole(const vramplan::ModelSpec& spec) {
  vramplan::HardwareConfig hw;
  hw.gpu = vramplan_test::h100();
  hw.num_gpus = 1;
  try {
    const vramplan::CompiledLaunch launch(std::make_shared<const vramplan::ModelSpec>(spec), hw,
                                          vramplan::EngineConfig{});
    const vramplan::Plan plan = vramplan::solve(launch, 0, 0, 0);
    for (const auto& rank : plan.breakdown.ranks) EXPECT_GE(rank.weights_bytes, 0);
    EXPECT_GE(plan.breakdown.kv_tokens, 0);
  } catch (const vramplan::Error& e) {
    return e.what();
  }
  return "";
}

TEST(SpecBounds, EveryNumericFieldPlansAtItsBoundAndIsRefusedOnePast) {
  int swept = 0;
  int planned = 0;
  int gpu_swept = 0;
  for (const vramplan::SchemaKey& k : vramplan::schema_keys()) {
    const std::string type = k.type;
    if (type != "int" && type != "list[int]") continue;
    SCOPED_TRACE(std::string(k.record) + "." + k.key);
    ASSERT_GT(k.max_value, 0) << "every numeric key states its bound";
    const bool mig = std::string(k.record) == "mig_profile";
    if (std::string(k.record) == "gpu" || mig) {
      const std::string gpu =
          std::string(
              "gpus:\n- id: X\n  name: X\n  vendor: nvidia\n"
              "  total_memory_bytes: 85029158912\n  total_memory_source: test\n") +
          (mig ? "  mig:\n    source: test\n    profiles:\n    - profile: 1g.10gb\n"
                 "      memory_eighths: 1\n"
               : "");
      const auto gpu_with = [&](std::int64_t v) {
        const std::string line = std::string(mig ? "      " : "  ") + k.key + ": ";
        const std::size_t at = gpu.find(line);
        if (at == std::string::npos) return gpu + line + std::to_string(v) + "\n";
        return gpu.substr(0, at) + line + std::to_string(v) + "\n" +
               gpu.substr(gpu.find('\n', at) + 1);
      };
      EXPECT_NO_THROW(vramplan::parse_gpus_yaml(gpu_with(k.max_value), "<gpus>"));
      try {
        vramplan::parse_gpus_yaml(gpu_with(k.max_value + 1), "<gpus>");
        ADD_FAILURE() << "one past the bound was accepted";
      } catch (const SpecError& e) {
        EXPECT_NE(e.field_path().find(k.key), std::string::npos) << e.what();
      }
      ++swept;
      ++gpu_swept;
      continue;
    }
    // At the bound: a spec (or an error naming a cross-field rule), and a whole plan of it.
    try {
      const std::string error = plan_whole(vramplan_test::spec_from_yaml(
          with_value(k.record, k.key, std::to_string(k.max_value), type)));
      EXPECT_EQ(error, "");
      planned += error.empty() ? 1 : 0;
    } catch (const SpecError& e) {
      ADD_FAILURE() << e.what();
    }
    // One past: refused, naming the field and its range.
    try {
      vramplan_test::spec_from_yaml(
          with_value(k.record, k.key, std::to_string(k.max_value + 1), type));
      ADD_FAILURE() << "one past the bound was accepted";
    } catch (const SpecError& e) {
      EXPECT_NE(e.field_path().find(k.key), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
    }
    ++swept;
  }
  EXPECT_GE(swept, 45);
  // The GPU keys (total_memory_bytes, num_sms, nvidia_smi_memory_mib, and a MIG profile's
  // memory_eighths and num_sms) are swept through the GPU database, not planned.
  EXPECT_EQ(gpu_swept, 5);
  EXPECT_EQ(planned, swept - gpu_swept);
}

// Every width at its bound at once, in the records that multiply: the largest tensors, the
// largest KV token and sequence state the bounds allow. Refused by name or planned; no UB.
TEST(SpecBounds, AllWidthsAtTheirBoundsTogether) {
  const std::string yaml =
      "id: test/widest\nmodel_type: test\nhidden_size: 131072\nnum_hidden_layers: 4096\n"
      "num_attention_heads: 256\nnum_key_value_heads: 256\nhead_dim: 512\nhead_dim_v: 512\n"
      "intermediate_size: 1048576\nvocab_size: 4194304\nmax_position_embeddings: 2147483647\n"
      "torch_dtype: float32\nnum_nextn_predict_layers: 16\nrotary_dim: 512\n"
      "moe:\n  num_experts: 8192\n  num_experts_per_tok: 256\n  moe_intermediate_size: 262144\n"
      "  num_shared_experts: 64\n  shared_expert_intermediate_size: 1048576\n";
  const std::string error = plan_whole(vramplan_test::spec_from_yaml(yaml));
  EXPECT_NE(error.find("2^53"), std::string::npos) << error;
}

// The issue's case: 10^7 experts is refused naming the field, not a knob the user never set.
TEST(SpecBounds, TenMillionExpertsNameTheField) {
  try {
    vramplan_test::spec_from_yaml(with_value("moe", "num_experts", "10000000", "int"));
    FAIL() << "accepted";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.field_path(), "moe.num_experts");
  }
}

TEST(SpecBounds, DerivedHeadDimIsBoundedToo) {
  // hidden_size 131072 / 1 head = a head_dim of 131072, past the 512 a written one may have.
  std::string yaml = set_value(base_yaml("model"), "model", "hidden_size", "131072", "int");
  yaml = std::regex_replace(yaml, std::regex("num_attention_heads: 32"), "num_attention_heads: 1");
  yaml = std::regex_replace(yaml, std::regex("num_key_value_heads: 8"), "num_key_value_heads: 1");
  try {
    vramplan_test::spec_from_yaml(yaml);
    FAIL() << "accepted";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.field_path(), "head_dim");
  }
}

// --- YAML: duplicate keys, alias bombs, non-scalar keys -----------------------------------

TEST(HostileYaml, DuplicateKeyIsRefusedNamingIt) {
  const std::string yaml = std::string(vramplan_test::kLlama31_8B) + "hidden_size: 8192\n";
  try {
    vramplan_test::spec_from_yaml(yaml);
    FAIL() << "accepted";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.field_path(), "hidden_size");
    EXPECT_NE(std::string(e.what()).find("duplicate"), std::string::npos);
  }
}

TEST(HostileYaml, AliasBombWithAnInvalidByteIsRefusedQuickly) {
  // Nine levels of nine aliases: 9^9 = 387 M nodes if walked; one byte not UTF-8 at the end.
  std::string yaml = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 9; ++i) {
    const std::string prev = "*a" + std::to_string(i - 1);
    yaml += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + prev;
    for (int j = 1; j < 9; ++j) yaml += ", " + prev;
    yaml += "]\n";
  }
  yaml += "id: \"\xff\"\n";
  try {
    vramplan_test::spec_from_yaml(yaml);
    FAIL() << "accepted";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("too many nodes"), std::string::npos) << e.what();
  }
}

// Found by fuzz_spec_yaml: the checked tree is a plain node, and a missing top-level key read
// from it must be a named error, not yaml-cpp's InvalidNode.
TEST(HostileYaml, MissingTopLevelListsAreNamedErrors) {
  EXPECT_THROW(vramplan::parse_gpus_yaml(vramplan_test::kLlama31_8B, "gpus.yaml"), SpecError);
  EXPECT_THROW(vramplan::parse_engine_profiles("a: 1\n", "engines.yaml"), SpecError);
  EXPECT_THROW(vramplan::parse_calibration_profile("a: 1\n", "profile.yaml"), SpecError);
}

TEST(HostileYaml, ProfileKeyThatIsASequenceIsASpecError) {
  EXPECT_THROW(vramplan::parse_calibration_profile("? [a, b]\n: 1\nengine_version: 0.10.1\n",
                                                   "profile.yaml"),
               SpecError);
  EXPECT_THROW(
      vramplan::parse_calibration_profile(
          "engine_version: 0.10.1\nengine_version: 0.11.0\noverrides: {}\n", "profile.yaml"),
      SpecError);
}

// --- files: type before open, size before read --------------------------------------------

TEST(BoundedRead, FifoDirectoryAndDeviceAreRefusedByTypeWithoutBlocking) {
  const vramplan_test::TempDir dir("bounded");
  const fs::path fifo = dir.path() / "log.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {fifo.string(), dir.path().string(), std::string("/dev/zero")}) {
    try {
      vramplan::read_regular_file(path, "log", 1 << 20);
      ADD_FAILURE() << path << " was read";
    } catch (const ParseError& e) {
      EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(vramplan::read_vllm_log_file(fifo.string()), ParseError);
  EXPECT_THROW(vramplan::load_model_spec_file(fifo.string()), ParseError);
  EXPECT_THROW(vramplan::load_hf_config(fifo.string()), vramplan::Error);
}

TEST(BoundedRead, SparseFileOverTheCapIsRefusedBeforeReading) {
  const vramplan_test::TempDir dir("bounded");
  const fs::path spec = dir.path() / "huge.yaml";
  { std::ofstream(spec).put('x'); }
  fs::resize_file(spec, std::uintmax_t{1} << 34);  // 16 GiB of holes: reading it would take long
  try {
    vramplan::load_model_spec_file(spec.string());
    FAIL() << "read";
  } catch (const ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("17179869184 bytes"), std::string::npos) << e.what();
  }
}

// --- config.json: 1e400, duplicate keys, a fractional group size --------------------------

TEST(HostileConfigJson, HugeNumberDuplicateKeyAndFractionalGroupSizeAreNamed) {
  const vramplan_test::TempDir dir("config");
  const std::string llama =
      R"("architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
      "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
      "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 131072,
      "torch_dtype": "bfloat16")";
  const fs::path path = dir.path() / "config.json";
  vramplan_test::write_file(path, "{" + llama + R"(, "rope_theta": 1e400})");
  try {
    vramplan::load_hf_config(path.string());
    FAIL() << "1e400 accepted";
  } catch (const ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("config.json"), std::string::npos) << e.what();
  }
  vramplan_test::write_file(path, "{" + llama + R"(, "hidden_size": 8192})");
  try {
    vramplan::load_hf_config(path.string());
    FAIL() << "duplicate accepted";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.field_path(), "hidden_size");
  }
  vramplan_test::write_file(path, "{" + llama +
                                      R"(, "quantization_config": {"quant_method": "gptq",
                                      "bits": 4, "group_size": 1.99}})");
  try {
    vramplan::load_hf_config(path.string());
    FAIL() << "group_size 1.99 accepted";
  } catch (const SpecError& e) {
    EXPECT_NE(e.field_path().find("group_size"), std::string::npos) << e.what();
  }
}

// --- HF cache: a snapshot linking outside its entry ---------------------------------------

TEST(HostileCache, SnapshotLinkedOutsideTheEntryIsRefused) {
  const vramplan_test::TempDir dir("cache");
  const fs::path outside = dir.path() / "elsewhere";
  fs::create_directories(outside);
  vramplan_test::write_file(outside / "config.json", "{}");
  const fs::path entry = dir.path() / "hub" / "models--acme--m";
  fs::create_directories(entry / "snapshots");
  fs::create_directories(entry / "refs");
  fs::create_directory_symlink(outside, entry / "snapshots" / "abc");
  vramplan_test::write_file(entry / "refs" / "main", "abc");
  try {
    vramplan::resolve_model_folder(entry.string());
    FAIL() << "followed the link";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("outside the cache entry"), std::string::npos) << e.what();
  }
  // A FIFO as refs/main is not read (it would block); the single snapshot is still refused.
  fs::remove(entry / "refs" / "main");
  ASSERT_EQ(::mkfifo((entry / "refs" / "main").c_str(), 0600), 0);
  EXPECT_THROW(vramplan::resolve_model_folder(entry.string()), ConfigError);
}

// --- logs: launches split, malformed numbers refused --------------------------------------

TEST(HostileLog, TwoLaunchesReportTheLastOnlyAndCountThem) {
  // An aborted launch (8192 context, no figures), then a full one (4096 context).
  const std::string log =
      "INFO 11-24 07:00:00 [api_server.py:1] vLLM API server version 0.10.1\n"
      "INFO 11-24 07:00:00 [utils.py:1] non-default args: {'model': 'a/first', "
      "'max_model_len': 8192}\n"
      "ERROR 11-24 07:00:05 [core.py:1] KeyboardInterrupt\n"
      "INFO 11-24 07:10:00 [api_server.py:1] vLLM API server version 0.10.1\n"
      "INFO 11-24 07:10:00 [utils.py:1] non-default args: {'model': 'b/second', "
      "'max_model_len': 4096}\n"
      "INFO 11-24 07:10:30 [gpu_worker.py:1] Available KV cache memory: 5.00 GiB\n"
      "INFO 11-24 07:10:31 [kv_cache_utils.py:1] GPU KV cache size: 40,960 tokens\n";
  const vramplan::VllmLogFigures f = vramplan::parse_vllm_log(log);
  EXPECT_EQ(f.launches, 2);
  EXPECT_EQ(f.model, "b/second");
  EXPECT_EQ(f.max_model_len, 4096);
  EXPECT_EQ(f.kv_tokens, 40960);
  EXPECT_TRUE(f.error_lines.empty());  // the first launch's failure is not the second's
}

TEST(HostileLog, MalformedNumbersAreNotReadAsOtherNumbers) {
  for (const char* tokens : {"-476,016", "476,01", "47,6016", "1.2.3", "4e5", "12-3"}) {
    const vramplan::VllmLogFigures f =
        vramplan::parse_vllm_log(std::string("INFO GPU KV cache size: ") + tokens + " tokens\n");
    EXPECT_FALSE(f.kv_tokens.has_value()) << tokens << " read as " << *f.kv_tokens;
  }
  EXPECT_EQ(vramplan::parse_vllm_log("INFO GPU KV cache size: 476,016 tokens\n").kv_tokens, 476016);
}

TEST(HostileLog, NumbersWithControlBytesAgainstTheirDigitsAreNotNumbers) {
  for (const char byte : {'\0', '\x7f', '\b', '\v'}) {
    std::string line = "INFO GPU KV cache size: 47";
    line += byte;
    line += "6,016 tokens\n";
    const vramplan::VllmLogFigures f = vramplan::parse_vllm_log(line);
    EXPECT_FALSE(f.kv_tokens.has_value()) << static_cast<int>(byte) << " read as " << *f.kv_tokens;
  }
  EXPECT_EQ(vramplan::parse_vllm_log("INFO GPU KV cache size: 476,016 tokens\r\n").kv_tokens,
            476016);
}

}  // namespace
