// config.json import: every copied reference config imports, and gives the same weight bytes, KV
// bytes per token and parameter count as the hand-written spec of the same checkpoint.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "vramplan/errors.hpp"
#include "vramplan/hf_import.hpp"
#include "vramplan/kv_cache.hpp"
#include "vramplan/spec_db.hpp"
#include "vramplan/weights.hpp"

using namespace vramplan;
namespace fs = std::filesystem;

namespace {

const fs::path kConfigs = fs::path(VRAMPLAN_COPIED_DATA_DIR) / "reference" / "configs";

bool is_companion(const fs::path& p) {
  return p.filename().string().find(".hf_quant_config.json") != std::string::npos;
}

// Does the hand spec's YAML (its `source:` line) name this config copy?
bool names_config(const std::string& yaml_path, const std::string& config_name) {
  std::ifstream in(yaml_path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("source:", 0) == 0) {
      const std::string value = line.substr(7);
      return value.size() >= config_name.size() &&
             value.compare(value.size() - config_name.size(), config_name.size(), config_name) == 0;
    }
  }
  return false;
}

}  // namespace

TEST(HfImport, EverySharedConfigImportsAndMatchesItsHandSpec) {
  ASSERT_TRUE(fs::is_directory(kConfigs)) << kConfigs;  // copied into tests/data/reference
  const SpecDatabase db = SpecDatabase::load_directory(VRAMPLAN_MODEL_SPECS_DIR);
  int imported = 0;
  int compared = 0;
  for (const auto& entry : fs::directory_iterator(kConfigs)) {
    const fs::path path = entry.path();
    if (path.extension() != ".json" || is_companion(path)) continue;
    SCOPED_TRACE(path.filename().string());
    ModelSpec imported_spec;
    ASSERT_NO_THROW(imported_spec = load_hf_config(path.string()));
    ++imported;
    for (const ModelSpec& hand : db.models()) {
      if (!names_config(hand.source, path.filename().string())) continue;
      ModelSpec config_spec = imported_spec;
      // Knowledge the config copy lacks, kept by the hand spec from the model card: Qwen3-Next's
      // MTP layer and Llama-4's vision tower (the copy has no vision_config).
      config_spec.num_nextn_predict_layers = hand.num_nextn_predict_layers;
      config_spec.vision = hand.vision;
      ++compared;
      EXPECT_EQ(parameter_count(config_spec), parameter_count(hand)) << hand.id;
      for (int tp : {1, 2, 8}) {
        for (int pp : {1, 2}) {
          for (int rank = 0; rank < pp; ++rank) {
            const RankPlacement place{tp, pp, rank};
            EXPECT_EQ(
                weight_bytes_per_rank(config_spec, config_spec.quantization,
                                      config_spec.torch_dtype, place)
                    .total(),
                weight_bytes_per_rank(hand, hand.quantization, hand.torch_dtype, place).total())
                << hand.id << " tp " << tp << " pp " << pp << " rank " << rank;
          }
        }
        KvCacheOptions kv;
        kv.tensor_parallel_size = tp;
        EXPECT_EQ(kv_bytes_per_token(config_spec, kv), kv_bytes_per_token(hand, kv)) << hand.id;
      }
    }
  }
  EXPECT_GE(imported, 35);
  EXPECT_GE(compared, 30);
}

TEST(HfImport, Llama31_8BFromItsConfig) {
  const fs::path path = kConfigs / "meta-llama__Meta-Llama-3.1-8B.json";
  ASSERT_TRUE(fs::exists(path)) << path;
  const ModelSpec spec = load_hf_config(path.string());
  EXPECT_EQ(parameter_count(spec), 8'030'261'248);  // published: 16,060,522,496 B in bf16
  KvCacheOptions kv;
  EXPECT_EQ(kv_bytes_per_token(spec, kv), 32 * 2 * 8 * 128 * 2);  // 131,072 B
}

// fuzz_hf_cache found it: a config under a path that is not UTF-8 (any bytes are a valid Linux
// file name) threw nlohmann's type_error 316 out of the importer when the spec document, which
// names its source file, was serialised. The path's bad bytes are replaced; the spec imports.
TEST(HfImport, SourcePathThatIsNotUtf8StillImports) {
  const nlohmann::json config = nlohmann::json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "intermediate_size": 128, "vocab_size": 256, "max_position_embeddings": 512,
    "torch_dtype": "bfloat16"})");
  ModelSpec spec;
  ASSERT_NO_THROW(spec = model_spec_from_hf_config(config, nullptr, "cache/ab\xec/config.json"));
  EXPECT_EQ(spec.hidden_size, 64);
}

