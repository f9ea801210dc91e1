// The schema: every malformed spec in tests/data/bad_specs is answered by a SpecError whose
// message names the field and value; every file in model_specs/ loads.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "test_support.hpp"
#include "vramplan/errors.hpp"
#include "vramplan/spec_db.hpp"
#include "vramplan/utf8.hpp"

using namespace vramplan;
using vramplan_test::spec_error_of;
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

// The spec format's keys, written out here by hand from the format as model_specs/ uses it:
// an independent list, not the schema table the parser and the Markdown are generated from.
// A key added to (or dropped from) the parser without this list and the docs fails here.
struct FormatKey {
  const char* record;
  const char* key;
};
constexpr FormatKey kFormatKeys[] = {
    {"model", "id"},
    {"model", "aliases"},
    {"model", "source"},
    {"model", "config_defaults"},
    {"model", "generic_assumptions"},
    {"model", "model_type"},
    {"model", "hidden_size"},
    {"model", "num_hidden_layers"},
    {"model", "num_attention_heads"},
    {"model", "num_key_value_heads"},
    {"model", "head_dim"},
    {"model", "head_dim_v"},
    {"model", "intermediate_size"},
    {"model", "vocab_size"},
    {"model", "max_position_embeddings"},
    {"model", "max_position_embeddings_assumed"},
    {"model", "tie_word_embeddings"},
    {"model", "torch_dtype"},
    {"model", "mlp"},
    {"model", "qkv_bias"},
    {"model", "o_proj_bias"},
    {"model", "mlp_bias"},
    {"model", "mlp_down_bias"},
    {"model", "qk_norm"},
    {"model", "attention_sinks"},
    {"model", "attn_output_gate"},
    {"model", "attn_head_gate"},
    {"model", "share_q_dim"},
    {"model", "dual_mla"},
    {"model", "dense_mlps_per_layer"},
    {"model", "norms_per_layer"},
    {"model", "norm_per_block"},
    {"model", "layer_num_key_value_heads"},
    {"model", "layer_num_attention_heads"},
    {"model", "layer_intermediate_sizes"},
    {"model", "position_embeddings"},
    {"model", "replicated_token_embedding"},
    {"model", "rotary_dim"},
    {"model", "rotary_cache_positions"},
    {"model", "mrope"},
    {"model", "sliding_window"},
    {"model", "attention_chunk_size"},
    {"model", "layer_types"},
    {"model", "layer_pattern"},
    {"model", "hybrid_override_pattern"},
    {"model", "full_attention_head_dim"},
    {"model", "full_attention_num_key_value_heads"},
    {"model", "mamba_beside_attention"},
    {"model", "loop_window"},
    {"model", "cross_attention_encoder_tokens"},
    {"model", "num_kv_shared_layers"},
    {"model", "kv_shared_double_wide_mlp"},
    {"model", "per_layer_input_size"},
    {"model", "per_layer_input_vocab_size"},
    {"model", "altup_num_inputs"},
    {"model", "laurel_rank"},
    {"model", "shared_blocks"},
    {"model", "shared_block_adapter_rank"},
    {"model", "shared_block_attention_adapters"},
    {"model", "mla"},
    {"model", "short_conv"},
    {"model", "moe"},
    {"model", "mamba"},
    {"model", "linear_attention"},
    {"model", "vision"},
    {"model", "num_nextn_predict_layers"},
    {"model", "quantization"},
    {"mla", "q_lora_rank"},
    {"mla", "kv_lora_rank"},
    {"mla", "qk_nope_head_dim"},
    {"mla", "qk_rope_head_dim"},
    {"mla", "v_head_dim"},
    {"mla", "latent_kv_cache"},
    {"mla", "index_head_dim"},
    {"mla", "index_n_heads"},
    {"moe", "num_experts"},
    {"moe", "num_experts_per_tok"},
    {"moe", "moe_intermediate_size"},
    {"moe", "num_shared_experts"},
    {"moe", "shared_expert_intermediate_size"},
    {"moe", "shared_expert_gate"},
    {"moe", "expert_bias"},
    {"moe", "router_bias"},
    {"moe", "router_quantizable"},
    {"moe", "first_k_dense"},
    {"moe", "moe_layer_step"},
    {"moe", "dense_layers"},
    {"moe", "dense_mlp_beside_experts"},
    {"moe", "zero_experts"},
    {"mamba", "num_heads"},
    {"mamba", "head_dim"},
    {"mamba", "state_size"},
    {"mamba", "n_groups"},
    {"mamba", "conv_kernel"},
    {"mamba", "ssm_state_dtype"},
    {"short_conv", "dim"},
    {"short_conv", "conv_kernel"},
    {"short_conv", "bias"},
    {"mamba", "version"},
    {"mamba", "intermediate_size"},
    {"mamba", "time_step_rank"},
    {"mamba", "conv_bias"},
    {"mamba", "proj_bias"},
    {"mamba", "dt_bc_norm_weights"},
    {"mamba", "gated_norm"},
    {"linear_attention", "num_key_heads"},
    {"linear_attention", "ssm_state_dtype"},
    {"linear_attention", "key_head_dim"},
    {"linear_attention", "num_value_heads"},
    {"linear_attention", "value_head_dim"},
    {"linear_attention", "conv_kernel"},
    {"linear_attention", "kimi_delta"},
    {"vision", "num_parameters"},
    {"vision", "modality"},
    {"vision", "audio_parameters"},
    {"vision", "image_tokens_per_item"},
    {"vision", "encoder_tokens_per_item"},
    {"vision", "pixel_values_per_item"},
    {"vision", "encoder_hidden_size"},
    {"vision", "encoder_intermediate_size"},
    {"vision", "encoder_mlp"},
    {"vision", "encoder_attention"},
    {"vision", "unmodelled_modalities"},
    {"vision", "always_built"},
    {"quantization", "method"},
    {"quantization", "bits"},
    {"quantization", "group_size"},
    {"quantization", "desc_act"},
    {"quantization", "sym"},
    {"quantization", "scale_strategy"},
    {"quantization", "block_size"},
    {"quantization", "static_activation_scale"},
    {"quantization", "double_quant"},
    {"quantization", "online"},
    {"quantization", "unquantized"},
    {"quantization", "unquantized_layers"},
    {"quantization", "fp8_roles"},
    {"quantization", "nvfp4_weight_only_roles"},
    {"quantization", "quantized_lm_head"},
    {"quantization", "gguf_types"},
    {"quantization", "scales_in_torch_dtype"},
    {"gpu", "id"},
    {"gpu", "aliases"},
    {"gpu", "shared_aliases"},
    {"gpu", "name"},
    {"gpu", "vendor"},
    {"gpu", "total_memory_bytes"},
    {"gpu", "total_memory_source"},
    {"gpu", "total_memory_derived"},
    {"gpu", "compute_capability"},
    {"gpu", "num_sms"},
    {"gpu", "unified_memory"},
    {"gpu", "pcie_only"},
    {"gpu", "family"},
    {"gpu", "nvidia_smi_memory_mib"},
    {"gpu", "mig"},
    {"mig", "source"},
    {"mig", "profiles"},
    {"mig_profile", "profile"},
    {"mig_profile", "memory_eighths"},
    {"mig_profile", "num_sms"},
    {"mig_profile", "lgip_memory_gib"},
};