struct BadConfig {
  const char* file;
  const char* field;  // must appear in the message
};

class HfImportMalformed : public ::testing::TestWithParam<BadConfig> {};

TEST_P(HfImportMalformed, IsANamedError) {
  const fs::path path = fs::path(VRAMPLAN_TEST_DATA_DIR) / "bad_configs" / GetParam().file;
  try {
    (void)load_hf_config(path.string());
    FAIL() << "accepted " << path;
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(GetParam().file), std::string::npos) << message;
    EXPECT_NE(message.find(GetParam().field), std::string::npos) << message;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, HfImportMalformed,
    ::testing::Values(
        BadConfig{"missing_heads.json", "num_attention_heads"},
        BadConfig{"string_hidden.json", "hidden_size"},
        BadConfig{"unknown_model_type.json", "ssm_state_size"},
        BadConfig{"no_model_type.json", "model_type"},
        BadConfig{"unknown_quant.json", "quant_method"},
        BadConfig{"unmappable_ignore.json", "skips q_proj but not k_proj and v_proj at layer 0"},
        BadConfig{"layer_types_length.json", "layer_types"},
        BadConfig{"layer_types_unknown.json", "layer_types"},
        BadConfig{"heads_do_not_divide.json", "head_dim"},
        BadConfig{"negative_vocab.json", "vocab_size"}, BadConfig{"top_level_array.json", "<root>"},
        BadConfig{"truncated.json", "not valid JSON"},
        BadConfig{"huge_layers.json", "num_hidden_layers"},
        BadConfig{"float_layers.json", "num_hidden_layers"}, BadConfig{"awq_8bit.json", "bits"},
        BadConfig{"block_size_bad.json", "weight_block_size"},
        BadConfig{"nemotron_no_pattern.json", "hybrid_override_pattern"},
        BadConfig{"deepseek_no_kv_lora.json", "kv_lora_rank"},
        BadConfig{"text_config_not_object.json", "text_config"},
        BadConfig{"zero_layers.json", "num_hidden_layers"},
        BadConfig{"modules_not_convert.json", "modules_to_not_convert"},
        BadConfig{"bnb_fp4.json", "bnb_4bit_quant_type"},
        BadConfig{"partial_rotary.json", "partial_rotary_factor"},
        BadConfig{"vision_patch.json", "patch_size"}, BadConfig{"dtype_number.json", "torch_dtype"},
        BadConfig{"invalid_utf8.json", "not valid JSON"},
        // Quantization configs vLLM would refuse or vramplan cannot express: group sizes that are
        // not integers or do not tile the input, per-module scheme mixes, bad skip patterns.
        BadConfig{"gptq_group_fraction.json", "group_size: group size must be -1 or a positive"},
        BadConfig{"gptq_group_not_dividing.json", "does not divide the input width 64"},
        BadConfig{"awq_group_zero.json", "group_size"},
        BadConfig{"gptq_dynamic_bits.json", "dynamic"},
        BadConfig{"ct_mixed_groups.json", "config_groups"},
        BadConfig{"ct_bad_regex.json", "not a valid regular expression"},
        BadConfig{"modelopt_mixed_algos.json", "quantized_layers"},
        BadConfig{"ct_ignore_one_shard.json", "covers part of the mlp_gate_up tensors at layer 0"},
        BadConfig{"ct_nested_regex.json", "repeated group"},
        // fuzz_hf_import's reproducer: a backreference number libstdc++ overflowed parsing.
        BadConfig{"gptq_dynamic_backreference_overflow.json", "backreferences"}));