TEST(SpecYaml, SchemaMarkdownListsEveryKey) {
  std::set<std::string> format, schema;
  for (const FormatKey& k : kFormatKeys) format.insert(std::string(k.record) + "." + k.key);
  for (const auto& k : schema_keys()) schema.insert(std::string(k.record) + "." + k.key);
  EXPECT_EQ(schema, format);  // nothing undocumented accepted, nothing documented refused
  const std::string md = schema_markdown();
  for (const FormatKey& k : kFormatKeys) {
    EXPECT_NE(md.find(std::string("`") + k.key + "`"), std::string::npos) << k.key;
  }
}

// Every documented model key is read, not only allowed: a value of the wrong type is refused
// naming that key (a key the parser accepted and ignored would load silently).
namespace {

// Minimal valid blocks for the nested records, one line per key.
const std::map<std::string, std::vector<std::string>> kValidBlocks = {
    {"mla",
     {"kv_lora_rank: 512", "qk_nope_head_dim: 128", "qk_rope_head_dim: 64", "v_head_dim: 128"}},
    {"moe", {"num_experts: 8", "num_experts_per_tok: 2", "moe_intermediate_size: 1024"}},
    {"mamba", {"num_heads: 64", "head_dim: 64", "state_size: 128"}},
    {"short_conv", {"dim: 4096"}},
    {"linear_attention",
     {"num_key_heads: 16", "key_head_dim: 128", "num_value_heads: 32", "value_head_dim: 128"}},
    {"vision",
     {"num_parameters: 1000", "image_tokens_per_item: 256", "encoder_tokens_per_item: 1024",
      "pixel_values_per_item: 602112", "encoder_hidden_size: 1024",
      "encoder_intermediate_size: 4096"}},
    {"quantization", {"method: fp8"}},
};

// kLlama31_8B with `key` (of `record`) set to `bad`, every other line as it was.
std::string spec_with(const std::string& record, const std::string& key, const std::string& bad) {
  std::istringstream base(vramplan_test::kLlama31_8B);
  std::string out, line;
  const std::string top_key = record == "model" ? key : record;
  while (std::getline(base, line)) {
    if (line.rfind(top_key + ":", 0) != 0) out += line + "\n";
  }
  if (record == "model") return out + key + ": " + bad + "\n";
  out += record + ":\n";
  for (const std::string& entry : kValidBlocks.at(record)) {
    if (entry.rfind(key + ":", 0) != 0) out += "  " + entry + "\n";
  }
  return out + "  " + key + ": " + bad + "\n";
}

}  // namespace

TEST(SpecYaml, EveryDocumentedModelKeyIsRead) {
  for (const FormatKey& k : kFormatKeys) {
    const std::string record = k.record;
    if (record == "gpu" || record == "mig" || record == "mig_profile")
      continue;  // gpus.yaml: GpuYaml tests
    // A map where a scalar or list belongs; a scalar where a map belongs.
    const bool is_block = record == "model" && kValidBlocks.count(k.key) != 0;
    const std::string bad =
        is_block || std::string(k.key) == "gguf_types" || std::string(k.key) == "unquantized_layers"
            ? "7"
            : "{bad: 1}";
    const std::string path = record == "model" ? k.key : record + "." + k.key;
    const std::string text = spec_with(record, k.key, bad);
    try {
      parse_model_spec_yaml(text, "keys.yaml");
      ADD_FAILURE() << path << " = " << bad << " loaded:\n" << text;
    } catch (const SpecError& e) {
      EXPECT_EQ(e.field_path(), path) << e.what();
    }
  }
}

// Invalid UTF-8 is refused before anything reads the text, naming file, field and offset
// (it used to load, then crash `plan` in JSON; in a key it surfaced as a UnicodeDecodeError).
TEST(SpecYaml, UnquantizedLayersAreReadAndBounded) {
  const std::string base = std::string(vramplan_test::kLlama31_8B) +
                           "quantization:\n  method: fp8\n  unquantized_layers:\n";
  const ModelSpec spec =
      parse_model_spec_yaml(base + "    mlp_down: [31, 0, 0]\n    attn_o: [2]\n", "l.yaml");
  EXPECT_EQ(spec.quantization.unquantized_layers.at("mlp_down"),
            (std::vector<std::int32_t>{0, 31}));  // sorted, duplicates dropped
  EXPECT_EQ(spec.quantization.unquantized_layers.at("attn_o"), (std::vector<std::int32_t>{2}));
  // Llama-3.1-8B has 32 layers: 32 is past the last; a role must exist; a list must be given.
  for (const auto& [bad, field] : std::vector<std::pair<std::string, std::string>>{
           {"    mlp_down: [32]\n", "quantization.unquantized_layers.mlp_down"},
           {"    mlp_sideways: [1]\n", "quantization.unquantized_layers.mlp_sideways"},
           {"    mlp_down: []\n", "quantization.unquantized_layers.mlp_down"},
           {"    mlp_down: [-1]\n", "quantization.unquantized_layers.mlp_down[0]"}}) {
    try {
      (void)parse_model_spec_yaml(base + bad, "l.yaml");
      ADD_FAILURE() << bad << " loaded";
    } catch (const SpecError& e) {
      EXPECT_EQ(e.field_path(), field) << e.what();
    }
  }
}

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

// A MIG profile becomes a GPU of its own: NVML's name for it, the card's facts, and the memory
// as the rule in gpus.yaml's header derives it (by hand below).
TEST(SpecYaml, MigProfilesBecomeGpusOfTheirOwn) {
  const std::string card =
      "gpus:\n- id: C\n  aliases: [\"NVIDIA C 80GB\"]\n  name: NVIDIA C\n  vendor: nvidia\n"
      "  total_memory_bytes: 85030076416\n  total_memory_source: test\n  num_sms: 132\n"
      "  compute_capability: 9.0\n  mig:\n    source: guide\n    profiles:\n";
  const std::vector<GpuSpec> gpus = parse_gpus_yaml(
      card +
          "    - {profile: 3g.40gb, memory_eighths: 4}\n"
          "    - {profile: 1g.10gb, memory_eighths: 1, num_sms: 16, lgip_memory_gib: 9.75}\n",
      "gpus.yaml");
  ASSERT_EQ(gpus.size(), 3U);
  const GpuSpec& derived = gpus[1];
  EXPECT_EQ(derived.id, "C-MIG-3g.40gb");
  EXPECT_EQ(derived.name, "NVIDIA C MIG 3g.40gb");
  EXPECT_EQ(derived.aliases,
            (std::vector<std::string>{"NVIDIA C MIG 3g.40gb", "NVIDIA C 80GB MIG 3g.40gb"}));
  EXPECT_EQ(derived.mig_parent, "C");
  EXPECT_EQ(derived.mig_profile, "3g.40gb");
  // 85030076416 B = 81091 MiB; 4/8 of it = 40545 MiB; less 640 MiB = 39905 MiB.
  EXPECT_EQ(derived.total_memory_bytes, std::int64_t{39905} << 20);
  EXPECT_TRUE(derived.total_memory_derived);
  EXPECT_EQ(derived.num_sms, 56);  // 132 x 3 / 7, floored
  EXPECT_EQ(derived.compute_capability, 9.0);
  // lgip's 9.75 GiB = 9984 MiB, less the 450 MiB nvidia-smi/CUDA gap = 9534 MiB.
  EXPECT_EQ(gpus[2].total_memory_bytes, std::int64_t{9534} << 20);
  EXPECT_EQ(gpus[2].num_sms, 16);
  EXPECT_TRUE(gpus[0].mig_profile.empty());

  SpecError e = spec_error_of(
      [&] { parse_gpus_yaml(card + "    - {profile: 3g40, memory_eighths: 4}\n", "gpus.yaml"); });
  EXPECT_EQ(e.field_path(), "gpus[0].mig.profiles[0].profile");
  e = spec_error_of(
      [&] { parse_gpus_yaml(card + "    - {profile: 9g.90gb, memory_eighths: 8}\n", "g.yaml"); });
  EXPECT_EQ(e.field_path(), "gpus[0].mig.profiles[0].profile");
  e = spec_error_of([&] { parse_gpus_yaml(card + "      []\n", "gpus.yaml"); });
  EXPECT_EQ(e.field_path(), "gpus[0].mig.profiles");
}
